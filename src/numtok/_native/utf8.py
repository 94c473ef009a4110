"""UTF-8 helpers shared by the pre-tokenizer, the trainer and the encoder."""

from __future__ import annotations

import numpy as np
from numba import njit

from .hugepages import empty_written_once
from .intrinsics import (
    HAS_BYTE_COMPRESS,
    HIGH_BITS,
    address_view,
    leading_zeros,
    load_u64,
    narrow_ascii32,
    read_only_view,
    store_u32,
    str_data_address,
    str_is_ascii,
    str_kind,
    trailing_zeros,
    utf8_of16,
    utf8_widths32,
)
from .jit import INLINE, cached_njit, wraps_around


def utf8_bytes(text: str) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates become U+FFFD first, as tiktoken does.

    >>> utf8_bytes("a\\ud800b")
    b'a\\xef\\xbf\\xbdb'
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Valid surrogate pairs are joined, lone ones replaced (tiktoken's own repair).
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def char_to_byte_offsets(text: str) -> np.ndarray:
    """int64 array of length len(text)+1: the UTF-8 byte offset of every character boundary."""
    code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    widths = 1 + (code_points >= 0x80).astype(np.int64) + (code_points >= 0x800) + (code_points >= 0x10000)
    offsets = np.zeros(len(code_points) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    return offsets


@cached_njit(nogil=True)
def _utf8_error_offset(data):
    """Index of the first byte that starts an invalid UTF-8 sequence (strict, as Python's
    decoder: no overlongs, no surrogates, nothing above U+10FFFF), or -1 if all is valid."""
    n = len(data)
    i = 0
    while i < n:
        b = data[i]
        if b < 0x80:
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            need, lo, hi = 1, 0x80, 0xBF
        elif b == 0xE0:
            need, lo, hi = 2, 0xA0, 0xBF
        elif 0xE1 <= b <= 0xEC or b == 0xEE or b == 0xEF:
            need, lo, hi = 2, 0x80, 0xBF
        elif b == 0xED:
            need, lo, hi = 2, 0x80, 0x9F
        elif b == 0xF0:
            need, lo, hi = 3, 0x90, 0xBF
        elif 0xF1 <= b <= 0xF3:
            need, lo, hi = 3, 0x80, 0xBF
        elif b == 0xF4:
            need, lo, hi = 3, 0x80, 0x8F
        else:
            return i
        if i + need >= n:
            return i
        c = data[i + 1]
        if c < lo or c > hi:
            return i
        for k in range(2, need + 1):
            c = data[i + k]
            if c < 0x80 or c > 0xBF:
                return i
        i += need + 1
    return -1


def utf8_error_offset(data: np.ndarray) -> int:
    """Offset of the first invalid UTF-8 byte in a uint8 array, or -1.

    >>> utf8_error_offset(np.frombuffer("héllo".encode(), dtype=np.uint8))
    -1
    >>> utf8_error_offset(np.frombuffer(b"ab\\xff", dtype=np.uint8))
    2
    """
    return int(_utf8_error_offset(read_only_view(data)))  # one signature, whoever owns the bytes


# ---------------------------------------------------------------------------------------------
# str -> UTF-8 without the GIL: a kernel reads CPython's own buffer (1, 2 or 4 bytes per
# character), of one long str here and of each text of a batch in ``pystr``, so threads
# convert in parallel instead of waiting for the one that holds the GIL to run ``str.encode``.

@njit(**INLINE)
def _put_utf8(c, out, o):
    """Write the UTF-8 of code point ``c`` at ``out[o]``; return where it ends, or -1 for a
    surrogate."""
    if c < 0x80:
        out[o] = np.uint8(c)
        return o + 1
    if c < 0x800:
        out[o] = np.uint8(0xC0 | (c >> 6))
        out[o + 1] = np.uint8(0x80 | (c & 0x3F))
        return o + 2
    if c < 0x10000:
        if 0xD800 <= c <= 0xDFFF:
            return -1
        out[o] = np.uint8(0xE0 | (c >> 12))
        out[o + 1] = np.uint8(0x80 | ((c >> 6) & 0x3F))
        out[o + 2] = np.uint8(0x80 | (c & 0x3F))
        return o + 3
    out[o] = np.uint8(0xF0 | (c >> 18))
    out[o + 1] = np.uint8(0x80 | ((c >> 12) & 0x3F))
    out[o + 2] = np.uint8(0x80 | ((c >> 6) & 0x3F))
    out[o + 3] = np.uint8(0x80 | (c & 0x3F))
    return o + 4


# A character's UTF-8 as one little-endian word (its first byte lowest), one function a length.
@njit(**INLINE)
def _utf8_word2(c):
    return (0xC0 | (c >> 6)) | ((0x80 | (c & 0x3F)) << 8)


@njit(**INLINE)
def _utf8_word3(c):
    return (0xE0 | (c >> 12)) | ((0x80 | ((c >> 6) & 0x3F)) << 8) | ((0x80 | (c & 0x3F)) << 16)


@njit(**INLINE)
def _utf8_word4(c):
    return (0xF0 | (c >> 18)) | ((0x80 | ((c >> 12) & 0x3F)) << 8) | ((0x80 | ((c >> 6) & 0x3F)) << 16) | ((0x80 | (c & 0x3F)) << 24)


@njit(**INLINE)
def _ascii_or(c, word):
    """``c`` where it is ASCII, else ``word``: a mask, not a select, which LLVM would turn
    back into a branch that mispredicts at every space of Russian or Korean text."""
    return c ^ ((word ^ c) & -np.int64(c >= 0x80))


@cached_njit(nogil=True)
def _units_to_utf8(units, out, start, char_ends, byte_ends):
    """Write the UTF-8 of the code units (uint8/16/32) into ``out`` from ``start`` on and
    return where it ends, or -1 at a surrogate (not valid UTF-8: the caller repairs the text).
    ``byte_ends[q]`` gets the byte offset of character offset ``char_ends[q]`` (ascending)."""
    n = units.shape[0]
    nq = char_ends.shape[0]
    nout = out.shape[0]
    widest = min(units.itemsize + 1, 4)  # UTF-8 bytes a unit of this width can need
    o = start
    i = 0
    for q in range(nq + 1):
        stop = char_ends[q] if q < nq else n
        # Blocks of 32 characters: all ASCII, one vector store; otherwise the block's
        # characters from its first to its last non-ASCII one (the next block starts after
        # them) are written without a branch per character, each one's UTF-8 stored as one
        # 4-byte word, by a loop for the block's mix of widths: ASCII with 2-byte (Russian),
        # ASCII with 3-byte (Chinese, Korean, Hindi: half the work a character), any.
        while i < stop:
            mix = 0
            if stop - i >= 32:
                wide = narrow_ascii32(units, i, out, o)
                if wide == 0:
                    i += 32
                    o += 32
                    continue
                if HAS_BYTE_COMPRESS and o + 128 <= nout:  # any mix of widths, 16 at a time
                    o = utf8_of16(units, i, out, o)
                    if o >= 0:
                        o = utf8_of16(units, i + 16, out, o)
                    if o < 0:
                        return -1
                    i += 32
                    continue
                widths = utf8_widths32(units, i)
                if np.uint32(widths & 0xFFFFFFFF) == wide:
                    mix = 2
                elif np.uint32(widths >> 32) == wide:
                    mix = 3
                t = np.int64(trailing_zeros(wide))
                end = i + 32 - np.int64(leading_zeros(wide))  # past the block's last non-ASCII one
                i += t
                o += t
            else:
                end = stop
            if o + widest * (end - i) + 1 > nout:  # the last word would pass out's end
                while i < end:
                    o = _put_utf8(np.int64(units[i]), out, o)
                    if o < 0:
                        return -1
                    i += 1
                continue
            if mix == 2:
                while i < end:
                    c = np.int64(units[np.uint64(i)])  # unsigned: no negative-index wraparound
                    i += 1
                    store_u32(out, o, _ascii_or(c, _utf8_word2(c)))
                    o += 1 + np.int64(c >= 0x80)
                continue
            if mix == 3:
                while i < end:
                    c = np.int64(units[np.uint64(i)])
                    i += 1
                    store_u32(out, o, _ascii_or(c, _utf8_word3(c)))
                    o += 1 + 2 * np.int64(c >= 0x80)
                continue
            bad = False
            while i < end:
                c = np.int64(units[np.uint64(i)])
                i += 1
                w2 = _utf8_word2(c)  # all three, then a select: calls in the select became branches
                w3 = _utf8_word3(c)
                w4 = _utf8_word4(c)
                w = w4 if c >= 0x10000 else (w3 if c >= 0x800 else (w2 if c >= 0x80 else c))
                store_u32(out, o, w)
                o += 1 + np.int64(c >= 0x80) + np.int64(c >= 0x800) + np.int64(c >= 0x10000)
                bad |= ((c - 0xD800) >> 11) == 0  # a surrogate: U+D800..U+DFFF
            if bad:
                return -1
        if q < nq:
            byte_ends[q] = o
    return o


@njit(**INLINE)
def units_to_utf8_at(address, n, kind, out, start, char_ends, byte_ends):
    """:func:`_units_to_utf8` of the ``n`` code units of ``kind`` bytes (1, 2 or 4) at memory
    ``address`` (a str's buffer)."""
    if kind == 1:
        return _units_to_utf8(address_view(address, n, np.uint8), out, start, char_ends, byte_ends)
    if kind == 2:
        return _units_to_utf8(address_view(address, n, np.uint16), out, start, char_ends, byte_ends)
    return _units_to_utf8(address_view(address, n, np.uint32), out, start, char_ends, byte_ends)


@cached_njit(nogil=True)
def _str_to_utf8(s, out, char_ends, byte_ends):
    start = np.int64(0)  # not the literal 0: one signature with the batch's calls (_pystr)
    return units_to_utf8_at(str_data_address(s), len(s), str_kind(s), out, start, char_ends, byte_ends)


@njit(**INLINE)
def utf8_bound_of_kind(n, kind, is_ascii):
    """Most UTF-8 bytes ``n`` characters of a str of this kind (1, 2 or 4 bytes a character)
    can need: the kind bounds its code points."""
    if is_ascii:
        return n
    return (2 if kind == 1 else 3 if kind == 2 else 4) * n


@cached_njit(nogil=True)
def _utf8_bound(s):
    """Most UTF-8 bytes the str can need."""
    return utf8_bound_of_kind(len(s), str_kind(s), str_is_ascii(s))


def padded_utf8(text: str, pad: int, char_ends: np.ndarray):
    """(UTF-8 of ``text`` as a writable uint8 array followed by ``pad`` zero bytes outside
    it, byte offset of each ascending character offset in ``char_ends``), or None if the text
    holds a surrogate or its worst-case buffer cannot be had (use ``utf8_bytes``: it repairs
    surrogates). Runs without the GIL.

    >>> data, ends = padded_utf8("hé!", 8, np.array([1, 2, 3]))
    >>> bytes(data), ends.tolist()
    (b'h\\xc3\\xa9!', [1, 3, 4])
    """
    if type(text) is not str:  # Numba takes exact str only
        text = str(text)
    buffer = worst_case_buffer(_utf8_bound(text), pad)
    if buffer is None:
        return None
    byte_ends = np.empty(len(char_ends), dtype=np.int64)
    size = int(_str_to_utf8(text, buffer, np.ascontiguousarray(char_ends, dtype=np.int64), byte_ends))
    return None if size < 0 else (padded_prefix(buffer, size, pad), byte_ends)


def worst_case_buffer(bound: int, pad: int) -> np.ndarray | None:
    """A uint8 buffer for ``bound`` bytes (the longest UTF-8 some text can need) and ``pad``,
    or None where the OS refuses that much address space (the caller's ``str.encode`` needs
    only the real size). Pages past what is written are never touched: they cost address
    space, not memory."""
    try:
        return empty_written_once(bound + pad, np.uint8)
    except MemoryError:
        return None


def padded_prefix(buffer: np.ndarray, size: int, pad: int) -> np.ndarray:
    """``buffer[:size]``, with the ``pad`` bytes after it zeroed (the kernels' padding)."""
    buffer[size : size + pad] = 0
    return buffer[:size]


# Zero bytes after every text buffer a kernel reads: kernels load 8 bytes at any offset (one
# unaligned word) without running off the end.
PAD = 16
_ONES = np.uint64(0x0101010101010101)


@wraps_around  # the zero-byte test borrows across bytes
@cached_njit(nogil=True)
def contains_any(data, n, needles, needle_off, b0, b1):
    """Whether one of the byte strings ``needles[needle_off[i]:needle_off[i + 1]]`` (none
    empty, each starting with byte ``b0`` or ``b1``) occurs in ``data[:n]``.

    Eight bytes at a time: a word is looked at only if one of its bytes may be ``b0`` or ``b1``
    (the zero-byte test on ``word ^ b * 0x0101...``): for OpenAI's special tokens (all
    starting with ``<``) few words of text pass it, so the scan runs well ahead of a ``regex``
    search for them.

    >>> flat = np.frombuffer(b"<|a|><|b|>", np.uint8); off = np.array([0, 5, 10])
    >>> text = np.frombuffer(b"x <| <|b|> y", np.uint8)
    >>> bool(contains_any(text, 12, flat, off, ord("<"), ord("<")))
    True
    >>> bool(contains_any(text, 9, flat, off, ord("<"), ord("<")))
    False
    """
    x0 = np.uint64(b0) * _ONES
    x1 = np.uint64(b1) * _ONES
    p = 0
    while p < n:
        if p + 8 <= n:
            w = load_u64(data, p)
            t0 = w ^ x0
            t1 = w ^ x1
            if ((t0 - _ONES) & ~t0 & HIGH_BITS) | ((t1 - _ONES) & ~t1 & HIGH_BITS) == 0:
                p += 8
                continue
            stop = p + 8
        else:
            stop = n
        while p < stop:  # a word that may hold a first byte: test its bytes one by one
            c = data[p]
            if c == b0 or c == b1:
                for i in range(needle_off.shape[0] - 1):
                    s = needle_off[i]
                    m = needle_off[i + 1] - s
                    if p + m <= n and needles[s] == c:
                        q = 1
                        while q < m and data[p + q] == needles[s + q]:
                            q += 1
                        if q == m:
                            return True
            p += 1
    return False
