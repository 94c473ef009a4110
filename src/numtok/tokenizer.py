"""The Tokenizer: byte-level BPE encoding identical to tiktoken (rank mode) or Hugging Face
(merge mode), over Numba kernels (``_encode_kernels``).

The Python layer holds all policy (special-token safety checks, threading, pickling, error
messages); the kernels do pre-tokenized BPE and decoding over NumPy arrays.

>>> import numtok
>>> enc = numtok.load("cl100k_base")
>>> enc.encode("hello world").tolist()
[15339, 1917]
>>> enc.decode([15339, 1917])
'hello world'
"""

from __future__ import annotations

import functools
import gzip
import os
import sys
import threading
import zlib
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import AbstractSet, Literal

import numpy as np
import regex

from . import _encode_kernels as _k
from . import _hugepages, _pystr, _scanners
from ._text import contains_any, padded_utf8, utf8_bytes
from ._threads import usable_cores
from ._unicode import class_table
from .patterns import resolve_pattern
from .pretokenizers import split_bytes

__all__ = ["Tokenizer", "BatchEncoding", "read_tiktoken_ranks"]

SpecialSet = AbstractSet[str] | Literal["all"]

# Pieces of at least this many symbols are merged with the heap (O(n log n)); shorter ones
# with the O(n*m) scan, which is faster when n is small (tiktoken switches at 100 bytes).
_HEAP_MIN = 64
# encode_batch cuts the documents into tasks of about this many bytes (more tasks than
# threads, so that uneven documents still balance).
_TASK_BYTES = 1 << 20
# Documents are pre-tokenized and encoded in groups of about this many bytes.
_CHUNK_BYTES = 1 << 18
# encode_batch on several threads converts and encodes texts in blocks of this many characters.
_BLOCK_CHARS = 1 << 20


class BatchEncoding:
    """The ids of a batch of texts: one flat int32 array plus int64 offsets.

    ``ids[offsets[i]:offsets[i+1]]`` are the ids of text ``i``.

    >>> import numtok
    >>> enc = numtok.load("cl100k_base")
    >>> batch = enc.encode_batch(["hello world", "", "hi"])
    >>> len(batch), batch.ids.tolist(), batch.offsets.tolist()
    (3, [15339, 1917, 6151], [0, 2, 2, 3])
    >>> batch[2].tolist()
    [6151]
    >>> batch.to_list()
    [[15339, 1917], [], [6151]]
    >>> batch.pad(0).tolist()
    [[15339, 1917], [0, 0], [6151, 0]]
    """

    __slots__ = ("ids", "offsets")

    def __init__(self, ids: np.ndarray, offsets: np.ndarray):
        self.ids = np.asarray(ids, dtype=np.int32)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        if self.offsets.ndim != 1 or len(self.offsets) < 1 or self.offsets[0] != 0 or self.offsets[-1] != len(self.ids):
            raise ValueError("offsets must start at 0 and end at len(ids)")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        """The ids of text ``i`` (a view into ``ids``)."""
        n = len(self)
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"text index out of range for a batch of {n}")
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"BatchEncoding(texts={len(self)}, tokens={len(self.ids)})"

    @property
    def lengths(self) -> np.ndarray:
        """Number of ids of each text (int64)."""
        return np.diff(self.offsets)

    def to_list(self) -> list[list[int]]:
        """The ids as a list of lists of Python ints."""
        flat = self.ids.tolist()
        bounds = self.offsets.tolist()
        return [flat[bounds[i] : bounds[i + 1]] for i in range(len(self))]

    def pad(self, pad_id: int, length: int | None = None, *, truncate: bool = False) -> np.ndarray:
        """A 2-D int32 array (texts x length), each row right-padded with ``pad_id``.

        ``length`` defaults to the longest text. A text longer than ``length`` raises
        ValueError unless ``truncate=True`` (then it is cut to ``length``).

        >>> BatchEncoding([1, 2, 3], [0, 2, 3]).pad(-1, length=3).tolist()
        [[1, 2, -1], [3, -1, -1]]
        """
        lengths = self.lengths
        longest = int(lengths.max()) if len(lengths) else 0
        if length is None:
            length = longest
        length = int(length)
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        if longest > length and not truncate:
            row = int(np.argmax(lengths > length))
            raise ValueError(f"text {row} has {int(lengths[row])} ids, more than length={length} (pass truncate=True to cut)")
        out = np.full((len(self), length), pad_id, dtype=np.int32)
        kept = np.minimum(lengths, length)
        rows = np.repeat(np.arange(len(self)), kept)
        starts = np.repeat(self.offsets[:-1], kept)
        cols = np.arange(len(rows)) - np.repeat(np.cumsum(kept) - kept, kept)
        out[rows, cols] = self.ids[starts + cols]
        return out


