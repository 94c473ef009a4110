"""Continued training: the words of a new corpus as a base tokenizer's tokens.

``train_bpe(..., base=tok)`` keeps every token and merge of ``tok`` (ids unchanged) and learns
more merges on top. The merge engine needs the words as symbol ids plus, for each existing id,
its length and its spelling in base symbols (bytes): both come from the base here.

How a word becomes base tokens
    - A rank-mode base (tiktoken: a bundled encoding or a ``.tiktoken`` file) encodes it with
      its own rule (lowest rank first), through the encoder. The result is a merge-mode
      tokenizer whose merges are the base's derived merges (which give exactly the rank rule)
      followed by the new ones, with ``ignore_merges`` (a piece that is a token is one token,
      as in tiktoken).
    - A merge-mode base applies its merges in order, as training made them. When every token
      is made by one merge from tokens made earlier (any trained list without a re-used id),
      that is what the encoder gives, and the encoder does it; otherwise ``_replay_merges``
      applies the list merge by merge, so continuing a tokenizer of N merges to M gives the
      merges of training M from scratch.
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..io.byte_level import CHAR_TO_BYTE
from . import _kernels as _bpe_kernels

if TYPE_CHECKING:
    from ..encode.tokenizer import Tokenizer

__all__ = ["resolve_base", "BaseStart", "start_from_base"]


def resolve_base(base: Any) -> Tokenizer:
    """The base of continued training as a :class:`numtok.Tokenizer`.

    ``base`` is a numtok Tokenizer, a bundled encoding's name (``"o200k_base"``), a path to a
    ``tokenizer.json`` (or a directory holding one) or to a ``.tiktoken`` file, a Hugging Face
    ``tokenizers.Tokenizer`` or a ``tiktoken.Encoding``.
    """
    from ..encode.registry import list_encodings, load
    from ..encode.tokenizer import Tokenizer

    if isinstance(base, Tokenizer):
        tok = base
    elif isinstance(base, (str, os.PathLike)):
        path = os.fspath(base)
        if isinstance(base, str) and base in list_encodings() and not os.path.exists(path):
            tok = load(base)
        elif not os.path.exists(path):
            raise FileNotFoundError(f"base {path!r} is neither a file, a directory, nor a bundled encoding "
                                    f"({', '.join(list_encodings())})")
        elif path.endswith((".tiktoken", ".tiktoken.gz")):
            from ..io.tiktoken_file import sidecar_arguments

            tok = Tokenizer.from_tiktoken(path, **sidecar_arguments(path))
        else:
            tok = Tokenizer.from_file(path)
    elif type(base).__module__.split(".")[0] == "tokenizers" and hasattr(base, "to_str"):
        from ..io.hf_json import hf_dict_arguments

        tok = Tokenizer(**hf_dict_arguments(json.loads(base.to_str()), source="the tokenizers.Tokenizer base"))
    elif type(base).__module__.split(".")[0] == "tiktoken" and hasattr(base, "_mergeable_ranks"):
        tok = Tokenizer(base._mergeable_ranks, pattern=base._pat_str, special_tokens=base._special_tokens, name=base.name)
    else:
        kind = f"{type(base).__module__}.{type(base).__qualname__}"
        raise TypeError(f"base must be a numtok.Tokenizer, a bundled encoding name, a path to a tokenizer.json or "
                        f".tiktoken file, a tokenizers.Tokenizer or a tiktoken.Encoding, not a {kind}")
    problems = []
    if tok.units != "bytes":
        problems.append(f"units={tok.units!r}")
    if tok.end_of_word is not None:
        problems.append(f"end_of_word={tok.end_of_word!r}")
    if problems:
        raise ValueError(f"continued training needs a byte-level base tokenizer; this one has {', '.join(problems)}")
    return tok


def derive_merges_early(base) -> threading.Thread | None:
    """Start deriving a rank-mode base's merges (``base._merge_ids()``, a fraction of a second
    for o200k_base, cached on it) on a thread, to overlap reading the corpus; the result
    tokenizer needs them. Join the thread before calling ``_merge_ids`` to not do it twice."""
    if base._merge_id_arrays is not None:
        return None
    thread = threading.Thread(target=_derive_quietly, args=(base,), name="numtok-derive-merges", daemon=True)
    thread.start()
    return thread


def _derive_quietly(base) -> None:
    try:
        base._merge_ids()
    except Exception:  # noqa: BLE001 - the caller derives them again and sees the error
        pass


@dataclass
class BaseStart:
    """What the merge engine starts from: the words as base ids and every existing id."""

    sym: np.ndarray  # int32, the words' base ids, word after word
    w_start: np.ndarray  # int64, where each word starts in sym
    w_len: np.ndarray  # int32, its number of ids
    tok_len: np.ndarray  # int64 per existing id: bytes (0 for special tokens and unused ids)
    tok_seq: np.ndarray  # int32: each id's bytes as the base's byte-token ids, id after id
    tok_seq_len: np.ndarray  # int64 per existing id
    token_bytes: TokenBytes  # bytes per existing id


def start_from_base(counter, base, new_specials: list[str]) -> BaseStart:
    """The counter's words (in counter order) as ``base``'s tokens, and the existing ids:
    base's, then ``new_specials`` (ids from ``base.n_vocab``)."""
    n_base = base.n_vocab + len(new_specials)
    token_bytes = TokenBytes(base, [s.encode("utf-8") for s in new_specials])
    store = np.ascontiguousarray(counter.store)
    starts = np.asarray(counter.starts, dtype=np.int64)
    lengths = np.asarray(counter.lengths, dtype=np.int64)
    present = np.flatnonzero(np.bincount(store, minlength=256)).tolist()
    off = base._tok_off
    mids = base._mergeable_ids
    single = mids[off[mids + 1] - off[mids] == 1]
    byte_id = np.full(256, -1, dtype=np.int64)
    byte_id[base._tok_bytes[off[single]]] = single
    missing = [b for b in present if byte_id[b] < 0]
    if missing:
        raise ValueError(f"the base tokenizer has no token for the byte 0x{missing[0]:02x} "
                         f"({len(missing)} bytes of the corpus in all), so it cannot spell every word")

    sym, w_start, w_len = _words_as_base_ids(base, store, starts, lengths, byte_id)

    # Lengths and spellings of the existing ids, id after id. A special token is spelled (so that
    # a merge that rebuilds it re-uses its id, as HF does) when each of its characters is a
    # ByteLevel character, exactly as training from scratch spells them (trainer._as_symbols).
    lens = np.zeros(n_base, dtype=np.int64)
    lens[: base.n_vocab] = np.diff(off)
    seq_len = lens.copy()
    flat = byte_id[base._tok_bytes[: off[-1]]].astype(np.int32)
    pieces, prev = [], 0
    for i in np.flatnonzero(base._is_special[: base.n_vocab]).tolist() + list(range(base.n_vocab, n_base)):
        text = token_bytes[i].decode("utf-8")
        spelled = all(c in CHAR_TO_BYTE and byte_id[CHAR_TO_BYTE[c]] >= 0 for c in text)
        spelling = [int(byte_id[CHAR_TO_BYTE[c]]) for c in text] if spelled else []
        stop = min(i, base.n_vocab)
        pieces.append(flat[off[prev] : off[stop]])
        pieces.append(np.array(spelling, dtype=np.int32))
        prev = max(prev, min(i + 1, base.n_vocab))
        lens[i] = 0
        seq_len[i] = len(spelling)
    pieces.append(flat[off[prev] : off[base.n_vocab]])
    tok_seq = np.concatenate(pieces).astype(np.int32)
    return BaseStart(sym, w_start, w_len, lens, tok_seq, seq_len, token_bytes)


