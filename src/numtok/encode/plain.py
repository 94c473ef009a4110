"""One text with no special token to find: encoded or counted by the path that suits its
size. A short text of a named pattern goes through the short-call kernel (``short_calls``), a
text that fits one chunk through one kernel call (``encode_whole``), a long one of a cuttable
pattern is streamed a block at a time (``streaming``), anything else is cut into documents
(``engine.encode_docs``)."""

from __future__ import annotations

import numpy as np

from .._native.utf8 import utf8_bytes
from ..pretokenizers._unicode import class_table
from . import _kernels as _k
from .buffers import SHORT_BYTES, in_scratch, padded, padded_utf8_of
from .engine import encode_docs
from .special import NO_SPECIAL
from .streaming import encode_streamed


def encode_plain(tok, text: str) -> np.ndarray:
    """Ids of one text with no special tokens to find. A named pattern's text that fits one
    chunk is split and encoded in one kernel call, from this thread's scratch buffer if it
    is short (no padded array to allocate)."""
    ids = tok._short.encode(text)
    if ids is not None:
        return ids
    if tok._scanner_id >= 0 and len(text) <= SHORT_BYTES:
        raw = utf8_bytes(text)
        n = len(raw)
        return encode_whole(tok, in_scratch(raw) if n <= SHORT_BYTES else padded(raw), n)
    if tok._cuttable and len(text) > tok._chunk_bytes:
        ids = encode_streamed(tok, text)
        if ids is not None:
            return ids
    data = padded_utf8_of(text)
    if tok._scanner_id >= 0 and len(data) <= tok._chunk_bytes:
        return encode_whole(tok, data, len(data))
    docs = np.array([[0, len(data)]], dtype=np.int64)
    ids, _ = encode_docs(tok, data, docs, NO_SPECIAL, 1)
    return ids


def encode_whole(tok, data: np.ndarray, n: int) -> np.ndarray:
    """Ids of the text ``data[:n]`` (padded; named pattern), split and encoded in one
    kernel call."""
    piece_cache = tok._piece_caches.take(n)
    try:
        status, ids, pos = _k.ENCODE_TEXT[tok._scanner_id](
            data, n, class_table(), tok._core, piece_cache, tok._heap_min,
        )  # fmt: skip
    finally:
        tok._piece_caches.give(piece_cache)
    if status == _k.ST_NO_SYMBOL:
        raise ValueError(tok._no_symbol_message(data[:n], pos))
    if status != _k.ST_DONE:  # pragma: no cover - the kernel sizes its output for the worst case
        raise AssertionError("output buffer bound exceeded")
    return ids


def count_plain(tok, text: str) -> int:
    """The number of ids of one text with no special tokens to find. A text longer than a
    chunk is counted with no id array (``CountSink``), streamed a block at a time where it can
    be; a shorter one is encoded (one kernel call) and its ids counted: counting those without
    an array was no faster (the ids of a chunk are a few hundred KB at most)."""
    if len(text) <= tok._chunk_bytes:
        return len(encode_plain(tok, text))
    if tok._cuttable:
        n = encode_streamed(tok, text, count=True)
        if n is not None:
            return n
    data = padded_utf8_of(text)
    docs = np.array([[0, len(data)]], dtype=np.int64)
    _, doc_end = encode_docs(tok, data, docs, NO_SPECIAL, 1, count=True)
    return int(doc_end[0])
