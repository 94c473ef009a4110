"""The tables a Tokenizer encodes and decodes with, built once from its vocabulary.

Token table, pair table, byte-pair table (``_kernels.build_tables``), the whole-piece table,
the id-indexed token bytes and the decode table; their layout is described in ``_kernels``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import numpy as np

from .._native import hugepages as _hugepages
from ..io.hf_json import too_many_added
from ..pretokenizers import _scanners
from ..pretokenizers.patterns import resolve_pattern
from . import _kernels as _k
from . import _segments
from ._core import EncoderCore
from .buffers import padded, with_padding
from .engine import CHUNK_BYTES, HEAP_MIN, run, splitter
from .piece_cache import PieceCaches
from .special import SpecialMatcher


def setup(tok, flat, starts, lens, ids, *, merges=None, pattern="gpt2", special_tokens=None, name=None,
    units="bytes", unk_token=None, end_of_word=None, ignore_merges=False, mergeable_dict=None, prebuilt=None,
    merge_ids=None,
):  # fmt: skip
    """Build every table. ``prebuilt``: arrays from :func:`table_state` (rank mode).
    ``merge_ids``: (left, right, result) ids of the merges (merge mode; ``merges`` is then only
    told apart from None: the list of bytes pairs is made from the ids when asked for)."""
    if units not in ("bytes", "chars"):
        raise ValueError(f"units must be 'bytes' or 'chars', not {units!r}")
    pattern_name, pattern_string = resolve_pattern(pattern)
    tok.name = name
    tok.pattern = pattern_name if pattern_name is not None else pattern_string
    tok._split_pattern = tok.pattern
    # In these patterns a space after an ASCII letter always starts a piece, so a document
    # may be cut there (see _k.cut_documents); any other pattern is never cut.
    tok._cuttable = pattern_name in ("gpt2", "r50k", "cl100k", "o200k")
    tok._split = splitter(tok._split_pattern, pattern_name)
    # Short texts of a named pattern are split and encoded in one kernel call.
    tok._scanner_id = _scanners.SCANNER_IDS.get(pattern_name, -1) if pattern_name else -1
    tok.units = units
    tok.unk_token = unk_token
    tok.end_of_word = end_of_word
    tok.ignore_merges = bool(ignore_merges)
    tok._special_tokens = dict(special_tokens)
    tok._pickle_by_name = None  # numtok.load sets it: (load, (name,))
    tok._heap_min = HEAP_MIN  # tests lower it to run every piece through the heap path
    tok._chunk_bytes = CHUNK_BYTES  # and this, to cut documents into many chunks
    tok._vocab_cache = None
    tok._merges_cache = None

    by_id_lens = _id_indexed_bytes(tok, flat, starts, lens, ids, prebuilt)
    eow_bytes = _initial_symbols(tok, by_id_lens, units, unk_token, end_of_word)
    _pair_tables(tok, by_id_lens, merges, merge_ids, mergeable_dict, prebuilt, unk_token)
    _segment_tables(tok, prebuilt)
    tok._piece_caches = PieceCaches()
    _whole_piece_tables(tok, by_id_lens, eow_bytes)
    _decode_table(tok, eow_bytes)
    tok._special_lookup = SpecialMatcher(tok._special_tokens)
    head = os.path.commonprefix(list(tok._special_tokens))[:2]
    tok._special_head = head if head or not tok._special_tokens else None
    tok._decode_list = None


def _id_indexed_bytes(tok, flat, starts, lens, ids, prebuilt) -> np.ndarray:
    """Set the id-indexed token bytes, offsets, mergeable ids and special mask; returns each
    id's byte length."""
    special_by_id = {i: s.encode("utf-8") for s, i in tok._special_tokens.items()}
    sp_ids = np.array(list(special_by_id), dtype=np.int64)
    if prebuilt is not None:
        # Arrays saved by table_state (the on-disk cache of registry.py).
        n_bytes = int(prebuilt["n_bytes"])
        tok._tok_bytes = prebuilt["tok_bytes"][:n_bytes]  # saved with its padding
        tok._tok_off = tok_off = prebuilt["tok_off"]
        tok._mergeable_ids = prebuilt["mergeable_ids"]
        tok._max_id = len(tok_off) - 2
        tok._is_special = np.zeros(tok._max_id + 1, dtype=bool)
        tok._is_special[sp_ids] = True
        return np.diff(tok_off)
    # Mergeable tokens, then special tokens (several special strings may share an id, as in
    # o200k_harmony; the last one decodes, like tiktoken).
    sp_blob = b"".join(special_by_id.values())
    sp_lens = np.fromiter(map(len, special_by_id.values()), dtype=np.int64, count=len(special_by_id))
    flat = np.ascontiguousarray(flat, dtype=np.uint8)
    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) and (int(ids.min()) < 0 or int(ids.max()) > _k.MAX_ID):
        bad = int(ids.max()) if int(ids.max()) > _k.MAX_ID else int(ids.min())
        raise ValueError(f"token id {bad} is out of range (ids are 0 .. {_k.MAX_ID})")
    all_ids = np.concatenate([ids, sp_ids])
    all_lens = np.concatenate([lens, sp_lens])
    all_starts = np.concatenate([starts, len(flat) + np.cumsum(sp_lens) - sp_lens])
    buffer = np.concatenate([flat, np.frombuffer(sp_blob, dtype=np.uint8)])
    order = np.argsort(all_ids, kind="stable")
    sorted_ids = all_ids[order]
    if len(sorted_ids):
        dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
        if len(dup):
            tid = int(sorted_ids[dup[0]])
            what = "a special token and a vocab token" if tid in special_by_id else "two vocab tokens"
            raise ValueError(f"id {tid} is given to {what}")
    tok._max_id = int(sorted_ids[-1]) if len(sorted_ids) else -1
    by_id_lens = np.zeros(tok._max_id + 1, dtype=np.int64)
    by_id_lens[sorted_ids] = all_lens[order]
    tok_off = np.zeros(tok._max_id + 2, dtype=np.int64)
    np.cumsum(by_id_lens, out=tok_off[1:])
    o_lens = all_lens[order]
    o_starts = all_starts[order]
    gather = np.repeat(o_starts - (np.cumsum(o_lens) - o_lens), o_lens) + np.arange(int(o_lens.sum()))
    tok._tok_bytes = padded(buffer[gather])
    tok._tok_off = tok_off
    tok._mergeable_ids = np.sort(ids).astype(np.int64)
    tok._is_special = np.zeros(tok._max_id + 1, dtype=bool)
    tok._is_special[sp_ids] = True
    return by_id_lens