class TokenBytes:
    """Token bytes by id: the base's (read from its arrays when asked for: a bundled encoding
    has 200,000 tokens), then the ones appended (new special tokens, learned tokens)."""

    def __init__(self, base, appended: list[bytes]):
        self._raw = base._tok_bytes[: base._tok_off[-1]].tobytes()
        self._off = base._tok_off
        self._n = base.n_vocab
        self._appended = appended

    def __len__(self) -> int:
        return self._n + len(self._appended)

    def __getitem__(self, i: int) -> bytes:
        if i < self._n:
            return self._raw[int(self._off[i]) : int(self._off[i + 1])]
        return self._appended[i - self._n]

    def append(self, token: bytes) -> None:
        self._appended.append(token)


def _words_as_base_ids(base, store, starts, lengths, byte_id):
    """(sym int32, w_start int64, w_len int32) of every word as base tokens."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int32)
    if not base._rank_mode and not base.ignore_merges:
        lefts, rights, results = base._merge_ids()
        if not _made_in_order(lefts, rights, results, base.n_vocab):
            # Apply the list merge by merge, as training made it (the encoder's rule differs
            # when a token is made by two merges).
            sym = byte_id[store].astype(np.int32)
            w_start = starts.copy()
            w_len = lengths.astype(np.int64)
            _bpe_kernels._replay_merges(sym, w_start, w_len, lefts, rights, results)
            return sym, w_start, w_len.astype(np.int32)
    from ..encode.buffers import padded
    from ..encode.engine import run

    order = None
    if n > 1 and bool(np.any(np.diff(starts) < 0)):  # the encoder walks the words in buffer order
        order = np.argsort(starts, kind="stable")
        starts, lengths = starts[order], lengths[order]
    docs = np.ascontiguousarray(np.stack([starts, starts + lengths], axis=1), dtype=np.int64)
    data = padded(store)
    # Two halves on two threads (the kernel releases the GIL): each word is one piece.
    cut = n // 2 if n >= 4096 else n
    parts = [(0, cut), (cut, n)] if cut < n else [(0, n)]

    def encode(part):
        a, b = part
        return run(base, data, docs[a:b], np.full(b - a, -1, dtype=np.int64), spans=docs[a:b], cache=False)

    if len(parts) == 1:
        ids, doc_end = encode(parts[0])
    else:
        with ThreadPoolExecutor(2) as pool:
            (ids0, end0), (ids1, end1) = pool.map(encode, parts)
        ids = np.concatenate([ids0, ids1])
        doc_end = np.concatenate([end0, end1 + len(ids0)])
    w_len = np.diff(doc_end, prepend=0)
    w_start = doc_end - w_len
    if order is not None:
        back = np.empty_like(order)
        back[order] = np.arange(n)
        w_start, w_len = w_start[back], w_len[back]
    return np.ascontiguousarray(ids, dtype=np.int32), w_start.astype(np.int64), w_len.astype(np.int32)


def _made_in_order(lefts: np.ndarray, rights: np.ndarray, results: np.ndarray, n_ids: int) -> bool:
    """Whether each merge makes a token no other merge makes, from tokens made by earlier
    merges (or by none): then merging by priority equals applying the merges in order."""
    if len(results) == 0:
        return True
    if len(np.unique(results)) != len(results):
        return False
    creator = np.full(n_ids, -1, dtype=np.int64)
    creator[results] = np.arange(len(results))
    step = np.arange(len(results))
    return bool(np.all(creator[lefts] < step) and np.all(creator[rights] < step))
