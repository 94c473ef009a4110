"""Word counting: pre-token byte strings -> a table of unique words with 64-bit counts.

The table is array-backed (open addressing on a 64-bit hash of the bytes, keys stored in one
flat byte buffer), filled by a nogil Numba kernel, so two threads can each count their own
half of a chunk and the halves are merged at the end.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._native.intrinsics import load_u64 as _load_u64
from .._native.intrinsics import prefetch
from .._native.jit import cached_njit

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


@njit(inline="always")
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


@njit(inline="always")
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
    counts/firsts. Returns the index of the first span not inserted (len(spans) when done);
    ``sizes[2]`` = 1 when it stopped for want of the ``over`` array.
    """
    mask = len(table) - 1
    table_flat = table.reshape(-1)
    n_words = sizes[0]
    used = sizes[1]
    max_words = min(len(w_first), (len(table) * 3) // 4)
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
                    if weighted and firsts[i] < w_first[w]:
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
def _table_counts(table, out):
    """Each word's count (low 32 bits) from its row into ``out[word]``."""
    for r in range(len(table)):
        if table[r, KEY] != 0:
            entry = table[r, ENTRY]
            out[entry >> 32] = entry & _LOW32


class WordCounter:
    """Unique pre-tokens with their counts and first position in the corpus.

    >>> wc = WordCounter()
    >>> data = np.frombuffer(b"ab cd ab", dtype=np.uint8)
    >>> wc.add_spans(data, np.array([[0, 2], [2, 5], [5, 8]]), base_pos=0)
    >>> wc.add_spans(np.frombuffer(b"ab", dtype=np.uint8), np.array([[0, 2]]), base_pos=100)
    >>> [(bytes(w), int(c)) for w, c in zip(wc.word_list(), wc.counts)]
    [(b'ab', 2), (b' cd', 1), (b' ab', 1)]
    """

    def __init__(self, capacity: int = 1 << 14, store_bytes: int | None = None):
        capacity = max(16, int(capacity))
        # At most 3/4 of the rows are used (then the table doubles): 21-43 bytes of rows a word.
        rows = 1 << max(4, (capacity * 4 // 3).bit_length())
        self._table = np.zeros((rows, 2), dtype=np.int64)
        self._start = np.zeros(capacity + 1, dtype=np.int64)  # word w is store[start[w]:start[w + 1]]
        self._first = np.zeros(capacity, dtype=np.int64)
        self._over = np.zeros(0, dtype=np.int64)  # count bits above 32, once a count needs them
        self._store = np.zeros(capacity * 8 if store_bytes is None else max(16, int(store_bytes)), dtype=np.uint8)
        self._sizes = np.zeros(3, dtype=np.int64)
        self._empty64 = np.zeros(0, dtype=np.int64)
        self._ring = np.empty(LOOKAHEAD, dtype=np.int64)
        self._frozen: np.ndarray | None = None  # the counts, once the table is freed

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
        is frozen first: its table is freed before this one grows."""
        other.freeze()
        n = other.n_words
        spans = np.stack([other._start[:n], other._start[1 : n + 1]], axis=1)
        self._insert(other._store, spans, other.counts, other.firsts, True, 0)

    def freeze(self) -> None:
        """Keep the counts as one array and free the hash table (most of the memory): the
        counter reads the same but counts no more."""
        if self._frozen is None:
            self._frozen = self.counts
            self._table = np.zeros((0, 2), dtype=np.int64)

    def _insert(self, data, spans, counts, firsts, weighted, base_pos):
        if self._frozen is not None:
            raise RuntimeError("this WordCounter is frozen: it counts no more")
        spans = np.ascontiguousarray(spans, dtype=np.int64)
        begin = 0
        while True:
            begin = _insert_words(data, spans, counts, firsts, weighted, base_pos, begin, self._table,
                                  self._start, self._first, self._over, self._store, self._sizes, self._ring)
            if begin >= len(spans):
                return
            self._grow(int(spans[begin, 1] - spans[begin, 0]))

    def _grow(self, need_bytes: int) -> None:
        n = self.n_words
        if self._sizes[2]:
            self._sizes[2] = 0
            self._over = np.zeros(len(self._first), dtype=np.int64)
        if n >= len(self._first):
            cap = 2 * len(self._first)
            if cap > _MAX_WORDS:
                raise MemoryError(f"a word table of more than {_MAX_WORDS:,} unique words")
            for name, size, keep in (("_start", cap + 1, n + 1), ("_first", cap, n), ("_over", cap, n)):
                old = getattr(self, name)
                if len(old):
                    new = np.zeros(size, dtype=np.int64)
                    new[:keep] = old[:keep]
                    setattr(self, name, new)
        if n >= (len(self._table) * 3) // 4:
            table = np.zeros((2 * len(self._table), 2), dtype=np.int64)
            _rehash(self._table, table)
            self._table = table
        used = int(self._sizes[1])
        if used + need_bytes > len(self._store):
            new = np.zeros(max(2 * len(self._store), used + need_bytes), dtype=np.uint8)
            new[:used] = self._store[:used]
            self._store = new

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
        return self._first[: self.n_words]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self._start[: self.n_words + 1]).astype(np.int32)

    @property
    def starts(self) -> np.ndarray:
        return self._start[: self.n_words]

    @property
    def store(self) -> np.ndarray:
        return self._store[: int(self._sizes[1])]

    def word_list(self) -> list[bytes]:
        """The words as bytes (a Python object per word: for tests and small tables only)."""
        store = self.store.tobytes()
        return [store[s : s + n] for s, n in zip(self.starts.tolist(), self.lengths.tolist())]