class Tokenizer:
    """A byte-level BPE tokenizer (tiktoken-style API; ids are int32 NumPy arrays).

    Args:
        vocab: token bytes -> id. May include the special tokens (as their UTF-8 bytes).
        merges: ``None`` for *rank mode* (tiktoken): the pair ``(a, b)`` merges with priority
            ``vocab[a + b]`` and a piece that is itself a token is emitted whole. A list of
            ``(a, b)`` byte pairs for *merge mode* (Hugging Face BPE): priority is the index in
            the list and only listed pairs merge.
        pattern: pre-tokenizer: ``"gpt2"``, ``"r50k"``, ``"cl100k"``, ``"o200k"`` or a regex.
        special_tokens: special token string -> id; never produced by merging.
        name: a label, shown in ``repr``.
        units: initial symbols of a piece: ``"bytes"`` (each byte's one-byte token) or
            ``"chars"`` (each UTF-8 character's token).
        unk_token: token used for a symbol that has no token (default: raise ValueError).
        end_of_word: a token appended to every piece before merging (e.g. ``"</w>"``);
            decoding drops it.
        ignore_merges: merge mode only: emit a piece that is a token whole.

    >>> tok = Tokenizer({b"a": 0, b"b": 1, b"ab": 2, b"abab": 3}, pattern=r"\\w+")
    >>> tok.encode("abab ab aba").tolist()
    [3, 2, 2, 0]
    >>> tok = Tokenizer({b"a": 0, b"b": 1, b"ab": 2}, merges=[(b"a", b"b")], pattern=r"\\w+")
    >>> tok.encode("abba").tolist()
    [2, 1, 0]
    """

    def __init__(
        self,
        vocab: Mapping[bytes, int],
        *,
        merges: Sequence[tuple[bytes, bytes]] | None = None,
        pattern: str = "gpt2",
        special_tokens: Mapping[str, int] | None = None,
        name: str | None = None,
        units: str = "bytes",
        unk_token: str | None = None,
        end_of_word: str | None = None,
        ignore_merges: bool = False,
    ):
        if not isinstance(vocab, Mapping):
            raise TypeError(f"vocab must be a mapping of bytes to int, not {type(vocab).__name__}")
        special_tokens = _check_specials(special_tokens)
        special_bytes = {s.encode("utf-8"): i for s, i in special_tokens.items()}
        keys: list[bytes] = []
        values: list[int] = []
        for token, tid in vocab.items():
            if not isinstance(token, (bytes, bytearray)):
                raise TypeError(f"vocab keys must be bytes, got {type(token).__name__} {token!r}")
            tid = _check_id(tid, f"vocab[{bytes(token)!r}]")
            if not token:
                raise ValueError("vocab contains an empty token")
            sid = special_bytes.get(bytes(token))
            if sid is not None:
                if sid != tid:
                    raise ValueError(f"special token {bytes(token).decode('utf-8')!r} has id {sid} but vocab gives it id {tid}")
                continue  # special tokens are kept apart from the mergeable vocabulary
            keys.append(bytes(token))
            values.append(tid)
        lens = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        starts = np.zeros(len(keys), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        flat = np.frombuffer(b"".join(keys), dtype=np.uint8)
        ids = np.array(values, dtype=np.int64)
        self._setup(
            flat, starts, lens, ids,
            merges=merges, pattern=pattern, special_tokens=special_tokens, name=name,
            units=units, unk_token=unk_token, end_of_word=end_of_word, ignore_merges=ignore_merges,
            mergeable_dict=dict(zip(keys, values)) if merges is not None else None,
        )  # fmt: skip

    # ------------------------------------------------------------------------------------------
    # construction

    @classmethod
    def from_tiktoken(
        cls,
        path: str | os.PathLike,
        pattern: str = "cl100k",
        special_tokens: Mapping[str, int] | None = None,
        name: str | None = None,
    ) -> "Tokenizer":
        """A rank-mode tokenizer from a ``.tiktoken`` rank file (``.gz`` is read transparently).

        >>> import numtok, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
        >>> _ = open(path, "w").write("YQ== 0\\nYg== 1\\nYWI= 2\\n")
        >>> tok = numtok.Tokenizer.from_tiktoken(path, pattern=r"\\w+", special_tokens={"<eot>": 3})
        >>> tok.encode("abab<eot>", allowed_special="all").tolist()
        [2, 2, 3]
        """
        content = _read_rank_file(path)
        flat, off, ranks = _parse_ranks(content, path)
        if name is None:
            name = os.path.basename(os.fspath(path)).split(".")[0]
        return cls._from_arrays(flat, off[:-1], np.diff(off), ranks, pattern=pattern, special_tokens=special_tokens, name=name)

    @classmethod
    def _from_arrays(cls, flat, starts, lens, ids, **options) -> "Tokenizer":
        """A tokenizer from token bytes given as (flat buffer, starts, lengths, ids)."""
        self = cls.__new__(cls)
        options["special_tokens"] = _check_specials(options.get("special_tokens"))
        self._setup(flat, starts, lens, ids, **options)
        return self

    def _setup(
        self, flat, starts, lens, ids, *, merges=None, pattern="gpt2", special_tokens=None, name=None,
        units="bytes", unk_token=None, end_of_word=None, ignore_merges=False, mergeable_dict=None, prebuilt=None,
    ):  # fmt: skip
        """Build every table. ``prebuilt``: arrays from :meth:`_table_state` (rank mode)."""
        if units not in ("bytes", "chars"):
            raise ValueError(f"units must be 'bytes' or 'chars', not {units!r}")
        pattern_name, pattern_string = resolve_pattern(pattern)
        self.name = name
        self.pattern = pattern_name if pattern_name is not None else pattern_string
        self._split_pattern = self.pattern
        # In these patterns a space after an ASCII letter always starts a piece, so a document
        # may be cut there (see _k.cut_documents); any other pattern is never cut.
        self._cuttable = pattern_name in ("gpt2", "r50k", "cl100k", "o200k")
        self._split = _splitter(self._split_pattern, pattern_name)
        # Short texts of a named pattern are split and encoded in one kernel call.
        self._scanner_id = _scanners.SCANNER_IDS.get(pattern_name, -1) if pattern_name else -1
        self.units = units
        self.unk_token = unk_token
        self.end_of_word = end_of_word
        self.ignore_merges = bool(ignore_merges)
        self._special_tokens = dict(special_tokens)
        self._registry_name: str | None = None
        self._heap_min = _HEAP_MIN  # tests lower it to run every piece through the heap path
        self._chunk_bytes = _CHUNK_BYTES  # and this, to cut documents into many chunks
        self._vocab_cache: dict[bytes, int] | None = None
        self._merges_cache: list[tuple[bytes, bytes]] | None = None

        special_by_id = {i: s.encode("utf-8") for s, i in self._special_tokens.items()}
        sp_ids = np.array(list(special_by_id), dtype=np.int64)
        if prebuilt is not None:
            # Arrays saved by _table_state (numtok.registry's on-disk cache).
            n_bytes = int(prebuilt["n_bytes"])
            self._tok_bytes = prebuilt["tok_bytes"][:n_bytes]  # saved with its padding
            self._tok_off = tok_off = prebuilt["tok_off"]
            self._mergeable_ids = ids = prebuilt["mergeable_ids"]
            self._max_id = len(tok_off) - 2
            self._is_special = np.zeros(self._max_id + 1, dtype=bool)
            self._is_special[sp_ids] = True
            by_id_lens = np.diff(tok_off)
        else:
            # Id-indexed token bytes: mergeable tokens, then special tokens (several special
            # strings may share an id, as in o200k_harmony; the last one decodes, like tiktoken).
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
            self._max_id = int(sorted_ids[-1]) if len(sorted_ids) else -1
            by_id_lens = np.zeros(self._max_id + 1, dtype=np.int64)
            by_id_lens[sorted_ids] = all_lens[order]
            tok_off = np.zeros(self._max_id + 2, dtype=np.int64)
            np.cumsum(by_id_lens, out=tok_off[1:])
            o_lens = all_lens[order]
            o_starts = all_starts[order]
            gather = np.repeat(o_starts - (np.cumsum(o_lens) - o_lens), o_lens) + np.arange(int(o_lens.sum()))
            self._tok_bytes = _padded(buffer[gather])
            self._tok_off = tok_off
            self._mergeable_ids = np.sort(ids).astype(np.int64)
            self._is_special = np.zeros(self._max_id + 1, dtype=bool)
            self._is_special[sp_ids] = True

        tok_lens = by_id_lens
        mids = self._mergeable_ids
        self._max_token_len = int(tok_lens[mids].max()) if len(ids) else 0

        # Initial symbols.
        single = mids[tok_lens[mids] == 1]
        self._unk_id = -1
        if unk_token is not None:
            unk = self._lookup_token(unk_token.encode("utf-8"))
            if unk is None:
                raise ValueError(f"unk_token {unk_token!r} is not in the vocab or the special tokens")
            self._unk_id = unk
        byte_id = np.full(256, self._unk_id, dtype=np.int64)
        byte_id[self._tok_bytes[tok_off[single]]] = single
        self._byte_id = byte_id
        self._eow_id = -1
        eow_bytes = b""
        if end_of_word is not None:
            eow_bytes = end_of_word.encode("utf-8")
            eow = self._lookup_token(eow_bytes)
            if eow is None:
                raise ValueError(f"end_of_word {end_of_word!r} is not in the vocab or the special tokens")
            self._eow_id = eow
        self._units_code = 0 if units == "bytes" else 1

        # Token table, pair table (rank mode: from every split of every token into two
        # tokens; merge mode: from the merge list) and byte-pair table, in one kernel.
        self._rank_mode = merges is None
        if merges is None:
            lefts = rights = priorities = np.zeros(0, dtype=np.int64)
            self._res_of = np.zeros(0, dtype=np.int32)  # a merge's priority is the id it makes
            self._merges_list = None
        else:
            lefts, rights, self._res_of, self._merges_list = _merge_pairs(merges, mergeable_dict)
            priorities = np.arange(len(lefts), dtype=np.int64)
        if prebuilt is not None and self._rank_mode and unk_token is None:
            self._tok_tab, dup, self._pair_tab, self._bp = prebuilt["tok_tab"], -1, prebuilt["pair_tab"], prebuilt["bp"]
        else:
            self._tok_tab, dup, self._pair_tab, self._bp = _k.build_tables(
                self._tok_bytes, tok_off, mids, tok_lens[mids], byte_id, lefts, rights, priorities, self._rank_mode
            )
        # Read at random for every piece: on 2 MiB pages (see _hugepages).
        self._tok_tab, self._pair_tab = _hugepages.copy(self._tok_tab), _hugepages.copy(self._pair_tab)
        if dup >= 0:
            tid = int(mids[dup])
            raise ValueError(f"token {self._token_bytes(tid)!r} appears twice in the vocab (ids include {tid})")
        self._caches: list[np.ndarray] = []
        self._bytes_seen = 0  # sizes the piece caches (see _take_cache)
        self._cache_len = 0  # the piece-cache length wanted so far, until _bytes_seen reaches
        self._cache_len_until = 0  # this: then it is worked out again

        # Whole-piece table: a piece whose bytes are a key encodes to that single token.
        self._set_whole_table(self._tok_tab, self._max_token_len)
        if end_of_word is not None:
            cand = self._mergeable_ids[tok_lens[self._mergeable_ids] > len(eow_bytes)]
            ends = np.array([self._token_bytes(int(t)).endswith(eow_bytes) for t in cand], dtype=bool)
            cand = cand[ends] if len(cand) else cand
            cand_lens = tok_lens[cand] - len(eow_bytes)
            self._set_whole_table(_k.build_key_table(self._tok_bytes, tok_off, cand, cand_lens)[0], int(cand_lens.max()) if len(cand) else 0)
        else:
            cand = self._mergeable_ids
            cand_lens = tok_lens[cand]
        if not self._rank_mode and not self.ignore_merges:
            # Merge mode emits a piece whole only when merging would produce that token anyway.
            self._max_whole_len = 0
            keep = self._self_encoding(cand, cand_lens)
            cand, cand_lens = cand[keep], cand_lens[keep]
            self._set_whole_table(_k.build_key_table(self._tok_bytes, tok_off, cand, cand_lens)[0], int(cand_lens.max()) if len(cand) else 0)

        # Decode table: the end-of-word marker decodes to nothing.
        if end_of_word is None:
            self._dec_bytes, self._dec_off = self._tok_bytes, self._tok_off
        else:
            raw = self._tok_bytes.tobytes()
            parts = [raw[tok_off[i] : tok_off[i + 1]] for i in range(self._max_id + 1)]
            parts = [p[: -len(eow_bytes)] if p.endswith(eow_bytes) and not self._is_special[i] else p for i, p in enumerate(parts)]
            self._dec_bytes = np.frombuffer(b"".join(parts), dtype=np.uint8).copy()
            self._dec_off = np.zeros(self._max_id + 2, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)), out=self._dec_off[1:])
        self._special_lookup = _SpecialMatcher(self._special_tokens)

    def _set_whole_table(self, tab: np.ndarray, max_len: int) -> None:
        self._whole_tab = _hugepages.copy(tab)
        self._whole_ext = _hugepages.copy(_k.key_table_ext(tab, self._tok_bytes, self._tok_off))
        self._max_whole_len = max_len

    def _table_state(self) -> dict[str, np.ndarray]:
        """The arrays that are slow to build (see ``prebuilt``), for an on-disk cache."""
        return {
            "n_bytes": np.array(len(self._tok_bytes)),
            "tok_bytes": _with_padding(self._tok_bytes),
            "tok_off": self._tok_off,
            "mergeable_ids": self._mergeable_ids,
            "tok_tab": self._tok_tab,
            "pair_tab": self._pair_tab,
            "bp": self._bp,
        }

    def _self_encoding(self, cand: np.ndarray, cand_lens: np.ndarray) -> np.ndarray:
        """Mask of candidate tokens whose key (their bytes, minus end_of_word) encodes to them."""
        docs = np.stack([self._tok_off[cand], self._tok_off[cand] + cand_lens], axis=1)
        docs = np.ascontiguousarray(docs, dtype=np.int64)
        data = self._tok_bytes
        out, doc_end = self._run(data, docs, np.full(len(docs), -1, np.int64), spans=docs, cache=False, strict=False)
        counts = np.diff(np.concatenate([[0], doc_end]))
        first = np.concatenate([[0], doc_end[:-1]])
        ok = counts == 1
        ok[ok] = out[first[ok]] == cand[ok]
        return ok

    # ------------------------------------------------------------------------------------------
    # properties

    @property
    def special_tokens(self) -> dict[str, int]:
        """Special token string -> id."""
        return dict(self._special_tokens)

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    @property
    def n_vocab(self) -> int:
        """Largest id + 1 (as tiktoken's ``n_vocab``)."""
        return self._max_id + 1

    @property
    def max_token_value(self) -> int:
        return self._max_id

    @property
    def eot_token(self) -> int | None:
        """The id of ``<|endoftext|>``, or None if there is no such special token."""
        return self._special_tokens.get("<|endoftext|>")

    @property
    def vocab(self) -> dict[bytes, int]:
        """Every token (special tokens as their UTF-8 bytes) -> id. A new dict on each call."""
        if self._vocab_cache is None:
            raw = self._tok_bytes.tobytes()
            off = self._tok_off.tolist()
            vocab = {raw[off[i] : off[i + 1]]: i for i in self._mergeable_ids.tolist()}
            for s, i in self._special_tokens.items():
                vocab[s.encode("utf-8")] = i
            self._vocab_cache = vocab
        return dict(self._vocab_cache)

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges in priority order.

        In rank mode they are derived from the ranks: each multi-byte token splits into the
        two tokens that BPE restricted to lower ranks produces (a token for which that is not
        two tokens has no merge).

        >>> import numtok
        >>> numtok.load("gpt2").merges[:3]
        [(b' ', b't'), (b' ', b'a'), (b'h', b'e')]
        """
        if self._merges_list is not None:
            return list(self._merges_list)
        if self._merges_cache is None:
            order = self._mergeable_ids
            left, right = _k.derive_merges(self._tok_bytes, self._tok_off, self._byte_id, self._pair_tab, order)
            has = np.flatnonzero(left >= 0)
            self._merges_cache = [(self._token_bytes(int(left[i])), self._token_bytes(int(right[i]))) for i in has]
        return list(self._merges_cache)

    def __repr__(self) -> str:
        mode = "ranks" if self._rank_mode else "merges"
        return f"<Tokenizer {self.name!r} n_vocab={self.n_vocab} pattern={_short(self.pattern)} mode={mode}>"

    # ------------------------------------------------------------------------------------------
    # encoding

    def encode(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> np.ndarray:
        """Encode a string into an int32 array of token ids.

        Special tokens follow tiktoken: text matching a *disallowed* special token raises
        ValueError (by default all special tokens are disallowed); *allowed* ones encode to
        their id; pass ``disallowed_special=()`` to encode them as ordinary text.

        >>> import numtok
        >>> enc = numtok.load("cl100k_base")
        >>> enc.encode("hello world").tolist()
        [15339, 1917]
        >>> enc.encode("<|endoftext|>", allowed_special={"<|endoftext|>"}).tolist()
        [100257]
        >>> enc.encode("<|endoftext|>", allowed_special="all").tolist()
        [100257]
        >>> enc.encode("<|endoftext|>")
        Traceback (most recent call last):
          ...
        ValueError: the text contains the disallowed special token '<|endoftext|>'; pass ...
        >>> enc.encode("<|endoftext|>", disallowed_special=()).tolist()
        [27, 91, 8862, 728, 428, 91, 29]
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        allowed, disallowed = self._special_sets(allowed_special, disallowed_special)
        if not allowed and disallowed and self._cuttable and len(text) > self._chunk_bytes:
            # A long text with disallowed tokens only (the default): looked for in each block's
            # UTF-8 while it is streamed, not in the str first (for a 4-byte-kind str that is
            # 4 bytes a character to read; ~8% of the time). On a possible hit, or a text that
            # cannot be streamed, the search below decides.
            needles = _block_needles(disallowed)
            if needles is not None:
                ids = self._encode_streamed(text, needles)
                if ids is not None:
                    return ids
        if disallowed:
            found = _special_finder(disallowed)(text)
            if found is not None:
                raise _disallowed_error(found)
        if not allowed:
            return self._encode_plain(text)
        data = _padded_utf8_of(text)
        docs, doc_special = self._segments(data, allowed, 0)
        ids, _ = self._encode_docs(data, docs, doc_special, 1)
        return ids

    def encode_ordinary(self, text: str) -> np.ndarray:
        """Encode a string, treating special tokens as ordinary text.

        >>> import numtok
        >>> numtok.load("cl100k_base").encode_ordinary("hello <|endoftext|>").tolist()
        [15339, 83739, 8862, 728, 428, 91, 29]
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        return self._encode_plain(text)

    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        num_threads: int | None = None,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
    ) -> BatchEncoding:
        """Encode many strings (in parallel threads) into one :class:`BatchEncoding`.

        Results equal ``[encode(t) for t in texts]``. ``num_threads`` defaults to the number of
        usable cores; the kernels release the GIL.

        >>> import numtok
        >>> batch = numtok.load("cl100k_base").encode_batch(["hello world", "hi"], num_threads=2)
        >>> batch.to_list()
        [[15339, 1917], [6151]]
        """
        if isinstance(texts, str):
            raise TypeError("encode_batch takes an iterable of str, not a str")
        texts = _pystr.as_items(texts)  # a tuple: kernels read its items while it is held
        threads = usable_cores() if num_threads is None else int(num_threads)
        if threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        allowed, disallowed = self._special_sets(allowed_special, disallowed_special)
        # Lengths and UTF-8 straight from the str objects, without the GIL, where _pystr can
        # (exact str items, CPython); otherwise len() and "".join per block, which fail on
        # anything that is not a str (then the offending text is found).
        chars = _pystr.lengths(texts)
        direct = chars is not None
        if chars is None:
            try:
                chars = np.fromiter(map(len, texts), np.int64, len(texts))
            except TypeError:
                raise _not_str_error(texts) from None
        args = (texts, chars, allowed, disallowed)
        encode_block = self._encode_items if direct else self._join_and_encode
        # Blocks of about a million characters: their UTF-8 stays cache-sized.
        blocks = _text_blocks(chars, _BLOCK_CHARS)
        if len(blocks) == 1:
            ids, ends = encode_block(*args, 0, len(texts), threads)
        else:
            if threads == 1:
                results = [encode_block(*args, a, b, 1) for a, b in blocks]
            else:
                with ThreadPoolExecutor(max_workers=threads) as pool:
                    results = list(pool.map(lambda ab: encode_block(*args, ab[0], ab[1], 1), blocks))
            sizes = np.array([len(r[0]) for r in results], dtype=np.int64)
            bases = np.cumsum(sizes) - sizes
            ids = np.concatenate([r[0] for r in results])
            ends = np.concatenate([r[1] + base for r, base in zip(results, bases.tolist())])
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        offsets[1:] = ends
        return BatchEncoding(ids, offsets)

    def _encode_items(self, texts, chars, allowed: frozenset, disallowed: frozenset, a: int, b: int, threads: int):
        """(ids, end offset of each text) of ``texts[a:b]``, their UTF-8 written straight from
        the str objects without the GIL (see ``_pystr``); what that cannot read (a surrogate,
        a str subclass, a non-str) takes :meth:`_join_and_encode`."""
        converted = _pystr.utf8_of_items(texts, a, b, _PAD)
        if converted is None:
            return self._join_and_encode(texts, chars, allowed, disallowed, a, b, threads)
        return self._encode_texts(*converted, allowed, disallowed, threads)

    def _join_and_encode(self, texts, chars, allowed: frozenset, disallowed: frozenset, a: int, b: int, threads: int):
        """:meth:`_encode_items` by way of the texts' join (needs the GIL): it names a text
        that is not a str, and lone surrogates are repaired text by text."""
        texts = list(texts[a:b])
        try:
            joined = "".join(texts)
        except TypeError:
            raise _not_str_error(texts, a) from None
        return self._encode_texts(*_utf8_of_texts(joined, texts, chars[a:b]), allowed, disallowed, threads)

    def _encode_texts(self, data: np.ndarray, lens: np.ndarray, allowed: frozenset, disallowed: frozenset, threads: int):
        """(ids, end offset of each text) of texts of ``lens`` bytes, one after another in
        ``data`` (padded): ValueError if one holds a ``disallowed`` special token, ``allowed``
        ones encoded as their ids. One scan of the UTF-8 (without the GIL) finds whether there
        is any; only then is each text looked at."""
        starts = np.cumsum(lens) - lens
        specials = allowed | disallowed
        if not specials or not self._special_lookup.may_contain(data, specials):
            docs = np.ascontiguousarray(np.stack([starts, starts + lens], axis=1))
            return self._encode_docs(data, docs, _NO_SPECIAL, threads)
        raw = data.tobytes()
        bounds = list(zip(starts.tolist(), (starts + lens).tolist()))
        if disallowed and self._special_lookup.may_contain(data, disallowed):
            finder = self._special_lookup.regex(disallowed)
            for start, stop in bounds:  # text by text: a token may straddle two texts
                m = finder.search(raw, start, stop)
                if m is not None:
                    raise _disallowed_error(m.group().decode("utf-8"))
        parts = [self._segments(raw[start:stop], allowed, start) for start, stop in bounds]
        n_docs = np.fromiter((len(p[0]) for p in parts), dtype=np.int64, count=len(parts))
        docs = np.ascontiguousarray(np.concatenate([p[0] for p in parts]))
        doc_special = np.concatenate([p[1] for p in parts])
        ids, doc_end = self._encode_docs(data, docs, doc_special, threads)
        return ids, doc_end[np.cumsum(n_docs) - 1]

    def encode_ordinary_batch(self, texts: Iterable[str], *, num_threads: int | None = None) -> BatchEncoding:
        """:meth:`encode_batch` with special tokens treated as ordinary text."""
        return self.encode_batch(texts, num_threads=num_threads, allowed_special=frozenset(), disallowed_special=())

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of one token given as bytes or str (special tokens included).

        >>> import numtok
        >>> numtok.load("cl100k_base").encode_single_token("hello")
        15339
        """
        raw = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        tid = self._lookup_token(raw)
        if tid is None:
            raise KeyError(text_or_bytes)
        return tid

    # ------------------------------------------------------------------------------------------
    # decoding

    def decode_bytes(self, ids: Iterable[int] | np.ndarray) -> bytes:
        """The bytes of a sequence of ids (special tokens included).

        >>> import numtok
        >>> numtok.load("cl100k_base").decode_bytes([15339, 1917])
        b'hello world'
        """
        arr = _as_ids(ids)
        out, bad = _k.decode_ids(arr, self._tok_off, self._dec_bytes, self._dec_off)
        if bad >= 0:
            raise ValueError(f"invalid token id {int(arr[bad])} (at index {bad}); valid ids are tokens in 0..{self._max_id}")
        return out.tobytes()

    def decode(self, ids: Iterable[int] | np.ndarray, errors: str = "replace") -> str:
        """Decode ids to a string; invalid UTF-8 becomes U+FFFD (``errors="replace"``), as in tiktoken.

        >>> import numtok
        >>> enc = numtok.load("cl100k_base")
        >>> enc.decode(enc.encode("héllo 👋"))
        'héllo 👋'
        >>> enc.decode(enc.encode("👋")[:1])
        '�'
        """
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id."""
        return self.decode_bytes([token])

    def decode_tokens_bytes(self, ids: Iterable[int] | np.ndarray) -> list[bytes]:
        """The bytes of each id.

        >>> import numtok
        >>> numtok.load("cl100k_base").decode_tokens_bytes([15339, 1917])
        [b'hello', b' world']
        """
        arr = _as_ids(ids)
        data = self.decode_bytes(arr)
        off = self._dec_off
        bounds = np.zeros(len(arr) + 1, dtype=np.int64)
        np.cumsum(off[arr + 1] - off[arr], out=bounds[1:])
        b = bounds.tolist()
        return [data[b[i] : b[i + 1]] for i in range(len(arr))]

    # ------------------------------------------------------------------------------------------
    # files (numtok.formats is imported only when used)

    def save(self, path: str | os.PathLike) -> None:
        """Write a Hugging Face ``tokenizer.json``."""
        from . import formats

        return formats.save_hf_json(self, path)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Tokenizer":
        """Read a Hugging Face ``tokenizer.json``."""
        from . import formats

        return formats.load_hf_json(path)

    def save_tiktoken(self, path: str | os.PathLike) -> None:
        """Write a ``.tiktoken`` rank file."""
        from . import formats

        return formats.save_tiktoken(self, path)

    def save_gpt2(self, directory: str | os.PathLike) -> None:
        """Write GPT-2 style ``vocab.json`` and ``merges.txt`` into ``directory``."""
        from . import formats

        return formats.save_gpt2(self, directory)

    @classmethod
    def from_gpt2(cls, vocab_json: str | os.PathLike, merges_txt: str | os.PathLike, pattern: str = "gpt2") -> "Tokenizer":
        """Read GPT-2 style ``vocab.json`` and ``merges.txt``."""
        from . import formats

        return formats.load_gpt2(vocab_json, merges_txt, pattern)

    # ------------------------------------------------------------------------------------------
    # pickling: by registry name when loaded with numtok.load, else by value

    def __reduce__(self):
        if self._registry_name is not None:
            from .registry import load

            return (load, (self._registry_name,))
        state = {
            "tok_bytes": np.asarray(self._tok_bytes).copy(),
            "tok_off": self._tok_off,
            "mergeable_ids": self._mergeable_ids,
            "merges": self._merges_list,
            "pattern": self.pattern,
            "special_tokens": self._special_tokens,
            "name": self.name,
            "units": self.units,
            "unk_token": self.unk_token,
            "end_of_word": self.end_of_word,
            "ignore_merges": self.ignore_merges,
        }
        return (_unpickle, (state,))

    # ------------------------------------------------------------------------------------------
    # internals

    def _token_bytes(self, tid: int) -> bytes:
        return self._tok_bytes[self._tok_off[tid] : self._tok_off[tid + 1]].tobytes()

    def _lookup_token(self, raw: bytes) -> int | None:
        """Id of a token given as bytes (special tokens first), or None."""
        for s, i in self._special_tokens.items():
            if s.encode("utf-8") == raw:
                return i
        if not raw or len(raw) > self._max_token_len:
            return None
        if self._vocab_cache is not None:
            tid = self._vocab_cache.get(raw)
            return None if tid is None or self._is_special[tid] else tid
        return _find_bytes(self._tok_bytes, self._tok_off, self._mergeable_ids, raw)

    def _special_sets(self, allowed_special, disallowed_special) -> tuple[frozenset, frozenset]:
        """(the allowed special tokens this tokenizer has, the disallowed tokens to look for)
        of the ``allowed_special`` / ``disallowed_special`` arguments, checked."""
        if not self._special_tokens and not allowed_special and disallowed_special == "all":
            return _EMPTY, _EMPTY  # nothing to allow or check
        if allowed_special == "all":
            allowed = frozenset(self._special_tokens)
        elif isinstance(allowed_special, str):
            raise ValueError(f"allowed_special must be 'all' or a set of strings, not {allowed_special!r}")
        else:
            allowed = frozenset(allowed_special)
        if disallowed_special == "all":
            disallowed = frozenset(self._special_tokens) - allowed
        elif isinstance(disallowed_special, str):
            raise ValueError(f"disallowed_special must be 'all' or a set of strings, not {disallowed_special!r}")
        else:
            disallowed = frozenset(disallowed_special)
        return frozenset(t for t in allowed if t in self._special_tokens), disallowed

    def _segments(self, data, allowed: frozenset, base: int) -> tuple[np.ndarray, np.ndarray]:
        """Documents (ranges between allowed special tokens) of one text at ``base``."""
        if not allowed or not self._special_lookup.may_contain(data, allowed):
            docs = np.empty((1, 2), dtype=np.int64)
            docs[0, 0] = base
            docs[0, 1] = base + len(data)
            return docs, _NO_SPECIAL
        starts, stops, specials = [base], [], []
        for m in self._special_lookup.regex(allowed).finditer(data):
            stops.append(base + m.start())
            specials.append(self._special_tokens[m.group().decode("utf-8")])
            starts.append(base + m.end())
        stops.append(base + len(data))
        specials.append(-1)
        docs = np.stack([np.array(starts, dtype=np.int64), np.array(stops, dtype=np.int64)], axis=1)
        return np.ascontiguousarray(docs), np.array(specials, dtype=np.int64)

    def _encode_docs(self, data, docs, doc_special, threads: int):
        """Encode documents (ranges of ``data``) on ``threads`` threads; returns (ids, doc_end).

        For the named patterns, long documents are first cut where every pattern ends a piece,
        so that the pre-tokenizer's output stays small and cache-resident, and so that one huge
        text still spreads over threads.
        """
        n_docs = len(docs)
        if len(doc_special) != n_docs:
            doc_special = np.full(n_docs, -1, dtype=np.int64)
        if len(data) <= self._chunk_bytes:  # short input: one group on this thread, no cutting
            return self._run(data, docs, doc_special, total=len(data))
        last = None
        if self._cuttable and n_docs and int((docs[:, 1] - docs[:, 0]).max()) > 2 * self._chunk_bytes:
            docs, parent = _k.cut_documents(data, docs, self._chunk_bytes)
            last = np.flatnonzero(np.append(parent[1:] != parent[:-1], True))
            special = np.full(len(docs), -1, dtype=np.int64)
            special[last] = doc_special
            doc_special = special
        tasks = _cut_tasks(docs, threads, self._chunk_bytes)
        if threads == 1 or len(tasks) == 1:
            results = [self._run(data, docs[a:b], doc_special[a:b]) for a, b in tasks]
        else:
            with ThreadPoolExecutor(max_workers=min(threads, len(tasks))) as pool:
                results = list(pool.map(lambda ab: self._run(data, docs[ab[0] : ab[1]], doc_special[ab[0] : ab[1]]), tasks))
        if len(results) == 1:
            ids, doc_end = results[0]
        else:
            sizes = np.array([len(r[0]) for r in results], dtype=np.int64)
            bases = np.cumsum(sizes) - sizes
            ids = np.concatenate([r[0] for r in results])
            doc_end = np.concatenate([r[1] + b for r, b in zip(results, bases.tolist())])
        if last is not None:
            doc_end = doc_end[last]
        return ids, doc_end

    def _run(self, data, docs, doc_special, *, spans=None, total=None, cache: bool = True, strict: bool = True):
        """Pre-tokenize and encode consecutive documents on this thread; returns (ids, doc_end).

        ``data`` is a padded buffer from :func:`_padded`. Documents are pre-tokenized
        in groups of about ``_chunk_bytes`` (or ``spans`` is given: one group). The output
        buffer is an upper bound that is never touched beyond what is written, and is shrunk
        in place at the end.
        """
        n_docs = len(docs)
        if total is None:
            total = int((docs[:, 1] - docs[:, 0]).sum()) if n_docs else 0
        if spans is not None or total <= self._chunk_bytes:
            groups = [(0, n_docs)]
        else:
            groups = _cut_tasks(docs, 1, self._chunk_bytes, by_chunk=True)
        # Each byte gives at most one id (two with end_of_word), each document one special.
        cap = total * (2 if self._eow_id >= 0 else 1) + n_docs + 1
        out = np.empty(cap, dtype=np.int32)
        doc_end = np.empty(n_docs, dtype=np.int64)
        piece_cache = self._take_cache(total) if cache else _NO_CACHE
        try:
            k = self._run_groups(data, docs, doc_special, spans, groups, out, doc_end, piece_cache, strict)
        finally:
            if cache:
                self._give_cache(piece_cache)
        if k < len(out):
            out.resize(k, refcheck=False)
        return out, doc_end

    def _encode_plain(self, text: str) -> np.ndarray:
        """Ids of one text with no special tokens to find. A named pattern's text that fits one
        chunk is split and encoded in one kernel call, from this thread's scratch buffer if it
        is short (allocating a padded array cost ~1 us, a sixth of such a call)."""
        if self._scanner_id >= 0 and len(text) <= _SHORT_BYTES:
            raw = utf8_bytes(text)
            n = len(raw)
            return self._encode_whole(_in_scratch(raw) if n <= _SHORT_BYTES else _padded(raw), n)
        if self._cuttable and len(text) > self._chunk_bytes:
            ids = self._encode_streamed(text)
            if ids is not None:
                return ids
        data = _padded_utf8_of(text)
        if self._scanner_id >= 0 and len(data) <= self._chunk_bytes:
            return self._encode_whole(data, len(data))
        docs = np.array([[0, len(data)]], dtype=np.int64)
        ids, _ = self._encode_docs(data, docs, _NO_SPECIAL, 1)
        return ids

    def _encode_streamed(self, text: str, needles: tuple | None = None) -> np.ndarray | None:
        """Ids of a long text of a named pattern, written to UTF-8, split and encoded one block
        of ``_chunk_bytes`` characters at a time through one reused buffer; None if the text
        cannot be read in place (see ``_pystr``) or holds a surrogate (the caller's path
        repairs it), or if a block may hold one of ``needles`` (``_block_needles``: special
        tokens the caller must look for in the whole text).

        The whole text's UTF-8 is never written out (100 MB of fresh pages the OS must zero,
        then read twice from memory): each block is still in cache when the scanner and the
        encoder read it. A block is encoded up to its last cut (``cut_documents``' rule: every
        named pattern starts a piece there, whatever precedes it); the rest is carried into the
        next block. A surrogate found late wastes the blocks before it (rare: the caller then
        starts again on the repaired text).
        """
        shape = _pystr.str_shape(text)
        if shape is None:
            return None
        n, width = shape
        block = self._chunk_bytes
        buf = np.empty(2 * block * width + _PAD, dtype=np.uint8)
        out = np.empty(n * width * (2 if self._eow_id >= 0 else 1) + 1, dtype=np.int32)
        doc = np.zeros((1, 2), dtype=np.int64)
        doc_end = np.empty(1, dtype=np.int64)
        piece_cache = self._take_cache(n)
        k = carry = first = 0
        try:
            while first < n:
                last = min(n, first + block)
                if carry + (last - first) * width + _PAD > len(buf):  # no cut for a while
                    grown = np.empty(2 * len(buf) + (last - first) * width, dtype=np.uint8)
                    grown[:carry] = buf[:carry]
                    buf = grown
                stop = _pystr.slice_to_utf8(text, first, last, buf, carry)
                if stop < 0:
                    return None
                # The carried bytes are searched again: a token that runs past this block's end
                # is whole in the next one (it has no cut inside, see _block_needles).
                if needles is not None and contains_any(buf, stop, *needles):
                    return None
                cut = stop if last == n else _scanners.last_cut(buf, max(carry - 1, 0), stop)
                first = last
                if cut < 0:
                    carry = stop
                    continue
                buf[stop : stop + _PAD] = 0
                doc[0, 1] = cut
                k += self._run_groups(buf[:stop], doc, _NO_SPECIAL, None, [(0, 1)], out[k:], doc_end, piece_cache, True)
                carry = stop - cut
                buf[:carry] = buf[cut:stop]
        finally:
            self._give_cache(piece_cache)
        out.resize(k, refcheck=False)
        return out

    def _encode_whole(self, data: np.ndarray, n: int) -> np.ndarray:
        """Ids of the text ``data[:n]`` (padded; named pattern), split and encoded in one
        kernel call."""
        piece_cache = self._take_cache(n)
        try:
            status, ids, pos = _k.encode_text(
                self._scanner_id, data, n, class_table(),
                self._byte_id, self._bp, self._tok_bytes, self._tok_off, self._tok_tab, self._whole_tab,
                self._whole_ext, self._max_whole_len, self._pair_tab, self._res_of, self._units_code, self._unk_id, self._eow_id,
                piece_cache, self._heap_min,
            )  # fmt: skip
        finally:
            self._give_cache(piece_cache)
        if status == _k.ST_NO_SYMBOL:
            raise ValueError(self._no_symbol_message(data[:n], pos))
        if status != _k.ST_DONE:  # pragma: no cover - the kernel sizes its output for the worst case
            raise AssertionError("output buffer bound exceeded")
        return ids

    def _run_groups(self, data, docs, doc_special, spans, groups, out, doc_end, piece_cache, strict) -> int:
        k = 0
        whole = len(groups) == 1
        for g0, g1 in groups:
            gdocs, gend, gspecial = (docs, doc_end, doc_special) if whole else (docs[g0:g1], doc_end[g0:g1], doc_special[g0:g1])
            gspans = spans
            if gspans is None:
                gspans = self._split(data, gdocs)
                if gspans.dtype != np.int64 or not gspans.flags.c_contiguous or not gspans.flags.writeable:
                    gspans = np.require(gspans, dtype=np.int64, requirements=["C", "W"])
            n_spans = len(gspans)
            j = d = 0
            while True:
                status, k, j, d, pos = _k.encode_spans(
                    data, gspans, gdocs, gspecial, gend, j, d, out, k,
                    self._byte_id, self._bp, self._tok_bytes, self._tok_off, self._tok_tab, self._whole_tab,
                    self._whole_ext, self._max_whole_len, self._pair_tab, self._res_of, self._units_code, self._unk_id, self._eow_id,
                    piece_cache, self._heap_min,
                )  # fmt: skip
                if status == _k.ST_DONE:
                    break
                if status == _k.ST_NO_SYMBOL:
                    if strict:
                        raise ValueError(self._no_symbol_message(data, pos))
                    # Lenient (used by _self_encoding): drop the rest of document d and go on.
                    stop = gdocs[d, 1]
                    while j < n_spans and gspans[j, 0] < stop:
                        j += 1
                    gend[d] = k
                    d += 1
                    continue
                raise AssertionError("output buffer bound exceeded")  # pragma: no cover
        return k

    # Piece caches: kernels write to the cache they are given, so each running call takes one
    # from this tokenizer's free list (or makes one) and gives it back afterwards; caches
    # outlive calls and threads, and are never shared by two calls at once.

    def _take_cache(self, nbytes: int) -> np.ndarray:
        """A piece cache for a call about to encode ``nbytes``, sized for all this tokenizer
        has encoded so far: 1.25 MiB for short calls, growing to 40 MiB (``_CACHE_BITS``) once
        64 MB have been seen (a bigger cache answers more pieces, and merging a piece costs as
        much as ~30 cache hits; a small one is faster to fill on a first pass). A cache that
        grows keeps its entries.

        No lock: the free list's pop and append are atomic, and ``_bytes_seen`` only sizes
        caches (an update lost between two threads changes nothing that matters). A lock taken
        twice per call was ~0.7 us of a ~5.5 us short encode."""
        self._bytes_seen = seen = self._bytes_seen + nbytes
        try:
            cache = self._caches.pop()
        except IndexError:
            cache = None
        if cache is not None and seen < self._cache_len_until and len(cache) >= self._cache_len:
            return cache  # most calls: the size wanted has not changed since the last one
        bits = min(_CACHE_BITS, max(_MIN_CACHE_BITS, (seen >> 8).bit_length()))
        self._cache_len = _k.piece_cache_size(bits)
        self._cache_len_until = 1 << (bits + 8) if bits < _CACHE_BITS else 1 << 62
        if cache is None:
            return _k.new_piece_cache(bits)
        if len(cache) < self._cache_len:
            bigger = _k.new_piece_cache(bits)
            _k.grow_piece_cache(cache, bigger)
            return bigger
        return cache

    def _give_cache(self, cache: np.ndarray) -> None:
        # Keep one cache per core at most: many threads in flight at once each needed one,
        # but holding 40 MiB for each of them afterwards would only waste memory. (Appending
        # first and trimming after keeps the cap without a lock: every append is followed by
        # its own trim.)
        caches = self._caches
        caches.append(cache)
        while len(caches) > _cores():
            try:
                caches.pop()
            except IndexError:
                break

    def _clear_caches(self) -> None:
        """Forget all cached pieces (benchmarks use it to time a first pass)."""
        self._caches.clear()

    def _no_symbol_message(self, data: np.ndarray, pos: int) -> str:
        start = pos
        while start > 0 and (int(data[start]) & 0xC0) == 0x80:
            start -= 1
        stop = start + 1
        while stop < len(data) and (int(data[stop]) & 0xC0) == 0x80:
            stop += 1
        char = bytes(data[start:stop]).decode("utf-8", errors="replace")
        unit = "character" if self.units == "chars" else f"byte 0x{int(data[pos]):02x} of character"
        return f"no token for {unit} {char!r} (at byte {pos}) and no unk_token is set"


# ----------------------------------------------------------------------------------------------
# helpers

_NO_SPECIAL = np.full(1, -1, dtype=np.int64)
_NO_OFFSETS = np.zeros(0, dtype=np.int64)
_DIRECT_UTF8_CHARS = 1 << 14
# Texts of at most this many UTF-8 bytes are encoded from a per-thread scratch buffer.
_SHORT_BYTES = 4096
_SCRATCH = threading.local()
_EMPTY: frozenset = frozenset()
_NO_CACHE = _k.new_piece_cache(0)
# log2 of the two-way sets of a piece cache (64 bytes each, plus a long-piece region a quarter
# their size): 1.25 MiB at first, at most 40 MiB per running call (see Tokenizer._take_cache).
_CACHE_BITS = 19
_MIN_CACHE_BITS = 14

if sys.byteorder != "little":  # pragma: no cover
    raise ImportError("numtok's kernels assume a little-endian CPU")


_PAD = 16
_PAD_BYTES = bytes(_PAD)


def _utf8_of_texts(joined: str, texts: list[str], chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(padded UTF-8 of the texts concatenated, byte length of each text), as ``utf8_bytes``
    makes them (lone surrogates -> U+FFFD); ``joined`` is the texts concatenated, ``chars``
    their lengths.

    One conversion of the joined texts, which also yields the byte lengths, instead of one
    per text (hundreds of thousands of short texts spent more time there than in the
    kernels); it runs without the GIL, so batch workers do it in parallel.
    """
    converted = padded_utf8(joined, _PAD, np.cumsum(chars)) if len(joined) >= _DIRECT_UTF8_CHARS else None
    if converted is None:  # few characters, or surrogates: text by text (which repairs them;
        buffers = [utf8_bytes(t) for t in texts]  # a pair split between two texts is two lone ones)
        return _padded(b"".join(buffers)), np.fromiter(map(len, buffers), np.int64, len(texts))
    data, byte_ends = converted
    return data, np.diff(byte_ends, prepend=0)


