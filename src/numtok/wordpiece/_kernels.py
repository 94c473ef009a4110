"""Numba kernels of WordPiece (private: ``numtok.wordpiece`` is the API).

Training data model
    Positions: the unique words' characters laid end to end in first-seen order, so a global
    position ``g`` orders occurrences exactly as the course's code iterates them (word by word,
    left to right). ``sym[g]`` is the id of the symbol that starts at ``g`` (-1 inside a
    symbol), ``nxt``/``prv`` link the symbols of a word, ``wid[g]`` is the word of ``g``.
    Symbols are token strings: ids are vocabulary ids (special tokens first, then the sorted
    alphabet, then merges), and a merge whose string already exists re-uses that id.
    Pairs: open addressing on the packed key ``left << 32 | right`` into one int64 row per
    pair (64 bytes: key, count, heap version, flags, occurrence-list head and tail, next pair
    in its left and in its right symbol's list, cached first occurrence).
    Occurrences: per pair, a linked list of positions in one int32 pool, appended in
    ascending position order (a merge walks its own list in order, so the pairs it creates are
    appended in order too; an out-of-order append, possible only when a merge re-uses an
    existing id, flags the list for sorting); dead entries are skipped lazily (a dead
    occurrence never revives: the symbol starting at a position only ever grows).
    Adjacency: every pair is linked into the list of its left symbol and of its right symbol.

Exact selection of the best pair
    score = count / (freq(left) * freq(right)) depends on symbol frequencies, which every merge
    changes, so stale heap entries can be too low as well as too high: a lazily validated heap
    keyed on counts (HF's BPE trick) is not enough. But a merge (a, b) -> n changes counts only
    of pairs that contain a, b or n, and frequencies only of a, b and n. So after each merge
    every live pair in the adjacency lists of a, b and n is re-pushed with its new score and a
    new version number; any heap entry whose version is not its pair's current version is
    discarded when popped. The heap (rows of score, first occurrence, pair, version) orders by
    (score desc, first occurrence asc), the course's tie-break (first pair in iteration order
    wins), and is compacted when stale entries outnumber live pairs. On mixed-10M at 30,522
    that is ~4M pushes for ~30k merges.
    Scores are IEEE doubles computed as count / (freq(left) * freq(right)), the course's
    expression, so ties and order are bit-identical to it whenever the product of frequencies
    is below 2**53.

Encoding
    A trie of every vocabulary string over code points, as an open-addressing table of packed
    edges ``(node << 21 | code point) << 21 | child`` (one int64 per probe, ~1 MB for BERT),
    plus dense tables for the root's and the prefix node's ASCII children. One kernel
    normalizes (BERT), pre-tokenizes and matches each word longest-first in a single pass over
    the text's code points; a continuation piece is matched from the node of the prefix
    (``"##"``), which is exactly HF's lookup of ``prefix + substring``.

Performance notes
    - No array is re-bound inside a hot loop: when an array must grow, the inner kernel
      returns and an outer one grows it and resumes. (Re-binding an array variable in a loop
      makes Numba reference-count it on every iteration, atomically, which outweighs the
      loop's own work.)
    - Encoding allocates its output for the worst case (one token per normalized character)
      for the same reason, and takes few array arguments: Numba's dispatch cost grows with each.
    - No ``inline="always"``: LLVM inlines the small helpers anyway (same speed, measured),
      while Numba-level inlining types each helper again at every call site, which lengthened
      the training kernel's compile.
"""

from __future__ import annotations

import numpy as np

from .._native.jit import cached_njit, wraps_around
from ..train._heap import sift_down, sift_up

# Flag bits of the per-code-point class table.
F_CONTROL = 1  # dropped by clean_text
F_SPACE = 2  # becomes " " under clean_text
F_SPLIT = 4  # whitespace for the pre-tokenizers (Rust char::is_whitespace)
F_PUNCT = 8  # isolated by the BERT pre-tokenizer
F_CJK = 16  # padded with spaces by handle_chinese_chars
F_MARK = 32  # nonspacing mark, dropped by strip_accents after NFD

MODE_BERT = 0
MODE_WHITESPACE = 1
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
N_CP = 0x110000


@wraps_around
@cached_njit(nogil=True)
def _mix(key):
    h = np.uint64(key) * _GOLD
    return h ^ (h >> np.uint64(31))


@cached_njit(nogil=True)
def _grow(a, need):
    """``a`` with room for at least ``need`` rows (doubling); rows past len(a) uninitialized."""
    if need <= len(a):
        return a
    cap = max(need, 2 * len(a), 16)
    shape = (cap,) + a.shape[1:]
    b = np.empty(shape, a.dtype)
    b[: len(a)] = a
    return b


# ----------------------------------------------------------------------------------------------
# BERT normalization of one code point


