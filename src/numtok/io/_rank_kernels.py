"""Private Numba kernel that parses a tiktoken rank file (used by ``tiktoken_file``)."""

from __future__ import annotations

import numpy as np

from .._native.jit import cached_njit

# Ranks must stay below the encoder's 'no merge' priority (2**31 - 1).
_RANK_LIMIT = 0x7FFFFFFF

# Rank-file parse errors.
RF_OK = 0
RF_NO_SPACE = 1
RF_BAD_BASE64 = 2
RF_BAD_RANK = 3
RF_EMPTY_TOKEN = 4


@cached_njit(nogil=True)
def parse_tiktoken(buf):
    """Parse a .tiktoken rank file (``base64(token) SP rank`` per line; blank lines skipped).

    Returns (status, line number (1-based) of the error, tok_bytes, tok_off, ranks).
    """
    b64 = np.full(256, -1, np.int64)
    for c in range(26):
        b64[65 + c] = c
        b64[97 + c] = 26 + c
    for c in range(10):
        b64[48 + c] = 52 + c
    b64[43] = 62
    b64[47] = 63
    n_lines = 1
    for i in range(buf.shape[0]):
        if buf[i] == 10:
            n_lines += 1
    tok_bytes = np.empty(buf.shape[0], np.uint8)
    tok_off = np.zeros(n_lines + 1, np.int64)
    ranks = np.empty(n_lines, np.int64)
    n = 0
    p = 0
    line = 0
    i = 0
    size = buf.shape[0]
    while i < size:
        line += 1
        e = i
        while e < size and buf[e] != 10:
            e += 1
        stop = e
        if stop > i and buf[stop - 1] == 13:
            stop -= 1
        if stop == i:
            i = e + 1
            continue
        sp = i
        while sp < stop and buf[sp] != 32:
            sp += 1
        if sp == stop:
            return RF_NO_SPACE, line, tok_bytes, tok_off, ranks
        m = sp - i
        if m == 0:
            return RF_EMPTY_TOKEN, line, tok_bytes, tok_off, ranks
        if m % 4 != 0:
            return RF_BAD_BASE64, line, tok_bytes, tok_off, ranks
        pad = 0
        if buf[sp - 1] == 61:
            pad = 2 if buf[sp - 2] == 61 else 1
        acc = 0
        for q in range(i, sp - pad):
            v = b64[buf[q]]
            if v < 0:
                return RF_BAD_BASE64, line, tok_bytes, tok_off, ranks
            acc = (acc << 6) | v
            if (q - i) % 4 == 3:
                tok_bytes[p] = (acc >> 16) & 0xFF
                tok_bytes[p + 1] = (acc >> 8) & 0xFF
                tok_bytes[p + 2] = acc & 0xFF
                p += 3
                acc = 0
        if pad == 1:
            if acc & 0x3:
                return RF_BAD_BASE64, line, tok_bytes, tok_off, ranks
            tok_bytes[p] = (acc >> 10) & 0xFF
            tok_bytes[p + 1] = (acc >> 2) & 0xFF
            p += 2
        elif pad == 2:
            if acc & 0xF:
                return RF_BAD_BASE64, line, tok_bytes, tok_off, ranks
            tok_bytes[p] = (acc >> 4) & 0xFF
            p += 1
        if p == tok_off[n]:
            return RF_EMPTY_TOKEN, line, tok_bytes, tok_off, ranks
        r = 0
        if sp + 1 >= stop or stop - sp - 1 > 10:
            return RF_BAD_RANK, line, tok_bytes, tok_off, ranks
        for q in range(sp + 1, stop):
            c = buf[q]
            if c < 48 or c > 57:
                return RF_BAD_RANK, line, tok_bytes, tok_off, ranks
            r = 10 * r + (np.int64(c) - 48)  # int64 as compiled, also with the JIT off (uint8 there)
        if r >= _RANK_LIMIT:
            return RF_BAD_RANK, line, tok_bytes, tok_off, ranks
        ranks[n] = r
        n += 1
        tok_off[n] = p
        i = e + 1
    return RF_OK, 0, tok_bytes[:p].copy(), tok_off[: n + 1].copy(), ranks[:n].copy()
