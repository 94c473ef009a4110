"""UTF-8 helpers shared by the pre-tokenizer, the trainer and the encoder."""

from __future__ import annotations

import numpy as np
from numba import njit

from ._intrinsics import load_u64

_HIGH_BITS = np.uint64(0x8080808080808080)


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


@njit(cache=True, nogil=True)
def byte_offsets_of_chars(data, char_offsets):
    """Byte offset in valid UTF-8 ``data`` of each (ascending) character offset."""
    out = np.empty(char_offsets.shape[0], dtype=np.int64)
    chars = 0  # characters that start before byte i
    i = 0
    n = data.shape[0]
    for q in range(char_offsets.shape[0]):
        want = char_offsets[q]
        while want - chars >= 8 and i + 8 <= n and load_u64(data, i) & _HIGH_BITS == 0:
            i += 8  # 8 ASCII characters
            chars += 8
        while chars < want and i < n:
            i += 1
            while i < n and (data[i] & 0xC0) == 0x80:  # continuation bytes
                i += 1
            chars += 1
        out[q] = i
    return out


@njit(cache=True, nogil=True)
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
    return int(_utf8_error_offset(data))