@cached_njit(nogil=True)
def _normalize_one(c, flags, lmap, lexp, clean, cjk, strip, lower):
    """Normalize one code point: (n, c0, c1, c2, isolate) with n in 0..3 output code points;
    ``isolate`` marks a CJK ideograph that handle_chinese_chars pads with spaces."""
    if 0xD800 <= c <= 0xDFFF:
        c = 0xFFFD  # a lone surrogate (HF cannot receive one at all)
    f = flags[c]
    if clean:
        if f & F_CONTROL:
            return 0, 0, 0, 0, False
        if f & F_SPACE:
            return 1, 32, 0, 0, False
    iso = cjk and (f & F_CJK) != 0
    if strip and (f & F_MARK):
        return 0, 0, 0, 0, False
    if lower:
        m = lmap[c]
        if m >= 0:
            return 1, np.int64(m), 0, 0, iso
        e = -1 - m
        k = 1 if lexp[e, 1] < 0 else (2 if lexp[e, 2] < 0 else 3)
        return k, np.int64(lexp[e, 0]), np.int64(lexp[e, 1]), np.int64(lexp[e, 2]), iso
    return 1, np.int64(c), 0, 0, iso


@cached_njit(nogil=True)
def normalize_kernel(cps, flags, lmap, lexp, opts):
    """BertNormalizer over code points (after NFD when stripping accents): uint32 array."""
    clean, cjk, strip, lower = opts[0] != 0, opts[1] != 0, opts[2] != 0, opts[3] != 0
    out = np.empty(3 * len(cps), np.uint32)
    n = 0
    for i in range(len(cps)):
        k, c0, c1, c2, iso = _normalize_one(np.int64(cps[i]), flags, lmap, lexp, clean, cjk, strip, lower)
        if iso:
            out[n] = 32
            out[n + 1] = c0
            out[n + 2] = 32
            n += 3
            continue
        if k > 0:
            out[n] = c0
            n += 1
        if k > 1:
            out[n] = c1
            n += 1
        if k > 2:
            out[n] = c2
            n += 1
    return out[:n].copy()


@cached_njit(nogil=True)
def pre_tokenize_kernel(cps, flags, mode):
    """[start, end) code point spans of the words of ``cps`` (no normalization)."""
    spans = np.empty((len(cps), 2), np.int64)
    k = 0
    start = -1
    for i in range(len(cps)):
        c = np.int64(cps[i])
        if 0xD800 <= c <= 0xDFFF:
            c = 0xFFFD
        f = flags[c]
        if f & F_SPLIT:
            if start >= 0:
                spans[k, 0] = start
                spans[k, 1] = i
                k += 1
                start = -1
        elif mode == MODE_BERT and (f & F_PUNCT):
            if start >= 0:
                spans[k, 0] = start
                spans[k, 1] = i
                k += 1
                start = -1
            spans[k, 0] = i
            spans[k, 1] = i + 1
            k += 1
        elif start < 0:
            start = i
    if start >= 0:
        spans[k, 0] = start
        spans[k, 1] = len(cps)
        k += 1
    return spans[:k].copy()


# ----------------------------------------------------------------------------------------------
# vocabulary trie and encoding


@cached_njit(nogil=True)
def _child(table, node, c):
    """Child of ``node`` by code point ``c`` in the packed trie table, or -1."""
    key = (np.int64(node) << 21) | c
    mask = len(table) - 1
    s = np.int64(_mix(key) & np.uint64(mask))
    while True:
        e = table[s]
        if e < 0:
            return np.int64(-1)
        if (e >> 21) == key:
            return e & 0x1FFFFF
        s = (s + 1) & mask


@cached_njit(nogil=True)
def _trie_insert(table, key, value):
    mask = len(table) - 1
    s = np.int64(_mix(key) & np.uint64(mask))
    while table[s] >= 0:
        s = (s + 1) & mask
    table[s] = (key << 21) | value


@cached_njit(nogil=True)
def build_trie(tok_cps, tok_off, tok_ids, prefix_cps):
    """Trie of the vocabulary strings over code points.

    Returns one int64 array: [table size, node count, prefix node (-1: none), table, token id
    of each node (-1: none), ASCII children of the root and of the prefix node]. ``table`` packs each
    edge as ``(parent << 21 | code point) << 21 | child`` in open addressing (load <= 1/2),
    one int64 per probe: ~1 MB for BERT's 30,522 tokens.
    """
    n_chars = tok_off[-1]
    max_nodes = n_chars + 1
    size = 16
    while size < 2 * max_nodes:
        size *= 2
    table = np.full(size, -1, np.int64)
    term = np.full(max_nodes, -1, np.int32)
    n_nodes = 1
    for t in range(len(tok_off) - 1):
        node = np.int64(0)
        for i in range(tok_off[t], tok_off[t + 1]):
            c = np.int64(tok_cps[i])
            child = _child(table, node, c)
            if child < 0:
                if n_nodes >= (1 << 21):
                    raise ValueError("vocabulary too large: its trie needs more than 2,097,151 nodes")
                child = n_nodes
                n_nodes += 1
                _trie_insert(table, (node << 21) | c, child)
            node = child
        if tok_off[t + 1] > tok_off[t] and term[node] < 0:
            term[node] = tok_ids[t]
    # re-pack into a table sized for the nodes actually created
    small = 16
    while small < 2 * n_nodes:
        small *= 2
    packed = np.full(small, -1, np.int64)
    for s in range(size):
        e = table[s]
        if e >= 0:
            _trie_insert(packed, e >> 21, e & 0x1FFFFF)
    table = packed
    prefix_node = np.int64(0)
    for i in range(len(prefix_cps)):
        prefix_node = _child(table, prefix_node, np.int64(prefix_cps[i]))
        if prefix_node < 0:
            break
    # one int64 array: [table size, node count, prefix node, table..., term..., dense (2 x 128)]
    trie = np.empty(3 + small + n_nodes + 256, np.int64)
    trie[0] = small
    trie[1] = n_nodes
    trie[2] = prefix_node
    trie[3 : 3 + small] = table
    trie[3 + small : 3 + small + n_nodes] = term[:n_nodes]
    dense = trie[3 + small + n_nodes :]
    for c in range(128):
        dense[c] = _child(table, 0, c)
        dense[128 + c] = _child(table, prefix_node, c) if prefix_node >= 0 else -1
    return trie


