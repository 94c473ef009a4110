"""Private Numba kernels: the character offsets of tokens (used by ``offsets``).

The tokens' bytes, one after another, are the UTF-8 of the text they encode, so a token's
character offsets follow from counting the UTF-8 lead bytes of the tokens before it: no copy of
the text is needed. Each token's count (and whether it starts inside a character) is worked out
once per tokenizer, so offsets cost two table reads per token.
"""

from __future__ import annotations

import numpy as np

from .._native.jit import cached_njit


@cached_njit(nogil=True)
def token_char_counts(dec_bytes, dec_off):
    """Per id: the characters it starts (its UTF-8 lead bytes), and whether its first byte
    continues a character (1) or not (0)."""
    n = dec_off.shape[0] - 1
    starts = np.zeros(n, np.int32)
    inside = np.zeros(n, np.uint8)
    for t in range(n):
        a = dec_off[t]
        b = dec_off[t + 1]
        if a < b and (dec_bytes[a] & 0xC0) == 0x80:
            inside[t] = 1
        c = 0
        for q in range(a, b):
            if (dec_bytes[q] & 0xC0) != 0x80:
                c += 1
        starts[t] = c
    return starts, inside


@cached_njit(nogil=True)
def char_offsets(ids, char_count, starts_inside, token_len, doc_bounds):
    """(n, 2) int64 ``[start, end)`` character offsets of every token, counted from the start
    of its document; ``doc_bounds`` (int64, first 0, last ``len(ids)``) cuts ``ids`` into
    documents. A token that starts or ends inside a character spans that whole character; a
    token with no bytes gets an empty span where it stands. Ids must be valid.
    """
    n = ids.shape[0]
    out = np.empty((n, 2), np.int64)
    for d in range(doc_bounds.shape[0] - 1):
        chars = 0  # characters started so far in this document
        for i in range(doc_bounds[d], doc_bounds[d + 1]):
            t = ids[i]
            start = chars - 1 if starts_inside[t] and chars > 0 else chars
            chars += char_count[t]
            out[i, 0] = start
            out[i, 1] = chars if token_len[t] > 0 else start
    return out
