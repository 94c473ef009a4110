"""Word counting: pre-token byte strings -> a table of unique words with 64-bit counts.

The table is array-backed (open addressing on a 64-bit hash of the bytes, keys stored in one
flat byte buffer), filled by a nogil Numba kernel, so two threads can each count their own
half of a chunk and the halves are merged at the end.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@njit(cache=True, nogil=True, inline="always")
def _hash_bytes(data, start, end):
    h = np.uint64(0xCBF29CE484222325)
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
    # Finalizer so the low bits (the slot) depend on every byte.
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    return h


@njit(cache=True, nogil=True)
def _insert_words(data, spans, counts, firsts, weighted, base_pos, begin,
                  slots, w_hash, w_start, w_len, w_count, w_first, store, sizes):
    """Count spans[begin:] of ``data`` into the table; stop early when it must grow.

    ``sizes`` = [n_words, store_used]. Unweighted spans count 1 and are first seen at
    base_pos + start; weighted ones (merging another table) carry counts/firsts.
    Returns the index of the first span not inserted (len(spans) when done).
    """
    mask = np.uint64(len(slots) - 1)
    n_words = sizes[0]
    used = sizes[1]
    max_words = min(len(w_hash), len(slots) // 2)
    for i in range(begin, len(spans)):
        s = spans[i, 0]
        e = spans[i, 1]
        n = e - s
        if n_words >= max_words or used + n > len(store):
            sizes[0] = n_words
            sizes[1] = used
            return i
        c = counts[i] if weighted else 1
        f = firsts[i] if weighted else base_pos + s
        h = _hash_bytes(data, s, e)
        slot = h & mask
        while True:
            w = slots[slot]
            if w < 0:
                slots[slot] = n_words
                w_hash[n_words] = h
                w_start[n_words] = used
                w_len[n_words] = n
                w_count[n_words] = c
                w_first[n_words] = f
                store[used:used + n] = data[s:e]
                used += n
                n_words += 1
                break
            if w_hash[w] == h and w_len[w] == n:
                ws = w_start[w]
                same = True
                for k in range(n):
                    if store[ws + k] != data[s + k]:
                        same = False
                        break
                if same:
                    w_count[w] += c
                    if f < w_first[w]:
                        w_first[w] = f
                    break
            slot = (slot + np.uint64(1)) & mask
    sizes[0] = n_words
    sizes[1] = used
    return len(spans)


@njit(cache=True, nogil=True)
def _rehash(slots, w_hash, n_words):
    mask = np.uint64(len(slots) - 1)
    slots[:] = -1
    for w in range(n_words):
        slot = w_hash[w] & mask
        while slots[slot] >= 0:
            slot = (slot + np.uint64(1)) & mask
        slots[slot] = w


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
        self._slots = np.full(2 * capacity, -1, dtype=np.int32)
        self._hash = np.zeros(capacity, dtype=np.uint64)
        self._start = np.zeros(capacity, dtype=np.int64)
        self._len = np.zeros(capacity, dtype=np.int32)
        self._count = np.zeros(capacity, dtype=np.int64)
        self._first = np.zeros(capacity, dtype=np.int64)
        self._store = np.zeros(capacity * 8, dtype=np.uint8)
        self._sizes = np.zeros(2, dtype=np.int64)
        self._empty64 = np.zeros(0, dtype=np.int64)

    @property
    def n_words(self) -> int:
        return int(self._sizes[0])

    def add_spans(self, data: np.ndarray, spans: np.ndarray, base_pos: int) -> None:
        """Count every span of ``data``; ``base_pos`` is data[0]'s position in the corpus."""
        self._insert(data, spans, self._empty64, self._empty64, False, base_pos)

    def merge(self, other: "WordCounter") -> None:
        """Add another counter's words (counts summed, earliest first position kept)."""
        n = other.n_words
        spans = np.stack([other._start[:n], other._start[:n] + other._len[:n]], axis=1)
        self._insert(other._store, spans, other._count[:n], other._first[:n], True, 0)

    def _insert(self, data, spans, counts, firsts, weighted, base_pos):
        spans = np.ascontiguousarray(spans, dtype=np.int64)
        begin = 0
        while True:
            begin = _insert_words(data, spans, counts, firsts, weighted, base_pos, begin,
                                  self._slots, self._hash, self._start, self._len, self._count,
                                  self._first, self._store, self._sizes)
            if begin >= len(spans):
                return
            self._grow(int(spans[begin, 1] - spans[begin, 0]))

    def _grow(self, need_bytes: int) -> None:
        n = self.n_words
        if n >= min(len(self._hash), len(self._slots) // 2):
            cap = 2 * len(self._hash)
            for name in ("_hash", "_start", "_len", "_count", "_first"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[:n] = old[:n]
                setattr(self, name, new)
            self._slots = np.empty(2 * cap, dtype=np.int32)
            _rehash(self._slots, self._hash, n)
        used = int(self._sizes[1])
        if used + need_bytes > len(self._store):
            new = np.zeros(max(2 * len(self._store), used + need_bytes), dtype=np.uint8)
            new[:used] = self._store[:used]
            self._store = new

    # Results, trimmed to the live words.
    @property
    def counts(self) -> np.ndarray:
        return self._count[: self.n_words]

    @property
    def firsts(self) -> np.ndarray:
        return self._first[: self.n_words]

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
