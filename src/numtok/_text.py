"""UTF-8 helpers shared by the pre-tokenizer, the trainer and the encoder."""

from __future__ import annotations

import numpy as np


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
