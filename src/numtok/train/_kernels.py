"""Numba kernels of the BPE trainer (private: ``trainer.py`` is the API).

Data model
    Words: ``sym`` (int32, all unique words' symbol ids in one flat buffer) and ``words``
    (int64[n, 4]: start, live length that shrinks as merges rewrite the word in place, freq).
    Pairs: an open-addressing table from the packed key ``left << 32 | right`` to a row of
    ``pairs`` (int64[n, 8], one cache line per pair: key, count, postings start/len/capacity,
    first occurrence, last merge step that touched it, last word appended to its postings).
    Postings: for each pair, the words that held it when it was counted or created, in one
    int32 pool; stale entries are fine because a merge rescans the word. A pair whose count is
    0 has only stale entries: its list is dropped when the pool is compacted.
    Heap: array-backed binary max-heap of (count, aux[, pair row]), best = highest count, then
    lowest aux. aux = the key itself under tie_break="hf" (ids are given in HF's order, so the
    smallest (left, right) wins; the row is looked up by key, so rows can be renumbered) or the
    first occurrence (word << 32 | position) under "first-seen" (the row is a third column).
    Under "hf", pairs whose count is 0 are removed from the table when it fills up (the removed
    pairs' heap entries find no row: count 0, exactly as their row would have said), so the
    table holds about the live pairs, not every pair ever made.
    Hidden pairs (under "hf"): a pair whose count is below a floor (2 at first, then the best
    count >> 6, at most ``floor_cap``) is not pushed, and its row is removed with the dead ones;
    its losses are then not counted. That is exact because counts only fall, except in the step
    that makes a token (its pairs are new) or re-uses an id; so while the heap's best is at or
    above the floor, no hidden pair can be merged. When the best falls below it (or the heap
    empties), or a merge re-uses an id, every pair not in the table is added back with its
    count and postings by one pass over the words, the heap is rebuilt, and the floor is 0 for
    the rest of the run.

Why this shape (performance notes)
    - Counts are never recomputed: a merge visits only the words in the pair's postings and
      applies +-freq deltas to the neighbour pairs, like HF's trainer, but with no hash set per
      pair and no Python object anywhere.
    - Heap entries are validated lazily: existing pairs only lose occurrences, so a stale entry
      is always too optimistic and is re-pushed with its current value when popped (HF's rule).
    - Token identity (a merge whose string already exists re-uses its id, as HF does) is a
      hash table over each token's base-symbol sequence, checked in full on a hash match.
    - Hidden pairs: on corpora of mostly unique words most pairs made by merges occur once or
      twice and are never merged; without a row, postings or heap entry they cost neither
      memory nor the work of keeping them.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from .._native.intrinsics import prefetch, release_pages, trailing_zeros
from .._native.jit import INLINE, cached_njit, wraps_around
from ._heap import sift_down, sift_up

# Columns of a word row (start in sym, live length, frequency): one row per word, so visiting a
# posting costs one cache miss for the row and one for the symbols.
W_START, W_LEN, W_FREQ = 0, 1, 2
# Columns of a pair row.
KEY, COUNT, PSTART, PLEN, PCAP, FIRST, STAMP, LASTW = 0, 1, 2, 3, 4, 5, 6, 7
NCOL = 8
# Slots of the small state vector shared by the merge-step helpers.
N_PAIRS, POOL_USED, N_TOUCHED, APPENDS = 0, 1, 2, 3
NO_POSITION = np.int64(0x7FFFFFFFFFFFFFFF)
STOP = 9  # the slot of ``progress`` that asks the merge loop to stop
NO_LIMIT = np.int64(1) << 60  # max_len meaning "no max_token_length"
_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)
_POLY = np.uint64(0x100000001B3)


@wraps_around
@cached_njit(nogil=True)
def _mix(key, mask):
    h = np.uint64(key) * _HASH_MUL
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(mask))


# ----------------------------------------------------------------------------------------------
# pair table


# The merge loop's per-occurrence helpers (_find_pair, _new_pair, _append_posting and
# _apply_delta) allocate nothing and run without Numba's reference counting: with it, each
# call increfs and decrefs every array it is given, atomically (nine for _apply_delta).
@cached_njit(nogil=True, _nrt=False)
def _find_pair(slots, pairs, key):
    mask = len(slots) - 1
    s = _mix(key, mask)
    while True:
        p = slots[s]
        if p < 0 or pairs[p, KEY] == key:
            return p
        s = (s + 1) & mask


@njit(**INLINE)
def _fill_slots(slots, pairs, n_pairs):
    """Index rows 0..n_pairs-1 of ``pairs`` by key in the empty hash ``slots``."""
    mask = len(slots) - 1
    for p in range(n_pairs):
        s = _mix(pairs[p, KEY], mask)
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = p


@cached_njit(nogil=True)
def _rehash_pairs(pairs, n_pairs, size):
    slots = np.full(size, -1, dtype=np.int32)
    _fill_slots(slots, pairs, n_pairs)
    return slots


# Helpers of the merge loop have one explicit signature each: their call sites pass int32 and
# int64 symbols and constants (typed as literals), which would otherwise compile up to eight
# specialisations of one helper (a quarter of a first training's compile time).
_I64_2D = types.int64[:, ::1]


@cached_njit((types.int32[::1], _I64_2D, types.int64, types.int64), nogil=True, _nrt=False)
def _new_pair(slots, pairs, n_pairs, key):
    """Insert a key that is not in the table (capacity is ensured by the caller); returns its row."""
    mask = len(slots) - 1
    s = _mix(key, mask)
    while slots[s] >= 0:
        s = (s + 1) & mask
    slots[s] = n_pairs
    pairs[n_pairs, KEY] = key
    pairs[n_pairs, COUNT] = 0
    pairs[n_pairs, PSTART] = 0
    pairs[n_pairs, PLEN] = 0
    pairs[n_pairs, PCAP] = 0
    pairs[n_pairs, FIRST] = NO_POSITION
    pairs[n_pairs, STAMP] = -1
    pairs[n_pairs, LASTW] = -1
    return n_pairs


@cached_njit((_I64_2D, types.int64, types.int64), nogil=True)
def _room_for_pairs(pairs, n_pairs, need):
    """``pairs`` with room for ``need`` rows: itself, or a copy 1.25x larger (at least ``need``)."""
    if need <= len(pairs):
        return pairs
    # Rows past n_pairs are written whole by _new_pair: unwritten, their pages cost nothing.
    grown = np.empty((max(need, len(pairs) + len(pairs) // 4), NCOL), dtype=np.int64)
    grown[:n_pairs] = pairs[:n_pairs]
    return grown


@cached_njit((types.int64, types.int64), nogil=True)
def _slots_for(n_slots, need):
    """The hash size for ``need`` pairs at load factor <= 1/2: ``n_slots`` doubled as needed."""
    while 2 * need > n_slots:
        n_slots *= 2
    return n_slots


@cached_njit((types.int32[::1], _I64_2D, types.int64, types.int64), nogil=True)
def _reserve_pairs(slots, pairs, n_pairs, extra):
    """Room for ``extra`` more pairs at load factor <= 1/2; returns (slots, pairs)."""
    pairs = _room_for_pairs(pairs, n_pairs, n_pairs + extra)
    if 2 * (n_pairs + extra) > len(slots):
        slots = _rehash_pairs(pairs, n_pairs, _slots_for(len(slots), n_pairs + extra))
    return slots, pairs


@cached_njit(nogil=True, _nrt=False)
def _append_posting(pairs, p, w, pool, st):
    """Add word w to pair p's postings, once per run of appends to the same word. A full list
    moves to the end of the pool with twice the room (capacity is ensured by the caller)."""
    if pairs[p, LASTW] == w:
        return
    pairs[p, LASTW] = w
    n = pairs[p, PLEN]
    if n == pairs[p, PCAP]:
        cap = max(4, 2 * n)
        used = st[POOL_USED]
        start = pairs[p, PSTART]
        for k in range(n):  # a loop: a slice copy may allocate (no runtime here)
            pool[used + k] = pool[start + k]
        pairs[p, PSTART] = used
        pairs[p, PCAP] = cap
        st[POOL_USED] = used + cap
    pool[pairs[p, PSTART] + n] = w
    pairs[p, PLEN] = n + 1
    st[APPENDS] += 1


@cached_njit(nogil=True)
def _reserve_pool(pairs, n_pairs, pool, st, extra, drop_stale):
    """Room for ``extra`` more pool entries. Lists that moved leave dead space behind, and a
    pair with no occurrence left (count 0) holds only stale postings: when full, the pool is
    compacted to the live lists at their length (with ``drop_stale``, without the count-0 ones).
    If 1.5x the need fits, that is done in place: the lists move down in the order of their
    starts, so a list never overwrites one not yet moved, no second pool is alive, and the
    pages past them go back to the system. Otherwise they move to a new pool 1.5x the need."""
    if st[POOL_USED] + extra <= len(pool):
        return pool
    live = 0
    for p in range(n_pairs):
        if drop_stale and pairs[p, COUNT] == 0 and pairs[p, PCAP] > 0:
            pairs[p, PLEN] = 0
            pairs[p, PCAP] = 0
            pairs[p, LASTW] = -1  # its next posting must be appended even for the same word
        live += pairs[p, PLEN]
    size = live + live // 2 + extra
    if size > len(pool):
        out = np.empty(size, dtype=np.int32)
        used = 0
        for p in range(n_pairs):
            n = pairs[p, PLEN]
            start = pairs[p, PSTART]
            out[used:used + n] = pool[start:start + n]
            pairs[p, PSTART] = used
            pairs[p, PCAP] = n
            used += n
        st[POOL_USED] = used
        return out
    # Each list's first entry moves to its row (PCAP is rewritten anyway) and its row number
    # takes that place; a bit marks where a list starts: 1 bit a pool entry, no sort.
    starts = np.zeros((st[POOL_USED] >> 6) + 1, dtype=np.uint64)
    for p in range(n_pairs):
        if pairs[p, PLEN] > 0:
            start = pairs[p, PSTART]
            pairs[p, PCAP] = pool[start]
            pool[start] = p
            starts[start >> 6] |= np.uint64(1) << np.uint64(start & 63)
        else:
            pairs[p, PCAP] = 0
    used = 0
    for j in range(len(starts)):
        bits = starts[j]
        while bits != 0:
            start = (j << 6) + np.int64(trailing_zeros(bits))
            bits &= bits - np.uint64(1)
            p = pool[start]
            n = pairs[p, PLEN]
            pool[used] = pairs[p, PCAP]
            for i in range(1, n):  # forward: the target never runs past the source
                pool[used + i] = pool[start + i]
            pairs[p, PSTART] = used
            pairs[p, PCAP] = n
            used += n
    st[POOL_USED] = used
    release_pages(pool, used)  # the pages past the live lists, as a smaller new pool would
    return pool


@njit(**INLINE)
def _droppable(pairs, q, step, floor):
    c = pairs[q, COUNT]
    return pairs[q, STAMP] != step and (c == 0 or (c < floor and pairs[q, PLEN] > 0))


@cached_njit(nogil=True)
def _drop_dead_pairs(slots, pairs, n_pairs, step, touched, n_touched, near_step, min_dead, floor):
    """Remove the pairs that this step has not touched and whose count is 0, or below ``floor``
    (pairs never merged only: those have postings), if there are at least ``min_dead``: the
    other rows move down in order, ``touched`` is renumbered, the hash is rebuilt in place and
    the neighbour cache emptied. Returns the new number of pairs.

    Only under tie_break="hf", whose heap entries hold keys: a removed pair of count 0 that
    comes back is a new row with count 0 and no postings, as its old row would have been (its
    stale postings are dropped by the pool's compaction anyway). A removed pair below the floor
    is hidden: see ``_bpe_train``.
    """
    dead = 0
    for q in range(n_pairs):
        if _droppable(pairs, q, step, floor):
            dead += 1
    if dead < min_dead:
        return n_pairs
    new_row = np.empty(n_pairs, dtype=np.int32)
    kept = np.int64(0)  # not the literal: a kernel called while it is typed as one would compile for it too
    for q in range(n_pairs):
        if _droppable(pairs, q, step, floor):
            new_row[q] = -1
            continue
        new_row[q] = kept
        if kept != q:
            for c in range(NCOL):
                pairs[kept, c] = pairs[q, c]
        kept += 1
    for k in range(n_touched):
        touched[k] = new_row[touched[k]]
    near_step[:, :] = -1
    slots[:] = -1
    _fill_slots(slots, pairs, kept)
    return kept


# ----------------------------------------------------------------------------------------------
# heap of (count, aux[, pair row]): best = higher count, then lower aux


@cached_njit((_I64_2D, types.int64, types.int64, types.int64, types.int64), nogil=True, _nrt=False)
def _heap_push(heap, size, count, aux, p):
    """Push (count, aux) and, in a 3-column heap, the pair row ``p``; returns the new size.
    The caller makes sure there is room (a push right after a pop always has it): a push that
    could grow the heap would return it, and Numba's reference counting of that array cost the
    merge loop a pair of atomic operations per push."""
    heap[size, 0] = count
    heap[size, 1] = aux
    if heap.shape[1] > 2:
        heap[size, 2] = p
    sift_up(heap, size)
    return size + 1


@cached_njit(nogil=True, _nrt=False)
def _push_touched(heap, size, pairs, touched, n_touched, first_seen, floor):
    """Push each touched pair whose count is positive and not below ``floor``, as (count, key)
    or (count, first occurrence, row); returns the new size. Its own kernel without reference counting: in the
    merge loop, where the heap may be rebound, each push cost a decrement and an increment of it."""
    for k in range(n_touched):
        q = touched[k]
        if pairs[q, COUNT] > 0 and pairs[q, COUNT] >= floor:
            aux_q = pairs[q, FIRST] if first_seen else pairs[q, KEY]
            size = _heap_push(heap, size, pairs[q, COUNT], aux_q, q)
    return size


@cached_njit(nogil=True)
def _n_mergeable(pairs, n_pairs, floor):
    """How many pairs can still be merged: count > 0 and postings left (a merged pair has none),
    and not below ``floor`` (pairs below it are hidden: see ``_bpe_train``)."""
    n = 0
    for p in range(n_pairs):
        if pairs[p, COUNT] > 0 and pairs[p, COUNT] >= floor and pairs[p, PLEN] > 0:
            n += 1
    return n


@cached_njit(nogil=True)
def _heap_from_pairs(heap, pairs, n_pairs, first_seen, floor):
    """Fill ``heap`` (room for ``_n_mergeable`` entries at least) with one exact entry per pair
    that can still be merged and is not below ``floor``, as the merge loop pushes them:
    (count, key) or, under first-seen, (count, first occurrence, row). Returns its size.

    A lazy heap holds one entry per pair ever pushed, dead ones too; this one holds only the
    pairs alive. Pops still pick the same pair: every entry is exact or optimistic either way.
    """
    size = np.int64(0)  # not the literal: a kernel called while it is typed as one would compile for it too
    for p in range(n_pairs):
        if pairs[p, COUNT] > 0 and pairs[p, COUNT] >= floor and pairs[p, PLEN] > 0:
            heap[size, 0] = pairs[p, COUNT]
            heap[size, 1] = pairs[p, FIRST] if first_seen else pairs[p, KEY]
            if first_seen:
                heap[size, 2] = p
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        sift_down(heap, i, size)
    return size


@cached_njit((_I64_2D, types.int64), nogil=True, _nrt=False)
def _heap_pop(heap, size):
    """Remove the top entry (read it before calling); returns the new size."""
    size -= 1
    for c in range(heap.shape[1]):
        heap[0, c] = heap[size, c]
    sift_down(heap, np.int64(0), size)  # not the literal 0: one signature with _heap_from_pairs' calls
    return size


# ----------------------------------------------------------------------------------------------
# initial pair counts


@cached_njit(nogil=True, _nrt=False)
def _count_words_pairs(sym, words, tok_len, max_len, slots, pairs, st, w, first_new):
    """Pass 1 of ``_count_all_pairs`` from word w: counts, and in PCAP how many distinct words
    hold each pair (LASTW the last one), for the rows from ``first_new`` on: a pair not in the
    table is added, the rows before are left as they are. Returns the word that needs more rows or slots than
    there are (the caller makes room and calls again from it), or the number of words. Its own
    kernel without reference counting: with the arrays rebound in its loop, each position cost
    atomic increments and decrements of them."""
    n_pairs = st[N_PAIRS]
    for w in range(w, len(words)):  # noqa: B020 - resumes at the word it stopped at
        s = words[w, W_START]
        m = words[w, W_LEN]
        if n_pairs + m > pairs.shape[0] or 2 * (n_pairs + m) > slots.shape[0]:
            st[N_PAIRS] = n_pairs
            return w
        for i in range(s, s + m - 1):
            a = sym[i]
            b = sym[i + 1]
            if tok_len[a] + tok_len[b] > max_len:
                continue
            key = (np.int64(a) << 32) | np.int64(b)
            p = _find_pair(slots, pairs, key)
            if p < 0:
                p = _new_pair(slots, pairs, n_pairs, key)
                n_pairs += 1
            elif p < first_new:
                continue
            pairs[p, COUNT] += words[w, W_FREQ]
            if pairs[p, LASTW] != w:
                pairs[p, LASTW] = w
                pairs[p, PCAP] += 1
    st[N_PAIRS] = n_pairs
    return len(words)


@cached_njit(nogil=True, _nrt=False)
def _fill_postings(sym, words, tok_len, max_len, slots, pairs, pool, first_new):
    """Pass 2 of ``_count_all_pairs``: the postings of the rows from ``first_new`` on, in word
    order, at the starts set."""
    for w in range(len(words)):
        s = words[w, W_START]
        for i in range(s, s + words[w, W_LEN] - 1):
            a = sym[i]
            b = sym[i + 1]
            if tok_len[a] + tok_len[b] > max_len:
                continue
            p = _find_pair(slots, pairs, (np.int64(a) << 32) | np.int64(b))
            if p >= first_new and pairs[p, LASTW] != w:
                pairs[p, LASTW] = w
                pool[pairs[p, PSTART] + pairs[p, PLEN]] = w
                pairs[p, PLEN] += 1


@cached_njit(nogil=True)
def _count_all_pairs(sym, words, tok_len, max_len, reserve_rows):
    """Count every adjacent pair of every word (overlapping windows count) and build exact-size
    postings. ``pairs`` has ``reserve_rows`` rows from the start (at least 1024): rows are
    written in order, so the pages of the ones never used cost nothing. Returns (slots, pairs,
    n_pairs, pool, pool_used)."""
    n_words = len(words)
    pairs = np.empty((max(1024, reserve_rows), NCOL), dtype=np.int64)
    slots = np.full(2048, -1, dtype=np.int32)
    st = np.zeros(4, dtype=np.int64)
    w = np.int64(0)  # not the literal: a kernel called while it is typed as one would compile for it too
    while True:
        w = _count_words_pairs(sym, words, tok_len, max_len, slots, pairs, st, w, 0)
        if w >= n_words:
            break
        slots, pairs = _reserve_pairs(slots, pairs, st[N_PAIRS], words[w, W_LEN])
    n_pairs = st[N_PAIRS]
    pool_used = 0
    for p in range(n_pairs):
        pairs[p, PSTART] = pool_used
        pool_used += pairs[p, PCAP]
        pairs[p, LASTW] = -1
    pool = np.empty(pool_used + pool_used // 4 + 1024, dtype=np.int32)
    _fill_postings(sym, words, tok_len, max_len, slots, pairs, pool, 0)
    return slots, pairs, n_pairs, pool, pool_used


@cached_njit(nogil=True)
def _first_occurrence(sym, words, tok_len, pairs, p, pool):
    """(word << 32 | position of the left symbol) of the pair's first occurrence, or NO_POSITION."""
    key = pairs[p, KEY]
    a = np.int32(key >> 32)
    b = np.int32(key & 0xFFFFFFFF)
    best = NO_POSITION
    start = pairs[p, PSTART]
    for k in range(start, start + pairs[p, PLEN]):
        w = np.int64(pool[k])
        if (w << 32) >= best:
            continue
        pos = 0
        s = words[w, W_START]
        for i in range(s, s + words[w, W_LEN] - 1):
            if sym[i] == a and sym[i + 1] == b:
                best = (w << 32) | pos
                break
            pos += tok_len[sym[i]]
    return best


@cached_njit(nogil=True)
def _unhide_pairs(sym, words, tok_len, max_len, slots, pairs, pool, st, drop_stale):
    """Add every pair of the words that is not in the table (the hidden ones) with its count
    and postings, counted as ``_count_all_pairs`` does; the rows in the table are left as they
    are. Returns (slots, pairs, pool); ``st`` has the new number of pairs and pool use."""
    first_new = st[N_PAIRS]
    cst = np.zeros(4, dtype=np.int64)
    cst[N_PAIRS] = first_new
    w = np.int64(0)  # not the literal: a kernel called while it is typed as one would compile for it too
    while True:
        w = _count_words_pairs(sym, words, tok_len, max_len, slots, pairs, cst, w, first_new)
        if w >= len(words):
            break
        slots, pairs = _reserve_pairs(slots, pairs, cst[N_PAIRS], words[w, W_LEN])
    n_pairs = cst[N_PAIRS]
    st[N_PAIRS] = n_pairs
    need = 0
    for p in range(first_new, n_pairs):
        # Each new list's length waits in LASTW while the pool makes room (which may compact
        # the pool and rewrite the other columns of postings).
        need += pairs[p, PCAP]
        pairs[p, LASTW] = pairs[p, PCAP]
        pairs[p, PCAP] = 0
        pairs[p, PLEN] = 0
    pool = _reserve_pool(pairs, n_pairs, pool, st, need, drop_stale)
    for p in range(first_new, n_pairs):
        pairs[p, PSTART] = st[POOL_USED]
        pairs[p, PCAP] = pairs[p, LASTW]
        st[POOL_USED] += pairs[p, LASTW]
        pairs[p, LASTW] = -1
    _fill_postings(sym, words, tok_len, max_len, slots, pairs, pool, first_new)
    return slots, pairs, pool


@cached_njit(nogil=True)
def _rebuild_heap(heap, pairs, n_pairs, first_seen):
    """The heap rebuilt from the table with every pair that can be merged; a new array when it
    lacks room for twice them. Returns (heap, size)."""
    n_live = _n_mergeable(pairs, n_pairs, 0)
    if 2 * n_live > len(heap):
        n_cols = heap.shape[1]
        heap = np.empty((0, n_cols), dtype=np.int64)
        heap = np.empty((max(16, 2 * n_live), n_cols), dtype=np.int64)
    return heap, _heap_from_pairs(heap, pairs, n_pairs, first_seen, 0)


@cached_njit(nogil=True)
def _unhide_all(sym, words, tok_len, max_len, slots, pairs, pool, st, drop_stale, heap, first_seen):
    """Every hidden pair back in the table, and the heap rebuilt from it; returns (slots,
    pairs, pool, heap, heap size)."""
    slots, pairs, pool = _unhide_pairs(sym, words, tok_len, max_len, slots, pairs, pool, st, drop_stale)
    heap, size = _rebuild_heap(heap, pairs, st[N_PAIRS], first_seen)
    return slots, pairs, pool, heap, size


# ----------------------------------------------------------------------------------------------
# token identity: base-symbol sequences, hashed


@cached_njit(nogil=True)
def _find_token(tslots, tok_hash, tok_seq_start, tok_seq_len, tok_seq, h, seq_buf, n):
    mask = len(tslots) - 1
    s = _mix(np.int64(h), mask)
    while True:
        t = tslots[s]
        if t < 0:
            return -1
        if tok_hash[t] == h and tok_seq_len[t] == n:
            st = tok_seq_start[t]
            same = True
            for k in range(n):
                if tok_seq[st + k] != seq_buf[k]:
                    same = False
                    break
            if same:
                return t
        s = (s + 1) & mask


@cached_njit(nogil=True)
def _register_token(tslots, tok_hash, t):
    mask = len(tslots) - 1
    s = _mix(np.int64(tok_hash[t]), mask)
    while tslots[s] >= 0:
        s = (s + 1) & mask
    tslots[s] = t


# ----------------------------------------------------------------------------------------------
# the merge loop


@cached_njit(types.void(types.int32[::1], _I64_2D, types.int32[::1], types.int64[::1], types.int64[::1], _I64_2D, _I64_2D,
                        *([types.int64] * 7), types.int64[::1], types.int64), nogil=True, _nrt=False)
def _apply_delta(slots, pairs, pool, touched, st, near, near_step, side, step, x, y, d, w, position,
                 tok_len, max_len):
    """count(x, y) += d; on a gain, add word w to its postings and mark it touched this step.

    Pairs longer than ``max_len`` (max_token_length) are never counted.
    Within one merge every delta pair has a fixed symbol on one side (x a, x t, b y or t y), so
    ``near[side, other symbol]`` caches its row: the hash table is probed once per distinct
    neighbour per merge, not once per occurrence.
    """
    if max_len < NO_LIMIT and tok_len[x] + tok_len[y] > max_len:
        return
    other = x if side < 2 else y
    if near_step[side, other] == step:
        p = near[side, other]
    else:
        key = (np.int64(x) << 32) | np.int64(y)
        p = _find_pair(slots, pairs, key)
        if p < 0 and d > 0:
            p = _new_pair(slots, pairs, st[N_PAIRS], key)
            st[N_PAIRS] += 1
        near[side, other] = p
        near_step[side, other] = step
    if p < 0:
        return  # a loss of a hidden pair (one in the table has all its occurrences counted)
    pairs[p, COUNT] += d
    if d > 0:
        _append_posting(pairs, p, w, pool, st)
        if position < pairs[p, FIRST]:
            pairs[p, FIRST] = position
        if pairs[p, STAMP] != step:
            pairs[p, STAMP] = step
            touched[st[N_TOUCHED]] = p
            st[N_TOUCHED] += 1


@njit(**INLINE)
def _pool_need(st, m, reused):
    """Pool entries a word of m symbols may need in one merge step: its postings appended, and
    lists that move with twice their length (a re-used id's old lists too)."""
    return 2 * (st[APPENDS] + 2 * m) + 8 * m + 8 + (2 * st[POOL_USED] if reused else 0)


@cached_njit(nogil=True, _nrt=False)
def _rewrite_postings(sym, words, words_flat, post_buf, k, n_post, a, b, t, reused, slots, pairs, pool, touched,
                      st, near, near_step, step, tok_len, max_len, first_seen, progress):
    """Merge (a, b) into t in the words of postings ``k``.. of ``post_buf``, applying the
    neighbour pairs' deltas. Returns the posting whose word needs more rows, slots, pool or
    touched entries than there are (the caller makes room and calls again from it), or
    ``n_post`` when done. Room is checked word by word, so the per-occurrence helpers never
    reallocate: a word of m symbols adds at most m pairs, m postings and m touched entries."""
    for k in range(k, n_post):  # noqa: B020 - resumes at the posting it stopped at
        # Overlap the cache misses of later postings: their word row 16 ahead, their
        # symbols 8 ahead (the row fetched 8 postings ago says where they are).
        if k + 16 < n_post:
            prefetch(words_flat, np.int64(post_buf[k + 16]) * 4)
        if k + 8 < n_post:
            prefetch(sym, words[post_buf[k + 8], W_START])
        w = np.int64(post_buf[k])
        s = words[w, W_START]
        m = words[w, W_LEN]
        first = -1
        for i in range(s, s + m - 1):
            if sym[i] == a and sym[i + 1] == b:
                first = i
                break
        if first < 0:
            continue  # stale posting
        if ((st[N_PAIRS] + m > pairs.shape[0]) | (2 * (st[N_PAIRS] + m) > slots.shape[0])
                | (st[POOL_USED] + _pool_need(st, m, reused) > pool.shape[0]) | (st[N_TOUCHED] + m > touched.shape[0])):
            return k
        progress[2] += 1
        f = words[w, W_FREQ]
        out_pos = 0  # position of the next output symbol (only first-seen needs it)
        if first_seen:
            for i in range(s, first):
                out_pos += tok_len[sym[i]]
        o = first
        r = first
        end = s + m
        while r < end:
            if r + 1 < end and sym[r] == a and sym[r + 1] == b:
                if o > s:
                    x = sym[o - 1]
                    x_pos = out_pos - tok_len[x] if first_seen else 0
                    _apply_delta(slots, pairs, pool, touched, st, near, near_step, 0, step,
                                 x, a, -f, w, x_pos, tok_len, max_len)
                    _apply_delta(slots, pairs, pool, touched, st, near, near_step, 1, step,
                                 x, t, f, w, (w << 32) | x_pos, tok_len, max_len)
                if r + 2 < end:
                    y = sym[r + 2]
                    _apply_delta(slots, pairs, pool, touched, st, near, near_step, 2, step,
                                 b, y, -f, w, out_pos, tok_len, max_len)
                    _apply_delta(slots, pairs, pool, touched, st, near, near_step, 3, step,
                                 t, y, f, w, (w << 32) | out_pos, tok_len, max_len)
                sym[o] = t
                if first_seen:
                    out_pos += tok_len[t]
                o += 1
                r += 2
            else:
                sym[o] = sym[r]
                if first_seen:
                    out_pos += tok_len[sym[r]]
                o += 1
                r += 1
        words[w, W_LEN] = o - s
    return n_post


@wraps_around  # its tokens' polynomial hashes (tok_hash, tok_pow) wrap
@cached_njit(nogil=True)
def _bpe_train(sym, words, tok_len_base, tok_seq_base, tok_seq_len_base,
               n_ids_target, min_frequency, max_len, first_seen, reserve_rows, floor_cap, progress):
    """Learn merges until ``n_ids_target`` ids exist (or no pair is frequent enough).

    ``words`` is int64 (n, 4), a row per word (W_START, W_LEN, W_FREQ; the fourth column pads
    the row to 32 bytes); lengths are rewritten in place, like ``sym``. ``reserve_rows`` pair
    rows are allocated at once: while they last, the table grows by using more of them (no
    copy, so no second table resident); past them it is copied to a bigger one.

    ``floor_cap`` bounds the floor below which pairs are hidden (module docstring; 0: none is).

    Ids 0..len(tok_len_base)-1 exist at the start (special tokens, then the alphabet, in the
    order that breaks ties); base symbol sequences (tok_seq_*) say which strings they are,
    so a merge that rebuilds an existing string re-uses its id. ``progress[0]`` is updated
    with the number of merges done (read by another thread for the progress bar); [1] counts
    postings visited, [2] words rewritten, [3] heap pops, [4] pairs pushed, [5] pairs, [6] pool
    size, [7] pair rows allocated (for benchmarks); [STOP] set by the caller ends the loop after
    the merge it is in (Ctrl-C); [8] counts the large arrays freed, so the
    caller can return their memory to the system while the loop runs.

    Returns (merge_left, merge_right, merge_new, n_merges, n_ids).
    """
    n_base = len(tok_len_base)
    cap_ids = max(n_ids_target, n_base) + 1
    tok_len = np.zeros(cap_ids, dtype=np.int64)
    tok_len[:n_base] = tok_len_base
    tok_hash = np.zeros(cap_ids, dtype=np.uint64)
    tok_pow = np.ones(cap_ids, dtype=np.uint64)
    tok_seq_start = np.zeros(cap_ids, dtype=np.int64)
    tok_seq_len = np.zeros(cap_ids, dtype=np.int64)
    seq_cap = max(len(tok_seq_base) * 2, 4 * cap_ids + 64)
    tok_seq = np.empty(seq_cap, dtype=np.int32)
    tok_seq[:len(tok_seq_base)] = tok_seq_base
    seq_used = len(tok_seq_base)
    tslots = np.full(1 << int(np.ceil(np.log2(2 * cap_ids + 2))), -1, dtype=np.int32)
    pos = 0
    for t in range(n_base):
        n = tok_seq_len_base[t]
        tok_seq_start[t] = pos
        tok_seq_len[t] = n
        h = np.uint64(0)
        pw = np.uint64(1)
        for k in range(pos, pos + n):
            h = h * _POLY + np.uint64(tok_seq[k] + 1)
            pw = pw * _POLY
        tok_hash[t] = h
        tok_pow[t] = pw
        pos += n
        if n > 0:
            _register_token(tslots, tok_hash, t)

    words_flat = words.reshape(-1)
    slots, pairs, n_pairs, pool, pool_used = _count_all_pairs(sym, words, tok_len, max_len, reserve_rows)
    # The rows in use grow 1.25x at a time, as a table copied at each growth would.
    rows = min(len(pairs), max(1024, n_pairs + n_pairs // 4))
    st = np.zeros(4, dtype=np.int64)
    st[N_PAIRS] = n_pairs
    st[POOL_USED] = pool_used
    if first_seen:
        for p in range(n_pairs):
            pairs[p, FIRST] = _first_occurrence(sym, words, tok_len, pairs, p, pool)
    # Pairs below the floor are hidden (see the docstring); it starts at 2 and rises with the
    # best count, never past floor_cap (0: no pair is hidden).
    floor = min(np.int64(2), floor_cap)
    heap = np.empty((max(16, 2 * _n_mergeable(pairs, n_pairs, floor)), 3 if first_seen else 2), dtype=np.int64)
    size = _heap_from_pairs(heap, pairs, n_pairs, first_seen, floor)

    merge_left = np.empty(max(16, cap_ids - n_base), dtype=np.int32)
    merge_right = np.empty_like(merge_left)
    merge_new = np.empty_like(merge_left)
    n_merges = 0
    n_ids = n_base
    touched = np.empty(1024, dtype=np.int64)
    near = np.empty((4, cap_ids), dtype=np.int64)
    post_buf = np.empty(1024, dtype=np.int32)
    near_step = np.full((4, cap_ids), -1, dtype=np.int64)
    seq_buf = np.empty(64, dtype=np.int32)
    # Stale postings can be dropped unless first-seen could still find an occurrence in a word
    # of count 0 (only train_bpe_from_counts makes those).
    drop_stale = np.bool_(True)  # not the literal: a kernel called while it is typed as one would compile for it too
    if first_seen:
        for w in range(len(words)):
            if words[w, W_FREQ] == 0:
                drop_stale = False
    dropped = 0  # pairs removed from the table
    step = np.int64(0)  # not the literal: a kernel called while it is typed as one would compile for it too
    while n_ids < n_ids_target and progress[STOP] == 0:
        if size == 0 and (floor == 0 or floor <= min_frequency):
            break  # no pair left, or only hidden ones, below min_frequency
        if size == 0 or heap[0, 0] < floor and not (heap[0, 0] < min_frequency and floor <= min_frequency):
            # A hidden pair may be as good as the best: bring them all back, recounted.
            slots, pairs, pool, heap, size = _unhide_all(sym, words, tok_len, max_len, slots, pairs, pool, st, drop_stale,
                                                         heap, first_seen)
            rows = max(rows, st[N_PAIRS])
            floor = floor_cap = np.int64(0)
            progress[8] += 1
            continue
        count = heap[0, 0]
        aux = heap[0, 1]
        p = heap[0, 2] if first_seen else _find_pair(slots, pairs, aux)
        size = _heap_pop(heap, size)
        current = pairs[p, COUNT] if p >= 0 else 0
        progress[3] += 1
        if count != current:
            # Stale: re-queue with the current count (HF's lazy refresh); a pair that fell
            # below the floor, or left the table, is hidden instead.
            if floor > 0:
                if p >= 0 and current >= floor:
                    size = _heap_push(heap, size, current, aux, p)
            elif current > 0 or not first_seen:
                size = _heap_push(heap, size, current, aux, p)
            continue
        if first_seen:
            true_first = _first_occurrence(sym, words, tok_len, pairs, p, pool)
            if true_first == NO_POSITION:
                continue
            if true_first != aux:
                size = _heap_push(heap, size, current, true_first, p)
                continue
        if count < 1 or count < min_frequency:
            break
        if (count >> 6) > floor:
            floor = min(floor_cap, count >> 6)
        key = pairs[p, KEY]
        a = np.int32(key >> 32)
        b = np.int32(key & 0xFFFFFFFF)

        # The merged string; an existing id for it is re-used.
        n = tok_seq_len[a] + tok_seq_len[b]
        if n > len(seq_buf):
            seq_buf = np.empty(2 * n, dtype=np.int32)
        sa = tok_seq_start[a]
        sb = tok_seq_start[b]
        seq_buf[:tok_seq_len[a]] = tok_seq[sa:sa + tok_seq_len[a]]
        seq_buf[tok_seq_len[a]:n] = tok_seq[sb:sb + tok_seq_len[b]]
        h = tok_hash[a] * tok_pow[b] + tok_hash[b]
        t = _find_token(tslots, tok_hash, tok_seq_start, tok_seq_len, tok_seq, h, seq_buf, n)
        if t < 0:
            t = n_ids
            n_ids += 1
            tok_len[t] = tok_len[a] + tok_len[b]
            tok_hash[t] = h
            tok_pow[t] = tok_pow[a] * tok_pow[b]
            if seq_used + n > len(tok_seq):
                grown = np.empty(2 * (seq_used + n), dtype=np.int32)
                grown[:seq_used] = tok_seq[:seq_used]
                tok_seq = grown
            tok_seq[seq_used:seq_used + n] = seq_buf[:n]
            tok_seq_start[t] = seq_used
            tok_seq_len[t] = n
            seq_used += n
            _register_token(tslots, tok_hash, t)
        if n_merges >= len(merge_left):
            grown_l = np.empty(2 * len(merge_left), dtype=np.int32)
            grown_r = np.empty_like(grown_l)
            grown_n = np.empty_like(grown_l)
            grown_l[:n_merges] = merge_left[:n_merges]
            grown_r[:n_merges] = merge_right[:n_merges]
            grown_n[:n_merges] = merge_new[:n_merges]
            merge_left, merge_right, merge_new = grown_l, grown_r, grown_n
        merge_left[n_merges] = a
        merge_right[n_merges] = b
        merge_new[n_merges] = t
        n_merges += 1

        # A posting list that fills up moves with twice its length; new lists start empty, so a
        # list is never longer than this step's appends; a re-used id may also move old lists.
        reused = t < n_ids - 1 or t < n_base
        # Take this pair's postings out of the pool: it may be compacted while they are used.
        n_post = pairs[p, PLEN]
        if n_post > len(post_buf):
            post_buf = np.empty(2 * n_post, dtype=np.int32)
        start = pairs[p, PSTART]
        post_buf[:n_post] = pool[start:start + n_post]
        pairs[p, PLEN] = 0
        pairs[p, PCAP] = 0
        # A re-used id may make this pair again later, in the word it was last appended for:
        # that posting must not be taken for one already in its (now empty) list.
        pairs[p, LASTW] = -1
        if reused and floor > 0:
            # A re-used id can raise a hidden pair's count: bring them all back first (after
            # the merged pair's postings are out, so that the heap rebuilt leaves it out).
            slots, pairs, pool, heap, size = _unhide_all(sym, words, tok_len, max_len, slots, pairs, pool, st, drop_stale,
                                                         heap, first_seen)
            rows = max(rows, st[N_PAIRS])
            floor = floor_cap = np.int64(0)
            progress[8] += 1
        st[N_TOUCHED] = 0
        st[APPENDS] = 0
        # Rewrite every word that holds (a, b), left to right, non-overlapping, in place; the
        # rewriting stops at a word that needs more room than the arrays have, which is made
        # here (the arrays are rebound only in this loop, not once per posting).
        progress[1] += n_post
        k = 0
        while True:
            k = _rewrite_postings(sym, words, words_flat, post_buf, k, n_post, a, b, t, reused, slots, pairs, pool,
                                  touched, st, near, near_step, step, tok_len, max_len, first_seen, progress)
            if k >= n_post:
                break
            m = words[np.int64(post_buf[k]), W_LEN]
            if st[N_PAIRS] + m > rows or 2 * (st[N_PAIRS] + m) > len(slots):
                if not first_seen and st[N_PAIRS] + m > rows:
                    # Reuse the rows of dead pairs (an eighth of the table at least: their pages
                    # stay in use, new rows would add pages) instead of growing it; p keeps its
                    # count, so its row is kept (it may move).
                    kept = _drop_dead_pairs(slots, pairs, st[N_PAIRS], step, touched, st[N_TOUCHED], near_step, rows // 8, floor)
                    dropped += st[N_PAIRS] - kept
                    st[N_PAIRS] = kept
                # As _reserve_pairs, but each old table is freed before the next is made.
                need_rows = st[N_PAIRS] + m + rows // 4
                if need_rows > rows:
                    rows = max(need_rows, rows + rows // 4)
                    if rows > len(pairs):
                        pairs = _room_for_pairs(pairs, st[N_PAIRS], rows)
                        progress[8] += 1
                if 2 * need_rows > len(slots):
                    n_slots = _slots_for(len(slots), need_rows)
                    slots = np.empty(0, dtype=np.int32)
                    slots = _rehash_pairs(pairs, st[N_PAIRS], n_slots)
                    progress[8] += 1
            need = _pool_need(st, m, reused)
            if st[POOL_USED] + need > len(pool):
                pool = _reserve_pool(pairs, st[N_PAIRS], pool, st, need, drop_stale)
                progress[8] += 1  # a new pool, or the bitmap of list starts of an in-place compaction
            if st[N_TOUCHED] + m > len(touched):
                grown_t = np.empty(2 * (st[N_TOUCHED] + m), dtype=np.int64)
                grown_t[:st[N_TOUCHED]] = touched[:st[N_TOUCHED]]
                touched = grown_t
        if first_seen:
            pairs[p, COUNT] = 0
        progress[4] += st[N_TOUCHED]
        if len(heap) < size + st[N_TOUCHED]:
            # Full (of stale and dead entries mostly): rebuilt from the table, the touched pairs
            # with their new counts, in place if it has room for twice the live pairs.
            n_live = _n_mergeable(pairs, st[N_PAIRS], floor)
            if 2 * n_live > len(heap):
                n_cols = heap.shape[1]
                heap = np.empty((0, n_cols), dtype=np.int64)  # the old one freed before the new one is made
                heap = np.empty((2 * n_live, n_cols), dtype=np.int64)
                progress[8] += 1
            size = _heap_from_pairs(heap, pairs, st[N_PAIRS], first_seen, floor)
        else:
            size = _push_touched(heap, size, pairs, touched, st[N_TOUCHED], first_seen, floor)
        step += 1
        progress[0] = n_merges
    progress[5] = st[N_PAIRS] + dropped
    progress[6] = len(pool)
    progress[7] = rows
    return merge_left[:n_merges].copy(), merge_right[:n_merges].copy(), merge_new[:n_merges].copy(), n_merges, n_ids


# ----------------------------------------------------------------------------------------------
# continued training: a merge list applied to words in order


@cached_njit(nogil=True)
def _merge_index(left, right):
    """Open-addressing table (pair key -> its first merge) and, per merge, the next merge of
    the same pair (a list may hold a pair twice: a re-used id can make it again)."""
    n = len(left)
    size = 1 << int(np.ceil(np.log2(2 * n + 2)))
    slots = np.full(size, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    mask = size - 1
    for i in range(n - 1, -1, -1):
        key = (np.int64(left[i]) << 32) | np.int64(right[i])
        s = _mix(key, mask)
        while slots[s] >= 0 and ((np.int64(left[slots[s]]) << 32) | np.int64(right[slots[s]])) != key:
            s = (s + 1) & mask
        nxt[i] = slots[s]
        slots[s] = i
    return slots, nxt


@cached_njit(nogil=True)
def _next_merge(slots, nxt, left, right, a, b, floor):
    """The first merge of the pair (a, b) at index >= floor, or len(left)."""
    key = (np.int64(a) << 32) | np.int64(b)
    mask = len(slots) - 1
    s = _mix(key, mask)
    while True:
        i = slots[s]
        if i < 0:
            return len(left)
        if ((np.int64(left[i]) << 32) | np.int64(right[i])) == key:
            while i >= 0 and i < floor:
                i = nxt[i]
            return i if i >= 0 else len(left)
        s = (s + 1) & mask


@cached_njit(nogil=True)
def _replay_merges(sym, w_start, w_len, left, right, result):
    """Apply merges 0, 1, 2, ... in order to every word, each to all its occurrences left to
    right, exactly as training does (in place: ``sym`` is rewritten, ``w_len`` shrinks).

    Per word: the next merge to apply is the earliest one, at or after the last one applied,
    whose pair the word holds; a word of m symbols needs at most m - 1 rounds of one scan.
    """
    slots, nxt = _merge_index(left, right)
    n = len(left)
    for w in range(len(w_start)):
        s = w_start[w]
        m = w_len[w]
        floor = 0
        while m >= 2:
            best = n
            for i in range(s, s + m - 1):
                k = _next_merge(slots, nxt, left, right, sym[i], sym[i + 1], floor)
                if k < best:
                    best = k
            if best == n:
                break
            a = left[best]
            b = right[best]
            o = s
            r = s
            end = s + m
            while r < end:
                if r + 1 < end and sym[r] == a and sym[r + 1] == b:
                    sym[o] = result[best]
                    r += 2
                else:
                    sym[o] = sym[r]
                    r += 1
                o += 1
            m = o - s
            floor = best + 1
        w_len[w] = m
