"""Padded UTF-8 buffers: what the encoder kernels read.

Every buffer handed to a kernel is followed by ``PAD`` zero bytes outside the view, so a kernel
may load 8 bytes at any offset (one unaligned word) without running off the end.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from .._native.hugepages import empty_written_once
from .._native.interrupt import interruptible
from .._native.pystr import utf8_in_place
from .._native.utf8 import PAD, padded_utf8, utf8_bytes

if sys.byteorder != "little":  # pragma: no cover
    raise ImportError("numtok's kernels assume a little-endian CPU")

_PAD_BYTES = bytes(PAD)
# Texts of at least this many characters are written to UTF-8 straight from the str.
DIRECT_UTF8_CHARS = 1 << 14
# Texts of at least this many characters are converted on a helper thread, so that Ctrl-C is
# not held up until the conversion ends.
INTERRUPTIBLE_CHARS = 1 << 25
# Texts of at most this many UTF-8 bytes are encoded from a per-thread scratch buffer.
SHORT_BYTES = 4096
_SCRATCH = threading.local()
_NO_OFFSETS = np.zeros(0, dtype=np.int64)


def utf8_of_texts(joined: str, texts: list[str], chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(padded UTF-8 of the texts concatenated, byte length of each text), as ``utf8_bytes``
    makes them (lone surrogates -> U+FFFD); ``joined`` is the texts concatenated, ``chars``
    their lengths.

    One conversion of the joined texts, which also yields the byte lengths, instead of one
    per text (hundreds of thousands of short texts spent more time there than in the
    kernels); it runs without the GIL, so batch workers do it in parallel.
    """
    converted = padded_utf8(joined, PAD, np.cumsum(chars)) if len(joined) >= DIRECT_UTF8_CHARS else None
    if converted is None:  # few characters, or surrogates: text by text (which repairs them;
        buffers = [utf8_bytes(t) for t in texts]  # a pair split between two texts is two lone ones)
        return padded(b"".join(buffers)), np.fromiter(map(len, buffers), np.int64, len(texts))
    data, byte_ends = converted
    return data, np.diff(byte_ends, prepend=0)



def in_scratch(raw: bytes) -> np.ndarray:
    """This thread's scratch buffer holding ``raw`` (at most SHORT_BYTES) then PAD zero
    bytes; valid until the thread's next call."""
    view = _SCRATCH.__dict__.get("view")
    if view is None:
        _SCRATCH.array = np.zeros(SHORT_BYTES + PAD, dtype=np.uint8)
        _SCRATCH.view = view = memoryview(_SCRATCH.array)
    n = len(raw)
    view[:n] = raw
    view[n : n + PAD] = _PAD_BYTES
    return _SCRATCH.array


def padded_utf8_of(text: str) -> np.ndarray:
    """:func:`padded` UTF-8 of one text (lone surrogates -> U+FFFD). Long texts are copied
    from the UTF-8 the str holds (``utf8_in_place``) or else written straight from its
    characters (half the time of ``str.encode`` and a copy); short ones are not: Numba types a
    str argument in Python on every call, a fixed cost a short text does not earn back
    (``str.encode`` copies a kept UTF-8 too)."""
    if len(text) >= DIRECT_UTF8_CHARS:
        in_place = utf8_in_place(text)
        if in_place is not None:
            return padded(in_place)
        if len(text) >= INTERRUPTIBLE_CHARS:
            converted = interruptible(padded_utf8, text, PAD, _NO_OFFSETS)
        else:
            converted = padded_utf8(text, PAD, _NO_OFFSETS)
        if converted is not None:
            return converted[0]
    return padded(utf8_bytes(text))


def padded(raw) -> np.ndarray:
    """A uint8 copy of ``raw`` followed by PAD zero bytes that are not part of the view: the
    kernels load 8 bytes at any offset (one unaligned word) without running off the end."""
    n = len(raw)
    if isinstance(raw, bytes) and n < 4096:  # cheaper for short inputs; writable like the rest
        return np.frombuffer(bytearray(raw + _PAD_BYTES), dtype=np.uint8)[:n]
    buffer = empty_written_once(n + PAD, np.uint8)
    buffer[:n] = np.frombuffer(raw, dtype=np.uint8) if isinstance(raw, (bytes, bytearray, memoryview)) else raw
    buffer[n:] = 0
    return buffer[:n]


def with_padding(view: np.ndarray) -> np.ndarray:
    """The whole buffer behind a :func:`padded` view (for saving it)."""
    return view.base[: len(view) + PAD] if view.base is not None else np.concatenate([view, np.zeros(PAD, np.uint8)])

