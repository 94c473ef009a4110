"""Private Numba kernels: the character offsets of tokens (used by ``offsets``).

The tokens' bytes, one after another, are the UTF-8 of the text they encode, so a token's
character offsets follow from counting the UTF-8 lead bytes of the tokens before it: no copy of
the text is needed. What each token contributes is worked out once per tokenizer and packed in
one word per id, so offsets cost one table read per token.
"""

from __future__ import annotations

import numpy as np

from .._native.jit import cached_njit

# A token's packed word: characters it starts << 2 | starts inside a character << 1 | has bytes.
_INSIDE = 2
_HAS_BYTES = 1
_U1 = np.uint64(1)
_U2 = np.uint64(2)


@cached_njit(nogil=True)
def token_char_info(dec_bytes, dec_off):
    """Per id, packed in an int64: the characters it starts (its UTF-8 lead bytes) << 2,
    whether its first byte continues a character << 1, whether it has any bytes."""
    n = dec_off.shape[0] - 1
    info = np.zeros(n, np.int64)
    for t in range(n):
        a = dec_off[t]
        b = dec_off[t + 1]
        c = 0
        for q in range(a, b):
            if (dec_bytes[q] & 0xC0) != 0x80:
                c += 1
        x = c << 2
        if a < b:
            x |= _HAS_BYTES
            if (dec_bytes[a] & 0xC0) == 0x80:
                x |= _INSIDE
        info[t] = x
    return info


@cached_njit(nogil=True)
def char_offsets(ids, info, doc_bounds, out):
    """Write the ``[start, end)`` character offsets of every token, counted from the start of
    its document, into ``out`` (int64, (n, 2)); ``doc_bounds`` (int64, first 0, last
    ``len(ids)``) cuts ``ids`` into documents, ``info`` is ``token_char_info``. A token that
    starts or ends inside a character spans that whole character; a token with no bytes gets
    an empty span where it stands. Ids must be valid.

    ``out`` comes from the caller: an array made here would be on 4 KiB pages, whose first
    touch (a fault per 4 KiB, 16 bytes a token) costs more than this loop itself;
    ``hugepages.zeros`` puts it on 2 MiB pages.
    """
    flat = out.reshape(2 * ids.shape[0])
    for d in range(doc_bounds.shape[0] - 1):
        chars = 0  # characters started so far in this document
        for i in range(np.uint64(doc_bounds[d]), np.uint64(doc_bounds[d + 1])):
            x = info[np.uint64(ids[i])]
            # Without branches: whether a token starts inside a character is unpredictable in
            # CJK text.
            start = chars - ((x >> 1) & np.int64(chars > 0))
            chars += x >> 2
            flat[_U2 * i] = start
            flat[_U2 * i + _U1] = chars if x & _HAS_BYTES else start