def _initial_symbols(tok, tok_lens: np.ndarray, units: str, unk_token, end_of_word) -> bytes:
    """Set the byte -> id table, the unknown and end-of-word ids; returns the end-of-word
    marker's bytes (empty without one)."""
    mids = tok._mergeable_ids
    tok._max_token_len = int(tok_lens[mids].max()) if len(mids) else 0
    single = mids[tok_lens[mids] == 1]
    tok._unk_id = -1
    if unk_token is not None:
        unk = tok._lookup_token(unk_token.encode("utf-8"))
        if unk is None:
            raise ValueError(f"unk_token {unk_token!r} is not in the vocab or the special tokens")
        tok._unk_id = unk
    byte_id = np.full(256, tok._unk_id, dtype=np.int64)
    byte_id[tok._tok_bytes[tok._tok_off[single]]] = single
    tok._byte_id = byte_id
    tok._eow_id = -1
    eow_bytes = b""
    if end_of_word is not None:
        eow_bytes = end_of_word.encode("utf-8")
        eow = tok._lookup_token(eow_bytes)
        if eow is None:
            raise ValueError(f"end_of_word {end_of_word!r} is not in the vocab or the special tokens")
        tok._eow_id = eow
    tok._units_code = 0 if units == "bytes" else 1
    return eow_bytes


def _pair_tables(tok, tok_lens: np.ndarray, merges, merge_ids, mergeable_dict, prebuilt, unk_token) -> None:
    """Token table, pair table (rank mode: from every split of every token into two tokens;
    merge mode: from the merge list) and byte-pair table, in one kernel."""
    mids = tok._mergeable_ids
    tok._rank_mode = merges is None
    tok._merge_id_arrays = None
    if merges is None:
        lefts = rights = priorities = np.zeros(0, dtype=np.int64)
        tok._res_of = np.zeros(0, dtype=np.int32)  # a merge's priority is the id it makes
        tok._merges_list = None
    elif merge_ids is not None:
        lefts, rights, results = (np.ascontiguousarray(a, dtype=np.int64) for a in merge_ids)
        tok._res_of = results.astype(np.int32)
        tok._merges_list = None  # made from the ids when asked for (Tokenizer.merges)
    else:
        lefts, rights, tok._res_of, tok._merges_list = merge_pairs(merges, mergeable_dict)
    if merges is not None:
        priorities = np.arange(len(lefts), dtype=np.int64)
        tok._merge_id_arrays = (lefts, rights, tok._res_of.astype(np.int64))
    if prebuilt is not None and tok._rank_mode and unk_token is None:
        tok._tok_tab, dup, tok._pair_tab, tok._bp = prebuilt["tok_tab"], np.int64(-1), prebuilt["pair_tab"], prebuilt["bp"]
    else:
        tok._tok_tab, dup, tok._pair_tab, tok._bp = _k.build_tables(
            tok._tok_bytes, tok._tok_off, mids, tok_lens[mids], tok._byte_id, lefts, rights, priorities, tok._rank_mode
        )
    # Read at random for every piece: on 2 MiB pages (see _native.hugepages).
    tok._tok_tab, tok._pair_tab = _hugepages.copy(tok._tok_tab), _hugepages.copy(tok._pair_tab)
    tok._pair_filter = _k.build_pair_filter(tok._pair_tab)
    if dup >= 0:
        tid = int(mids[dup])
        raise ValueError(f"token {tok._token_bytes(tid)!r} appears twice in the vocab (ids include {tid})")


