"""Character offsets of tokens, and token counts.

Offsets are character indices into the text (Python str indices), as HF tokenizers'
``Encoding.offsets`` with ByteLevel ``trim_offsets=False``: a token that covers part of a
character (a byte of an emoji, say) spans that whole character, so ``text[s:e]`` always holds
all of the token's bytes. A lone surrogate counts as the one character it is in the str (it is
encoded as U+FFFD, as tiktoken does).
"""

from __future__ import annotations

import numpy as np

from .._native import hugepages as _hugepages
from . import _offset_kernels as _ok

# Offsets of fewer ids go to a plain array (a huge page's setup is for big ones).
_FEW = 4096


def token_char_offsets(tok, ids: np.ndarray, doc_bounds: np.ndarray | None = None) -> np.ndarray:
    """(n, 2) int64 character offsets of ``ids`` (valid ids of ``tok``), counted from the start
    of each document of ``doc_bounds`` (default: all one document)."""
    n = len(ids)
    if doc_bounds is None:
        doc_bounds = np.array([0, n], np.int64)
    out = np.empty((n, 2), np.int64) if n < _FEW else _hugepages.zeros((n, 2), np.int64)
    info = tok.__dict__.get("_char_info")
    if info is None:
        info = _char_info(tok)
    _ok.char_offsets(ids, info, np.ascontiguousarray(doc_bounds, dtype=np.int64), out)
    return out


def _char_info(tok) -> np.ndarray:
    """Per id of ``tok``: what it adds to character offsets (``_offset_kernels.token_char_info``;
    made once)."""
    info = tok.__dict__.get("_char_info")
    if info is None:
        info = _ok.token_char_info(tok._dec_bytes, tok._dec_off)
        tok._char_info = info  # derived from the decode table, which never changes
    return info


def check_spells_text(tok, ids: np.ndarray, raw: bytes) -> None:
    """Offsets count the tokens' own bytes: with an ``unk_token`` standing for text it does not
    spell, they would be wrong, so that case is checked (only then: it costs a decode)."""
    if tok._unk_id >= 0 and tok.decode_bytes(ids) != raw:
        raise ValueError("offsets need tokens that spell the text: this text has characters encoded as the unk_token")
