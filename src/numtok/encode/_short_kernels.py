"""The kernel of a short call: one str in, its ids in a per-thread buffer, entered with two ints.

Numba's dispatcher types and unboxes every argument of every call: for ``encode_text``'s 19
arrays and scalars that is most of a short call. This kernel takes two ints instead, the
address of a *context* (an int64 array of addresses and lengths, :data:`CONTEXT_ARRAYS`, and a
few scalars) and the address of the str, and is entered through its compiled wrapper directly
(``short_calls``): ints need no typing and unbox at once. It reads the str where CPython keeps
it (``_native.pystr``), writes its UTF-8 to the context's text buffer, splits it with the
scanner and encodes the pieces with ``_kernels.encode_loop`` into the context's id buffer, and
returns how many ids it wrote.

Negative results send the caller elsewhere: :data:`NOT_HERE` (not an exact str, longer than
the text buffer, or holding a surrogate: the general path decides), :data:`NO_SYMBOL` (a byte
with no token; its position is in the context's ``AT`` word) and :data:`CHECK_CACHE` (done, the
ids count is in ``AT``, and enough text went through the piece cache that it should be
looked at for growth).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._native.intrinsics import address_array, address_rows, address_view, read_only
from .._native.jit import cached_njit
from .._native.pystr import utf8_at, utf8_bound_at
from .._native.utf8 import PAD
from ..pretokenizers._scanners import SCANNER_KINDS, scan_into
from . import _kernels as _k
from ._core import EncoderCore

# The arrays of a context, each as two words: address, length (in elements). The text's
# pieces, the loop's work arrays and the one document's rows are the context's too: a call
# allocates nothing.
CONTEXT_ARRAYS = (
    "layout", "flags", "byte_id", "bp", "tok_bytes", "tok_off", "tok_tab", "whole_tab", "whole_ext",
    "pair_tab", "pair_filter", "res_of", "cache", "text", "ids", "spans", "docs", "doc_special",
    "doc_end", "sym", "pp", "nxt", "prv", "heap", "hashes", "seg_filter", "char_flags", "char_memo",
)  # fmt: skip
_A = {name: 2 * i for i, name in enumerate(CONTEXT_ARRAYS)}
LAYOUT, FLAGS, BYTE_ID, BP, TOK_BYTES, TOK_OFF, TOK_TAB, WHOLE_TAB, WHOLE_EXT = (_A[n] for n in CONTEXT_ARRAYS[:9])
PAIR_TAB, PAIR_FILTER, RES_OF, CACHE, TEXT, IDS, SPANS, DOCS, DOC_SPECIAL = (_A[n] for n in CONTEXT_ARRAYS[9:18])
DOC_END, SYM, PP, NXT, PRV, HEAP, HASHES, SEG_FILTER, CHAR_FLAGS, CHAR_MEMO = (_A[n] for n in CONTEXT_ARRAYS[18:])
# The scalars that follow them.
MAX_WHOLE_LEN = 2 * len(CONTEXT_ARRAYS)
UNITS = MAX_WHOLE_LEN + 1
UNK_ID = MAX_WHOLE_LEN + 2
EOW_ID = MAX_WHOLE_LEN + 3
HEAP_MIN = MAX_WHOLE_LEN + 4
SEEN = MAX_WHOLE_LEN + 5  # bytes encoded into the cache since the caller last looked at it
CHECK_AT = MAX_WHOLE_LEN + 6  # ... and how many make it look
AT = MAX_WHOLE_LEN + 7  # see NO_SYMBOL and CHECK_CACHE
SEG_MIN = MAX_WHOLE_LEN + 8
CONTEXT_WORDS = MAX_WHOLE_LEN + 9

NOT_HERE = -1
NO_SYMBOL = -2
CHECK_CACHE = -3


@njit(inline="always")  # returns a new array: not INLINE, which runs without reference counting
def _i64(c, at):
    return address_array(c[at], c[at + 1], np.int64)


@njit(inline="always")
def _u64(c, at):
    return address_array(c[at], c[at + 1], np.uint64)


def _short_kernel(scanner: int):
    """``encode_short`` for scanner number ``scanner`` (a constant of it, as in
    ``_kernels._scanning_kernels``)."""

    def encode_short(context, text):
        """Encode the str at address ``text`` with the tables and buffers of the context at
        address ``context``; returns the number of ids in its id buffer, or a negative code
        (module docstring)."""
        c = address_array(context, CONTEXT_WORDS, np.int64)
        layout = address_view(c[LAYOUT], c[LAYOUT + 1], np.int64)
        bound = utf8_bound_at(text, layout)
        if bound < 0 or bound + PAD > c[TEXT + 1]:
            return NOT_HERE
        buffer = address_array(c[TEXT], c[TEXT + 1], np.uint8)
        zero = np.int64(0)
        n = utf8_at(text, layout, buffer, zero, address_array(c[DOC_END], 0, np.int64))
        if n < 0:
            return NOT_HERE
        for i in range(n, n + PAD):
            buffer[i] = 0
        data = address_array(c[TEXT], n, np.uint8)
        docs = address_rows(c[DOCS], 1, 2, np.int64)
        docs[0, 0] = 0
        docs[0, 1] = n
        spans = address_rows(c[SPANS], c[SPANS + 1] >> 1, 2, np.int64)  # room for a piece a byte
        m, _, _ = scan_into(scanner, read_only(data), docs, address_view(c[FLAGS], c[FLAGS + 1], np.uint8), spans, zero, zero)
        part = spans[:m]
        whole_tab = _u64(c, WHOLE_TAB)
        max_whole_len = c[MAX_WHOLE_LEN]
        wide_tokens = _k.mostly_tokens(data, part, zero, whole_tab, max_whole_len)
        core = EncoderCore(
            _i64(c, BYTE_ID), address_array(c[BP], c[BP + 1], np.int32), address_array(c[TOK_BYTES], c[TOK_BYTES + 1], np.uint8),
            _i64(c, TOK_OFF), _u64(c, TOK_TAB), whole_tab, _u64(c, WHOLE_EXT), max_whole_len, _u64(c, PAIR_TAB),
            _u64(c, PAIR_FILTER), address_array(c[RES_OF], c[RES_OF + 1], np.int32), c[UNITS], c[UNK_ID], c[EOW_ID],
            _u64(c, SEG_FILTER), address_array(c[CHAR_FLAGS], c[CHAR_FLAGS + 1], np.uint8), _u64(c, CHAR_MEMO), c[SEG_MIN],
        )  # fmt: skip
        sym, pp, nxt, prv, heap = _i64(c, SYM), _i64(c, PP), _i64(c, NXT), _i64(c, PRV), _i64(c, HEAP)
        j = zero
        d = zero
        k = zero
        while True:
            status, k, j, d, pos = _k.encode_loop(
                data, part, docs[:1], _i64(c, DOC_SPECIAL), _i64(c, DOC_END), j, d, address_array(c[IDS], c[IDS + 1], np.int32), k,
                core, _u64(c, CACHE), c[HEAP_MIN], sym, pp, nxt, prv, heap, _u64(c, HASHES), wide_tokens,
            )  # fmt: skip
            if status != _k.ST_LONG:
                break
            size = max(2 * sym.shape[0], pos)  # a piece too long for the work arrays: bigger ones
            sym, pp, nxt, prv, heap = _k.work_arrays(size)
        if status != _k.ST_DONE:  # the id buffer holds the worst case: a byte with no token
            c[AT] = pos
            return NO_SYMBOL
        c[SEEN] += n
        if c[SEEN] >= c[CHECK_AT]:
            c[AT] = k
            return CHECK_CACHE
        return k

    encode_short.__qualname__ = f"encode_short_{SCANNER_KINDS[scanner]}"
    return cached_njit(nogil=True)(encode_short)


# By scanner number (``_scanners.SCANNER_IDS``); ``short_calls`` compiles the one it needs
# for (int64, int64) when first used.
ENCODE_SHORT = tuple(_short_kernel(i) for i in range(len(SCANNER_KINDS)))