def _disallowed_error(token: str) -> ValueError:
    return ValueError(
        f"the text contains the disallowed special token {token!r}; pass "
        f"allowed_special={{{token!r}}} (or 'all') to encode it as its id, or "
        f"disallowed_special=() to encode it as ordinary text"
    )


def _not_str_error(texts: list, first: int = 0) -> TypeError:
    """The TypeError naming the first item of ``texts`` (item ``first`` of the batch on) that
    is not a str (there is one)."""
    i = next(i for i, t in enumerate(texts) if not isinstance(t, str))
    return TypeError(f"texts[{first + i}] must be a str, not {type(texts[i]).__name__}")


def _in_scratch(raw: bytes) -> np.ndarray:
    """This thread's scratch buffer holding ``raw`` (at most _SHORT_BYTES) then _PAD zero
    bytes; valid until the thread's next call."""
    view = _SCRATCH.__dict__.get("view")
    if view is None:
        _SCRATCH.array = np.zeros(_SHORT_BYTES + _PAD, dtype=np.uint8)
        _SCRATCH.view = view = memoryview(_SCRATCH.array)
    n = len(raw)
    view[:n] = raw
    view[n : n + _PAD] = _PAD_BYTES
    return _SCRATCH.array


def _padded_utf8_of(text: str) -> np.ndarray:
    """:func:`_padded` UTF-8 of one text (lone surrogates -> U+FFFD). Long texts are written
    straight from the str (half the time of ``str.encode`` and a copy); short ones are not:
    Numba types a str argument in Python, ~4 us a call."""
    if len(text) >= _DIRECT_UTF8_CHARS:
        converted = padded_utf8(text, _PAD, _NO_OFFSETS)
        if converted is not None:
            return converted[0]
    return _padded(utf8_bytes(text))


