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

# A table row: the key, the word's index, its count and its first position. Words of up to 7
# bytes are their own key (bytes packed little-endian, length in the top byte), so the common
# lookup touches one 32-byte row and nothing else; longer words are keyed by a hash with the top
# byte 0xFF and checked byte by byte against the store.
KEY, WORD, COUNT, FIRST = 0, 1, 2, 3
LOOKAHEAD = 16
_LONG_TAG = np.uint64(0xFF) << np.uint64(56)
_LOW56 = (np.uint64(1) << np.uint64(56)) - np.uint64(1)


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
def _insert_words(data, spans, counts, firsts, weighted, base_pos, begin, table, w_start, w_len, store, sizes, ring):
    """Count spans[begin:] of ``data`` into the table; stop early when it must grow.

    ``sizes`` = [n_words, store_used]; ``ring`` has LOOKAHEAD int64 slots of scratch.
    Unweighted spans count 1 and are first seen at base_pos + start; weighted ones (merging
    another table) carry counts/firsts. Returns the index of the first span not inserted
    (len(spans) when done).
    """
    mask = len(table) - 1
    table_flat = table.reshape(-1)
    n_words = sizes[0]
    used = sizes[1]
    max_words = min(len(w_start), len(table) // 2)
    n_spans = len(spans)
    # Keys are computed LOOKAHEAD spans ahead and their rows prefetched, so the table's cache
    # misses overlap instead of stalling one after another.
    for j in range(begin, min(begin + LOOKAHEAD, n_spans)):
        ring[j % LOOKAHEAD] = _word_key(data, spans[j, 0], spans[j, 1])
        prefetch(table_flat, _slot_of(ring[j % LOOKAHEAD], mask) * 4)
    for i in range(begin, n_spans):
        s = spans[i, 0]
        e = spans[i, 1]
        n = e - s
        if n_words >= max_words or used + n > len(store):
            sizes[0] = n_words
            sizes[1] = used
            return i
        c = counts[i] if weighted else 1
        f = firsts[i] if weighted else base_pos + s
        key = ring[i % LOOKAHEAD]
        ahead = i + LOOKAHEAD
        if ahead < n_spans:
            k_ahead = _word_key(data, spans[ahead, 0], spans[ahead, 1])
            ring[ahead % LOOKAHEAD] = k_ahead
            prefetch(table_flat, _slot_of(k_ahead, mask) * 4)
        slot = _slot_of(key, mask)
        while True:
            w = table[slot, WORD]
            if w < 0:
                table[slot, KEY] = key
                table[slot, WORD] = n_words
                table[slot, COUNT] = c
                table[slot, FIRST] = f
                w_start[n_words] = used
                w_len[n_words] = n
                for q in range(n):  # (a slice copy would need the runtime: it may allocate)
                    store[used + q] = data[s + q]
                used += n
                n_words += 1
                break
            if table[slot, KEY] == key:
                same = True
                if n > 7:
                    ws = w_start[w]
                    if w_len[w] != n:
                        same = False
                    else:
                        for k in range(n):
                            if store[ws + k] != data[s + k]:
                                same = False
                                break
                if same:
                    table[slot, COUNT] += c
                    if f < table[slot, FIRST]:
                        table[slot, FIRST] = f
                    break
            slot = (slot + 1) & mask
    sizes[0] = n_words
    sizes[1] = used
    return len(spans)


@cached_njit(nogil=True)
def _rehash(old, new):
    mask = len(new) - 1
    for r in range(len(old)):
        if old[r, WORD] >= 0:
            slot = _slot_of(old[r, KEY], mask)
            while new[slot, WORD] >= 0:
                slot = (slot + 1) & mask
            new[slot, :] = old[r, :]


class WordCounter:
    """Unique pre-tokens with their counts and first position in the corpus.

    >>> wc = WordCounter()
    >>> data = np.frombuffer(b"ab cd ab", dtype=np.uint8)
    >>> wc.add_spans(data, np.array([[0, 2], [2, 5], [5, 8]]), base_pos=0)
    >>> wc.add_spans(np.frombuffer(b"ab", dtype=np.uint8), np.array([[0, 2]]), base_pos=100)
    >>> [(bytes(w), int(c)) for w, c in zip(wc.word_list(), wc.counts)]
    [(b'ab', 2), (b' cd', 1), (b' ab', 1)]
    """

    def __init__(self, capacity: int = 1 << 14):
        capacity = 1 << max(4, int(capacity - 1).bit_length())
        self._table = self._empty_table(2 * capacity)
        self._start = np.zeros(capacity, dtype=np.int64)
        self._len = np.zeros(capacity, dtype=np.int32)
        self._store = np.zeros(capacity * 8, dtype=np.uint8)
        self._sizes = np.zeros(2, dtype=np.int64)
        self._empty64 = np.zeros(0, dtype=np.int64)
        self._ring = np.empty(LOOKAHEAD, dtype=np.int64)

    @staticmethod
    def _empty_table(rows: int) -> np.ndarray:
        table = np.zeros((rows, 4), dtype=np.int64)
        table[:, WORD] = -1
        return table

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
        return sum(a.nbytes for a in (self._table, self._start, self._len, self._store))

    def add_spans(self, data: np.ndarray, spans: np.ndarray, base_pos: int) -> None:
        """Count every span of ``data``; ``base_pos`` is data[0]'s position in the corpus."""
        self._insert(data, spans, self._empty64, self._empty64, False, base_pos)

    def merge(self, other: WordCounter) -> None:
        """Add another counter's words (counts summed, earliest first position kept)."""
        n = other.n_words
        spans = np.stack([other._start[:n], other._start[:n] + other._len[:n]], axis=1)
        self._insert(other._store, spans, other.counts, other.firsts, True, 0)

    def _insert(self, data, spans, counts, firsts, weighted, base_pos):
        spans = np.ascontiguousarray(spans, dtype=np.int64)
        begin = 0
        while True:
            begin = _insert_words(data, spans, counts, firsts, weighted, base_pos, begin,
                                  self._table, self._start, self._len, self._store, self._sizes, self._ring)
            if begin >= len(spans):
                return
            self._grow(int(spans[begin, 1] - spans[begin, 0]))

    def _grow(self, need_bytes: int) -> None:
        n = self.n_words
        if n >= min(len(self._start), len(self._table) // 2):
            cap = 2 * len(self._start)
            for name in ("_start", "_len"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[:n] = old[:n]
                setattr(self, name, new)
            table = self._empty_table(2 * cap)
            _rehash(self._table, table)
            self._table = table
        used = int(self._sizes[1])
        if used + need_bytes > len(self._store):
            new = np.zeros(max(2 * len(self._store), used + need_bytes), dtype=np.uint8)
            new[:used] = self._store[:used]
            self._store = new

    # Results, trimmed to the live words.
    def _column(self, column: int) -> np.ndarray:
        rows = self._table[self._table[:, WORD] >= 0]
        out = np.empty(self.n_words, dtype=np.int64)
        out[rows[:, WORD]] = rows[:, column]
        return out

    @property
    def counts(self) -> np.ndarray:
        return self._column(COUNT)

    @property
    def firsts(self) -> np.ndarray:
        return self._column(FIRST)

    @property
    def lengths(self) -> np.ndarray:
        return self._len[: self.n_words]

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
