"""Private Numba kernels: where a piece can be cut into parts that BPE merges on their own.

A long piece that needs merging (a run of CJK letters, Hangul syllables) is merged part by
part where no token of the vocabulary could ever span the cut between two of its characters:
merging makes a symbol only out of two adjacent symbols, and every symbol is a token, so a
symbol across the cut would be a token holding bytes on both sides of it. With no such token,
no merge crosses the cut, the parts never interact, and merging each on its own gives the ids
of merging the whole, in rank mode and merge mode alike (only the vocabulary is read). Most
CJK letters are then merged alone, three bytes at a time, or read from a memo of single
characters (``char_memo``, filled as they are met).

The test of a cut between characters ``c`` and ``d``: every token that spans a character
boundary, cut there, gives a *pattern*: its last character part before the cut and its first
after it, each a whole character or a fragment (a *tail*, where the token starts inside a
character; a *head*, where it ends inside one). The cut is safe unless some pattern matches:
(``c``, ``d``), a tail that ``c`` ends with, a head that ``d`` starts with. Patterns go into a
Bloom filter (``seg_filter``: a false positive only keeps a safe cut whole, never the reverse);
``char_flags`` says which characters of the Basic Multilingual Plane end with some pattern's
tail (``FLAG_TAIL``) or start with some head (``FLAG_HEAD``), so that most cuts cost one probe
of a filter that stays in the core's cache. Characters outside the BMP are never cut around.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._native.jit import INLINE, cached_njit, wraps_around

_C3 = np.uint64(0xD6E8FEB86659FD93)
_U1 = np.uint64(1)
PARTIAL = 1 << 24  # a pattern side that is a fragment (its bytes, little-endian), not a code point
_SIDE_BITS = 25
FLAG_TAIL = 1
FLAG_HEAD = 2
BMP = 1 << 16
# Pieces shorter than this merge whole: two 3-byte characters are the least worth cutting.
SEG_MIN = 6


@njit(**INLINE)
def char_at(data, i, end):
    """(code point, width) of the UTF-8 character at ``data[i]`` that ends by ``end``; (-1, 0)
    if it is not a valid shortest-form character (overlong forms and surrogates included, so
    that a code point names one byte sequence)."""
    c = np.int64(data[i])
    if c < 0x80:
        return c, np.int64(1)
    if c < 0xC2 or c > 0xF4:
        return np.int64(-1), np.int64(0)
    w = np.int64(2) if c < 0xE0 else (np.int64(3) if c < 0xF0 else np.int64(4))
    if i + w > end:
        return np.int64(-1), np.int64(0)
    cp = c & (0x1F if w == 2 else (0x0F if w == 3 else 0x07))
    for q in range(1, w):
        b = np.int64(data[i + q])
        if b & 0xC0 != 0x80:
            return np.int64(-1), np.int64(0)
        cp = (cp << 6) | (b & 0x3F)
    if (w == 3 and (cp < 0x800 or (cp >= 0xD800 and cp < 0xE000))) or (w == 4 and (cp < 0x10000 or cp > 0x10FFFF)):
        return np.int64(-1), np.int64(0)
    return cp, w


@njit(**INLINE)
def pack(a, i, n):
    """Bytes ``a[i : i + n]`` (n <= 3) little-endian in an int."""
    v = np.int64(0)
    for q in range(n):
        v |= np.int64(a[i + q]) << (8 * q)
    return v


@wraps_around
@njit(**INLINE)
def _spot(key, fbits):
    """(word, two-bit mask) of a pattern key in a filter of 2**fbits words."""
    h = np.uint64(key) * _C3
    return np.int64(h >> np.uint64(64 - fbits)), (_U1 << ((h >> np.uint64(20)) & np.uint64(63))) | (_U1 << ((h >> np.uint64(26)) & np.uint64(63)))


@njit(**INLINE)
def _maybe(sfilter, fbits, left, right):
    w, m = _spot(left | (right << _SIDE_BITS), fbits)
    return (sfilter[w] & m) == m


@njit(**INLINE)
def crossable(data, a, wa, cpa, b, wb, cpb, sfilter, fbits, char_flags):
    """Whether a token might span the boundary between the character at ``a`` (width ``wa``,
    code point ``cpa``) and the one at ``b``."""
    if cpa >= BMP or cpb >= BMP:
        return True
    if _maybe(sfilter, fbits, cpa, cpb):
        return True
    fa = char_flags[cpa]
    fb = char_flags[cpb]
    if fa & FLAG_TAIL:
        for t in range(1, wa):
            tail = PARTIAL | pack(data, a + wa - t, t)
            if _maybe(sfilter, fbits, tail, cpb):
                return True
            if fb & FLAG_HEAD:
                for h in range(1, wb):
                    if _maybe(sfilter, fbits, tail, PARTIAL | pack(data, b, h)):
                        return True
    if fb & FLAG_HEAD:
        for h in range(1, wb):
            if _maybe(sfilter, fbits, cpa, PARTIAL | pack(data, b, h)):
                return True
    return False


@njit(**INLINE)
def _lead_width(c):
    return 1 if c < 0x80 else (0 if c < 0xC2 or c > 0xF4 else (2 if c < 0xE0 else (3 if c < 0xF0 else 4)))


@wraps_around
@njit(**INLINE)
def _slot(key, mask):
    return np.int64((np.uint64(key) * _C3) >> np.uint64(40)) & mask


@njit(**INLINE)
def _set_put(tab, key):
    """Put ``key`` (>= 0) in the open-addressing set ``tab`` (-1 = empty, never full); returns 1
    if it was not there. (Sets, not np.unique: that would load Numba's whole compiler registry
    along with the cached kernel.)"""
    mask = tab.shape[0] - 1
    i = _slot(key, mask)
    while tab[i] >= 0:
        if tab[i] == key:
            return 0
        i = (i + 1) & mask
    tab[i] = key
    return 1


@cached_njit(nogil=True)
def _set_grown(tab):
    """The set ``tab`` in twice the room."""
    bigger = np.full(2 * tab.shape[0], -1, np.int64)
    for k in tab:
        if k >= 0:
            _set_put(bigger, k)
    return bigger


@njit(**INLINE)
def _in_set(tab, key):
    mask = tab.shape[0] - 1
    i = _slot(key, mask)
    while tab[i] >= 0:
        if tab[i] == key:
            return True
        i = (i + 1) & mask
    return False


@cached_njit(nogil=True)
def build_segment_tables(tok_bytes, tok_off, ids):
    """(``seg_filter``, ``char_flags``) of the tokens ``ids`` (module docstring)."""
    keys = np.full(1 << 12, -1, np.int64)
    tails = np.full(1 << 6, -1, np.int64)
    heads = np.full(1 << 6, -1, np.int64)
    n = nt = nh = 0
    for i in range(ids.shape[0]):
        s = tok_off[ids[i]]
        e = tok_off[ids[i] + 1]
        for k in range(s + 1, e):
            if tok_bytes[k] & 0xC0 == 0x80:
                continue  # inside a character: not a boundary of one
            j = k - 1
            while j > s and tok_bytes[j] & 0xC0 == 0x80:
                j -= 1
            tail = False
            if tok_bytes[j] & 0xC0 == 0x80:  # the token starts inside a character
                if k - s > 3:
                    continue  # longer than any character's proper suffix
                left = PARTIAL | pack(tok_bytes, s, k - s)
                tail = True
            else:
                cp, w = char_at(tok_bytes, j, k)
                if cp < 0 or j + w != k:
                    continue  # not a valid character: no valid text holds it
                left = cp
            cp, w = char_at(tok_bytes, k, e)
            if cp >= 0:
                right = cp
            else:
                need = _lead_width(np.int64(tok_bytes[k]))
                if need == 0 or k + need <= e:
                    continue  # invalid, not cut short by the token's end
                valid = True
                for q in range(k + 1, e):
                    valid &= tok_bytes[q] & 0xC0 == 0x80
                if not valid:
                    continue
                right = PARTIAL | pack(tok_bytes, k, e - k)
                if 2 * (nh + 1) > heads.shape[0]:  # rebound rarely: each rebinding counts references
                    heads = _set_grown(heads)
                nh += _set_put(heads, right)
            if tail:
                if 2 * (nt + 1) > tails.shape[0]:
                    tails = _set_grown(tails)
                nt += _set_put(tails, left)
            if 2 * (n + 1) > keys.shape[0]:
                keys = _set_grown(keys)
            n += _set_put(keys, left | (right << _SIDE_BITS))
    fbits = 1
    while (64 << fbits) < 16 * n:
        fbits += 1
    sfilter = np.zeros(1 << fbits, np.uint64)
    for key in keys:
        if key >= 0:
            w, m = _spot(key, fbits)
            sfilter[w] |= m
    flags = np.zeros(BMP, np.uint8)
    buf = np.zeros(4, np.uint8)
    for cp in range(0x80, BMP):
        if cp >= 0xD800 and cp < 0xE000:
            continue
        if cp < 0x800:
            w = 2
            buf[0] = 0xC0 | (cp >> 6)
            buf[1] = 0x80 | (cp & 0x3F)
        else:
            w = 3
            buf[0] = 0xE0 | (cp >> 12)
            buf[1] = 0x80 | ((cp >> 6) & 0x3F)
            buf[2] = 0x80 | (cp & 0x3F)
        f = 0
        for t in range(1, w):
            if _in_set(tails, PARTIAL | pack(buf, w - t, t)):
                f |= FLAG_TAIL
            if _in_set(heads, PARTIAL | pack(buf, 0, t)):
                f |= FLAG_HEAD
        flags[cp] = f
    return sfilter, flags


def no_segments() -> tuple[np.ndarray, np.ndarray]:
    """The tables of a tokenizer that never cuts pieces (its ``seg_min`` is 0)."""
    return np.zeros(1, np.uint64), np.zeros(1, np.uint8)