@cached_njit(nogil=True)
def _match_word(word, wl, ids, n, table, term, dense, prefix_node, unk):
    """Greedy longest-match-first WordPiece of word[:wl] into ids[n:]; returns the new n.
    Any position with no match makes the whole word ``unk`` (HF / BERT semantics)."""
    first = n
    start = 0
    while start < wl:
        best_end = -1
        best_id = -1
        node = np.int64(0) if start == 0 else prefix_node
        if node >= 0:
            i = start
            c = word[i]
            if c < 128:
                node = dense[c if start == 0 else 128 + c]
            else:
                node = _child(table, node, c)
            while node >= 0:
                i += 1
                t = term[node]
                if t >= 0:
                    best_end = i
                    best_id = t
                if i >= wl:
                    break
                node = _child(table, node, word[i])
        if best_end < 0:
            ids[first] = unk
            return first + 1
        ids[n] = best_id
        n += 1
        start = best_end
    return n


# params of encode_kernel
P_NORMALIZE, P_CLEAN, P_CJK, P_STRIP, P_LOWER, P_MODE, P_UNK, P_MAX_CHARS = range(8)


@cached_njit(nogil=True)
def encode_kernel(cps, spec, flags, lower, trie, params):
    """Normalize, pre-tokenize and WordPiece-encode documents.

    ``spec`` = [bounds (n_docs + 1)..., forced (n_docs)...]: document d is
    cps[bounds[d]:bounds[d + 1]], or, when ``forced[d] >= 0``, that single id (a special token
    cut out of the text). ``lower`` = [lowercase map (0x110000)..., expansions (k x 3)...] or
    empty; ``trie`` from :func:`build_trie`; ``params`` indexed by the ``P_*`` constants.
    (Few arguments on purpose: Numba's per-call cost grows with each array argument.)
    Returns (ids int32, offsets int64[n_docs + 1]).
    """
    n_docs = (len(spec) - 1) // 2
    norm = params[P_NORMALIZE] != 0
    clean, cjk = params[P_CLEAN] != 0, params[P_CJK] != 0
    strip, lowercase = params[P_STRIP] != 0, params[P_LOWER] != 0
    mode = params[P_MODE]
    unk = params[P_UNK]
    max_chars = params[P_MAX_CHARS]
    lmap = lower[: min(N_CP, len(lower))]
    lexp = lower[len(lmap) :].reshape((-1, 3))
    tsize = trie[0]
    n_nodes = trie[1]
    prefix_node = trie[2]
    table = trie[3 : 3 + tsize]
    term = trie[3 + tsize : 3 + tsize + n_nodes]
    dense = trie[3 + tsize + n_nodes :]

    # At most one token per normalized character (plus one per forced document): allocate
    # that up front, so no array is re-bound inside the loop (which would make Numba
    # reference-count on every iteration).
    bound = len(cps) + n_docs
    if norm and lowercase:
        for i in range(len(cps)):
            c = np.int64(cps[i])
            if c < len(lmap) and lmap[c] < 0:
                bound += 2
    ids = np.empty(bound, np.int32)
    offsets = np.empty(n_docs + 1, np.int64)
    word = np.empty(min(max_chars, 3 * len(cps)) + 4, np.int64)
    cap = len(word)
    emitted = np.empty(3, np.int64)
    n = 0
    for d in range(n_docs):
        offsets[d] = n
        forced = spec[n_docs + 1 + d]
        if forced >= 0:
            ids[n] = forced
            n += 1
            continue
        wl = 0
        for i in range(spec[d], spec[d + 1] + 1):
            if i == spec[d + 1]:
                k = 1
                emitted[0] = 32  # end of document: flush the last word
                iso = False
            else:
                c = np.int64(cps[i])
                if norm:
                    k, c0, c1, c2, iso = _normalize_one(c, flags, lmap, lexp, clean, cjk, strip, lowercase)
                    emitted[0] = c0
                    emitted[1] = c1
                    emitted[2] = c2
                else:
                    k = 1
                    iso = False
                    emitted[0] = 0xFFFD if 0xD800 <= c <= 0xDFFF else c
            for j in range(k):
                e = emitted[j]
                f = flags[e]
                alone = iso or (mode == MODE_BERT and (f & F_PUNCT) != 0)
                if (f & F_SPLIT) or alone:
                    if wl > 0:
                        if wl > max_chars:
                            ids[n] = unk
                            n += 1
                        else:
                            n = _match_word(word, wl, ids, n, table, term, dense, prefix_node, unk)
                        wl = 0
                    if alone:
                        word[0] = e
                        if max_chars < 1:
                            ids[n] = unk
                            n += 1
                        else:
                            n = _match_word(word, 1, ids, n, table, term, dense, prefix_node, unk)
                else:
                    if wl < cap:
                        word[wl] = e
                    wl += 1
    offsets[n_docs] = n
    return ids[:n].copy(), offsets