def _segment_tables(tok, prebuilt) -> None:
    """Where long pieces may be cut into parts merged on their own (``_segments``): pieces of
    bytes only (no characters as units, no end-of-word marker, which changes the last part)."""
    if tok._units_code == 0 and tok._eow_id < 0:
        if prebuilt is not None:
            tok._seg_filter, tok._char_flags = prebuilt["seg_filter"], prebuilt["char_flags"]
        else:
            tok._seg_filter, tok._char_flags = _segments.build_segment_tables(tok._tok_bytes, tok._tok_off, tok._mergeable_ids)
        tok._char_memo = np.zeros(_segments.BMP, np.uint64)
        tok._seg_min = _segments.SEG_MIN
    else:
        tok._seg_filter, tok._char_flags = _segments.no_segments()
        tok._char_memo = np.zeros(1, np.uint64)
        tok._seg_min = 0


def _whole_piece_tables(tok, tok_lens: np.ndarray, eow_bytes: bytes) -> None:
    """Whole-piece table: a piece whose bytes are a key encodes to that single token."""
    set_whole_table(tok, tok._tok_tab, tok._max_token_len)
    if tok.end_of_word is not None:
        cand = tok._mergeable_ids[tok_lens[tok._mergeable_ids] > len(eow_bytes)]
        ends = np.array([tok._token_bytes(int(t)).endswith(eow_bytes) for t in cand], dtype=bool)
        cand = cand[ends] if len(cand) else cand
        cand_lens = tok_lens[cand] - len(eow_bytes)
        set_whole_table(tok, _k.build_key_table(tok._tok_bytes, tok._tok_off, cand, cand_lens)[0], int(cand_lens.max()) if len(cand) else 0)
    else:
        cand = tok._mergeable_ids
        cand_lens = tok_lens[cand]
    if not tok._rank_mode and not tok.ignore_merges:
        # Merge mode emits a piece whole only when merging would produce that token anyway.
        tok._max_whole_len = 0
        tok._core = core_of(tok)
        keep = self_encoding(tok, cand, cand_lens)
        cand, cand_lens = cand[keep], cand_lens[keep]
        set_whole_table(tok, _k.build_key_table(tok._tok_bytes, tok._tok_off, cand, cand_lens)[0], int(cand_lens.max()) if len(cand) else 0)


def _decode_table(tok, eow_bytes: bytes) -> None:
    """Decode table: the end-of-word marker decodes to nothing."""
    if not eow_bytes:
        tok._dec_bytes, tok._dec_off = tok._tok_bytes, tok._tok_off
        return
    tok_off = tok._tok_off
    raw = tok._tok_bytes.tobytes()
    parts = [raw[tok_off[i] : tok_off[i + 1]] for i in range(tok._max_id + 1)]
    parts = [p[: -len(eow_bytes)] if p.endswith(eow_bytes) and not tok._is_special[i] else p for i, p in enumerate(parts)]
    tok._dec_bytes = np.frombuffer(b"".join(parts), dtype=np.uint8).copy()
    tok._dec_off = np.zeros(tok._max_id + 2, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)), out=tok._dec_off[1:])


def set_whole_table(tok, tab: np.ndarray, max_len: int) -> None:
    tok._whole_tab = _hugepages.copy(tab)
    tok._whole_ext = _hugepages.copy(_k.key_table_ext(tab, tok._tok_bytes, tok._tok_off))
    tok._max_whole_len = max_len
    tok._core = core_of(tok)


def core_of(tok) -> EncoderCore:
    """The encoder core of ``tok``'s tables (made anew whenever one of them is replaced)."""
    return EncoderCore(
        tok._byte_id, tok._bp, tok._tok_bytes, tok._tok_off, tok._tok_tab, tok._whole_tab, tok._whole_ext,
        int(tok._max_whole_len), tok._pair_tab, tok._pair_filter, tok._res_of, int(tok._units_code), int(tok._unk_id), int(tok._eow_id),
        tok._seg_filter, tok._char_flags, tok._char_memo, int(tok._seg_min),
    )  # fmt: skip


