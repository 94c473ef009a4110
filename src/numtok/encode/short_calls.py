"""Short calls: a short text of a named pattern encoded by one kernel entered with two ints.

A call of a few words spent most of its time before and after the kernel: typing and
unboxing its 19 arguments, turning the str into padded UTF-8, taking a piece cache. Here each
thread keeps a *context* per tokenizer (``_short_kernels``: the tables' addresses, a text
buffer, an id buffer and a piece cache of its own), and a call is the kernel's compiled
wrapper called with the context's address and the str's, then a copy of the ids. Anything the
kernel does not take (a str subclass, a text longer than the buffer, a lone surrogate, a byte
with no token) goes to the general path, which handles it and reports errors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numba import types

from .._native.jit import jit_off
from .._native.pystr import layout
from ..pretokenizers._unicode import class_table
from . import _kernels as _k
from . import _short_kernels as _s
from .buffers import PAD, SHORT_BYTES
from .piece_cache import CHECK_BYTES

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

_SIGNATURE = (types.int64, types.int64)


class Unbuilt:
    """What a tokenizer's ``_short`` is until its first short call, which builds the path (or
    finds there is none) and puts it in its place."""

    def __init__(self, tok: Tokenizer) -> None:
        self._tok = tok

    def _built(self) -> ShortCalls | NoShortCalls:
        tok = self._tok
        path: ShortCalls | NoShortCalls = NoShortCalls()
        if tok._scanner_id >= 0 and layout() is not None:
            path = ShortCalls(tok)
        tok._short = path
        return path

    def encode(self, text: str) -> np.ndarray | None:
        return self._built().encode(text)

    def count(self, text: str) -> int | None:
        return self._built().count(text)


class NoShortCalls:
    """The short-call path where there is none: a pattern with no scanner, or an interpreter
    whose str layout is unknown."""

    def encode(self, text: str) -> None:
        return None

    def count(self, text: str) -> None:
        return None


class ShortCalls:
    """``encode`` and ``count`` of short texts for one tokenizer, on any thread."""

    def __init__(self, tok: Tokenizer) -> None:
        kernel = _s.ENCODE_SHORT[tok._scanner_id]
        self._enter: Callable[[int, int], int] = kernel  # with the JIT off, the plain function
        if not jit_off():
            kernel.compile(_SIGNATURE)
            # The compiled wrapper itself: ints need no typing, and it unboxes them at once.
            self._enter = kernel.overloads[_SIGNATURE].entry_point
        self._tok = tok
        self._caches = tok._piece_caches
        self._heap_min = tok._heap_min
        # Kept alive here: contexts hold their addresses.
        core = tok._core
        lay = layout()
        assert lay is not None  # Unbuilt checked it
        self._arrays: dict[str, np.ndarray] = dict(
            layout=lay, flags=class_table(), byte_id=core.byte_id, bp=core.bp, tok_bytes=core.tok_bytes,
            tok_off=core.tok_off, tok_tab=core.tok_tab, whole_tab=core.whole_tab, whole_ext=core.whole_ext,
            pair_tab=core.pair_tab, pair_filter=core.pair_filter, res_of=core.res_of, seg_filter=core.seg_filter,
            char_flags=core.char_flags, char_memo=core.char_memo,
        )  # fmt: skip
        self._local = threading.local()

    def encode(self, text: str) -> np.ndarray | None:
        """The ids of ``text``, or None if the general path must encode it."""
        try:
            address, ids, _ = self._local.state
        except AttributeError:
            if not isinstance(text, str) or len(text) > SHORT_BYTES:  # no context (and cache) for what it cannot take
                return None
            address, ids, _ = self._open()
        k = self._enter(address, id(text))
        if k >= 0:
            return ids[:k].copy()
        done = self._after(k)
        return None if done is None else ids[:done].copy()

    def count(self, text: str) -> int | None:
        """The number of ids of ``text``, or None if the general path must count it."""
        try:
            address, _, _ = self._local.state
        except AttributeError:
            if not isinstance(text, str) or len(text) > SHORT_BYTES:
                return None
            address, _, _ = self._open()
        k = self._enter(address, id(text))
        return k if k >= 0 else self._after(k)

    def _open(self) -> tuple[int, np.ndarray, tuple]:
        """This thread's context: the tables' addresses, its buffers and a piece cache."""
        context = np.zeros(_s.CONTEXT_WORDS, np.int64)
        text = np.zeros(SHORT_BYTES + PAD, np.uint8)
        core = self._tok._core
        ids = np.empty(SHORT_BYTES * (2 if core.eow_id >= 0 else 1) + 1, np.int32)
        work = {name: np.empty(_k.WORK_MIN, np.int64) for name in ("sym", "pp", "nxt", "prv")}
        arrays = dict(
            self._arrays, cache=self._caches.take(0), text=text, ids=ids, spans=np.empty(2 * (SHORT_BYTES + 1), np.int64),
            docs=np.zeros(2, np.int64), doc_special=np.full(1, -1, np.int64), doc_end=np.zeros(1, np.int64),
            heap=np.empty(3 * _k.WORK_MIN, np.int64), hashes=np.zeros(_k.HASH_RING, np.uint64), **work,
        )  # fmt: skip
        for name in _s.CONTEXT_ARRAYS:
            array = arrays[name]
            if not array.flags.c_contiguous:  # pragma: no cover - every table is made contiguous
                raise AssertionError(f"{name} is not contiguous")
            at = 2 * _s.CONTEXT_ARRAYS.index(name)
            context[at] = array.ctypes.data
            context[at + 1] = len(array)
        context[_s.MAX_WHOLE_LEN] = core.max_whole_len
        context[_s.UNITS] = core.units
        context[_s.UNK_ID] = core.unk_id
        context[_s.EOW_ID] = core.eow_id
        context[_s.SEG_MIN] = core.seg_min
        context[_s.HEAP_MIN] = max(2, min(self._heap_min, 64))  # as encode_spans bounds it
        context[_s.CHECK_AT] = CHECK_BYTES
        state = (int(context.ctypes.data), ids, (context, arrays))
        self._local.state = state
        return state

    def _after(self, code: int) -> int | None:
        """A negative result of the kernel: the ids it wrote (after looking at its cache), or
        None for the general path, which also raises what a byte with no token raises."""
        if code != _s.CHECK_CACHE:
            return None
        _, _, (context, arrays) = self._local.state
        # The cache goes back to the tokenizer's free list, which grows a crowded one, and a
        # cache from there comes in.
        self._caches.give(arrays["cache"])
        arrays["cache"] = cache = self._caches.take(int(context[_s.SEEN]))
        at = 2 * _s.CONTEXT_ARRAYS.index("cache")
        context[at] = cache.ctypes.data
        context[at + 1] = len(cache)
        context[_s.SEEN] = 0
        return int(context[_s.AT])