@cached_njit(nogil=True)
def decode_kernel(ids, first_bytes, first_off, rest_bytes, rest_off):
    """Concatenate the decoded form of each id: its "first" form for ids[0], else its "rest"
    form (prefix removed, or a space before it). Returns uint8 UTF-8."""
    total = 0
    for i in range(len(ids)):
        t = ids[i]
        total += (first_off[t + 1] - first_off[t]) if i == 0 else (rest_off[t + 1] - rest_off[t])
    out = np.empty(total, np.uint8)
    n = 0
    for i in range(len(ids)):
        t = ids[i]
        if i == 0:
            a, b = first_off[t], first_off[t + 1]
            out[n : n + b - a] = first_bytes[a:b]
        else:
            a, b = rest_off[t], rest_off[t + 1]
            out[n : n + b - a] = rest_bytes[a:b]
        n += b - a
    return out


# ----------------------------------------------------------------------------------------------
# training: word counting


@wraps_around  # FNV-1a wraps
@cached_njit(nogil=True)
def _hash_bytes(data, start, end):
    h = _FNV_OFFSET
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * _FNV_PRIME
    return _mix(h)


@cached_njit(nogil=True)
def _rehash_words(w_hash, n_words, size):
    slots = np.full(size, -1, np.int64)
    mask = np.uint64(size - 1)
    for w in range(n_words):
        s = w_hash[w] & mask
        while slots[s] >= 0:
            s = (s + np.uint64(1)) & mask
        slots[s] = w
    return slots


@cached_njit(nogil=True)
def _insert_word(data, s, e, slots, w_hash, w_start, w_len, w_count, store, sizes):
    """Count data[s:e] in the word table; returns False (nothing done) when a table array
    is full and must grow first."""
    n_words = sizes[0]
    used = sizes[1]
    L = e - s
    h = _hash_bytes(data, s, e)
    mask = np.uint64(len(slots) - 1)
    slot = h & mask
    while True:
        w = slots[slot]
        if w < 0:
            if 2 * (n_words + 1) > len(slots) or n_words >= len(w_hash) or used + L > len(store):
                return False
            slots[slot] = n_words
            w_hash[n_words] = h
            w_start[n_words] = used
            w_len[n_words] = L
            w_count[n_words] = 1
            store[used : used + L] = data[s:e]
            sizes[0] = n_words + 1
            sizes[1] = used + L
            return True
        if w_hash[w] == h and w_len[w] == L:
            ws = w_start[w]
            same = True
            for k in range(L):
                if store[ws + k] != data[s + k]:
                    same = False
                    break
            if same:
                w_count[w] += 1
                return True
        slot = (slot + np.uint64(1)) & mask


