"""Character offsets of tokens, and token counts.

Offsets are character indices into the text (Python str indices), as HF tokenizers'
``Encoding.offsets`` with ByteLevel ``trim_offsets=False``: a token that covers part of a
character (a byte of an emoji, say) spans that whole character, so ``text[s:e]`` always holds
all of the token's bytes. A lone surrogate counts as the one character it is in the str (it is
encoded as U+FFFD, as tiktoken does).
"""

from __future__ import annotations

import numpy as np

from . import _offset_kernels as _ok

_ONE_DOC = np.zeros(2, dtype=np.int64)


def token_char_offsets(tok, ids: np.ndarray, doc_bounds: np.ndarray | None = None) -> np.ndarray:
    """(n, 2) int64 character offsets of ``ids`` (valid ids of ``tok``), counted from the start
    of each document of ``doc_bounds`` (default: all one document)."""
    if doc_bounds is None:
        doc_bounds = _ONE_DOC.copy()
        doc_bounds[1] = len(ids)
    counts, inside, lens = _char_tables(tok)
    return _ok.char_offsets(ids, counts, inside, lens, np.ascontiguousarray(doc_bounds, dtype=np.int64))


def _char_tables(tok) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per id of ``tok``: characters started, starts inside a character, bytes (made once)."""
    tables = tok.__dict__.get("_char_tables")
    if tables is None:
        counts, inside = _ok.token_char_counts(tok._dec_bytes, tok._dec_off)
        tables = (counts, inside, np.diff(tok._dec_off).astype(np.int32))
        tok._char_tables = tables  # derived from the decode table, which never changes
    return tables


def check_spells_text(tok, ids: np.ndarray, raw: bytes) -> None:
    """Offsets count the tokens' own bytes: with an ``unk_token`` standing for text it does not
    spell, they would be wrong, so that case is checked (only then: it costs a decode)."""
    if tok._unk_id >= 0 and tok.decode_bytes(ids) != raw:
        raise ValueError("offsets need tokens that spell the text: this text has characters encoded as the unk_token")
