"""The encoder core of a tokenizer: every table and constant the encoder kernels read, as one
typed, frozen value that kernels take as one argument.

Built once by ``tables.setup`` (and again when it replaces the whole-piece table); the layouts
are described in ``_kernels``. Numba passes a NamedTuple of arrays as one struct: a kernel's
parameter list names the core, not its eighteen parts, and reads ``core.tok_tab`` as cheaply as
an argument of its own.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class EncoderCore(NamedTuple):
    byte_id: np.ndarray  # int64 (256,): the id of each single byte (or the unknown token)
    bp: np.ndarray  # int32 (65536,): the merge of each byte pair (``byte_pair_table``)
    tok_bytes: np.ndarray  # uint8: every id's bytes one after another (padded)
    tok_off: np.ndarray  # int64 (max id + 2,): where each id's bytes start
    tok_tab: np.ndarray  # uint64: token table (bytes -> id)
    whole_tab: np.ndarray  # uint64: whole-piece table (a piece that is one token)
    whole_ext: np.ndarray  # uint64: the whole-piece table's keys past 8 bytes
    max_whole_len: int  # the longest piece the whole-piece table holds
    pair_tab: np.ndarray  # uint64: pair table (left, right -> priority)
    pair_filter: np.ndarray  # uint64: a Bloom filter of the pair table
    res_of: np.ndarray  # int32: the id a merge makes (merge mode; empty in rank mode)
    units: int  # 0: bytes, 1: characters
    unk_id: int  # -1: none
    eow_id: int  # -1: no end-of-word marker
    seg_filter: np.ndarray  # uint64: patterns of tokens across character boundaries (``_segments``)
    char_flags: np.ndarray  # uint8 (65536,): which characters end with a tail or start with a head of one
    char_memo: np.ndarray  # uint64 (65536,): the ids of each character merged alone, filled as met
    seg_min: int  # pieces of at least this many bytes may be cut into parts (0: never)
