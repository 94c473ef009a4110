"""Word counting: pre-token byte strings -> a table of unique words with 64-bit counts.

The table is array-backed (open addressing on a 64-bit hash of the bytes, keys stored in one
flat byte buffer), filled by a nogil Numba kernel, so two threads can each count their own
half of a chunk and the halves are merged at the end.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._native.intrinsics import load_u64 as _load_u64
from .._native.intrinsics import prefetch, read_only_view
from .._native.jit import INLINE, cached_njit, wraps_around

# A table row is 16 bytes: the key, then the word's index (high 32 bits) and the low 32 bits of
# its count. Words of up to 7 bytes are their own key (bytes packed little-endian, length in the
# top byte), so the common lookup touches one row and nothing else; longer words are keyed by a
# hash with the top byte 0xFF and checked byte by byte against the store. No key is 0: that is an
# empty row, so a new table is zero pages until it is written. Counts past 2**32 - 1 carry into
# the per-word ``over`` array, which exists only once a count needs it.
KEY, ENTRY = 0, 1
LOOKAHEAD = 16
_LONG_TAG = np.uint64(0xFF) << np.uint64(56)
_LOW56 = (np.uint64(1) << np.uint64(56)) - np.uint64(1)
_LOW32 = np.int64(0xFFFFFFFF)
_MAX_WORDS = 1 << 31  # the index must fit the row's high 32 bits


@wraps_around
@njit(**INLINE)
def _word_key(data, start, end):
    n = end - start
    if n <= 7:
        if start + 8 <= len(data):
            # One unaligned load, then keep the word's n bytes.
            k = _load_u64(data, start) & ((np.uint64(1) << np.uint64(8 * n)) - np.uint64(1))
        else:
            k = np.uint64(0)
            for i in range(n):
                k |= np.uint64(data[start + i]) << np.uint64(8 * i)
        return np.int64(k | (np.uint64(n) << np.uint64(56)))
    # Longer words: hash 8 bytes at a time, the tail byte by byte.
    h = np.uint64(n) * np.uint64(0x9E3779B97F4A7C15)
    i = start
    while i + 8 <= end:
        h = (h ^ _load_u64(data, i)) * np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(32)
        i += 8
    while i < end:
        h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
        i += 1
    h ^= h >> np.uint64(29)
    return np.int64((h & _LOW56) | _LONG_TAG)


@wraps_around
@njit(**INLINE)
def _slot_of(key, mask):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64((h >> np.uint64(32)) & np.uint64(mask))


# Without Numba's reference counting (it allocates nothing; ``ring`` comes from the caller):
# with it, the key helper's call for every span increfed and decrefed ``data``, atomically:
# a fifth to a quarter of the kernel's time.
@cached_njit(nogil=True, _nrt=False)
def _insert_words(data, spans, counts, firsts, weighted, base_pos, begin, table, w_start, w_first, over, store, sizes, ring):
    """Count spans[begin:] of ``data`` into the table; stop early when it must grow.

    ``sizes`` = [n_words, store_used, over_needed]; ``ring`` has LOOKAHEAD int64 slots of
    scratch. Word w's bytes are ``store[w_start[w]:w_start[w + 1]]``. Unweighted spans count 1
    and are first seen at base_pos + start (calls come in corpus order, so a word's first
    insertion is its first position); weighted ones (merging another table) carry
    counts/firsts. An empty ``w_first`` keeps no first positions. Returns the index of the
    first span not inserted (len(spans) when done); ``sizes[2]`` = 1 when it stopped for want
    of the ``over`` array.
    """
    mask = len(table) - 1
    table_flat = table.reshape(-1)
    n_words = sizes[0]
    used = sizes[1]
    max_words = min(len(w_start) - 1, (len(table) * 3) // 4)
    track = len(w_first) > 0
    n_spans = len(spans)
    # Keys are computed LOOKAHEAD spans ahead and their rows prefetched, so the table's cache
    # misses overlap instead of stalling one after another.
    for j in range(begin, min(begin + LOOKAHEAD, n_spans)):
        ring[j % LOOKAHEAD] = _word_key(data, spans[j, 0], spans[j, 1])
        prefetch(table_flat, _slot_of(ring[j % LOOKAHEAD], mask) * 2)
    for i in range(begin, n_spans):
        s = spans[i, 0]
        e = spans[i, 1]
        n = e - s
        if n_words >= max_words or used + n > len(store):
            sizes[0] = n_words
            sizes[1] = used
            return i
        c = counts[i] if weighted else 1
        key = ring[i % LOOKAHEAD]
        ahead = i + LOOKAHEAD
        if ahead < n_spans:
            k_ahead = _word_key(data, spans[ahead, 0], spans[ahead, 1])
            ring[ahead % LOOKAHEAD] = k_ahead
            prefetch(table_flat, _slot_of(k_ahead, mask) * 2)
        slot = _slot_of(key, mask)
        need_over = False
        while True:
            k = table[slot, KEY]
            if k == 0:
                if c > _LOW32 and len(over) == 0:
                    need_over = True
                    break
                table[slot, KEY] = key
                table[slot, ENTRY] = (n_words << 32) | (c & _LOW32)
                if c > _LOW32:
                    over[n_words] = c - (c & _LOW32)
                if track:
                    w_first[n_words] = firsts[i] if weighted else base_pos + s
                for q in range(n):  # (a slice copy would need the runtime: it may allocate)
                    store[used + q] = data[s + q]
                used += n
                n_words += 1
                w_start[n_words] = used
                break
            if k == key:
                entry = table[slot, ENTRY]
                w = entry >> 32
                same = True
                if n > 7:
                    ws = w_start[w]
                    if w_start[w + 1] - ws != n:
                        same = False
                    else:
                        for q in range(n):
                            if store[ws + q] != data[s + q]:
                                same = False
                                break
                if same:
                    total = (entry & _LOW32) + c
                    if total > _LOW32:
                        if len(over) == 0:
                            need_over = True
                            break
                        over[w] += total - (total & _LOW32)
                    table[slot, ENTRY] = (entry - (entry & _LOW32)) | (total & _LOW32)
                    if weighted and track and firsts[i] < w_first[w]:
                        w_first[w] = firsts[i]
                    break
            slot = (slot + 1) & mask
        if need_over:
            sizes[0] = n_words
            sizes[1] = used
            sizes[2] = 1
            return i
    sizes[0] = n_words
    sizes[1] = used
    return len(spans)


@cached_njit(nogil=True)
def _rehash(old, new):
    mask = len(new) - 1
    for r in range(len(old)):
        if old[r, KEY] != 0:
            slot = _slot_of(old[r, KEY], mask)
            while new[slot, KEY] != 0:
                slot = (slot + 1) & mask
            new[slot, KEY] = old[r, KEY]
            new[slot, ENTRY] = old[r, ENTRY]


@cached_njit(nogil=True)
def _reindex(table, w_start, store, low, n_words, ring):
    """Rows for words 0..n_words-1 in the empty ``table``, keys computed again from their
    bytes and counts' low 32 bits from ``low``: a bigger table is filled without the old one
    (slower than ``_rehash``, whose writes follow the old rows' order)."""
    mask = len(table) - 1
    table_flat = table.reshape(-1)
    for w in range(min(LOOKAHEAD, n_words)):
        ring[w % LOOKAHEAD] = _word_key(store, w_start[w], w_start[w + 1])
    for w in range(n_words):
        key = ring[w % LOOKAHEAD]
        ahead = w + LOOKAHEAD
        if ahead < n_words:
            k_ahead = _word_key(store, w_start[ahead], w_start[ahead + 1])
            ring[ahead % LOOKAHEAD] = k_ahead
            prefetch(table_flat, _slot_of(k_ahead, mask) * 2)
        slot = _slot_of(key, mask)
        while table[slot, KEY] != 0:
            slot = (slot + 1) & mask
        table[slot, KEY] = key
        table[slot, ENTRY] = (np.int64(w) << 32) | np.int64(low[w])


@cached_njit(nogil=True)
def _table_counts(table, out):
    """Each word's count (low 32 bits) from its row into ``out[word]``."""
    for r in range(len(table)):
        if table[r, KEY] != 0:
            entry = table[r, ENTRY]
            out[entry >> 32] = entry & _LOW32


_MERGE_BLOCK = 1 << 20


class WordCounter:
    """Unique pre-tokens with their counts and first position in the corpus.

    >>> wc = WordCounter()
    >>> data = np.frombuffer(b"ab cd ab", dtype=np.uint8)
    >>> wc.add_spans(data, np.array([[0, 2], [2, 5], [5, 8]]), base_pos=0)
    >>> wc.add_spans(np.frombuffer(b"ab", dtype=np.uint8), np.array([[0, 2]]), base_pos=100)
    >>> [(bytes(w), int(c)) for w, c in zip(wc.word_list(), wc.counts)]
    [(b'ab', 2), (b' cd', 1), (b' ab', 1)]
    """

    def __init__(self, capacity: int = 1 << 14, store_bytes: int | None = None, track_firsts: bool = True):
        capacity = max(16, int(capacity))
        # At most 3/4 of the rows are used (then the table doubles): 21-43 bytes of rows a word.
        rows = 1 << max(4, (capacity * 4 // 3).bit_length())
        self._table = np.zeros((rows, 2), dtype=np.int64)
        self._start = np.zeros(capacity + 1, dtype=np.int64)  # word w is store[start[w]:start[w + 1]]
        self._first = np.zeros(capacity if track_firsts else 0, dtype=np.int64)  # empty: not kept
        self._over = np.zeros(0, dtype=np.int64)  # count bits above 32, once a count needs them
        self._store = np.zeros(capacity * 8 if store_bytes is None else max(16, int(store_bytes)), dtype=np.uint8)
        self._sizes = np.zeros(3, dtype=np.int64)
        self._empty64 = np.zeros(0, dtype=np.int64)
        self._ring = np.empty(LOOKAHEAD, dtype=np.int64)
        self._frozen: np.ndarray | None = None  # the counts, once the table is freed

    @property
    def _capacity(self) -> int:
        """Words the per-word arrays have room for."""
        return len(self._start) - 1

    @property
    def n_words(self) -> int:
        return int(self._sizes[0])

    @property
    def store_used(self) -> int:
        """Bytes of the unique words, end to end."""
        return int(self._sizes[1])

    @property
    def nbytes(self) -> int:
        """Memory held by the table and its arrays."""
        return sum(a.nbytes for a in (self._table, self._start, self._first, self._over, self._store))

    def add_spans(self, data: np.ndarray, spans: np.ndarray, base_pos: int) -> None:
        """Count every span of ``data``; ``base_pos`` is data[0]'s position in the corpus.

        Calls come in corpus order (``base_pos`` never goes back), so a word's first position
        is where it was first inserted."""
        self._insert(data, spans, self._empty64, self._empty64, False, base_pos)

    def merge(self, other: WordCounter) -> None:
        """Add another counter's words (counts summed, earliest first position kept). ``other``
        is frozen first (its table freed, its arrays cut to their words), then this one is
        made big enough for both at once, so nothing grows while the words go in."""
        other.freeze()
        self._reserve(self.n_words + other.n_words, self.store_used + other.store_used)
        self.add_words(other.store, other.bounds, other.counts, other.firsts)

    def add_words(self, store: np.ndarray, bounds: np.ndarray, counts: np.ndarray, firsts: np.ndarray) -> None:
        """Add the words ``store[bounds[i]:bounds[i + 1]]`` with their counts and first positions
        (``firsts`` is read only by a counter that keeps them, and may be empty otherwise)."""
        n = len(bounds) - 1
        track = len(self._first) > 0
        if len(counts) != n or (track and len(firsts) != n):
            raise ValueError(f"{n} words need {n} counts{' and first positions' if track else ''}, "
                             f"got {len(counts)} and {len(firsts)}")
        for a in range(0, n, _MERGE_BLOCK):  # spans made a block at a time: 16 B a word
            b = min(n, a + _MERGE_BLOCK)
            spans = np.stack([bounds[a:b], bounds[a + 1 : b + 1]], axis=1)
            self._insert(store, spans, counts[a:b], firsts[a:b] if track else self._empty64, True, 0)

    def freeze(self) -> None:
        """Keep the counts as one array, free the hash table (most of the memory) and cut the
        per-word arrays to the words (where they have an eighth more room): the counter reads
        the same but counts no more."""
        if self._frozen is None:
            self._frozen = self.counts
            self._table = np.zeros((0, 2), dtype=np.int64)
            n = self.n_words
            for name, size in (("_start", n + 1), ("_first", n), ("_over", n), ("_store", self.store_used)):
                if len(getattr(self, name)) > size + size // 8:
                    try:  # in place: the allocator gives the tail back, nothing is copied
                        getattr(self, name).resize(size)
                    except ValueError:  # a view of it is alive
                        setattr(self, name, getattr(self, name)[:size].copy())

    def _insert(self, data, spans, counts, firsts, weighted, base_pos):
        self._check_not_frozen()
        spans = np.ascontiguousarray(spans, dtype=np.int64)
        data = read_only_view(data)  # one array type from files, strs and Arrow: one compile
        begin = 0
        while True:
            begin = _insert_words(data, spans, counts, firsts, weighted, base_pos, begin, self._table,
                                  self._start, self._first, self._over, self._store, self._sizes, self._ring)
            if begin >= len(spans):
                return
            self._grow(int(spans[begin, 1] - spans[begin, 0]))

    def _grow(self, need_bytes: int) -> None:
        if self._sizes[2]:
            self._sizes[2] = 0
            self._over = np.zeros(self._capacity, dtype=np.int64)
        n = self.n_words
        words = 2 * self._capacity if n >= self._capacity else self._capacity
        rows = 2 * len(self._table) if n >= (len(self._table) * 3) // 4 else len(self._table)
        used = int(self._sizes[1])
        store = max(2 * len(self._store), used + need_bytes) if used + need_bytes > len(self._store) else len(self._store)
        self._resize(words, rows, store, False)

    def _check_not_frozen(self) -> None:
        if self._frozen is not None:
            raise RuntimeError("this WordCounter is frozen: it counts no more")

    def _reserve(self, n_words: int, store_bytes: int) -> None:
        """Room for ``n_words`` words of ``store_bytes`` bytes in all, without growing."""
        self._check_not_frozen()
        rows = len(self._table)
        while n_words > (rows * 3) // 4:
            rows *= 2
        self._resize(max(n_words, self._capacity), rows, max(store_bytes, len(self._store)), True)

    def _resize(self, words: int, rows: int, store_bytes: int, lean: bool) -> None:
        """Per-word arrays for ``words`` words, a table of ``rows`` rows, a store of
        ``store_bytes``; one array at a time, each old one freed once copied. ``lean``: the old
        table is freed before the new one is made (for a merge, where two counters' arrays are
        resident), else the new one is filled from it, faster."""
        n = self.n_words
        if words > _MAX_WORDS:
            raise MemoryError(f"a word table of more than {_MAX_WORDS:,} unique words")
        if words != self._capacity:
            for name, size, keep in (("_start", words + 1, n + 1), ("_first", words, n), ("_over", words, n)):
                old = getattr(self, name)
                if len(old):
                    new = np.zeros(size, dtype=np.int64)
                    new[:keep] = old[:keep]
                    setattr(self, name, new)
                    del old, new
        if rows != len(self._table) and not lean:
            table = np.zeros((rows, 2), dtype=np.int64)
            _rehash(self._table, table)
            self._table = table
        elif rows != len(self._table):
            # Counts' low halves (4 bytes a word) are kept and the old rows freed before the new
            # table is made: keys are computed again from the words' bytes.
            low = np.empty(n, dtype=np.uint32)
            _table_counts(self._table, low)
            self._table = np.zeros((0, 2), dtype=np.int64)
            self._table = np.zeros((rows, 2), dtype=np.int64)
            _reindex(self._table, self._start, self._store, low, n, self._ring)
        used = int(self._sizes[1])
        if store_bytes != len(self._store):
            store = np.zeros(store_bytes, dtype=np.uint8)
            store[:used] = self._store[:used]
            self._store = store

    # Results, trimmed to the live words.
    @property
    def counts(self) -> np.ndarray:
        if self._frozen is not None:
            return self._frozen
        out = np.empty(self.n_words, dtype=np.int64)
        _table_counts(self._table, out)
        if len(self._over):
            out += self._over[: self.n_words]
        return out

    @property
    def firsts(self) -> np.ndarray:
        """Each word's first position (empty for a counter made with ``track_firsts=False``)."""
        return self._first[: self.n_words]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self._start[: self.n_words + 1]).astype(np.int32)

    @property
    def starts(self) -> np.ndarray:
        return self._start[: self.n_words]

    @property
    def bounds(self) -> np.ndarray:
        """Where each word starts in the store, and where the last one ends (n + 1 entries)."""
        return self._start[: self.n_words + 1]

    @property
    def store(self) -> np.ndarray:
        return self._store[: int(self._sizes[1])]

    def word_list(self) -> list[bytes]:
        """The words as bytes (a Python object per word: for tests and small tables only)."""
        store = self.store.tobytes()
        return [store[s : s + n] for s, n in zip(self.starts.tolist(), self.lengths.tolist())]


@cached_njit(nogil=True)
def gather_words(store, bounds, counts, order):
    """The words ``order[0], order[1], ...`` (word w is ``store[bounds[w]:bounds[w + 1]]``)
    packed back to back, their offsets and their counts."""
    n = len(order)
    offsets = np.empty(n + 1, dtype=np.int64)
    out_counts = np.empty(n, dtype=np.int64)
    offsets[0] = 0
    for i in range(n):
        w = order[i]
        offsets[i + 1] = offsets[i] + bounds[w + 1] - bounds[w]
        out_counts[i] = counts[w]
    words = np.empty(offsets[n], dtype=np.uint8)
    for i in range(n):
        w = order[i]
        s = bounds[w]
        o = offsets[i]
        for k in range(bounds[w + 1] - s):
            words[o + k] = store[s + k]
    return words, offsets, out_counts
