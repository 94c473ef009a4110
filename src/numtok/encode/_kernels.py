"""Private Numba kernels of the BPE encoder and decoder (driven by ``engine``, ``streaming`` and ``tables``).

Everything here works on NumPy arrays owned by the Python layer; no kernel allocates a Python
object per token or per piece, and every kernel releases the GIL. Tables are open addressing
with linear probing, power-of-two sizes, load factor <= 1/2:

* **token table** ``uint64[2*S]``: slot ``i`` holds ``tab[2i]`` = the first (up to) 8 bytes of
  a key, little-endian, and ``tab[2i+1]`` = ``(key_length << 32) | token_id`` (0 = empty; keys
  are never empty). A key is a prefix of its token's bytes, so a hit on a key longer than 8
  bytes is confirmed against ``tok_bytes``. Most pieces are <= 8 bytes: one probe, one line.
* **pair table** ``uint64[P]``: ``left (21 bits) | right (21 bits) | priority (22 bits)``,
  all ones = empty. Priority is the merged token's rank, which is its id (rank mode,
  tiktoken), or the merge's index, mapped to its result by ``res_of`` (merge mode, HF).
* **pair filter** ``uint64[F]``: a blocked Bloom filter of the pair table's pairs, read
  before it while merging (``_pair_pri_f``).
* **byte-pair table** ``int32[65536]``: the priority of every pair of one-byte tokens, so the
  first round of merging a piece never touches the pair table.
* **piece cache** (one per running call, reused across calls): pieces of <= 15 bytes that
  needed merging, with their ids (<= 4), in two-way sets of one 64-byte line; longer pieces (up
  to 64 bytes) and short ones of more than 4 ids (CJK letters) in a two-way long-piece region; any
  longer piece, or one of more than 21 ids, in an append-only arena with its own index.

Why it is shaped this way (the measurements behind it: design.md §5):

* Most pieces of English text are a single token. Those of <= 8 bytes (most) cost one masked
  load, one hash (shared with the piece cache) and one probe tested without a branch on the
  length; one- and two-byte pieces take the same path, because a branch on the length there
  is mispredicted whenever short and longer pieces alternate, as they do in prose.
* Of the others, a warm piece cache answers most; the rest are merged. A piece seen for the
  first time is merged mostly waiting on pair-table lines (3-8 MB tables read at random): the
  largest single cost of a first pass over new text. In CJK text most adjacent letter pairs
  are no pair at all, which the pair filter answers from a 256-512 KiB table that stays in cache.
* Lookups are prefetched ``_PREFETCH_DISTANCE`` pieces ahead: with megabyte tables and random
  pieces the loop is otherwise bound by memory latency, and the prefetches hide the misses.
  The distance covers enough short English pieces for a line to arrive from memory before it
  is read, and no more: on CJK, whose pieces take longer each, a larger one fetched lines too early.
* Merging uses tiktoken's O(n*m) scan for short pieces and a binary heap over a linked list
  of symbols from ``heap_min`` symbols on, so one enormous piece ("a" * 10**6, a megabyte of
  CJK) costs O(n log n). Ties go to the leftmost pair in both: the scan packs
  ``priority << 6 | position`` (n < 64) and takes the minimum without branches; heap entries
  are ``priority << 32 | position`` with positions in original order, and an entry is stale
  when the priority stored for its position changed (an equal one is the same merge).
* A long piece of 3-byte letters (CJK, Hangul) is merged part by part between the boundaries
  no token can span (``_segments``; one-letter parts from a memo): merged whole, byte by byte,
  it was the largest cost of a first pass over CJK text.
* Work arrays are sized once per call: rebinding arrays inside the loop costs reference-count
  traffic on every piece.
* Table slots and the loop's hot indices are unsigned (``_u``): a signed index costs three
  instructions of wraparound for negative values on every access.
* Merging stays inline in the loop: a separate kernel would take ~30 arrays per call, each
  unboxed and checked on every call, which first passes over new text (many merges) pay.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._native.intrinsics import HIGH_BITS, load_u64, prefetch, read_only
from .._native.jit import INLINE, cached_njit, wraps_around
from .._native.sink import store_id_pair  # the import also registers CountSink (encode_spans counts into one)
from ..pretokenizers._scanners import SCANNER_KINDS, is_cut, scan_into
from ._segments import BMP, char_at, crossable

INF_PRIORITY = 0x7FFFFFFF
_INF = np.int64(INF_PRIORITY)  # as a max_pri argument: an int64, not a literal (one signature with a variable)
_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xC2B2AE3D27D4EB4F)
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW32 = np.uint64(0xFFFFFFFF)
_U32 = np.uint64(32)
_U64_0 = np.uint64(0)
_U1 = np.uint64(1)
_U2 = np.uint64(2)
_u = np.uint64  # an unsigned index: Numba adds no wraparound for negative ones
_NO_EXT = np.zeros(0, np.uint64)  # _find_key without a key_table_ext

# Pair table entries are one uint64: left id (21 bits) | right id (21 bits) | priority (22 bits).
ID_BITS = 21
PRI_BITS = 22
MAX_ID = (1 << ID_BITS) - 2  # all ones marks an empty slot
MAX_PRIORITY = (1 << PRI_BITS) - 2
_KEY_LEFT = np.uint64(ID_BITS + PRI_BITS)
_KEY_RIGHT = np.uint64(PRI_BITS)
_PRI_MASK = np.uint64((1 << PRI_BITS) - 1)
_KEY_MASK = ~_PRI_MASK

# Piece cache: sets of two entries (one 64-byte line); an entry is 4 uint64: the piece's first
# 8 bytes, its next 7 bytes | length << 56, then up to 4 ids, two per word (all ones = no id;
# no id at all: the piece has more than 4 ids, in the long-piece region). Tokens are entries
# too, but for pieces of up to 8 bytes the token table answers first (ASCII ones, and non-ASCII
# ones where ``mostly_tokens`` finds enough are tokens).
CACHE_MAX_BYTES = 15
CACHE_MAX_IDS = 4
_NO_IDS = np.uint64(0xFFFFFFFFFFFFFFFF)
# After the sets, a region for pieces of 16..64 bytes (whitespace runs, long words) and for
# shorter ones of more than 4 ids (CJK: a 15-byte piece is 5 letters, each one to three ids),
# half as many entries as sets (a cache of 2**bits sets is 16 << bits words): 16 uint64 each,
# the piece's bytes (8 words, zero-padded), then n_ids << 8 | length, then up to 21 ids, three
# per word (21 bits each, see ID_BITS). Two adjacent entries make a set (way 0 keeps the set's
# first piece, way 1 takes every later one, as in the short sets): CJK text has many distinct
# long pieces, which evict each other direct-mapped; two ways of the same memory miss far fewer
# (design.md §5). (It grows with the cache: a fixed size missed most long pieces of a big text,
# each then merged from 16+ symbols.) A 16-64-byte token is kept there too, as a piece of one id.
LONG_SHIFT = 1
LONG_MAX_BYTES = 64
LONG_MAX_IDS = 21
_ID_MASK = np.uint64((1 << ID_BITS) - 1)
_ID_SHIFT1 = np.uint64(ID_BITS)
_ID_SHIFT2 = np.uint64(2 * ID_BITS)
# After the long-piece region, the arena, for pieces of any length (CJK and Japanese letter runs
# are often 65-300 bytes, a quarter of their text: merged again on every pass without it): an
# index of 2 << bits words, (low 32 bits of the piece's hash) << 32 | (offset + 1) (0 = empty);
# a head of 8 words (data words used, entries, whether the last call saw many short pieces
# of more than 4 ids; the data starts on a line); then the data,
# 32 << bits words (256 bytes per set: CJK text needs ~1.3 bytes of entries per byte to keep
# all its long pieces, and a cache grows when its data is half used), filled append-only: per entry
# n_ids << 32 | length, the bytes (zero-padded words), then the ids, three per word. When the
# data is full or the index 3/4 full (entries average ~19 words in CJK text; a probe chain
# costs little next to a piece of 65+ bytes), the index is cleared and filling starts again. Pieces of more than 64 bytes go there, and those
# of up to 64 with more than 21 ids, whose long-region entry then holds ARENA_MARK as its number
# of ids. The data's pages are touched only as it fills: text without long pieces pays for the
# index's pages at most.
ARENA_INDEX_SHIFT = 1
ARENA_DATA_SHIFT = 5
ARENA_HEAD_WORDS = 8
ARENA_MARK = 255
# A piece of more than 1/64 of the data's bytes (2 MiB at full size) is not cached: it would
# evict much of the rest (and costs O(n log n) to merge, not much more than to compare).
ARENA_MAX_SHIFT = 3

# How many pieces ahead encode_spans prefetches table lines.
_PREFETCH_DISTANCE = 20
HASH_RING = 32  # > _PREFETCH_DISTANCE, a power of two
_HASH_MASK = HASH_RING - 1
_HASH_MASK_U = np.uint64(_HASH_MASK)

# Spans encode_spans samples to choose where short non-ASCII pieces look first.
_SAMPLE_SPANS = 512
_SAMPLE_PIECES = 64
_SAMPLE_EVERY = 1 << 18  # bytes of text between two samples in encode_docs_range (an encode_spans call's worth)
# Pieces encode_docs_range scans, then encodes, at a time: 128 KiB of spans, 40-100 KiB of text.
# Fewer call the scanner more often per piece; the spans of many more push table lines out of
# the core's cache before the loop reads them (design.md §5, batches of pieces).
SPAN_BATCH = 8192

# Status codes returned by encode_spans.
ST_DONE = 0
ST_FULL = 1
ST_NO_SYMBOL = 2
# Between encode_loop and encode_spans only: the next piece needs bigger work arrays (their
# size is returned as the error position).
ST_LONG = 3
# The work arrays' first size: most texts have no longer piece, and none is looked for.
WORK_MIN = 256


# ----------------------------------------------------------------------------------------------
# hashing and lookups
#
# Byte buffers (text and token bytes) are padded with at least 8 readable bytes past their end
# (see ``buffers.padded``), so up to 8 bytes at any offset load as one unaligned word.


@njit(**INLINE)
def _load_word(a, s, n):
    """Bytes s .. s+n-1 of a (1 <= n <= 8), little-endian in a uint64."""
    return load_u64(a, s) & (_ALL_ONES >> np.uint64(64 - 8 * n))


@wraps_around
@njit(**INLINE)
def _hash_head(a, s, n):
    """(first min(n, 8) bytes packed, the hash of the n bytes at a[s:] so far): all of it for
    n <= 8, which the encoder's loop computes without ``_hash_bytes``' loop (n >= 1)."""
    k0 = _load_word(a, s, min(n, 8))
    return k0, (k0 ^ (np.uint64(n) * _C2)) * _C1


@wraps_around
@njit(**INLINE)
def _hash_bytes(a, s, n):
    """Return (first 8 bytes packed, 64-bit hash) of the n bytes at a[s:]."""
    k0, h = _hash_head(a, s, n)
    i = 8
    while i < n:
        h = ((h ^ (h >> np.uint64(29))) ^ _load_word(a, s + i, min(n - i, 8))) * _C1
        i += 8
    return k0, h


@wraps_around
@njit(**INLINE)
def _short_key(a, s, n):
    """(bytes 0-7 packed, bytes 8-14 packed or 0, ``_hash_bytes``' hash) of the n bytes at
    a[s:] for 1 <= n <= 15, without a branch on n."""
    k0 = _load_word(a, s, min(n, 8))
    w1 = load_u64(a, s + 8) & ((_U1 << np.uint64(8 * max(n - 8, 0))) - _U1)
    h = (k0 ^ (np.uint64(n) * _C2)) * _C1
    h2 = ((h ^ (h >> np.uint64(29))) ^ w1) * _C1
    return k0, w1, h2 if n > 8 else h


@wraps_around
@njit(**INLINE)
def _long_differs(cache, way, data, s, L):
    """0 if the long-region entry at ``way`` holds the L bytes at data[s:] (16 <= L <= 32),
    else not: its length and its four byte words (zero past its length) against the piece's,
    masked the same way, all compared without a branch."""
    diff = (cache[_u(way + 8)] & np.uint64(0xFF)) ^ np.uint64(L)
    last = (L - 1) >> 3  # the piece's last word: no load starts past it
    for q in range(4):
        r = np.uint64(4 * min(max(L - 8 * q, 0), 8))
        mask = ((_U1 << r) << r) - _U1  # r = 32: all ones, with no shift by 64
        diff |= cache[_u(way + q)] ^ (load_u64(data, s + 8 * min(q, last)) & mask)
    return diff


@njit(**INLINE)
def _table_bits(tab):
    """log2 of the number of slots of a two-words-per-slot table."""
    slots = tab.shape[0] // 2
    bits = 0
    while (1 << bits) < slots:
        bits += 1
    return bits


@njit(**INLINE)
def _find_key(tab, ext, bits, tok_bytes, tok_off, a, s, n, k0, h):
    """Token id whose key equals the n bytes at a[s:], or -1.

    ``ext`` is the table's ``key_table_ext`` (or empty): with it, keys of 9-16 bytes are
    confirmed without reading ``tok_off`` and ``tok_bytes`` (two dependent cache misses).
    """
    mask = (_U1 << np.uint64(bits)) - _U1
    slot = h >> np.uint64(64 - bits)
    want = np.uint64(n) << _U32
    while True:
        meta = tab[_U2 * slot + _U1]
        if meta == _U64_0:
            return -1
        if tab[_U2 * slot] == k0 and (meta & ~_LOW32) == want:
            tid = np.int64(meta & _LOW32)
            if n <= 8:
                return tid
            i = 8
            if ext.shape[0] > 0:
                i = 16 if ext[slot] == _load_word(a, s + 8, min(n - 8, 8)) else n + 8
            if i < n:  # bytes beyond what the table holds: compare with the token's own
                o = tok_off[tid]
                while i < n:
                    m = min(n - i, 8)
                    if _load_word(tok_bytes, o + i, m) != _load_word(a, s + i, m):
                        break
                    i += 8
            if i >= n and i < n + 8:
                return tid
        slot = (slot + _U1) & mask


@wraps_around
@njit(**INLINE)
def _pair_slot(left, right, pbits):
    return np.int64(((np.uint64(left) << np.uint64(ID_BITS)) | np.uint64(right)) * _C1 >> np.uint64(64 - pbits))


@njit(**INLINE)
def _pair_pri(ptab, pbits, left, right, max_pri):
    """Priority of merging ids left and right, INF_PRIORITY if they do not merge (or only at
    a priority >= max_pri)."""
    key = (np.uint64(left) << _KEY_LEFT) | (np.uint64(right) << _KEY_RIGHT)
    mask = (_U1 << np.uint64(pbits)) - _U1
    slot = np.uint64(_pair_slot(left, right, pbits))
    while True:
        e = ptab[slot]
        if (e & _KEY_MASK) == key:
            p = np.int64(e & _PRI_MASK)
            return p if p < max_pri else INF_PRIORITY
        if e == _ALL_ONES:
            return INF_PRIORITY
        slot = (slot + _U1) & mask


@wraps_around
@njit(**INLINE)
def _filter_spot(left, right, fbits):
    """(word, two-bit mask) of the pair (left, right) in a pair filter of 2**fbits words."""
    h = ((np.uint64(left) << np.uint64(ID_BITS)) | np.uint64(right)) * _C2
    bit_mask = (_U1 << ((h >> np.uint64(20)) & np.uint64(63))) | (_U1 << ((h >> np.uint64(26)) & np.uint64(63)))
    return h >> np.uint64(64 - fbits), bit_mask


@njit(**INLINE)
def _pair_pri_f(ptab, pbits, pfilter, fbits, left, right, max_pri):
    """_pair_pri behind the pair filter: most pairs of a piece's later rounds are no pair (two
    CJK letters, two words' parts), and the filter (256-512 KiB) answers them without a probe
    of the megabyte pair table."""
    w, m = _filter_spot(left, right, fbits)
    if (pfilter[w] & m) != m:
        return INF_PRIORITY
    return _pair_pri(ptab, pbits, left, right, max_pri)


@cached_njit(nogil=True)
def build_pair_filter(ptab):
    """Blocked Bloom filter of the pairs of a pair table: two bits in one word per pair, about
    8 bits per pair (~5 % false positives). Returns (filter, log2 of its number of words)."""
    n = 0
    for e in ptab:
        if e != _ALL_ONES:
            n += 1
    fbits = 1
    while (64 << fbits) < 8 * n:
        fbits += 1
    pfilter = np.zeros(1 << fbits, np.uint64)
    for e in ptab:
        if e != _ALL_ONES:
            w, m = _filter_spot(np.int64(e >> _KEY_LEFT), np.int64((e >> _KEY_RIGHT) & np.uint64(MAX_ID + 1)), fbits)
            pfilter[w] |= m
    return pfilter


@njit(**INLINE)
def _result(res_of, p):
    """The id a merge of priority p produces: p itself in rank mode (empty res_of)."""
    if res_of.shape[0] == 0:
        return p
    return np.int64(res_of[p])


# ----------------------------------------------------------------------------------------------
# table builders


@cached_njit(nogil=True)
def build_key_table(tok_bytes, tok_off, ids, key_lens):
    """Open-addressing table of the keys ``key_lens[i]`` first bytes of token ``ids[i]``.

    Returns (table, index of the first repeated key or -1).
    """
    n = ids.shape[0]
    slots = 2
    while slots < 2 * n:
        slots *= 2
    tab = np.zeros(2 * slots, dtype=np.uint64)
    bits = _table_bits(tab)
    mask = slots - 1
    for i in range(n):
        tid = ids[i]
        L = key_lens[i]
        s = tok_off[tid]
        k0, h = _hash_bytes(tok_bytes, s, L)
        if _find_key(tab, _NO_EXT, bits, tok_bytes, tok_off, tok_bytes, s, L, k0, h) >= 0:
            return tab, i
        slot = np.int64(h >> np.uint64(64 - bits))
        while tab[2 * slot + 1] != _U64_0:
            slot = (slot + 1) & mask
        tab[2 * slot] = k0
        tab[2 * slot + 1] = (np.uint64(L) << _U32) | np.uint64(tid)
    return tab, -1


@cached_njit(nogil=True)
def key_table_ext(tab, tok_bytes, tok_off):
    """Bytes 8-15 of the key in each slot of a key table (zero-padded; 0 for keys of <= 8
    bytes and empty slots), for ``_find_key``."""
    slots = tab.shape[0] // 2
    ext = np.zeros(slots, dtype=np.uint64)
    for i in range(slots):
        meta = tab[2 * i + 1]
        n = np.int64(meta >> _U32)
        if n > 8:
            ext[i] = _load_word(tok_bytes, tok_off[np.int64(meta & _LOW32)] + 8, min(n - 8, 8))
    return ext


@cached_njit(nogil=True)
def build_pair_table(lefts, rights, priorities):
    """Pair table (one uint64 per slot, all ones = empty); a repeated pair keeps its last
    priority."""
    n = lefts.shape[0]
    slots = 2
    while slots < 2 * n:
        slots *= 2
    tab = np.full(slots, _ALL_ONES, dtype=np.uint64)
    bits = 0
    while (1 << bits) < slots:
        bits += 1
    mask = slots - 1
    for i in range(n):
        key = (np.uint64(lefts[i]) << _KEY_LEFT) | (np.uint64(rights[i]) << _KEY_RIGHT)
        slot = _pair_slot(lefts[i], rights[i], bits)
        while tab[slot] != _ALL_ONES and (tab[slot] & _KEY_MASK) != key:
            slot = (slot + 1) & mask
        tab[slot] = key | np.uint64(priorities[i])
    return tab


@njit(**INLINE)
def _log2_len(table):
    """log2 of a power-of-two table's length (the pair table's, the pair filter's)."""
    bits = 0
    while (1 << bits) < table.shape[0]:
        bits += 1
    return bits


@cached_njit(nogil=True)
def byte_pair_table(byte_id, ptab):
    """Direct table over the 65536 byte pairs: the priority of merging their tokens.

    The first round of every piece looks up byte pairs only (units="bytes"); this 256 KiB table
    answers them without touching the big pair table.
    """
    pbits = _log2_len(ptab)
    out = np.full(65536, INF_PRIORITY, np.int32)
    for a in range(256):
        if byte_id[a] < 0:
            continue
        for b in range(256):
            if byte_id[b] >= 0:
                out[a * 256 + b] = _pair_pri(ptab, pbits, byte_id[a], byte_id[b], _INF)
    return out


@cached_njit(nogil=True)
def build_tables(tok_bytes, tok_off, ids, key_lens, byte_id, lefts, rights, priorities, rank_mode):
    """All tables of a tokenizer in one call (one kernel to load from Numba's cache at start-up).

    Returns (token table, index of a repeated token or -1, pair table, byte-pair table). In
    rank mode the pairs come from ``rank_pair_table``; otherwise from (lefts, rights,
    priorities).
    """
    tok_tab, dup = build_key_table(tok_bytes, tok_off, ids, key_lens)
    if dup >= 0:
        return tok_tab, dup, np.full(2, _ALL_ONES, np.uint64), np.zeros(1, np.int32)
    if rank_mode:
        ptab = rank_pair_table(tok_bytes, tok_off, tok_tab, ids)
    else:
        ptab = build_pair_table(lefts, rights, priorities)
    return tok_tab, dup, ptab, byte_pair_table(byte_id, ptab)


@cached_njit(nogil=True, _nrt=False)
def _insert_pair(tab, bits, left, right, pri):
    """Insert or overwrite; returns 1 if the pair is new."""
    mask = (1 << bits) - 1
    key = (np.uint64(left) << _KEY_LEFT) | (np.uint64(right) << _KEY_RIGHT)
    slot = _pair_slot(left, right, bits)
    while tab[slot] != _ALL_ONES and (tab[slot] & _KEY_MASK) != key:
        slot = (slot + 1) & mask
    new = 1 if tab[slot] == _ALL_ONES else 0
    tab[slot] = key | np.uint64(pri)
    return new


@cached_njit(nogil=True)
def rank_pair_table(tok_bytes, tok_off, tok_tab, ids):
    """The rank-mode pair table, filled directly (no temporaries): every split of every token
    into two tokens, with the token's rank (its id) as priority. Grows when half full."""
    bits = 4
    while (1 << bits) < 4 * ids.shape[0]:
        bits += 1
    tab = np.full(1 << bits, _ALL_ONES, np.uint64)
    tbits = _table_bits(tok_tab)
    # A cut is looked up only if tokens of both lengths exist: one enormous token (a hostile
    # rank file) then costs its length, not its length squared in hashing.
    longest = 0
    for i in range(ids.shape[0]):
        longest = max(longest, tok_off[ids[i] + 1] - tok_off[ids[i]])
    has_len = np.zeros(longest + 1, np.bool_)
    for i in range(ids.shape[0]):
        has_len[tok_off[ids[i] + 1] - tok_off[ids[i]]] = True
    n = 0
    for i in range(ids.shape[0]):
        tid = ids[i]
        s = tok_off[tid]
        L = tok_off[tid + 1] - s
        for cut in range(1, L):
            if not (has_len[cut] and has_len[L - cut]):
                continue
            k0, h = _hash_bytes(tok_bytes, s, cut)
            left = _find_key(tok_tab, _NO_EXT, tbits, tok_bytes, tok_off, tok_bytes, s, cut, k0, h)
            if left < 0:
                continue
            k0, h = _hash_bytes(tok_bytes, s + cut, L - cut)
            right = _find_key(tok_tab, _NO_EXT, tbits, tok_bytes, tok_off, tok_bytes, s + cut, L - cut, k0, h)
            if right < 0:
                continue
            if 2 * (n + 1) > tab.shape[0]:
                old = tab
                bits += 1
                tab = np.full(1 << bits, _ALL_ONES, np.uint64)
                for e in old:
                    if e != _ALL_ONES:
                        _insert_pair(tab, bits, np.int64(e >> _KEY_LEFT), np.int64((e >> _KEY_RIGHT) & np.uint64(MAX_ID + 1)), np.int64(e & _PRI_MASK))
            n += _insert_pair(tab, bits, left, right, tid)
    return tab


# ----------------------------------------------------------------------------------------------
# merging one piece


@njit(**INLINE)
def _merge_small(sym, n, pp, ptab, pbits, pfilter, fbits, max_pri, res_of):
    """tiktoken's O(n*m) loop: merge the lowest-priority, leftmost pair until none is left."""
    for i in range(n - 1):
        pp[i] = _pair_pri_f(ptab, pbits, pfilter, fbits, sym[i], sym[i + 1], max_pri)
    return _merge_rounds(sym, n, pp, ptab, pbits, pfilter, fbits, max_pri, res_of)


@njit(**INLINE)
def _merge_rounds(sym, n, pp, ptab, pbits, pfilter, fbits, max_pri, res_of):
    """The merge loop of _merge_small, once pp holds the priorities of the first round.

    n < 64, so (priority << 6 | position) orders pairs by priority, then leftmost, and the
    minimum is found without data-dependent branches.
    """
    none = INF_PRIORITY << 6
    while n > 1:
        best = none
        for i in range(n - 1):
            best = min(best, (pp[i] << 6) | i)
        if best >= none:
            break
        at = best & 63
        sym[at] = _result(res_of, best >> 6)
        for i in range(at + 1, n - 1):
            sym[i] = sym[i + 1]
            pp[i] = pp[i + 1]
        n -= 1
        if at > 0:
            pp[at - 1] = _pair_pri_f(ptab, pbits, pfilter, fbits, sym[at - 1], sym[at], max_pri)
        if at < n - 1:
            pp[at] = _pair_pri_f(ptab, pbits, pfilter, fbits, sym[at], sym[at + 1], max_pri)
    return n


@njit(**INLINE)
def _heap_push(heap, hn, v):
    i = hn
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= v:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = v
    return hn + 1


@njit(**INLINE)
def _heap_pop(heap, hn):
    """Remove heap[0]; return the new size."""
    hn -= 1
    v = heap[hn]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= hn:
            break
        if c + 1 < hn and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= v:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = v
    return hn


# A call (long pieces are rare), without reference counting whichever kernel compiles it first.
@njit(_nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _merge_heap(sym, n, pp, nxt, prv, heap, ptab, pbits, pfilter, fbits, max_pri, res_of, first_round):
    """O(n log n) merging for long pieces: linked list of symbols + lazy min-heap. ``first_round``:
    pp already holds the priorities of the first round (a piece of bytes, read from the byte-pair table)."""
    hn = np.int64(0)
    for i in range(n):
        nxt[i] = i + 1
        prv[i] = i - 1
    nxt[n - 1] = -1
    pp[n - 1] = INF_PRIORITY
    for i in range(n - 1):
        if not first_round:
            pp[i] = _pair_pri_f(ptab, pbits, pfilter, fbits, sym[i], sym[i + 1], max_pri)
        if pp[i] < INF_PRIORITY:
            hn = _heap_push(heap, hn, (pp[i] << 32) | i)
    while hn > 0:
        top = heap[0]
        hn = _heap_pop(heap, hn)
        p = top >> 32
        i = top & 0xFFFFFFFF
        if pp[i] != p:
            continue  # stale: the pair at i changed or i was merged away
        j = nxt[i]
        sym[i] = _result(res_of, p)
        pp[j] = -1
        q = nxt[j]
        nxt[i] = q
        if q >= 0:
            prv[q] = i
        h = prv[i]
        if h >= 0:
            pp[h] = _pair_pri_f(ptab, pbits, pfilter, fbits, sym[h], sym[i], max_pri)
            if pp[h] < INF_PRIORITY:
                hn = _heap_push(heap, hn, (pp[h] << 32) | h)
        if q >= 0:
            pp[i] = _pair_pri_f(ptab, pbits, pfilter, fbits, sym[i], sym[q], max_pri)
            if pp[i] < INF_PRIORITY:
                hn = _heap_push(heap, hn, (pp[i] << 32) | i)
        else:
            pp[i] = INF_PRIORITY
    m = 0
    i = 0
    while i >= 0:
        sym[m] = sym[i]
        m += 1
        i = nxt[i]
    return m


@njit(**INLINE)
def _initial_symbols(data, s, L, units, byte_id, tok_bytes, tok_off, tok_tab, tbits, unk_id, eow_id, sym):
    """Write the initial symbols of the piece at s into sym; return their count, or
    -1 - position of a byte that has no token."""
    n = 0
    if units == 0:
        for i in range(L):
            v = byte_id[data[s + i]]
            if v < 0:
                return -1 - (s + i)
            sym[n] = v
            n += 1
    else:
        i = 0
        while i < L:
            c = data[s + i]
            width = 1
            if c >= 0xF0:
                width = 4
            elif c >= 0xE0:
                width = 3
            elif c >= 0xC0:
                width = 2
            if i + width > L:
                width = L - i
            k0, h = _hash_bytes(data, s + i, width)
            v = _find_key(tok_tab, _NO_EXT, tbits, tok_bytes, tok_off, data, s + i, width, k0, h)
            if v < 0:
                v = unk_id
            if v < 0:
                return -1 - (s + i)
            sym[n] = v
            n += 1
            i += width
    if eow_id >= 0:
        sym[n] = eow_id
        n += 1
    return n


@njit(**INLINE)
def _merge_bytes_small(data, s, sym, n, pp, bp, ptab, pbits, pfilter, fbits, res_of):
    """_merge_small for a piece whose symbols are its bytes: the first round reads ``bp``."""
    for i in range(n - 1):
        pp[i] = bp[(np.int64(data[s + i]) << 8) | data[s + i + 1]]
    return _merge_rounds(sym, n, pp, ptab, pbits, pfilter, fbits, _INF, res_of)


@njit(**INLINE)
def _merge_part(data, s, L, sym, o, pp, nxt, prv, heap, byte_id, bp, ptab, pbits, pfilter, fbits, res_of, heap_min, memo):
    """Merge the bytes at ``s`` (a part of a piece, ``_segments``) into ``sym[o:]``; returns the
    new end of ``sym``, or -1 for a byte with no token. A part of one character of 2-3 bytes
    is read from, or written to, ``memo``: its ids + 1, 21 bits each, 0 = not yet merged (a
    write is one aligned word, the same from any thread)."""
    cp, w = char_at(data, s, s + L)
    one = w == L and w >= 2 and cp < BMP
    if one:
        e = memo[cp]
        if e != _U64_0:
            q = 0
            while e != _U64_0:
                sym[o + q] = np.int64(e & _ID_MASK) - 1
                e >>= np.uint64(ID_BITS)
                q += 1
            return o + q
    part = sym[o:]
    for q in range(L):
        v = byte_id[data[s + q]]
        if v < 0:
            return -1
        part[q] = v
    if L >= heap_min:
        for i in range(L - 1):
            pp[i] = bp[(np.int64(data[s + i]) << 8) | data[s + i + 1]]
        n = _merge_heap(part, L, pp, nxt, prv, heap, ptab, pbits, pfilter, fbits, _INF, res_of, True)
    else:
        n = _merge_bytes_small(data, s, part, L, pp, bp, ptab, pbits, pfilter, fbits, res_of)
    if one:
        e = _U64_0
        for q in range(n - 1, -1, -1):
            e = (e << np.uint64(ID_BITS)) | np.uint64(part[q] + 1)
        memo[cp] = e
    return o + n


# A call, as _merge_heap: only pieces of 3-byte letters that were not in the piece cache get here.
@njit(_nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _merge_segments(data, s, L, sym, pp, nxt, prv, heap, byte_id, bp, ptab, pbits, pfilter, fbits, res_of, heap_min, sfilter, sbits, flags, memo):
    """The ids of the piece at ``s`` merged part by part between the cuts no token spans
    (``_segments``), in ``sym``; returns their number, or -1 if the piece has no such cut, a
    character that is not valid UTF-8 or a byte with no token (it is then merged whole)."""
    end = s + L
    cpa, wa = char_at(data, s, end)
    if cpa < 0:
        return -1
    seg = s
    o = 0
    a = s
    while a + wa < end:
        b = a + wa
        cpb, wb = char_at(data, b, end)
        if cpb < 0:
            return -1
        if not crossable(data, a, wa, cpa, b, wb, cpb, sfilter, sbits, flags):
            o = _merge_part(data, seg, b - seg, sym, o, pp, nxt, prv, heap, byte_id, bp, ptab, pbits, pfilter, fbits, res_of, heap_min, memo)
            if o < 0:
                return -1
            seg = b
        a = b
        wa = wb
        cpa = cpb
    if seg == s:
        return -1
    return _merge_part(data, seg, end - seg, sym, o, pp, nxt, prv, heap, byte_id, bp, ptab, pbits, pfilter, fbits, res_of, heap_min, memo)


def piece_cache_size(bits: int) -> int:
    """Length of a piece cache of 2**bits sets (bits = 0: no cache at all; else >= 8): the sets
    (8 << bits words), the long-piece region (as many), the arena's index, head and data."""
    if bits == 0:
        return 8
    return (8 << bits) + (16 << (bits - LONG_SHIFT)) + (1 << (bits + ARENA_INDEX_SHIFT)) + ARENA_HEAD_WORDS + (1 << (bits + ARENA_DATA_SHIFT))


@njit(**INLINE)
def _cache_layout(cache):
    """(log2 of the number of two-way sets, start of the long-piece region, log2 of its
    number of two-way sets, start of the arena's index, of its head, of its data) of a piece
    cache; all 0 for the no-cache placeholder."""
    if cache.shape[0] <= 8:
        return 0, 0, 0, 0, 0, 0
    bits = LONG_SHIFT
    while (8 << bits) + (16 << (bits - LONG_SHIFT)) + (1 << (bits + ARENA_INDEX_SHIFT)) + ARENA_HEAD_WORDS + (1 << (bits + ARENA_DATA_SHIFT)) < cache.shape[0]:
        bits += 1
    long_base = 8 << bits
    index = long_base + (16 << (bits - LONG_SHIFT))
    head = index + (1 << (bits + ARENA_INDEX_SHIFT))
    return bits, long_base, bits - LONG_SHIFT - 1, index, head, head + ARENA_HEAD_WORDS


def new_piece_cache(bits: int) -> np.ndarray:
    """An empty piece cache: 2**bits two-way sets for short pieces, then the long-piece
    region, then the arena (bits = 0: no cache at all).

    On 4 KiB pages, unlike the tables (``_native.hugepages``): a cache is made anew each time
    it grows, and written at random from its first call, so its pages are all faulted in at
    once, where a huge page's first touch can cost milliseconds (compaction, or a virtual
    machine's host mapping fresh memory); a cold call and the call that grows its cache were
    the ones that paid, and warm calls ran no faster on huge pages."""
    return np.zeros(piece_cache_size(bits), np.uint64)


@njit(**INLINE)
def _words(n):
    return (n + 7) >> 3


@cached_njit(nogil=True, _nrt=False)
def _arena_find(cache, index, bits, dbase, data, s, L, h):
    """Start of the arena entry of the L bytes at data[s:] (hash h), or -1. The tag in the
    index only skips most other pieces: the bytes are always compared."""
    mask = (_U1 << np.uint64(bits + ARENA_INDEX_SHIFT)) - _U1
    slot = h >> np.uint64(64 - bits - ARENA_INDEX_SHIFT)
    tag = h << _U32
    while True:
        e = cache[_u(index) + slot]
        if e == _U64_0:
            return -1
        if (e & ~_LOW32) == tag:
            o = dbase + np.int64(e & _LOW32) - 1
            if np.int64(cache[o] & _LOW32) == L:
                q = 0
                while q < L and cache[o + 1 + (q >> 3)] == _load_word(data, s + q, min(L - q, 8)):
                    q += 8
                if q >= L:
                    return o
        slot = (slot + _U1) & mask


# Not inlined (nor the next): the loop's hot path stays as small as it was; these run once per
# piece of 65+ bytes, which costs far more to merge or compare.
@njit(nogil=True, _nrt=False)
def _arena_lookup(cache, index, bits, dbase, data, s, L, h, out, k):
    """Write the ids of the L bytes at data[s:] to out[k:] from the arena and return the new
    k, or -1 if the piece is not there."""
    o = _arena_find(cache, index, bits, dbase, data, s, L, h)
    if o < 0:
        return -1
    m = np.int64(cache[o] >> _U32)
    base = o + 1 + _words(L)
    for q in range(m):
        out[k + q] = np.int64((cache[base + q // 3] >> np.uint64(ID_BITS * (q % 3))) & _ID_MASK)
    return k + m


@cached_njit(nogil=True, _nrt=False)
def _arena_index_add(cache, index, bits, h, at):
    """Point the index at the entry at data offset ``at`` (hash h)."""
    mask = (_U1 << np.uint64(bits + ARENA_INDEX_SHIFT)) - _U1
    slot = h >> np.uint64(64 - bits - ARENA_INDEX_SHIFT)
    while cache[_u(index) + slot] != _U64_0:
        slot = (slot + _U1) & mask
    cache[_u(index) + slot] = (h << _U32) | np.uint64(at + 1)


@cached_njit(nogil=True, _nrt=False)
def _arena_reserve(cache, index, bits, head, need):
    """Data offset of ``need`` free words for one more entry; when the data is full or the
    index 3/4 full, everything is forgotten first."""
    at = np.int64(cache[head])
    entries = np.int64(cache[head + 1])
    if at + need > (1 << (bits + ARENA_DATA_SHIFT)) or 4 * (entries + 1) > (3 << (bits + ARENA_INDEX_SHIFT)):
        for q in range(1 << (bits + ARENA_INDEX_SHIFT)):
            cache[index + q] = _U64_0
        at = 0
        entries = 0
    cache[head] = np.uint64(at + need)
    cache[head + 1] = np.uint64(entries + 1)
    return at


@njit(nogil=True, _nrt=False)
def _arena_store(cache, index, bits, head, dbase, data, s, L, h, sym, n, lslot):
    """Append the piece of L bytes at data[s:] (hash h) and its n ids sym[:n] to the arena;
    if lslot >= 0 (a piece of up to 64 bytes), mark its long-region entry as in the arena."""
    if lslot >= 0:
        _long_put(cache, lslot, data, s, L, np.int64(ARENA_MARK), sym, np.int64(0))
        if _arena_find(cache, index, bits, dbase, data, s, L, h) >= 0:
            return  # its mark was evicted from the long region, not its entry from the arena
    w = _words(L)
    at = _arena_reserve(cache, index, bits, head, 1 + w + (n + 2) // 3)
    o = dbase + at
    cache[o] = (np.uint64(n) << _U32) | np.uint64(L)
    for q in range(w):
        cache[o + 1 + q] = _load_word(data, s + 8 * q, min(L - 8 * q, 8))
    base = o + 1 + w
    for q in range((n + 2) // 3):
        cache[base + q] = _U64_0
    for q in range(n):
        cache[base + q // 3] |= np.uint64(sym[q]) << np.uint64(ID_BITS * (q % 3))
    _arena_index_add(cache, index, bits, h, at)


@njit(**INLINE)
def _short_put(cache, cslot, k0, k1, packed0, packed1):
    """Store a short piece's entry in its set at cslot (nothing if cslot < 0). Way 0 keeps the
    set's first entry, way 1 takes every later one: in a set that three or more pieces share,
    the first (most often the most frequent) is not evicted by the rest, as it would be if
    way 0 moved to way 1 on every new piece."""
    if cslot >= 0:
        e = cslot if cache[cslot + 1] == _U64_0 else cslot + 4
        cache[e] = k0
        cache[e + 1] = k1
        cache[e + 2] = packed0
        cache[e + 3] = packed1


@cached_njit(nogil=True, _nrt=False)
def _long_put(cache, lslot, data, s, L, m, sym, n):
    """Write the long-region entry at lslot: the piece's bytes, m << 8 | L, and the n ids."""
    for q in range(8):
        cache[lslot + q] = _load_word(data, s + 8 * q, min(L - 8 * q, 8)) if 8 * q < L else _U64_0
    cache[lslot + 8] = (np.uint64(m) << np.uint64(8)) | np.uint64(L)
    for q in range(7):
        cache[lslot + 9 + q] = _U64_0
    for q in range(n):
        cache[lslot + 9 + q // 3] |= np.uint64(sym[q]) << np.uint64(ID_BITS * (q % 3))


@cached_njit(nogil=True)
def grow_piece_cache(old, new):
    """Move every entry of the piece cache ``old`` into the bigger, empty ``new``.

    A piece's place comes from its hash, which is recomputed from the bytes its entry keeps
    (short: k0 = bytes 0-7, k1 = bytes 8-14 | length << 56; long and arena: all of them). Of
    two short entries that meet in a new set, one from an old way 0 stays in way 0 (way 0 keeps
    a set's first entry, see ``encode_loop``). Arena entries are appended in their old order,
    so the new arena is the one encoding into ``new`` would have built.
    """
    old_bits, old_base, old_long_bits, old_index, old_head, old_data = _cache_layout(old)
    new_bits, new_base, new_long_bits, new_index, new_head, new_data = _cache_layout(new)
    old_sets = 1 << old_bits
    longest = max(LONG_MAX_BYTES, (1 << (old_bits + ARENA_DATA_SHIFT)) >> ARENA_MAX_SHIFT)
    piece = np.zeros(longest + 8, np.uint8)  # an entry's bytes, padded for 8-byte loads
    for way in (1, 0):  # way 1's entries first, so that way 0's end in way 0
        for st in range(old_sets):
            e = 8 * st + 4 * way
            k1 = old[e + 1]
            if k1 == _U64_0:
                continue
            k0 = old[e]
            n = np.int64(k1 >> np.uint64(56))
            for q in range(8):
                piece[q] = np.uint8((k0 >> np.uint64(8 * q)) & np.uint64(0xFF))
                piece[8 + q] = np.uint8((k1 >> np.uint64(8 * q)) & np.uint64(0xFF)) if q < 7 else 0
            _, h = _hash_bytes(piece, 0, n)
            c = 8 * np.int64(h >> np.uint64(64 - new_bits))
            for q in range(4):
                new[c + 4 + q] = new[c + q]
                new[c + q] = old[e + q]
    for way in (1, 0):  # the long region's sets alike
        for st in range(1 << old_long_bits):
            e = old_base + 32 * st + 16 * way
            n = np.int64(old[e + 8] & np.uint64(0xFF))
            if n == 0:
                continue
            for q in range(LONG_MAX_BYTES):
                piece[q] = np.uint8((old[e + (q >> 3)] >> np.uint64(8 * (q & 7))) & np.uint64(0xFF))
            _, h = _hash_bytes(piece, 0, n)
            c = new_base + 32 * np.int64(h >> np.uint64(64 - new_long_bits))
            for q in range(16):
                new[c + 16 + q] = new[c + q]
                new[c + q] = old[e + q]
    at = 0
    used = np.int64(old[old_head])
    while at < used:
        o = old_data + at
        L = np.int64(old[o] & _LOW32)
        size = 1 + _words(L) + (np.int64(old[o] >> _U32) + 2) // 3
        for q in range(L):
            piece[q] = np.uint8((old[o + 1 + (q >> 3)] >> np.uint64(8 * (q & 7))) & np.uint64(0xFF))
        _, h = _hash_bytes(piece, 0, L)
        new_at = _arena_reserve(new, new_index, new_bits, new_head, size)
        for q in range(size):
            new[new_data + new_at + q] = old[o + q]
        _arena_index_add(new, new_index, new_bits, h, new_at)
        at += size


# ----------------------------------------------------------------------------------------------
# the encoder


@njit(**INLINE)
def _prefetch_piece(
    data, bounds, a, wide_tokens, whole_tab, wbits, whole_ext, cache, cshift, cmask, cache_bits,
    long_base, long_bits, long_max, index, lead_min, lead_mask, hash_max, hashes,
):  # fmt: skip
    """Prefetch the table lines ``encode_loop`` will read for piece ``a`` (and keep its hash
    in ``hashes`` if it has 9 to ``hash_max`` bytes): lookups are then no longer bound by
    memory latency (the tables are megabytes, the pieces random)."""
    s2 = bounds[_u(2 * a)]
    L2 = bounds[_u(2 * a + 1)] - s2
    if L2 <= 8:
        a2, h2 = _hash_head(data, s2, L2)
        if wide_tokens | (a2 & HIGH_BITS == _U64_0):
            prefetch(whole_tab, _U2 * (h2 >> np.uint64(64 - wbits)))
        prefetch(cache, 8 * ((h2 >> cshift) & cmask))
    elif L2 <= CACHE_MAX_BYTES:
        _, _, h2 = _short_key(data, s2, L2)
        prefetch(cache, 8 * ((h2 >> cshift) & cmask))
        # A short piece of 4+ CJK letters (likely 5+ ids) is looked for in the
        # long-piece region too: its set's four lines.
        if L2 >= lead_min and max(data[_u(s2)], data[_u(s2 + 1)] & lead_mask) >= 0xE0 and cache_bits > 0:
            e2 = long_base + 32 * np.int64(h2 >> np.uint64(64 - long_bits))
            prefetch(cache, e2)
            prefetch(cache, e2 + 8)
            prefetch(cache, e2 + 16)
            prefetch(cache, e2 + 24)
    elif L2 <= hash_max:
        _, h2 = _hash_bytes(data, s2, L2)
        hashes[_u(a) & _HASH_MASK_U] = h2
        wslot = h2 >> np.uint64(64 - wbits)
        prefetch(whole_tab, _U2 * wslot)
        prefetch(whole_ext, wslot)
        if cache_bits > 0:
            # A long piece's set in the long-piece region (four lines); a longer
            # one's slot in the arena's index.
            if L2 > long_max:
                prefetch(cache, index + np.int64(h2 >> np.uint64(64 - cache_bits - ARENA_INDEX_SHIFT)))
            else:
                e2 = long_base + 32 * np.int64(h2 >> np.uint64(64 - long_bits))
                prefetch(cache, e2)
                prefetch(cache, e2 + 8)
                prefetch(cache, e2 + 16)
                prefetch(cache, e2 + 24)
                prefetch(cache, index + np.int64(h2 >> np.uint64(64 - cache_bits - ARENA_INDEX_SHIFT)))


@njit(**INLINE)
def mostly_tokens(data, spans, j, whole_tab, max_whole_len):
    """Whether at least 40 % of the first ``_SAMPLE_PIECES`` non-ASCII pieces of up to 8 bytes
    in the ``_SAMPLE_SPANS`` from span ``j`` are tokens in their home slot of the token table:
    such pieces then look there first, as ASCII ones do (CJK, Cyrillic, o200k's Korean and
    Devanagari: a hit spares the piece cache's line); else only in the piece cache (cl100k's
    Devanagari, whose short pieces are mostly not tokens: a first look in the token table would
    mostly read a line for nothing)."""
    wbits = _table_bits(whole_tab)
    n = 0
    hits = 0
    for a in range(j, min(j + _SAMPLE_SPANS, spans.shape[0])):
        s = spans[a, 0]
        L = spans[a, 1] - s
        if L <= 8 and L <= max_whole_len:
            k0, h = _hash_head(data, s, L)
            if k0 & HIGH_BITS != _U64_0:
                slot = _U2 * (h >> np.uint64(64 - wbits))
                n += 1
                hits += np.int64((whole_tab[slot] == k0) & ((whole_tab[slot + _U1] >> _U32) == np.uint64(L)))
                if n == _SAMPLE_PIECES:
                    break
    return 5 * hits >= 2 * n and n > 0  # at least 40 %


@njit(forceinline=True, _nrt=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # INLINE, but it allocates
def work_arrays(size):
    """The encode loop's work arrays for pieces of fewer than ``size`` symbols: sym, pp, nxt,
    prv and the heap."""
    return (
        np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64),
        np.empty(3 * size, np.int64),
    )  # fmt: skip


@cached_njit(nogil=True)
def encode_spans(data, spans, docs, doc_special, doc_end, j, d, out, k, core, cache, heap_min):
    """Encode the pieces ``spans`` of the documents ``docs`` of ``data`` into ``out`` (an int32
    array, or a ``_native.sink.CountSink`` to count the ids without keeping them: a
    specialisation of the same source, see there).

    ``data`` is padded (see ``buffers.padded``); ``cache`` a piece cache (see
    ``new_piece_cache``; reused across calls, never by two at once; one set = off).
    Resumable: starts at span ``j`` / document ``d`` / output position ``k`` and returns
    ``(status, k, j, d, error_position)``. ``ST_FULL`` means ``out`` may be too small for the
    next piece (grow it and call again with the returned j, d, k); ``ST_NO_SYMBOL`` means the
    byte at ``error_position`` has no token (and there is no unknown token). After document
    ``d`` ends, ``doc_special[d]`` (if >= 0) is emitted and ``doc_end[d]`` is set to the output
    length so far.
    """
    heap_min = max(2, min(heap_min, 64))  # the O(n*m) loop packs positions into 6 bits
    hashes = np.empty(HASH_RING, np.uint64)
    wide_tokens = mostly_tokens(data, spans, j, core.whole_tab, core.max_whole_len)
    # The loop runs without reference counting (see encode_loop), so it allocates nothing:
    # it stops at a piece too long for its work arrays, which are made bigger here, so no pass
    # over the spans looks for the longest piece first (a pass that would read every span again).
    size = np.int64(WORK_MIN)  # not the literal: helpers typed while it is one would compile for it
    while True:
        sym, pp, nxt, prv, heap = work_arrays(size)
        status, k, j, d, pos = encode_loop(
            data, spans, docs, doc_special, doc_end, j, d, out, k, core, cache, heap_min, sym, pp, nxt, prv, heap, hashes, wide_tokens,
        )  # fmt: skip
        if status != ST_LONG:
            return status, k, j, d, pos
        size = max(2 * size, pos)


# Without Numba's reference counting: each inlined helper that takes an array (hashing, table
# probes, merging) would otherwise incref and decref it, atomically, for every piece.
@cached_njit(nogil=True, _nrt=False)
def encode_loop(
    data, spans, docs, doc_special, doc_end, j, d, out, k, core, cache, heap_min, sym, pp, nxt, prv, heap, hashes, wide_tokens,
):  # fmt: skip
    """The loop of ``encode_spans``, with its work arrays. ``hashes[j % HASH_RING]`` holds the
    hash of piece ``j`` (of 9 to ``hash_max`` bytes) from when its lines were prefetched, so a
    piece is hashed once (a 16-byte piece's hash is a chain of three multiplies)."""
    (byte_id, bp, tok_bytes, tok_off, tok_tab, whole_tab, whole_ext, max_whole_len, ptab, pfilter, res_of, units, unk_id, eow_id,
     seg_filter, char_flags, char_memo, seg_min) = core  # fmt: skip
    sbits = _log2_len(seg_filter)
    tbits = _table_bits(tok_tab)
    wbits = _table_bits(whole_tab)
    pbits = _log2_len(ptab)
    fbits = _log2_len(pfilter)
    cache_bits, long_base, long_bits, index, head, dbase = _cache_layout(cache)
    cache_max = CACHE_MAX_BYTES if cache_bits > 0 else 0
    long_max = LONG_MAX_BYTES if cache_bits > 0 else 0
    arena_max = (1 << (cache_bits + ARENA_DATA_SHIFT)) >> ARENA_MAX_SHIFT if cache_bits > 0 else 0
    n_spans = spans.shape[0]
    bounds = spans.reshape(-1)  # piece j is bounds[2j : 2j + 2], no multiply by the row length
    cap = out.shape[0]
    extra = 1 if eow_id >= 0 else 0
    room = sym.shape[0]  # a piece of room - extra bytes or more needs bigger work arrays
    plain_bytes = units == 0 and eow_id < 0
    hash_max = max(max_whole_len, arena_max)
    # A short piece's set: (h >> cshift) & cmask, which is set 0 of the no-cache placeholder
    # (its one set is empty, and a key holds the length: nothing matches it).
    cshift = np.uint64(64 - cache_bits) if cache_bits > 0 else np.uint64(0)
    cmask = (np.uint64(1) << np.uint64(cache_bits)) - np.uint64(1)
    # Where short pieces of more than 4 ids are common (cl100k's Korean and CJK; what the last
    # call on this cache saw), a short piece of 10+ bytes whose first or
    # second byte starts a 3-byte character gets its long-region set prefetched; elsewhere
    # (o200k, which has such pieces as single tokens) only 12+ bytes starting with one.
    many = cache_bits > 0 and cache[head + 2] != _U64_0
    lead_min = 10 if many else 12
    lead_mask = 0xFF if many else 0
    n_marked = np.int64(0)
    j_first = j
    for a in range(j, min(j + _PREFETCH_DISTANCE, n_spans)):  # pieces the loop will not prefetch
        _prefetch_piece(
            data, bounds, a, wide_tokens, whole_tab, wbits, whole_ext, cache, cshift, cmask, cache_bits,
            long_base, long_bits, long_max, index, lead_min, lead_mask, hash_max, hashes,
        )  # fmt: skip

    for d in range(d, docs.shape[0]):  # noqa: B020 - resumes at the document it stopped in
        # The document's last span + 1, found by bisection: the loop below then tests an index,
        # not a span's start, for every piece.
        doc_stop = docs[d, 1]
        lo = j
        hi = n_spans
        while lo < hi:
            mid = (lo + hi) >> 1
            if bounds[2 * mid] < doc_stop:
                lo = mid + 1
            else:
                hi = mid
        j_stop = lo
        while j < j_stop:
            ahead = j + _PREFETCH_DISTANCE  # the lines of a piece a few ahead
            if ahead < n_spans:
                _prefetch_piece(
                    data, bounds, ahead, wide_tokens, whole_tab, wbits, whole_ext, cache, cshift, cmask, cache_bits,
                    long_base, long_bits, long_max, index, lead_min, lead_mask, hash_max, hashes,
                )  # fmt: skip
            s = bounds[_u(2 * j)]
            L = bounds[_u(2 * j + 1)] - s
            if (k + L + extra > cap) | (L + extra >= room):  # one branch, rarely taken
                if k + L + extra > cap:
                    _note_marks(cache, cache_bits, head, n_marked, j - j_first)  # a grown output resumes in a new call
                    return ST_FULL, k, j, d, -1
                return ST_LONG, k, j, d, L + extra + 1
            k0 = _U64_0
            h = _U64_0
            k1 = _U64_0
            cslot = -1
            lslot = -1
            spill = False
            in_long = False  # a short piece of more than 4 ids: they are in the long region
            if L <= 8:
                # An ASCII piece (most of English) is most often a token: one masked load, one
                # hash, then the key and its length in one test, in a table of 16-byte slots
                # that stays in cache. Other pieces go to the piece cache first (one line,
                # tokens included), not to both tables, unless enough of them are tokens
                # (``mostly_tokens``).
                k0, h = _hash_head(data, s, L)
                if wide_tokens | (k0 & HIGH_BITS == _U64_0):
                    wslot = h >> np.uint64(64 - wbits)
                    meta = whole_tab[_U2 * wslot + _U1]
                    if (whole_tab[_U2 * wslot] == k0) & ((meta >> _U32) == np.uint64(L)) & (L <= max_whole_len):
                        out[_u(k)] = np.int64(meta & _LOW32)
                        k += 1
                        j += 1
                        continue
            if L <= CACHE_MAX_BYTES:
                # The piece cache's set (its line was prefetched) holds tokens and pieces of
                # 2-4 ids alike, written by two stores whatever their number, in no order a
                # branch predictor can learn in Korean or Russian text; or a mark that the
                # piece's ids are in the long region.
                k0, w1, h = _short_key(data, s, L)
                k1 = (np.uint64(L) << np.uint64(56)) | w1
                cslot = 8 * np.int64((h >> cshift) & cmask)
                in1 = (cache[_u(cslot + 4)] == k0) & (cache[_u(cslot + 5)] == k1)
                if in1 | ((cache[_u(cslot)] == k0) & (cache[_u(cslot + 1)] == k1)):
                    way = cslot + (np.int64(in1) << 2)
                    a = cache[_u(way + 2)]
                    b = cache[_u(way + 3)]
                    if a != _NO_IDS:
                        if k + CACHE_MAX_IDS <= cap:
                            store_id_pair(out, k, a)
                            store_id_pair(out, k + 2, b)
                            k += 1 + np.int64((a >> _U32) != _LOW32) + np.int64((b & _LOW32) != _LOW32) + np.int64((b >> _U32) != _LOW32)
                        else:
                            out[k] = np.int64(a & _LOW32)
                            k += 1
                            if (a >> _U32) != _LOW32:
                                out[k] = np.int64(a >> _U32)
                                k += 1
                                if (b & _LOW32) != _LOW32:
                                    out[k] = np.int64(b & _LOW32)
                                    k += 1
                                    if (b >> _U32) != _LOW32:
                                        out[k] = np.int64(b >> _U32)
                                        k += 1
                        j += 1
                        continue
                    in_long = True
                    n_marked += 1
                if cache_bits == 0:
                    cslot = -1  # no cache: nothing is stored
            elif L <= hash_max:
                k0 = load_u64(data, s)
                h = hashes[_u(j) & _HASH_MASK_U]
            if L <= hash_max:
                # Not in the token table's home slot nor in the piece cache (both lines were
                # prefetched): a token further along its probe chain, a piece in the long-piece
                # region, or a piece to merge. (Probing the chain before the cache cost a line
                # not prefetched for most pieces not whole, a wait on memory; a short piece's
                # chain is probed before the long region, whose line was not prefetched; a long
                # piece's after it.)
                if L <= cache_max and L <= max_whole_len and not in_long:
                    v = _find_key(whole_tab, whole_ext, wbits, tok_bytes, tok_off, data, s, L, k0, h)
                    if v >= 0:
                        out[k] = v
                        k += 1
                        j += 1
                        _short_put(cache, cslot, k0, k1, (_NO_IDS & ~_LOW32) | np.uint64(v), _NO_IDS)
                        continue
                if L <= long_max and L > CACHE_MAX_IDS:  # fewer bytes are at most 4 ids
                    lset = long_base + 32 * np.int64(h >> np.uint64(64 - long_bits))
                    # A miss is stored in way 0 while it is empty, else in way 1; a hit on an
                    # arena mark whose entry is gone is stored again where the mark is.
                    lslot = lset if cache[_u(lset + 8)] == _U64_0 else lset + 16
                    hit = False
                    if L <= 32:  # both ways compared whole, no branch per word or way
                        in0 = _long_differs(cache, lset, data, s, L) == _U64_0
                        in1 = _long_differs(cache, lset + 16, data, s, L) == _U64_0
                        hit = in0 | in1
                        lslot = lset if in0 else (lset + 16 if in1 else lslot)
                    else:
                        for way in range(lset, lset + 32, 16):
                            if np.int64(cache[_u(way + 8)] & np.uint64(0xFF)) == L:
                                q = 0
                                while q < L and cache[_u(way + (q >> 3))] == _load_word(data, s + q, min(L - q, 8)):
                                    q += 8
                                if q >= L:
                                    lslot = way
                                    hit = True
                                    break
                    if hit:
                        m = np.int64(cache[_u(lslot + 8)] >> np.uint64(8))
                        if m <= 6 and k + 6 <= cap:  # most: two words of ids, all six written
                            x = cache[_u(lslot + 9)]
                            y = cache[_u(lslot + 10)]
                            out[_u(k)] = np.int64(x & _ID_MASK)
                            out[_u(k + 1)] = np.int64((x >> _ID_SHIFT1) & _ID_MASK)
                            out[_u(k + 2)] = np.int64((x >> _ID_SHIFT2) & _ID_MASK)
                            out[_u(k + 3)] = np.int64(y & _ID_MASK)
                            out[_u(k + 4)] = np.int64((y >> _ID_SHIFT1) & _ID_MASK)
                            out[_u(k + 5)] = np.int64((y >> _ID_SHIFT2) & _ID_MASK)
                            k += m
                            j += 1
                            continue
                        if m <= LONG_MAX_IDS:
                            if k + m + 2 <= cap:  # three ids per word, all three written
                                for w in range(lslot + 9, lslot + 9 + (m + 2) // 3):
                                    x = cache[_u(w)]
                                    out[_u(k)] = np.int64(x & _ID_MASK)
                                    out[_u(k + 1)] = np.int64((x >> _ID_SHIFT1) & _ID_MASK)
                                    out[_u(k + 2)] = np.int64((x >> _ID_SHIFT2) & _ID_MASK)
                                    k += 3
                                k -= 2 - (m + 2) % 3
                            else:
                                for q in range(m):
                                    out[k + q] = np.int64((cache[lslot + 9 + q // 3] >> np.uint64(ID_BITS * (q % 3))) & _ID_MASK)
                                k += m
                            j += 1
                            continue
                        k2 = _arena_lookup(cache, index, cache_bits, dbase, data, s, L, h, out, k)  # ARENA_MARK
                        if k2 >= 0:
                            k = k2
                            j += 1
                            continue
                    elif lslot != lset and cache[_u(lslot + 8)] != _U64_0 and L <= arena_max:
                        # Both ways taken: the set's later pieces are kept in the arena, not in
                        # way 1 in turn (CJK text has more distinct 16-64-byte pieces than the
                        # biggest long region holds, and each miss is a merge of 16+ symbols).
                        k2 = _arena_lookup(cache, index, cache_bits, dbase, data, s, L, h, out, k)
                        if k2 >= 0:
                            k = k2
                            j += 1
                            continue
                        lslot = -1
                        spill = True
                if L > cache_max and L <= max_whole_len:
                    v = _find_key(whole_tab, whole_ext, wbits, tok_bytes, tok_off, data, s, L, k0, h)
                    if v >= 0:
                        out[k] = v
                        k += 1
                        j += 1
                        if lslot >= 0:  # next time found in the long region, before the chain
                            sym[0] = v
                            _long_put(cache, lslot, data, s, L, np.int64(1), sym, np.int64(1))
                        continue
                if L > long_max and L <= arena_max:
                    k2 = _arena_lookup(cache, index, cache_bits, dbase, data, s, L, h, out, k)
                    if k2 >= 0:
                        k = k2
                        j += 1
                        continue
            n = np.int64(-1)
            if seg_min > 0 and L >= seg_min and max(data[_u(s)], data[_u(s + 1)]) >= 0xE0:  # 3-byte letters (CJK, Hangul)
                n = _merge_segments(
                    data, s, L, sym, pp, nxt, prv, heap, byte_id, bp, ptab, pbits, pfilter, fbits, res_of, heap_min,
                    seg_filter, sbits, char_flags, char_memo,
                )  # fmt: skip
            if n < 0:
                n = _initial_symbols(data, s, L, units, byte_id, tok_bytes, tok_off, tok_tab, tbits, unk_id, eow_id, sym)
                if n < 0:
                    return ST_NO_SYMBOL, k, j, d, -1 - n
                if n >= heap_min:
                    if plain_bytes:  # the first round from the byte-pair table, which stays in cache
                        for i in range(n - 1):
                            pp[i] = bp[(np.int64(data[s + i]) << 8) | data[s + i + 1]]
                    n = _merge_heap(sym, n, pp, nxt, prv, heap, ptab, pbits, pfilter, fbits, _INF, res_of, plain_bytes)
                elif plain_bytes:
                    n = _merge_bytes_small(data, s, sym, n, pp, bp, ptab, pbits, pfilter, fbits, res_of)
                else:
                    n = _merge_small(sym, n, pp, ptab, pbits, pfilter, fbits, _INF, res_of)
            for q in range(n):
                out[k + q] = sym[q]
            k += n
            if cslot >= 0 and n <= CACHE_MAX_IDS:
                packed0 = _NO_IDS
                packed1 = _NO_IDS
                if n >= 1:
                    packed0 = (packed0 & ~_LOW32) | np.uint64(sym[0])
                if n >= 2:
                    packed0 = (packed0 & _LOW32) | (np.uint64(sym[1]) << _U32)
                if n >= 3:
                    packed1 = (packed1 & ~_LOW32) | np.uint64(sym[2])
                if n >= 4:
                    packed1 = (packed1 & _LOW32) | (np.uint64(sym[3]) << _U32)
                _short_put(cache, cslot, k0, k1, packed0, packed1)
            elif lslot >= 0 and n <= LONG_MAX_IDS:
                _long_put(cache, lslot, data, s, L, n, sym, n)
                _short_put(cache, cslot, k0, k1, _NO_IDS, _NO_IDS)  # the mark: not a token, look there
            elif (lslot >= 0 or L > long_max or spill) and L <= arena_max:  # any length, more than 21 ids, or a full set
                _arena_store(cache, index, cache_bits, head, dbase, data, s, L, h, sym, n, lslot)
            j += 1
        if doc_special[d] >= 0:
            if k + 1 > cap:
                return ST_FULL, k, j, d, -1
            out[k] = doc_special[d]
            k += 1
        doc_end[d] = k
    _note_marks(cache, cache_bits, head, n_marked, j - j_first)
    return ST_DONE, k, j, docs.shape[0], -1


@njit(**INLINE)
def _note_marks(cache, cache_bits, head, n_marked, n_pieces):
    """Note in the cache's head whether more than 3 % of a call's pieces (1,024 or more) met a
    mark: short pieces of more than 4 ids are common, the loop's next calls prefetch more."""
    if cache_bits > 0 and n_pieces >= 1024:
        cache[head + 2] = np.uint64(32 * n_marked > n_pieces)


def _scanning_kernels(scanner: int):
    """``encode_docs_range`` and ``encode_text`` for scanner number ``scanner``
    (``_scanners.SCANNER_IDS``), a constant of each: a first run compiles only the scanner of
    the pattern it uses (a scanner is a large compile, and a call needs one). Their
    cache files are named after the scanner, and ``jit.KernelCache`` keys them by their
    cells: the number, and for ``encode_text`` the ``encode_docs_range`` it calls."""

    def encode_docs_range(data, docs, doc_special, doc_end, flags, out, k, batch, core, cache, heap_min):
        """Pre-tokenize the documents ``docs`` of ``data`` (padded, or followed by more text) with
        the scanner and encode them into ``out`` from position ``k``, ``batch`` pieces at a
        time: each batch is scanned, then encoded while its spans (16 bytes a piece) and text
        are still in the core's cache. (Scanned 256 KiB at a time, English's spans outgrew
        the text several times over and pushed the token table's and piece cache's lines out
        of the core's L2 before the loop read them.) After document ``d`` ends,
        ``doc_special[d]`` (if >= 0) is emitted and ``doc_end[d]`` set to the ids so far.
        Returns ``(status, k, d, position)``. ``ST_FULL``: ``out`` holds the ids up to
        document ``d``'s text before ``position`` (a piece's start, or the document's end when
        only its special did not fit); grow it and call again from there (no pattern looks
        behind a piece's start). ``ST_NO_SYMBOL``: the byte at ``position`` has no token."""
        ndocs = docs.shape[0]
        nbytes = docs[ndocs - 1, 1] - docs[0, 0] if ndocs > 0 else 0  # at most that many pieces
        spans = np.empty((max(1, min(batch, nbytes + 1)), 2), np.int64)
        heap_min = max(2, min(heap_min, 64))  # the O(n*m) loop packs positions into 6 bits
        hashes = np.empty(HASH_RING, np.uint64)
        size = np.int64(WORK_MIN)  # not the literal: helpers typed while it is one would compile for it
        sym, pp, nxt, prv, heap = work_arrays(size)
        one_doc = np.empty((1, 2), np.int64)  # the document a batch ends in, while it is unfinished
        no_special = np.full(1, -1, np.int64)
        no_end = np.empty(1, np.int64)
        zero = np.int64(0)
        wide_tokens = False
        sampled = (docs[0, 0] if ndocs > 0 else zero) - _SAMPLE_EVERY  # where the last sample was taken
        d_scan = zero
        d_enc = zero
        i = docs[0, 0] if ndocs > 0 else zero
        while d_scan < ndocs:
            n, d_next, i_next = scan_into(scanner, read_only(data), docs, flags, spans, d_scan, i)
            part = spans[:n]
            if i - sampled >= _SAMPLE_EVERY:
                wide_tokens = mostly_tokens(data, part, zero, core.whole_tab, core.max_whole_len)
                sampled = i
            j = zero
            # the documents the scan finished, then the pieces of the one it stopped in
            for last in range(2):
                if last == 0:
                    view = docs[:d_next]
                    ds, de, d0 = doc_special, doc_end, d_enc
                    if d_enc >= d_next:
                        continue
                else:
                    if d_next >= ndocs or j >= n:
                        break
                    one_doc[0, 0] = docs[d_next, 0]
                    one_doc[0, 1] = docs[d_next, 1]
                    view, ds, de, d0 = one_doc, no_special, no_end, zero
                while True:
                    status, k, j, d_out, pos = encode_loop(
                        data, part, view, ds, de, j, d0, out, k, core, cache, heap_min, sym, pp, nxt, prv, heap, hashes, wide_tokens,
                    )  # fmt: skip
                    if status == ST_LONG:  # a piece too long for the work arrays: bigger ones
                        size = max(2 * size, pos)
                        sym, pp, nxt, prv, heap = work_arrays(size)
                        d0 = d_out
                        continue
                    if status == ST_FULL:
                        dd = d_out if last == 0 else d_next
                        if j < n and part[j, 0] < docs[dd, 1]:
                            return status, k, dd, part[j, 0]
                        return status, k, dd, docs[dd, 1]
                    if status != ST_DONE:
                        return status, k, d_out, pos
                    break
                if last == 0:
                    d_enc = d_next
            d_scan, i = d_next, i_next
        return ST_DONE, k, ndocs, zero - 1

    def encode_text(data, n, flags, core, cache, heap_min):
        """Pre-tokenize the text ``data[:n]`` (padded) with the scanner and encode it, in one
        call: a short text spends more in the Python between two kernels than in them. Returns
        ``(status, ids, error_position)`` as ``encode_spans`` does. The output has room for the
        worst case (at most 256 KiB of text: address space, only the ids are written), and the
        ids are returned in an array of their own, not a view of it that a caller keeping them
        would keep too (room for one id a byte, several times what most text gives)."""
        docs = np.empty((1, 2), np.int64)
        docs[0, 0] = 0
        docs[0, 1] = n
        out = np.empty(n * (2 if core.eow_id >= 0 else 1) + 1, np.int32)
        zero = np.int64(0)  # not the literal 0: encode_docs_range keeps the one signature Python calls
        status, k, _, pos = docs_range(
            data, docs, np.full(1, -1, np.int64), np.empty(1, np.int64), flags, out, zero, np.int64(SPAN_BATCH), core, cache, heap_min,
        )  # fmt: skip
        return status, out[:k].copy(), pos

    for kernel in (encode_docs_range, encode_text):
        kernel.__qualname__ = f"{kernel.__name__}_{SCANNER_KINDS[scanner]}"
    docs_range = cached_njit(nogil=True)(encode_docs_range)
    return docs_range, cached_njit(nogil=True)(encode_text)


# By scanner number (``_scanners.SCANNER_IDS``).
ENCODE_DOCS_RANGE, ENCODE_TEXT = zip(*(_scanning_kernels(i) for i in range(len(SCANNER_KINDS))))


@cached_njit(nogil=True)
def derive_merges(tok_bytes, tok_off, byte_id, ptab, ids):
    """For each token (rank mode): the two parts that rank-BPE restricted to lower ranks gives.

    Returns int64 arrays (left, right); -1 where the restricted encoding is not two tokens.
    """
    pbits = _log2_len(ptab)
    res_of = np.zeros(0, np.int32)  # rank mode
    n_ids = ids.shape[0]
    left = np.full(n_ids, -1, np.int64)
    right = np.full(n_ids, -1, np.int64)
    size = 2
    for i in range(n_ids):
        size = max(size, tok_off[ids[i] + 1] - tok_off[ids[i]] + 1)
    sym = np.empty(size, np.int64)
    pp = np.empty(size, np.int64)
    nxt = np.empty(size, np.int64)
    prv = np.empty(size, np.int64)
    heap = np.empty(3 * size, np.int64)
    # Arguments typed as the encoder's (a writable filter, int64 scalars): the merge helpers
    # keep one signature.
    no_filter = np.full(2, _ALL_ONES, np.uint64)
    one = np.int64(1)
    for i in range(n_ids):
        tid = ids[i]
        s = tok_off[tid]
        L = tok_off[tid + 1] - s
        if L < 2:
            continue
        ok = True
        for q in range(L):
            v = byte_id[tok_bytes[s + q]]
            if v < 0:
                ok = False
                break
            sym[q] = v
        if not ok:
            continue
        if L >= 64:
            n = _merge_heap(sym, L, pp, nxt, prv, heap, ptab, pbits, no_filter, one, np.int64(tid), res_of, False)
        else:
            n = _merge_small(sym, L, pp, ptab, pbits, no_filter, one, np.int64(tid), res_of)
        if n == 2:
            left[i] = sym[0]
            right[i] = sym[1]
    return left, right


@cached_njit(nogil=True)
def cut_documents(data, docs, step):
    """Cut documents longer than 2 * step into parts of about step bytes (named patterns only).

    A cut goes at a space that follows an ASCII letter: in the gpt2/r50k, cl100k and o200k
    patterns no piece runs from a letter into a space and none looks behind, so a piece starts
    there whatever comes before, and the left part does not end in whitespace (so ``\\s+$``
    and ``(?!\\S)`` see the same thing). Returns (parts, index of the document of each part).
    """
    m = docs.shape[0]
    total = m
    for i in range(m):
        size = docs[i, 1] - docs[i, 0]
        if size > 2 * step:
            total += size // step
    parts = np.empty((total, 2), np.int64)
    parent = np.empty(total, np.int64)
    n = 0
    for i in range(m):
        s = docs[i, 0]
        e = docs[i, 1]
        if e - s > 2 * step:
            p = s + step
            while p < e - step:
                if is_cut(data, p):
                    parts[n, 0] = s
                    parts[n, 1] = p
                    parent[n] = i
                    n += 1
                    s = p
                    p += step
                else:
                    p += 1
        parts[n, 0] = s
        parts[n, 1] = e
        parent[n] = i
        n += 1
    return parts[:n], parent[:n]


# ----------------------------------------------------------------------------------------------
# decoding and rank files


@cached_njit(nogil=True)
def decode_ids(ids, tok_off, dec_bytes, dec_off):
    """Concatenate the decode bytes of ``ids``; returns (bytes, index of first invalid id or -1)."""
    n_tok = tok_off.shape[0] - 1
    total = 0
    for i in range(ids.shape[0]):
        t = ids[i]
        if t < 0 or t >= n_tok or tok_off[t + 1] == tok_off[t]:
            return np.empty(0, np.uint8), i
        total += dec_off[t + 1] - dec_off[t]
    out = np.empty(total, np.uint8)
    p = 0
    for i in range(ids.shape[0]):
        t = ids[i]
        for q in range(dec_off[t], dec_off[t + 1]):
            out[p] = dec_bytes[q]
            p += 1
    return out, -1
