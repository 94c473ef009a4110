"""Pre-tokenization: cut text into pieces, as UTF-8 byte spans.

Named patterns ("gpt2", "r50k", "cl100k", "o200k") run as Numba scanners over the UTF-8 bytes
(see ``_scanners``); any other regex runs through the ``regex`` module and yields the same
format. The output is always an int64 array of (start, end) byte offsets, never one Python
string per piece, so the trainer and the encoder consume it directly.
"""

from __future__ import annotations

import numpy as np

from .._native.threads import check_num_threads
from .._native.utf8 import char_to_byte_offsets, utf8_bytes
from .patterns import compile_pattern, resolve_pattern

__all__ = ["pretokenize", "split_bytes"]


def pretokenize(text: str, pattern: str = "gpt2") -> np.ndarray:
    """Split ``text`` into pieces; return their (start, end) UTF-8 byte offsets.

    For a named pattern the spans equal ``regex.finditer(<pattern>, text)`` converted to byte
    offsets, for every input. Lone surrogates are replaced by U+FFFD first (as tiktoken does),
    so offsets refer to ``numtok._native.utf8.utf8_bytes(text)``.

    >>> pretokenize("Hello world!", "cl100k").tolist()
    [[0, 5], [5, 11], [11, 12]]
    >>> pretokenize("héllo", r"\\w").tolist()[:2]
    [[0, 1], [1, 3]]
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    name, pattern_string = resolve_pattern(pattern)
    data = np.frombuffer(utf8_bytes(text), dtype=np.uint8)
    docs = np.array([[0, len(data)]], dtype=np.int64)
    return split_bytes(data, docs, pattern if name is None else name)


def split_bytes(data: np.ndarray, docs: np.ndarray, pattern: str, num_threads: int | None = None) -> np.ndarray:
    """Pre-tokenize many documents held in one UTF-8 buffer.

    Args:
        data: 1-D uint8 array (or bytes) of UTF-8. Neither the named scanners nor a regex fail
            on invalid UTF-8: each byte that starts no valid character counts as one "other"
            character (like U+FFFD).
        docs: integer array of shape (m, 2): the [start, end) byte range of each document;
            no piece crosses a document boundary. Ranges should start and end on character
            boundaries.
        pattern: a pattern name or a regex string.
        num_threads: threads for the named scanners (default: the cores this process may
            use). With 1 the scan runs entirely on the calling thread; the kernels release
            the GIL, so several Python threads may call this at once. Inputs under 1 MiB
            always run on the calling thread.

    Returns:
        int64 array of shape (n, 2), the spans of all pieces, document by document.
    """
    name, pattern_string = resolve_pattern(pattern)
    data = _as_byte_array(data)
    docs = _as_doc_ranges(docs, len(data))
    threads = check_num_threads(num_threads)
    if name is not None:
        from . import _scanners

        if _scanners.has_scanner(name):
            return _scanners.split_named(data, docs, name, threads)
    return _split_with_regex(data, docs, pattern_string)


def _as_byte_array(data) -> np.ndarray:
    """``data`` as a C-contiguous 1-D uint8 array (bytes-like objects are viewed, not copied)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    if not isinstance(data, np.ndarray):
        raise TypeError(f"data must be a uint8 NumPy array or bytes, not {type(data).__name__}")
    if data.dtype != np.uint8 or data.ndim != 1:
        raise ValueError(f"data must be a 1-D uint8 array, not {data.ndim}-D {data.dtype}")
    return np.ascontiguousarray(data)


def _as_doc_ranges(docs, size: int) -> np.ndarray:
    """``docs`` as a C-contiguous int64 (m, 2) array of ranges inside ``[0, size]``."""
    docs = np.asarray(docs)
    if docs.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if docs.dtype.kind not in "iu":
        raise TypeError(f"docs must hold integers, not {docs.dtype}")
    if docs.ndim != 2 or docs.shape[1] != 2:
        raise ValueError(f"docs must have shape (m, 2), not {docs.shape}")
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    starts, ends = docs[:, 0], docs[:, 1]
    bad = np.flatnonzero((starts < 0) | (ends < starts) | (ends > size))
    if len(bad):
        k = int(bad[0])
        raise ValueError(f"docs[{k}] = {docs[k].tolist()} is not a range inside data of {size} bytes")
    return docs


def _split_with_regex(data: np.ndarray, docs: np.ndarray, pattern_string: str) -> np.ndarray:
    compiled = compile_pattern(pattern_string)
    raw = data.tobytes()
    out = []
    for start, end in docs.tolist():
        try:
            text = raw[start:end].decode("utf-8")
            escaped = False
        except UnicodeDecodeError:
            # Each byte that starts no valid character becomes one lone surrogate (U+DC80..
            # U+DCFF), which every pattern takes as "other", as the scanners do.
            text = raw[start:end].decode("utf-8", "surrogateescape")
            escaped = True
        char_spans = np.array([m.span() for m in compiled.finditer(text)], dtype=np.int64).reshape(-1, 2)
        if not len(char_spans):
            continue
        byte_offsets = char_to_byte_offsets(text) if not text.isascii() else None
        if escaped:
            byte_offsets = _escaped_byte_offsets(text)
        spans = char_spans if byte_offsets is None else byte_offsets[char_spans]
        # A regex may match the empty string; an empty piece carries no token, so drop it.
        spans = spans[spans[:, 1] > spans[:, 0]]
        out.append(spans + start)
    if not out:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(out)



def _escaped_byte_offsets(text: str) -> np.ndarray:
    """:func:`char_to_byte_offsets` of a str decoded with ``surrogateescape``: an escaped byte
    (U+DC80..U+DCFF) stands for one byte."""
    code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    widths = 1 + (code_points >= 0x80).astype(np.int64) + (code_points >= 0x800) + (code_points >= 0x10000)
    widths[(code_points >= 0xDC80) & (code_points <= 0xDCFF)] = 1
    offsets = np.zeros(len(code_points) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    return offsets
