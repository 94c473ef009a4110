"""The piece caches of one tokenizer: pieces that needed merging, with their ids.

Kernels write to the cache they are given, so each running call takes one from the
tokenizer's free list (or makes one) and gives it back afterwards; caches outlive calls and
threads, and are never shared by two calls at once.
"""

from __future__ import annotations

import numpy as np

from .._native.threads import cores_at_start
from . import _kernels as _k

# log2 of the two-way sets of a piece cache (64 bytes each, plus a long-piece region as big, an
# arena index of 16 bytes and arena data of 256 bytes per set): 2 MiB + 4.25 MiB of arena at
# first, at most 64 MiB + 136 MiB of arena per running call (see PieceCaches.take). The arena's
# data is touched only as it fills, which only pieces of 65+ bytes do (CJK, Japanese, Thai).
CACHE_BITS = 19
MIN_CACHE_BITS = 14
NO_CACHE = _k.new_piece_cache(0)  # for calls that must not learn (building the tables)


class PieceCaches:
    """A free list of piece caches, sized by how much text the tokenizer has encoded."""

    def __init__(self) -> None:
        self.free: list[np.ndarray] = []
        self.bytes_seen = 0  # sizes the caches (see take)
        self._len = 0  # the cache length wanted so far, until bytes_seen reaches
        self._len_until = 0  # this: then it is worked out again

    def take(self, nbytes: int) -> np.ndarray:
        """A piece cache for a call about to encode ``nbytes``, sized for all this tokenizer
        has encoded so far: 2 MiB (and an arena of 4.25 MiB for long pieces) for short calls,
        growing to 64 MiB and 136 MiB (``CACHE_BITS``) once 64 MB have been seen (a bigger cache answers more pieces, and merging a piece costs as
        much as ~30 cache hits; a small one is faster to fill on a first pass). A cache that
        grows keeps its entries.

        No lock: the free list's pop and append are atomic, and ``_bytes_seen`` only sizes
        caches (an update lost between two threads changes nothing that matters). A lock taken
        twice per call was ~0.7 us of a ~5.5 us short encode."""
        self.bytes_seen = seen = self.bytes_seen + nbytes
        try:
            cache = self.free.pop()
        except IndexError:
            cache = None
        if cache is not None and seen < self._len_until and len(cache) >= self._len:
            return cache  # most calls: the size wanted has not changed since the last one
        bits = min(CACHE_BITS, max(MIN_CACHE_BITS, (seen >> 8).bit_length()))
        self._len = _k.piece_cache_size(bits)
        self._len_until = 1 << (bits + 8) if bits < CACHE_BITS else 1 << 62
        if cache is None:
            return _k.new_piece_cache(bits)
        if len(cache) < self._len:
            bigger = _k.new_piece_cache(bits)
            _k.grow_piece_cache(cache, bigger)
            return bigger
        return cache

    def give(self, cache: np.ndarray) -> None:
        # Keep one cache per core at most: many threads in flight at once each needed one,
        # but holding 64 MiB for each of them afterwards would only waste memory. (Appending
        # first and trimming after keeps the cap without a lock: every append is followed by
        # its own trim.)
        caches = self.free
        caches.append(cache)
        while len(caches) > cores_at_start():
            try:
                caches.pop()
            except IndexError:
                break

    def clear(self) -> None:
        """Forget all cached pieces (benchmarks use it to time a first pass)."""
        self.free.clear()
