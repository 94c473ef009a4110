"""The piece caches of one tokenizer: pieces that needed merging, with their ids.

Kernels write to the cache they are given, so each running call takes one from the
tokenizer's free list (or makes one) and gives it back afterwards; caches outlive calls and
threads, and are never shared by two calls at once.

A cache grows with what it holds as well as with how much text went by (a set per 256 bytes
of it): every ``CHECK_BYTES`` of text encoded into it, a sample of its sets says whether the
pieces it was asked to keep crowd it (see ``growth``), and a crowded cache is replaced by a
bigger one holding the same entries, though never bigger than ``GROW_RATIO`` bytes per byte of
text encoded before. English text fills the short-piece sets; CJK and Japanese text, with a new
16-64-byte piece every 50-120 bytes, the long-piece region and the arena, long before the
short sets.
"""

from __future__ import annotations

import math

import numpy as np

from .._native.threads import cores_at_start
from . import _kernels as _k

# log2 of the two-way sets of a piece cache (64 bytes each, plus a long-piece region as big, an
# arena index of 16 bytes and arena data of 256 bytes per set): 2 MiB + 4.25 MiB of arena at
# first, at most 64 MiB + 136 MiB of arena per running call. The arena's data is touched only
# as it fills, which only pieces of 65+ bytes do (CJK, Japanese, Thai).
CACHE_BITS = 19
MIN_CACHE_BITS = 14
GROW_BITS = 1  # crowded long sets or arena double it: its new memory is faulted in at first touch
# How much text goes into a cache between two looks at how full it is (until it is full size):
# a look reads a couple of thousand words at random, far less than encoding this much text.
CHECK_BYTES = 1 << 18
# A cache is crowded when more than this share of its sampled long sets hold a second piece, or
# its arena data is half used. Pieces land in sets at random: 1 - e^-x (1 + x) of the sets hold two
# or more at x pieces per set on average (0.2 at x = 0.8), and the pieces of a set of three or
# more evict each other from way 1 on every pass. Within a call only the long-piece region and
# the arena are looked at (a long piece missed costs a merge of 16+ symbols, a short one a
# few): judged by its short sets too, an English first pass grew near its end, where growing
# costs most and helps least. Between calls the short sets count as well: a cache left small
# for repeated English calls kept missing pieces a full-size one holds.
CROWDED = 0.2
# Between calls the short sets are judged at a lower share, and a crowded cache grows at once
# to where its short pieces would average TARGET_LOAD a set (estimated from the share, see
# ``growth``): grown a step a call, repeated passes over the same text ran slower for several
# calls than at full size, since a step could leave it under CROWDED and crowded still.
SHORT_CROWDED = 0.05
# A cache grows to at most this many bytes per byte of text encoded before (by all calls): a
# growth rehashes every entry into fresh memory the OS must fault in and zero, which on a first
# pass over CJK text cost more than the bigger cache saved (its long pieces seldom recur), and
# the second call of a fresh tokenizer paid for it before any piece was encoded.
GROW_RATIO = 4
TARGET_LOAD = 0.25
SAMPLED_SETS = 1024
NO_CACHE = _k.new_piece_cache(0)  # for calls that must not learn (building the tables)
_BITS_OF_SIZE = {_k.piece_cache_size(b): b for b in range(MIN_CACHE_BITS, CACHE_BITS + 1)}


def cache_bits(cache: np.ndarray) -> int:
    """log2 of the number of short-piece sets of a cache made here."""
    return _BITS_OF_SIZE[len(cache)]


def pieces_per_set(share: float) -> float:
    """The mean number of pieces per set at which ``share`` of the sets hold two or more, for
    pieces landing at random: x with 1 - e^-x (1 + x) = share (infinite at 1).

    >>> round(pieces_per_set(0.2), 2), round(pieces_per_set(0.9), 2)
    (0.82, 3.89)
    """
    if share >= 1.0:
        return math.inf
    lo, hi = 0.0, 64.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if 1.0 - math.exp(-mid) * (1.0 + mid) < share:
            lo = mid
        else:
            hi = mid
    return lo


