"""Long texts encoded a block at a time, straight from the str (no UTF-8 copy of the whole)."""

from __future__ import annotations

from typing import Literal, overload

import numpy as np

from .._native import pystr as _pystr
from .._native.utf8 import contains_any
from ..pretokenizers import _scanners
from . import engine
from .buffers import PAD, padded


@overload
def encode_streamed(tok, text: str, needles: tuple | None = None, count: Literal[False] = False) -> np.ndarray | None: ...
@overload
def encode_streamed(tok, text: str, needles: tuple | None = None, *, count: Literal[True]) -> int | None: ...
def encode_streamed(tok, text: str, needles: tuple | None = None, count: bool = False) -> np.ndarray | int | None:
    """Ids of a long text of a named pattern (``count``: only their number, an int),
    written to UTF-8, split and encoded one block of ``_chunk_bytes`` characters at a time
    through one reused buffer; None if the text
    cannot be read in place (see ``_pystr``) or holds a surrogate (the caller's path
    repairs it), or if a block may hold one of ``needles`` (``_block_needles``: special
    tokens the caller must look for in the whole text).

    The whole text's UTF-8 is never written out (fresh pages as big as the text, which the OS
    must zero, then read twice from memory): each block is still in cache when the scanner and the
    encoder read it. A block is encoded up to its last cut (``cut_documents``' rule: every
    named pattern starts a piece there, whatever precedes it); the rest is carried into the
    next block. A surrogate found late wastes the blocks before it (rare: the caller then
    starts again on the repaired text).
    """
    shape = _pystr.str_shape(text)
    if shape is None:
        return None
    in_place = _pystr.utf8_in_place(text)
    if in_place is not None and len(in_place) > _TAIL_BYTES:
        return _encode_in_place(tok, in_place, needles, count)
    n, width = shape
    block = tok._chunk_bytes
    buf = np.empty(2 * block * width + PAD, dtype=np.uint8)
    out = None
    caches = [tok._piece_caches.take(n)]
    k = carry = first = 0
    try:
        while first < n:
            last = min(n, first + block)
            if carry + (last - first) * width + PAD > len(buf):  # no cut for a while
                grown = np.empty(2 * len(buf) + (last - first) * width, dtype=np.uint8)
                grown[:carry] = buf[:carry]
                buf = grown
            stop = _pystr.slice_to_utf8(text, first, last, buf, carry)
            if stop < 0:
                return None
            if out is None:  # sized for the whole text at the first block's bytes a character
                out = engine.ids_out(tok, n * width, 1, count, likely_bytes=-(-stop * n // last))
            # The carried bytes are searched again: a token that runs past this block's end
            # is whole in the next one (it has no cut inside, see _block_needles).
            if needles is not None and contains_any(buf, stop, *needles):
                return None
            cut = stop if last == n else _scanners.last_cut(buf, max(carry - 1, 0), stop)
            first = last
            if cut < 0:
                carry = stop
                continue
            buf[stop : stop + PAD] = 0
            k = engine.encode_range(tok, buf[:stop], 0, cut, out, k, caches[0])
            caches[0] = tok._piece_caches.check(caches[0], cut)
            carry = stop - cut
            buf[:carry] = buf[cut:stop]
    finally:
        tok._piece_caches.give(caches[0])
    assert out is not None  # a streamed text has a first block
    return _result(out, k, count)


# The bytes after the last cut of a text read in place are copied into a padded buffer: the
# kernels read up to PAD bytes past their data's last piece, and the scanners' windows stop 64
# bytes before its end.
_TAIL_BYTES = 4096


def _encode_in_place(tok, data: np.ndarray, needles: tuple | None, count: bool) -> np.ndarray | int | None:
    """``encode_streamed`` of a text whose UTF-8 the str already holds (``_pystr.utf8_in_place``):
    the same blocks, each read where it is instead of written from the characters first (a
    write and a read of each block spared, most where characters take several bytes). The
    data's last bytes, from the last cut before its final ``_TAIL_BYTES`` (all of it if there
    is none), are encoded from a padded copy. ``data`` is only read."""
    n = len(data)
    block = 2 * tok._chunk_bytes
    out = engine.ids_out(tok, n, 1, count)
    caches = [tok._piece_caches.take(n)]
    k = start = 0
    safe = n - _TAIL_BYTES  # no block of the text in place ends past this
    try:
        while start < safe:
            stop = min(start + block, safe)
            cut = _scanners.last_cut(data, start, stop)
            while cut < 0 and stop < safe:  # no cut in the block (CJK without spaces): the next one
                lo, stop = stop - 1, min(stop + block, safe)
                cut = _scanners.last_cut(data, lo, stop)
            if cut < 0:
                break
            if needles is not None and contains_any(data[start:], cut - start, *needles):
                return None
            k = engine.encode_range(tok, data, start, cut, out, k, caches[0])
            caches[0] = tok._piece_caches.check(caches[0], cut - start)
            start = cut
        tail = padded(data[start:])
        if needles is not None and contains_any(tail, len(tail), *needles):
            return None
        k = engine.encode_range(tok, tail, 0, len(tail), out, k, caches[0])
    finally:
        tok._piece_caches.give(caches[0])
    return _result(out, k, count)


def _result(out, k: int, count: bool) -> np.ndarray | int:
    return k if count else out.result(k)