def _padded(raw) -> np.ndarray:
    """A uint8 copy of ``raw`` followed by _PAD zero bytes that are not part of the view: the
    kernels load 8 bytes at any offset (one unaligned word) without running off the end."""
    n = len(raw)
    if isinstance(raw, bytes) and n < 4096:  # cheaper for short inputs; writable like the rest
        return np.frombuffer(bytearray(raw + _PAD_BYTES), dtype=np.uint8)[:n]
    buffer = np.empty(n + _PAD, dtype=np.uint8)
    buffer[:n] = np.frombuffer(raw, dtype=np.uint8) if isinstance(raw, (bytes, bytearray, memoryview)) else raw
    buffer[n:] = 0
    return buffer[:n]


def _with_padding(view: np.ndarray) -> np.ndarray:
    """The whole buffer behind a :func:`_padded` view (for saving it)."""
    return view.base[: len(view) + _PAD] if view.base is not None else np.concatenate([view, np.zeros(_PAD, np.uint8)])


def _check_id(tid, what: str) -> int:
    if isinstance(tid, (bool, np.bool_)) or not isinstance(tid, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {type(tid).__name__}")
    tid = int(tid)
    if not 0 <= tid <= _k.MAX_ID:
        raise ValueError(f"{what} = {tid} is out of range (ids are 0 .. {_k.MAX_ID})")
    return tid


def _check_specials(special_tokens) -> dict[str, int]:
    if special_tokens is None:
        return {}
    if not isinstance(special_tokens, Mapping):
        raise TypeError(f"special_tokens must be a mapping of str to int, not {type(special_tokens).__name__}")
    out = {}
    for s, i in special_tokens.items():
        if not isinstance(s, str) or not s:
            raise TypeError(f"special token names must be non-empty str, got {s!r}")
        out[s] = _check_id(i, f"special_tokens[{s!r}]")
    return out


def _as_ids(ids) -> np.ndarray:
    if isinstance(ids, np.ndarray):
        arr = ids
    else:
        if isinstance(ids, (str, bytes)):
            raise TypeError(f"ids must be a sequence of ints, not {type(ids).__name__}")
        if not isinstance(ids, (list, tuple)):
            ids = list(ids)
        if len(ids) == 0:
            return np.zeros(0, dtype=np.int64)
        try:
            arr = np.array(ids)
        except (OverflowError, ValueError):
            arr = np.array(ids, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"ids must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "O":
        for v in arr:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"ids must be integers, got {type(v).__name__} {v!r}")
            if not -(2**63) <= v < 2**63:
                raise ValueError(f"invalid token id {v}")
        raise ValueError("invalid ids")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers, not {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) >= 2**63:
        raise ValueError(f"invalid token id {int(arr.max())}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _find_bytes(tok_bytes: np.ndarray, tok_off: np.ndarray, ids: np.ndarray, raw: bytes) -> int | None:
    lens = tok_off[ids + 1] - tok_off[ids]
    cand = ids[lens == len(raw)]
    if not len(cand):
        return None
    rows = tok_bytes[tok_off[cand][:, None] + np.arange(len(raw))]
    hit = np.flatnonzero((rows == np.frombuffer(raw, dtype=np.uint8)).all(axis=1))
    return int(cand[hit[0]]) if len(hit) else None


def _merge_pairs(merges, vocab: dict[bytes, int]):
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
        lefts[i], rights[i], results[i] = ia, ib, ir
    return lefts, rights, results, [(bytes(a), bytes(b)) for a, b in merges]


def _splitter(pattern: str, name: str | None):
    """A function (data, docs) -> piece spans, on the calling thread.

    Our inputs are already checked (C-contiguous uint8 data, int64 (m, 2) ranges inside it),
    so a named pattern goes straight to its Numba scanner (``_scanners.split_named``, which
    skips ``split_bytes``'s argument checks: ~10 us per call); anything else through
    ``split_bytes``.
    """
    if name is not None and _scanners.has_scanner(name):
        split_named = _scanners.split_named
        return lambda data, docs: split_named(data, docs, name, 1)
    return lambda data, docs: split_bytes(data, docs, pattern, 1)


def _text_blocks(lengths: np.ndarray, chars: int) -> list[tuple[int, int]]:
    """Consecutive runs of texts (of these lengths) of about ``chars`` characters each (at
    least one text)."""
    n = len(lengths)
    if n == 0:
        return [(0, 0)]
    ends = np.cumsum(lengths)
    total = int(ends[-1])
    if total <= 2 * chars:
        return [(0, n)]
    cuts = np.searchsorted(ends, np.arange(chars, total, chars), side="left") + 1
    bounds = np.unique(np.concatenate([[0], cuts[cuts < n], [n]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


@functools.lru_cache(maxsize=1)
def _cores() -> int:
    """usable_cores() once (a system call is too much for every short encode call)."""
    return usable_cores()


def _cut_tasks(docs: np.ndarray, threads: int, chunk: int, by_chunk: bool = False) -> list[tuple[int, int]]:
    """Cut documents into consecutive groups of roughly equal bytes.

    ``by_chunk``: groups of about ``chunk`` bytes (pre-tokenizer output stays cache-sized);
    else one group per thread-task: about 4 tasks per thread, at most 1 MiB each, so that
    uneven documents still balance.
    """
    n = len(docs)
    if n == 0:
        return [(0, 0)]
    sizes = docs[:, 1] - docs[:, 0]
    total = int(sizes.sum())
    if by_chunk:
        target = chunk
    elif threads == 1:
        return [(0, n)]
    else:
        target = min(_TASK_BYTES, max(chunk // 4, total // (4 * threads) + 1))
    if total <= target:
        return [(0, n)]
    ends = np.cumsum(sizes)
    cuts = np.searchsorted(ends, np.arange(target, total, target), side="left") + 1
    bounds = np.unique(np.concatenate([[0], cuts[cuts < n], [n]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _short(pattern: str) -> str:
    return pattern if len(pattern) < 24 else repr(pattern[:20] + "...")


class _SpecialMatcher:
    """Finds allowed special tokens in UTF-8 bytes (longest first at each position)."""

    def __init__(self, specials: Mapping[str, int]):
        self._specials = specials

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def _compiled(allowed: frozenset) -> "regex.Pattern[bytes]":
        alts = sorted((t.encode("utf-8") for t in allowed), key=lambda b: (-len(b), b))
        return regex.compile(b"|".join(regex.escape(a) for a in alts))

    def regex(self, allowed: frozenset) -> "regex.Pattern[bytes]":
        return self._compiled(allowed)

    def may_contain(self, data, tokens: frozenset) -> bool:
        """Whether a token of ``tokens`` occurs in ``data`` (bytes or a uint8 array that
        nothing changes meanwhile), without the GIL (batch workers): ``contains_any`` when the
        tokens start with at most two distinct bytes (3x a regex scan), else one regex scan
        (itself ~3x a bytes substring test for their common prefix "<|", frequent in code)."""
        needles = _needles(tokens)
        if needles is not None:
            arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
            return bool(contains_any(arr, len(arr), *needles))
        return self._compiled(tokens).search(data, concurrent=True) is not None


@functools.lru_cache(maxsize=64)
def _needles(tokens: frozenset) -> tuple | None:
    """``contains_any``'s arguments after the text: the UTF-8 of ``tokens``, their offsets and
    their (one or two) first bytes; None for more than two first bytes (or an empty token)."""
    raw = [t.encode("utf-8") for t in sorted(tokens)]
    firsts = sorted({r[0] for r in raw if r})
    if not raw or not all(raw) or len(firsts) > 2:
        return None
    flat = np.frombuffer(b"".join(raw), dtype=np.uint8)
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in raw], out=offsets[1:])
    return flat, offsets, firsts[0], firsts[-1]


@functools.lru_cache(maxsize=64)
def _block_needles(tokens: frozenset) -> tuple | None:
    """``_needles`` for the streamed search, or None where it would not do: a token with a cut
    inside (a space after an ASCII letter, where a block may end and the rest of it be encoded
    in the next one)."""
    for t in tokens:
        raw = np.frombuffer(t.encode("utf-8"), dtype=np.uint8)
        if _scanners.last_cut(raw, 0, len(raw)) > 0:
            return None
    return _needles(tokens)


@functools.lru_cache(maxsize=64)
def _special_finder(tokens: frozenset):
    """A function text -> first token of ``tokens`` occurring in text (or None)."""
    alts = sorted(tokens, key=lambda t: (-len(t), t))
    compiled = regex.compile("|".join(regex.escape(t) for t in alts))

    def find(text: str) -> str | None:
        # One regex scan: cheaper than substring tests first ("<|" is common in code).
        m = compiled.search(text)
        return m.group() if m else None

    return find


def _unpickle(state: dict) -> Tokenizer:
    tok_off = state["tok_off"]
    ids = state["mergeable_ids"]
    flat = state["tok_bytes"]
    if state["merges"] is None:
        tok = Tokenizer._from_arrays(
            flat, tok_off[ids], tok_off[ids + 1] - tok_off[ids], ids,
            pattern=state["pattern"], special_tokens=state["special_tokens"], name=state["name"],
            units=state["units"], unk_token=state["unk_token"], end_of_word=state["end_of_word"],
            ignore_merges=state["ignore_merges"],
        )  # fmt: skip
        return tok
    raw = bytes(flat)
    vocab = {raw[tok_off[i] : tok_off[i + 1]]: int(i) for i in ids.tolist()}
    return Tokenizer(
        vocab, merges=state["merges"], pattern=state["pattern"], special_tokens=state["special_tokens"],
        name=state["name"], units=state["units"], unk_token=state["unk_token"],
        end_of_word=state["end_of_word"], ignore_merges=state["ignore_merges"],
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------
# .tiktoken rank files

_RANK_ERRORS = {
    _k.RF_NO_SPACE: "expected '<base64 token> <rank>'",
    _k.RF_BAD_BASE64: "invalid base64 token",
    _k.RF_BAD_RANK: "invalid rank (expected a decimal integer below 2**31 - 1)",
    _k.RF_EMPTY_TOKEN: "empty token",
}


def _read_rank_file(path) -> bytes:
    path = os.fspath(path)
    with open(path, "rb") as f:  # FileNotFoundError carries the path
        content = f.read()
    if content[:2] == b"\x1f\x8b":
        try:
            content = gzip.decompress(content)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{path}: corrupt gzip data ({exc})") from None
    return content


def _parse_ranks(content: bytes, path, check_tokens: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat token bytes, offsets, ranks) of a rank file's content; ValueError names the line.

    ``check_tokens=False`` skips the repeated-token check (for sha256-verified files).
    """
    status, line, flat, off, ranks = _k.parse_tiktoken(np.frombuffer(content, dtype=np.uint8))
    if status != _k.RF_OK:
        raise ValueError(f"{os.fspath(path)}: line {line}: {_RANK_ERRORS[status]}: {_line(content, line)!r}")
    order = np.argsort(ranks, kind="stable")
    dup = np.flatnonzero(ranks[order][1:] == ranks[order][:-1])
    if len(dup):
        entry = int(order[dup[0] + 1])
        line = _entry_line(content, entry)
        raise ValueError(f"{os.fspath(path)}: line {line}: rank {int(ranks[entry])} appears twice: {_line(content, line)!r}")
    if check_tokens:
        raw = flat.tobytes()
        o = off.tolist()
        tokens = [raw[o[i] : o[i + 1]] for i in range(len(ranks))]
        if len(set(tokens)) != len(tokens):
            seen: set[bytes] = set()
            for i, token in enumerate(tokens):
                if token in seen:
                    line = _entry_line(content, i)
                    raise ValueError(f"{os.fspath(path)}: line {line}: token {token!r} appears twice")
                seen.add(token)
    return flat, off, ranks


def _line(content: bytes, line: int) -> str:
    lines = content.split(b"\n")
    text = lines[line - 1] if 0 < line <= len(lines) else b""
    return text[:80].decode("utf-8", errors="replace")


def _entry_line(content: bytes, entry: int) -> int:
    seen = -1
    for number, text in enumerate(content.split(b"\n"), start=1):
        if text.strip(b"\r"):
            seen += 1
            if seen == entry:
                return number
    return 0


def read_tiktoken_ranks(path: str | os.PathLike) -> dict[bytes, int]:
    """Read a ``.tiktoken`` rank file (optionally gzip-compressed) into ``{token_bytes: rank}``.

    Raises FileNotFoundError for a missing file and ValueError naming the file and line for a
    corrupt one (bad base64, missing or invalid rank, repeated rank or token).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
    >>> _ = open(path, "w").write("YQ== 0\\nYg== 1\\n")
    >>> read_tiktoken_ranks(path)
    {b'a': 0, b'b': 1}
    >>> _ = open(path, "w").write("YQ== 0\\nYg 1\\n")
    >>> read_tiktoken_ranks(path)
    Traceback (most recent call last):
      ...
    ValueError: ...tiny.tiktoken: line 2: invalid base64 token: 'Yg 1'
    """
    content = _read_rank_file(path)
    flat, off, ranks = _parse_ranks(content, path)
    raw = flat.tobytes()
    o = off.tolist()
    return {raw[o[i] : o[i + 1]]: r for i, r in enumerate(ranks.tolist())}