def growth(cache: np.ndarray, short: bool = True) -> int:
    """By how many bits a cache should grow, 0 if it is not crowded: a sample of its short-piece
    sets (if ``short``) whose second way is taken (way 0 keeps a set's first piece, way 1 the
    latest other one) past ``SHORT_CROWDED`` says how many pieces it holds, and it grows to hold
    them at ``TARGET_LOAD`` a set; past ``CROWDED`` of its sampled long-piece sets, or past
    half its arena, it grows by ``GROW_BITS``. Never past ``CACHE_BITS``.

    >>> cache = _k.new_piece_cache(MIN_CACHE_BITS)
    >>> growth(cache)
    0
    >>> cache[5 : 8 << MIN_CACHE_BITS : 8 * 64] = 1  # way 1 of every 64th short set: a quarter sampled
    >>> growth(cache), growth(cache, short=False)
    (2, 0)
    """
    bits = cache_bits(cache)
    sets = 1 << bits
    grow = 0
    if short:
        step = max(1, sets // SAMPLED_SETS)
        way1 = cache[5 : 8 * sets : 8 * step]  # bytes 8-14 | length << 56 of way 1: 0 = empty
        share = np.count_nonzero(way1) / len(way1)
        if share > SHORT_CROWDED:
            grow = max(1, math.ceil(math.log2(min(pieces_per_set(share), 2.0**CACHE_BITS) / TARGET_LOAD)))
    long_base = 8 << bits
    long_sets = sets >> 2  # 32 words each, two entries of 16
    step = max(1, long_sets // SAMPLED_SETS)
    way1 = cache[long_base + 24 : long_base + 32 * long_sets : 32 * step]  # n_ids << 8 | length of way 1
    head = long_base + (8 << bits) + (2 << bits)
    used, entries = int(cache[head]), int(cache[head + 1])
    if (
        np.count_nonzero(way1) > CROWDED * len(way1)
        or 2 * used > (1 << (bits + _k.ARENA_DATA_SHIFT))
        or 8 * entries > 3 * (2 << bits)
    ):
        grow = max(grow, GROW_BITS)
    return min(grow, CACHE_BITS - bits)


class PieceCaches:
    """A free list of piece caches, grown as their contents crowd them."""

    def __init__(self) -> None:
        self.free: list[np.ndarray] = []
        self.bits = MIN_CACHE_BITS  # the size caches have grown to: new ones start there
        self.bytes_seen = 0  # text taken by all calls: a floor for the size (see take)
        self.done = 0  # text encoded by finished calls and the blocks reported to check
        self.grow = True  # False: caches are handed out as they are (tests pin one)
        self._unchecked = 0  # bytes encoded since a cache was last looked at within a call (see check)
        self._looked_at = 0  # bytes_seen when give last looked at a cache
        self._sized()

    def take(self, nbytes: int) -> np.ndarray:
        """A piece cache for a call about to encode ``nbytes``: one from the free list, grown
        first if it is smaller than another has grown to or than a set per 256 bytes of all
        text taken so far; else a new one as big as they have grown.

        No lock: the free list's pop and append are atomic, and the counters only schedule
        looks (an update lost between two threads changes nothing that matters): a lock taken
        twice per call was a noticeable share of a short encode; most calls return at the
        first test."""
        self.done = self.bytes_seen
        self.bytes_seen = seen = self.bytes_seen + nbytes
        try:
            cache = self.free.pop()
        except IndexError:
            cache = None
        if cache is not None and len(cache) >= self._len and seen < self._floor_until:
            return cache
        if self.grow and seen >= self._floor_until:  # a set per 256 bytes seen: misses cost ~30 hits
            self.bits = max(self.bits, min(CACHE_BITS, (seen >> 8).bit_length()))
            self._sized()
        if cache is None:
            return _k.new_piece_cache(self.bits)
        if not self.grow:
            return cache
        return self._grown(cache, self.bits) if self.bits > cache_bits(cache) else cache

    def _sized(self) -> None:
        """Note the length of a cache of ``bits`` and the bytes seen that would raise it."""
        self._len = _k.piece_cache_size(self.bits)
        self._floor_until = 1 << (self.bits + 8) if self.bits < CACHE_BITS else 1 << 62

    def check(self, cache: np.ndarray, nbytes: int) -> np.ndarray:
        """``cache`` after ``nbytes`` more of text went into it (a long call reports each
        block): every ``CHECK_BYTES``, a crowded cache is replaced by a bigger one holding its
        entries (within a call, crowded long-piece sets or arena only). Use the cache this
        returns."""
        if not self.grow:
            return cache
        self.done += nbytes
        bits = self._checked_bits(cache, nbytes)
        return self._grown(cache, bits) if bits > cache_bits(cache) else cache

    def _checked_bits(self, cache: np.ndarray, nbytes: int) -> int:
        """The size ``cache`` should have after ``nbytes`` more went into it: bigger only if
        ``CHECK_BYTES`` went in since the last look and it is crowded."""
        bits = cache_bits(cache)
        self._unchecked += nbytes
        if self._unchecked < CHECK_BYTES or bits >= CACHE_BITS:
            return bits
        self._unchecked = 0
        return self._bounded(bits, bits + growth(cache, short=False))

    def _bounded(self, bits: int, grown: int) -> int:
        """``grown`` bits, or fewer down to ``bits``: at most GROW_RATIO bytes of cache per byte
        of text encoded before."""
        while grown > bits and _k.piece_cache_size(grown) * 8 > GROW_RATIO * self.done:
            grown -= 1
        return grown

    def _grown(self, cache: np.ndarray, bits: int) -> np.ndarray:
        bigger = _k.new_piece_cache(bits)
        _k.grow_piece_cache(cache, bigger)
        if bits > self.bits:
            self.bits = bits
            self._sized()
        return bigger

    def give(self, cache: np.ndarray) -> None:
        """Return a cache after a call. Every ``CHECK_BYTES`` of text taken, a crowded one is
        grown first: the call that crowded it pays, not the next, which may be a short one."""
        if self.grow and self.bytes_seen - self._looked_at >= CHECK_BYTES:
            self._looked_at = self.bytes_seen
            self.done = self.bytes_seen
            bits = cache_bits(cache)
            grown = self._bounded(bits, bits + growth(cache, short=True)) if bits < CACHE_BITS else bits
            if grown > bits:
                cache = self._grown(cache, grown)
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
        """Forget all cached pieces and start again from the smallest size (benchmarks use it
        to time a first pass)."""
        self.free.clear()
        self.bits = MIN_CACHE_BITS
        self.bytes_seen = self._unchecked = self._looked_at = 0
        self._sized()