def table_state(tok) -> dict[str, np.ndarray]:
    """The arrays that are slow to build (see ``prebuilt``), for an on-disk cache."""
    return {
        "n_bytes": np.array(len(tok._tok_bytes)),
        "tok_bytes": with_padding(tok._tok_bytes),
        "tok_off": tok._tok_off,
        "mergeable_ids": tok._mergeable_ids,
        "tok_tab": tok._tok_tab,
        "pair_tab": tok._pair_tab,
        "bp": tok._bp,
        "seg_filter": tok._seg_filter,
        "char_flags": tok._char_flags,
    }


def self_encoding(tok, cand: np.ndarray, cand_lens: np.ndarray) -> np.ndarray:
    """Mask of candidate tokens whose key (their bytes, minus end_of_word) encodes to them."""
    docs = np.stack([tok._tok_off[cand], tok._tok_off[cand] + cand_lens], axis=1)
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    data = tok._tok_bytes
    out, doc_end = run(tok, data, docs, np.full(len(docs), -1, np.int64), spans=docs, cache=False, strict=False)
    counts = np.diff(np.concatenate([[0], doc_end]))
    first = np.concatenate([[0], doc_end[:-1]])
    ok = counts == 1
    ok[ok] = out[first[ok]] == cand[ok]
    return ok


def check_id(tid, what: str) -> int:
    if isinstance(tid, (bool, np.bool_)) or not isinstance(tid, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {type(tid).__name__}")
    tid = int(tid)
    if not 0 <= tid <= _k.MAX_ID:
        raise ValueError(f"{what} = {tid} is out of range (ids are 0 .. {_k.MAX_ID})")
    return tid


def check_specials(special_tokens) -> dict[str, int]:
    if special_tokens is None:
        return {}
    if not isinstance(special_tokens, Mapping):
        raise TypeError(f"special_tokens must be a mapping of str to int, not {type(special_tokens).__name__}")
    problem = too_many_added(len(special_tokens))
    if problem is not None:
        raise ValueError(problem)
    out = {}
    for s, i in special_tokens.items():
        if not isinstance(s, str) or not s:
            raise TypeError(f"special token names must be non-empty str, got {s!r}")
        out[s] = check_id(i, f"special_tokens[{s!r}]")
    return out



def find_bytes(tok_bytes: np.ndarray, tok_off: np.ndarray, ids: np.ndarray, raw: bytes) -> int | None:
    lens = tok_off[ids + 1] - tok_off[ids]
    cand = ids[lens == len(raw)]
    if not len(cand):
        return None
    rows = tok_bytes[tok_off[cand][:, None] + np.arange(len(raw))]
    hit = np.flatnonzero((rows == np.frombuffer(raw, dtype=np.uint8)).all(axis=1))
    return int(cand[hit[0]]) if len(hit) else None


def merge_pairs(merges, vocab: dict[bytes, int]):
    """(left ids, right ids, result ids, merges as bytes pairs) of a merge list (merge mode)."""
    if isinstance(merges, (str, bytes)) or not isinstance(merges, Iterable):
        raise TypeError("merges must be a list of (bytes, bytes) pairs")
    merges = [tuple(m) for m in merges]
    if len(merges) > _k.MAX_PRIORITY + 1:
        raise ValueError(f"at most {_k.MAX_PRIORITY + 1} merges are supported, got {len(merges)}")
    lefts = np.empty(len(merges), dtype=np.int64)
    rights = np.empty(len(merges), dtype=np.int64)
    results = np.empty(len(merges), dtype=np.int32)
    for i, pair in enumerate(merges):
        if len(pair) != 2 or not all(isinstance(p, (bytes, bytearray)) for p in pair):
            raise TypeError(f"merges[{i}] must be a pair of bytes, got {pair!r}")
        a, b = bytes(pair[0]), bytes(pair[1])
        ia, ib, ir = vocab.get(a), vocab.get(b), vocab.get(a + b)
        for part, tid in ((a, ia), (b, ib), (a + b, ir)):
            if tid is None:
                raise ValueError(f"merges[{i}] = ({a!r}, {b!r}): {part!r} is not in the vocab")
        assert ia is not None and ib is not None and ir is not None
        lefts[i], rights[i], results[i] = ia, ib, ir
    return lefts, rights, results, [(bytes(a), bytes(b)) for a, b in merges]