@cached_njit(nogil=True)
def _count_range(data, docs, flags, mode, slots, w_hash, w_start, w_len, w_count, store, sizes, state):
    """Count the words from document state[0], byte state[1] on. Returns True when done, or
    False with ``state`` at the start of a word that did not fit (the caller grows the table
    and calls again: no array is re-bound in this loop, which keeps Numba's per-call
    reference counting out of it)."""
    for d in range(state[0], len(docs)):
        i = state[1] if d == state[0] else docs[d, 0]
        end = docs[d, 1]
        start = -1
        while i <= end:
            if i == end:
                f = np.uint8(F_SPLIT)
                nb = 1
            else:
                b = np.int64(data[i])
                if b < 0x80:
                    c = b
                    nb = 1
                elif b < 0xE0:
                    c = ((b & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F)
                    nb = 2
                elif b < 0xF0:
                    c = ((b & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F)
                    nb = 3
                else:
                    c = (((b & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12)
                         | ((np.int64(data[i + 2]) & 0x3F) << 6) | (np.int64(data[i + 3]) & 0x3F))
                    nb = 4
                f = flags[c]
            split = (f & F_SPLIT) != 0
            if split or (mode == MODE_BERT and (f & F_PUNCT)):
                if start >= 0:
                    if not _insert_word(data, start, i, slots, w_hash, w_start, w_len, w_count, store, sizes):
                        state[0] = d
                        state[1] = start
                        return False
                    start = -1
                if not split:
                    if not _insert_word(data, i, i + nb, slots, w_hash, w_start, w_len, w_count, store, sizes):
                        state[0] = d
                        state[1] = i
                        return False
            elif start < 0:
                start = i
            i += nb
    return True


@cached_njit(nogil=True)
def count_words_kernel(data, docs, flags, mode, slots, w_hash, w_start, w_len, w_count, store, sizes):
    """Pre-tokenize UTF-8 documents data[docs[i,0]:docs[i,1]] and count their words into the
    table (insertion order = first-seen order). ``sizes`` = [n_words, store bytes used] is
    updated in place; returns the table arrays, regrown as needed."""
    state = np.zeros(2, np.int64)
    if len(docs):
        state[1] = docs[0, 0]
    while not _count_range(data, docs, flags, mode, slots, w_hash, w_start, w_len, w_count, store, sizes, state):
        n_words = sizes[0]
        if 2 * (n_words + 1) > len(slots):
            slots = _rehash_words(w_hash, n_words, 2 * len(slots))
        if n_words >= len(w_hash):
            w_hash = _grow(w_hash, n_words + 1)
            w_start = _grow(w_start, n_words + 1)
            w_len = _grow(w_len, n_words + 1)
            w_count = _grow(w_count, n_words + 1)
        # the word that did not fit is at most the rest of its document
        store = _grow(store, sizes[1] + docs[state[0], 1] - state[1])
    return slots, w_hash, w_start, w_len, w_count, store


@cached_njit(nogil=True)
def utf8_char_counts(store, w_start, w_len):
    """Characters of each word (UTF-8 lead bytes)."""
    out = np.empty(len(w_start), np.int64)
    for w in range(len(w_start)):
        k = 0
        for i in range(w_start[w], w_start[w] + w_len[w]):
            if (store[i] & 0xC0) != 0x80:
                k += 1
        out[w] = k
    return out


# ----------------------------------------------------------------------------------------------
# training: merges

# Columns of a pair row (int64, one 64-byte row per pair).
_KEY, _COUNT, _VER, _FLAGS, _HEAD, _TAIL, _NEXT, _FIRST = 0, 1, 2, 3, 4, 5, 6, 7
# _NEXT = next pair in the left symbol's list << 32 | next pair in the right symbol's list
# (each + 1, so 0 = end); _FIRST = cached first live occurrence, -1 when unknown.
_IN_L, _IN_R, _UNSORTED = 1, 2, 4
_LO = np.int64(0xFFFFFFFF)
# Columns of a heap row (float64, exact: every value is an integer below 2**53 but the score).
_H_SCORE, _H_FIRST, _H_PAIR, _H_VER = 0, 1, 2, 3


@cached_njit(nogil=True)
def _next_in(P, q, side):
    v = P[q, _NEXT]
    return ((v >> 32) if side == 0 else (v & _LO)) - 1


@cached_njit(nogil=True)
def _set_next(P, q, side, nq):
    v = P[q, _NEXT]
    if side == 0:
        P[q, _NEXT] = ((nq + 1) << 32) | (v & _LO)
    else:
        P[q, _NEXT] = (v & ~_LO) | (nq + 1)


@cached_njit(nogil=True)
def _score(count, fa, fb):
    if fa < 2147483648 and fb < 2147483648:
        return count / np.float64(fa * fb)
    return count / (np.float64(fa) * np.float64(fb))


@cached_njit(nogil=True)
def _find_pair(slots, P, key):
    mask = len(slots) - 1
    s = np.int64(_mix(key) & np.uint64(mask))
    while True:
        p = slots[s]
        if p < 0 or P[p, _KEY] == key:
            return p, s
        s = (s + 1) & mask


@cached_njit(nogil=True)
def _new_pair(slots, P, s, key, q, flags, links):
    """Row q of P becomes the pair ``key`` (found absent at slot s): no count, no occurrences."""
    slots[s] = q
    P[q, _KEY] = key
    P[q, _COUNT] = 0
    P[q, _VER] = 0
    P[q, _FLAGS] = flags
    P[q, _HEAD] = -1
    P[q, _TAIL] = -1
    P[q, _FIRST] = -1
    P[q, _NEXT] = links


@cached_njit(nogil=True)
def _rehash_pairs(P, n_pairs, size):
    slots = np.full(size, -1, np.int32)
    mask = size - 1
    for p in range(n_pairs):
        s = np.int64(_mix(P[p, _KEY]) & np.uint64(mask))
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = p
    return slots


@cached_njit(nogil=True)
def _alive(sym, nxt, g, left, right):
    if sym[g] != left:
        return False
    h = nxt[g]
    return h >= 0 and sym[h] == right


@cached_njit(nogil=True)
def _sort_occurrences(p, P, occ, sym, nxt):
    """Rewrite pair p's occurrence list as its live positions in ascending order, in place."""
    left = P[p, _KEY] >> 32
    right = P[p, _KEY] & _LO
    k = 0
    r = P[p, _HEAD]
    while r >= 0:
        k += 1
        r = occ[r, 1]
    pos = np.empty(k, np.int64)
    k = 0
    r = P[p, _HEAD]
    while r >= 0:
        g = occ[r, 0]
        if _alive(sym, nxt, g, left, right):
            pos[k] = g
            k += 1
        r = occ[r, 1]
    pos = np.unique(pos[:k])
    r = P[p, _HEAD]
    last = -1
    for j in range(len(pos)):
        occ[r, 0] = pos[j]
        last = r
        r = occ[r, 1]
    if last < 0:
        P[p, _HEAD] = -1
        P[p, _TAIL] = -1
    else:
        occ[last, 1] = -1
        P[p, _TAIL] = last
    P[p, _FLAGS] &= ~_UNSORTED


@cached_njit(nogil=True)
def _first_occurrence(p, P, occ, sym, nxt):
    """Smallest live position of pair p (cached; the list head advances past dead entries)."""
    if P[p, _FIRST] >= 0:
        return P[p, _FIRST]
    if P[p, _FLAGS] & _UNSORTED:
        _sort_occurrences(p, P, occ, sym, nxt)
    left = P[p, _KEY] >> 32
    right = P[p, _KEY] & _LO
    r = P[p, _HEAD]
    while r >= 0 and not _alive(sym, nxt, occ[r, 0], left, right):
        r = occ[r, 1]
    P[p, _HEAD] = r
    if r < 0:
        P[p, _TAIL] = -1
        return np.int64(-1)
    P[p, _FIRST] = occ[r, 0]
    return np.int64(occ[r, 0])


@cached_njit(nogil=True)
def _add_occurrence(p, g, P, occ, n_occ):
    r = n_occ
    occ[r, 0] = g
    occ[r, 1] = -1
    t = P[p, _TAIL]
    if t >= 0:
        occ[t, 1] = r
        if occ[t, 0] > g:
            P[p, _FLAGS] |= _UNSORTED
    else:
        P[p, _HEAD] = r
    P[p, _TAIL] = r
    return n_occ + 1


@cached_njit(nogil=True)
def _token_slot(tslots, thash, tok_bytes, tok_off, buf, blen, h):
    """Slot of the token string buf[:blen] (hash h): holds its id, or -1 when absent."""
    mask = len(tslots) - 1
    s = np.int64(h & np.uint64(mask))
    while True:
        t = tslots[s]
        if t < 0:
            return s
        if thash[t] == h and tok_off[t + 1] - tok_off[t] == blen:
            a = tok_off[t]
            same = True
            for k in range(blen):
                if tok_bytes[a + k] != buf[k]:
                    same = False
                    break
            if same:
                return s
        s = (s + 1) & mask


@cached_njit(nogil=True)
def _push(q, P, sf, occ, sym, nxt, H, hn):
    """Push pair q with its current score and first occurrence under a new version."""
    key = P[q, _KEY]
    P[q, _VER] += 1
    H[hn, _H_SCORE] = _score(P[q, _COUNT], sf[key >> 32], sf[key & _LO])
    H[hn, _H_FIRST] = _first_occurrence(q, P, occ, sym, nxt)
    H[hn, _H_PAIR] = q
    H[hn, _H_VER] = P[q, _VER]
    sift_up(H, hn)
    return hn + 1


# training state (int64 array shared by train_kernel and _merge_loop)
_S_PAIRS, _S_OCC, _S_LIVE, _S_HEAP, _S_TOK, _S_MERGES, _S_PENDING, _S_NEED_BYTES, _S_NEED_PAIRS = range(9)


@cached_njit(nogil=True)
def _merge_loop(st, vocab_size, prefix_nbytes, sym, nxt, prv, wid, w_freq, sf, adj,
                tslots, thash, tok_bytes, tok_off, buf, P, slots, occ, H, merges):
    """Learn merges until the vocabulary is full or no pair is left (returns 0), or until the
    next merge needs more room in some array (returns 1 with the popped pair in
    st[_S_PENDING] and the needs in ``st``; the caller grows the arrays and calls again).
    No array is re-bound here: that keeps Numba's reference counting out of the loop."""
    n_pairs = st[_S_PAIRS]
    n_occ = st[_S_OCC]
    live = st[_S_LIVE]
    hn = st[_S_HEAP]
    n_tok = st[_S_TOK]
    n_merges = st[_S_MERGES]
    status = 0
    while n_tok < vocab_size:
        # the best valid pair
        best = st[_S_PENDING]
        st[_S_PENDING] = -1
        while best < 0 and hn > 0:
            p = np.int64(H[0, _H_PAIR])
            ok = H[0, _H_VER] == P[p, _VER] and P[p, _COUNT] > 0
            hn -= 1
            if hn > 0:
                for c in range(4):
                    H[0, c] = H[hn, c]
                sift_down(H, 0, hn)
            if ok:
                best = p
        if best < 0:
            break
        key = P[best, _KEY]
        a = key >> 32
        b = key & _LO
        la = tok_off[a + 1] - tok_off[a]
        lb = tok_off[b + 1] - tok_off[b] - prefix_nbytes
        blen = la + lb
        if P[best, _FLAGS] & _UNSORTED:
            _sort_occurrences(best, P, occ, sym, nxt)
        k = 0
        r = P[best, _HEAD]
        while r >= 0:
            k += 1
            r = occ[r, 1]
        # room for what this merge can create: the token string, 2 pairs and 2 occurrences
        # per occurrence, a heap push per pair it touches
        if (blen > len(buf) or tok_off[n_tok] + blen > len(tok_bytes) or n_pairs + 2 * k > len(P)
                or 2 * (n_pairs + 2 * k) > len(slots) or n_occ + 2 * k > len(occ)
                or hn + n_pairs + 2 * k > len(H) or n_merges >= len(merges)):
            st[_S_PENDING] = best
            st[_S_NEED_BYTES] = blen
            st[_S_NEED_PAIRS] = 2 * k
            status = 1
            break

        # the merged string: a + b without b's prefix; re-use its id if it exists
        buf[:la] = tok_bytes[tok_off[a] : tok_off[a + 1]]
        buf[la:blen] = tok_bytes[tok_off[b + 1] - lb : tok_off[b + 1]]
        h = _hash_bytes(buf, 0, blen)
        s = _token_slot(tslots, thash, tok_bytes, tok_off, buf, blen, h)
        if tslots[s] >= 0:
            new = np.int64(tslots[s])
        else:
            new = n_tok
            tslots[s] = new
            thash[new] = h
            tok_bytes[tok_off[new] : tok_off[new] + blen] = buf[:blen]
            tok_off[new + 1] = tok_off[new] + blen
            n_tok += 1
        merges[n_merges, 0] = a
        merges[n_merges, 1] = b
        merges[n_merges, 2] = new
        n_merges += 1

        # apply the merge to every live occurrence, left to right
        r = P[best, _HEAD]
        while r >= 0:
            g = occ[r, 0]
            r = occ[r, 1]
            if not _alive(sym, nxt, g, a, b):
                continue
            hh = nxt[g]
            f = w_freq[wid[g]]
            pg = prv[g]
            ng = nxt[hh]
            for side in range(2):
                if side == 0:
                    if pg < 0:
                        continue
                    x = np.int64(sym[pg])
                    old_key = (x << 32) | a
                    new_key = (x << 32) | new
                    at = pg
                else:
                    if ng < 0:
                        continue
                    y = np.int64(sym[ng])
                    old_key = (b << 32) | y
                    new_key = (new << 32) | y
                    at = g
                q, _s = _find_pair(slots, P, old_key)
                P[q, _COUNT] -= f
                P[q, _FIRST] = -1
                if P[q, _COUNT] == 0:
                    live -= 1
                q, s2 = _find_pair(slots, P, new_key)
                if q < 0:
                    q = n_pairs
                    n_pairs += 1
                    _new_pair(slots, P, s2, new_key, q, 0, 0)
                if P[q, _COUNT] == 0:
                    live += 1
                P[q, _COUNT] += f
                P[q, _FIRST] = -1
                for lr in range(2):
                    bit = _IN_L if lr == 0 else _IN_R
                    if not (P[q, _FLAGS] & bit):
                        t = new_key >> 32 if lr == 0 else new_key & _LO
                        _set_next(P, q, lr, adj[t, lr])
                        adj[t, lr] = q
                        P[q, _FLAGS] |= bit
                n_occ = _add_occurrence(q, at, P, occ, n_occ)
            P[best, _COUNT] -= f
            sym[g] = new
            sym[hh] = -1
            nxt[g] = ng
            if ng >= 0:
                prv[ng] = g
            sf[a] -= f
            sf[b] -= f
            sf[new] += f
        if P[best, _COUNT] == 0:
            live -= 1
        P[best, _HEAD] = -1
        P[best, _TAIL] = -1
        P[best, _FIRST] = -1

        # re-score every live pair of a, b and new (their counts or frequencies changed)
        for ti in range(3):
            t = a if ti == 0 else (b if ti == 1 else new)
            if (ti == 1 and b == a) or (ti == 2 and (new == a or new == b)):
                continue
            for side in range(2):
                prev = -1
                q = adj[t, side]
                bit = _IN_L if side == 0 else _IN_R
                while q >= 0:
                    nq = _next_in(P, q, side)
                    if P[q, _COUNT] == 0:
                        # unlink a dead pair from this list
                        if prev < 0:
                            adj[t, side] = nq
                        else:
                            _set_next(P, prev, side, nq)
                        P[q, _FLAGS] &= ~bit
                    else:
                        prev = q
                        hn = _push(q, P, sf, occ, sym, nxt, H, hn)
                    q = nq

        # drop stale heap entries once they outnumber the live pairs
        if hn > 2 * live + 65536:
            m = 0
            for i in range(hn):
                p = np.int64(H[i, _H_PAIR])
                if H[i, _H_VER] == P[p, _VER] and P[p, _COUNT] > 0:
                    for c in range(4):
                        H[m, c] = H[i, c]
                    m += 1
            hn = m
            for i in range(hn // 2 - 1, -1, -1):
                sift_down(H, i, hn)
    st[_S_PAIRS] = n_pairs
    st[_S_OCC] = n_occ
    st[_S_LIVE] = live
    st[_S_HEAP] = hn
    st[_S_TOK] = n_tok
    st[_S_MERGES] = n_merges
    return status


@cached_njit(nogil=True)
def train_kernel(sym, word_start, w_freq, tok_bytes, tok_off, n_tok, prefix_nbytes, vocab_size):
    """Learn WordPiece merges until ``vocab_size`` distinct tokens or no pair is left.

    ``sym``: int32 initial symbol (= vocabulary id) per character position, words laid out by
    ``word_start`` (int64, n_words + 1) in first-seen order, with counts ``w_freq``.
    ``tok_bytes``/``tok_off``: UTF-8 strings of the ``n_tok`` initial tokens (ids 0..n_tok-1).
    Returns (merges int32 (m, 3) of (left, right, merged id), tok_bytes, tok_off, n_tok).
    """
    N = len(sym)
    sym = sym.copy()
    W = len(word_start) - 1
    nxt = np.full(N, -1, np.int32)
    prv = np.full(N, -1, np.int32)
    wid = np.empty(N, np.int32)
    for w in range(W):
        a = word_start[w]
        b = word_start[w + 1]
        for g in range(a, b):
            wid[g] = w
            if g + 1 < b:
                nxt[g] = g + 1
            if g > a:
                prv[g] = g - 1

    # symbols: frequency and the heads of their two pair lists (as left, as right)
    n_sym_cap = max(vocab_size, n_tok) + 1
    sf = np.zeros(n_sym_cap, np.int64)
    adj = np.full((n_sym_cap, 2), -1, np.int64)
    for g in range(N):
        sf[sym[g]] += w_freq[wid[g]]

    # token strings and their hash table (for re-using the id of an existing string)
    tsize = 16
    while tsize < 2 * n_sym_cap:
        tsize *= 2
    tslots = np.full(tsize, -1, np.int32)
    thash = np.zeros(n_sym_cap, np.uint64)
    tok_off = _grow(tok_off.copy(), n_sym_cap + 1)
    tok_bytes = _grow(tok_bytes.copy(), 2 * len(tok_bytes) + 64)
    for t in range(n_tok):
        h = _hash_bytes(tok_bytes, tok_off[t], tok_off[t + 1])
        thash[t] = h
        s = _token_slot(tslots, thash, tok_bytes, tok_off, tok_bytes[tok_off[t] : tok_off[t + 1]],
                        tok_off[t + 1] - tok_off[t], h)
        if tslots[s] < 0:
            tslots[s] = t

    # pairs, counted in position order (so each occurrence list is ascending)
    pcap = max(16, N)
    P = np.empty((pcap, 8), np.int64)
    psize = 16
    while psize < 2 * pcap:
        psize *= 2
    slots = np.full(psize, -1, np.int32)
    occ = np.empty((max(16, N), 2), np.int32)
    n_pairs = 0
    n_occ = 0
    for g in range(N):
        h = nxt[g]
        if h < 0:
            continue
        x = np.int64(sym[g])
        y = np.int64(sym[h])
        key = (x << 32) | y
        p, s = _find_pair(slots, P, key)
        if p < 0:
            p = n_pairs
            n_pairs += 1
            _new_pair(slots, P, s, key, p, _IN_L | _IN_R, ((adj[x, 0] + 1) << 32) | (adj[y, 1] + 1))
            adj[x, 0] = p
            adj[y, 1] = p
        P[p, _COUNT] += w_freq[wid[g]]
        n_occ = _add_occurrence(p, g, P, occ, n_occ)

    # heap rows (score, first position, pair, version)
    H = np.empty((max(16, 3 * pcap + 65536), 4), np.float64)
    for p in range(n_pairs):
        key = P[p, _KEY]
        H[p, _H_SCORE] = _score(P[p, _COUNT], sf[key >> 32], sf[key & _LO])
        H[p, _H_FIRST] = _first_occurrence(p, P, occ, sym, nxt)
        H[p, _H_PAIR] = p
        H[p, _H_VER] = 0
    for i in range(n_pairs // 2 - 1, -1, -1):
        sift_down(H, i, n_pairs)

    merges = np.empty((max(16, vocab_size - n_tok + 16), 3), np.int32)
    buf = np.empty(256, np.uint8)
    st = np.zeros(9, np.int64)
    st[_S_PAIRS] = n_pairs
    st[_S_OCC] = n_occ
    st[_S_LIVE] = n_pairs
    st[_S_HEAP] = n_pairs
    st[_S_TOK] = n_tok
    st[_S_PENDING] = -1
    while _merge_loop(st, vocab_size, prefix_nbytes, sym, nxt, prv, wid, w_freq, sf, adj,
                      tslots, thash, tok_bytes, tok_off, buf, P, slots, occ, H, merges):
        need_pairs = st[_S_PAIRS] + st[_S_NEED_PAIRS]
        if st[_S_NEED_BYTES] > len(buf):
            buf = np.empty(2 * st[_S_NEED_BYTES], np.uint8)
        tok_bytes = _grow(tok_bytes, tok_off[st[_S_TOK]] + st[_S_NEED_BYTES])
        P = _grow(P, need_pairs)
        if 2 * need_pairs > len(slots):
            size = len(slots)
            while size < 4 * need_pairs:
                size *= 2
            slots = _rehash_pairs(P, st[_S_PAIRS], size)
        occ = _grow(occ, st[_S_OCC] + st[_S_NEED_PAIRS])
        H = _grow(H, st[_S_HEAP] + need_pairs)
        merges = _grow(merges, st[_S_MERGES] + 1)
    n_tok = st[_S_TOK]
    return merges[: st[_S_MERGES]].copy(), tok_bytes[: tok_off[n_tok]].copy(), tok_off[: n_tok + 1].copy(), n_tok
