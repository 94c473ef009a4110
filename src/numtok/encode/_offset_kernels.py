"""Private Numba kernel: the character offsets of tokens (used by ``offsets``).

The tokens' bytes, one after another, are the UTF-8 of the text they encode, so a token's
character offsets follow from counting the UTF-8 lead bytes of the tokens before it: no copy of
the text is needed, only the decode table.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def char_offsets(ids, dec_bytes, dec_off, doc_bounds):
    """(n, 2) int64 ``[start, end)`` character offsets of every token, counted from the start
    of its document; ``doc_bounds`` (int64, first 0, last ``len(ids)``) cuts ``ids`` into
    documents. A token that starts or ends inside a character spans that whole character; a
    token with no bytes gets an empty span where it stands. Ids must be valid.
    """
    n = ids.shape[0]
    out = np.empty((n, 2), np.int64)
    for d in range(doc_bounds.shape[0] - 1):
        chars = 0  # characters started so far in this document (lead bytes seen)
        for i in range(doc_bounds[d], doc_bounds[d + 1]):
            t = ids[i]
            a = dec_off[t]
            b = dec_off[t + 1]
            start = chars
            if a < b and (dec_bytes[a] & 0xC0) == 0x80 and chars > 0:
                start = chars - 1  # begins inside the character already started
            for q in range(a, b):
                if (dec_bytes[q] & 0xC0) != 0x80:
                    chars += 1
            out[i, 0] = start
            out[i, 1] = chars if b > a else start
    return out
