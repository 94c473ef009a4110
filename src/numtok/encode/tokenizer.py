"""The Tokenizer: byte-level BPE encoding identical to tiktoken (rank mode) or Hugging Face
(merge mode), over Numba kernels (``_kernels``).

The class is the public face; its machinery lives beside it: ``tables`` (built once from the
vocabulary), ``engine`` (pre-tokenize and encode documents on threads), ``streaming`` (long
texts), ``batch`` (many texts, ``BatchEncoding``), ``special`` (special tokens) and
``piece_cache``. Files are read and written by ``numtok.io``.

>>> import numtok
>>> enc = numtok.load("cl100k_base")
>>> enc.encode("hello world").tolist()
[15339, 1917]
>>> enc.decode([15339, 1917])
'hello world'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from .._native.memory import out_of_memory
from .._native.threads import check_num_threads
from .._native.utf8 import utf8_bytes
from ..io import gpt2_files, hf_json, pretrained, tiktoken_file
from ..io.arrow import is_arrow
from . import _kernels as _k
from . import batch, short_calls, special, tables
from . import offsets as offsets_module
from ._core import EncoderCore
from .batch import BYTES_PER_CHAR, BatchEncoding, SpecialSet
from .buffers import padded_utf8_of
from .engine import encode_docs
from .piece_cache import PieceCaches
from .plain import count_plain, encode_plain
from .streaming import encode_streamed

__all__ = ["Tokenizer", "BatchEncoding"]


_T = TypeVar("_T")
_NOTHING: frozenset = frozenset()  # encode's default allowed_special (told apart by identity)
# decode_bytes reads a list of at most this many ids from a list of each token's bytes.
_SHORT_IDS = 256


class _ShortCallKnob(Generic[_T]):
    """An attribute that short calls copy into their per-thread contexts: setting it (tests
    lower ``_heap_min``, pin ``_piece_caches``) makes the short-call path anew."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name + "_value"

    def __get__(self, tok: Tokenizer, owner: type | None = None) -> _T:
        return tok.__dict__[self.key]

    def __set__(self, tok: Tokenizer, value: _T) -> None:
        tok.__dict__[self.key] = value
        tok._short = short_calls.Unbuilt(tok)


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

    # Everything below is set by ``tables.setup`` (the layouts are described in ``_kernels``).
    name: str | None
    pattern: str  # a pattern name ("gpt2", "cl100k", ...) or a regex
    units: str
    unk_token: str | None
    end_of_word: str | None
    ignore_merges: bool
    _special_tokens: dict[str, int]
    _special_lookup: Any  # special.SpecialMatcher
    _rank_mode: bool  # tiktoken's rule (no merge list) rather than HF's
    _merges_list: list[tuple[bytes, bytes]] | None  # None: rank mode, or made from the ids on demand
    _merges_cache: list[tuple[bytes, bytes]] | None
    _merge_id_arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # (left, right, result) ids
    _vocab_cache: dict[bytes, int] | None
    _pickle_by_name: tuple | None
    _split_pattern: str
    _split: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (data, docs) -> piece spans
    _scanner_id: int  # the named pattern's one-kernel scanner, or -1
    _cuttable: bool  # documents may be cut at a space after an ASCII letter
    _chunk_bytes: int
    _heap_min = _ShortCallKnob[int]()
    _short: Any  # short_calls.ShortCalls, NoShortCalls or Unbuilt
    _max_id: int
    _max_token_len: int
    _max_whole_len: int
    _units_code: int
    _unk_id: int
    _eow_id: int
    _tok_bytes: np.ndarray  # id-indexed token bytes (padded) and their offsets
    _tok_off: np.ndarray
    _mergeable_ids: np.ndarray
    _is_special: np.ndarray
    _byte_id: np.ndarray
    _res_of: np.ndarray
    _tok_tab: np.ndarray
    _pair_tab: np.ndarray
    _pair_filter: np.ndarray  # a Bloom filter of the pair table (most CJK letter pairs are no pair)
    _bp: np.ndarray
    _seg_filter: np.ndarray  # where long pieces may be cut into parts merged alone (encode/_segments.py)
    _char_flags: np.ndarray
    _char_memo: np.ndarray
    _seg_min: int
    _whole_tab: np.ndarray
    _whole_ext: np.ndarray
    _dec_bytes: np.ndarray
    _dec_off: np.ndarray
    _piece_caches = _ShortCallKnob[PieceCaches]()
    _core: EncoderCore  # what the encoder kernels read: the tables above, as one value
    _decode_list: list[bytes | None] | None  # each id's bytes, made by the first short decode
    _special_head: str | None  # the first characters all special tokens share ("": there are none; None: they share none)
    training_stats: dict[str, Any]  # set by train_bpe: corpus bytes, unique words, timings

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
        special_tokens = tables.check_specials(special_tokens)
        special_bytes = {s.encode("utf-8"): i for s, i in special_tokens.items()}
        keys: list[bytes] = []
        values: list[int] = []
        for token, tid in vocab.items():
            if not isinstance(token, (bytes, bytearray)):
                raise TypeError(f"vocab keys must be bytes, got {type(token).__name__} {token!r}")
            tid = tables.check_id(tid, f"vocab[{bytes(token)!r}]")
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
        tables.setup(
            self,
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
    ) -> Tokenizer:
        """A rank-mode tokenizer from a ``.tiktoken`` rank file (``.gz`` is read transparently).

        >>> import numtok, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
        >>> _ = open(path, "w").write("YQ== 0\\nYg== 1\\nYWI= 2\\n")
        >>> tok = numtok.Tokenizer.from_tiktoken(path, pattern=r"\\w+", special_tokens={"<eot>": 3})
        >>> tok.encode("abab<eot>", allowed_special="all").tolist()
        [2, 2, 3]
        """
        flat, off, ranks = tiktoken_file.parse_ranks(tiktoken_file.read_rank_file(path), path)
        if name is None:
            name = os.path.basename(os.fspath(path)).split(".")[0]
        return cls._from_arrays(flat, off[:-1], np.diff(off), ranks, pattern=pattern, special_tokens=special_tokens, name=name)

    @classmethod
    def _from_arrays(cls, flat, starts, lens, ids, **options) -> Tokenizer:
        """A tokenizer from token bytes given as (flat buffer, starts, lengths, ids)."""
        self = cls.__new__(cls)
        options["special_tokens"] = tables.check_specials(options.get("special_tokens"))
        tables.setup(self, flat, starts, lens, ids, **options)
        return self


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
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>``; KeyError (as tiktoken) if there is no such special token."""
        try:
            return self._special_tokens["<|endoftext|>"]
        except KeyError:
            shown = ", ".join(list(self._special_tokens)[:8]) or "none"
            raise KeyError(f"'<|endoftext|>' is not a special token of {self.name!r} (its special tokens: {shown})") from None

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
            left, right, _ = self._merge_ids()
            raw = self._tok_bytes.tobytes()
            off = self._tok_off.tolist()
            self._merges_cache = [(raw[off[a] : off[a + 1]], raw[off[b] : off[b + 1]]) for a, b in zip(left.tolist(), right.tolist())]
        return list(self._merges_cache)

    def _merge_ids(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(left ids, right ids, result ids) of :attr:`merges`, in order (int64; do not modify)."""
        if self._merge_id_arrays is None:  # rank mode: derived once
            order = self._mergeable_ids
            left, right = _k.derive_merges(self._tok_bytes, self._tok_off, self._byte_id, self._pair_tab, order)
            has = np.flatnonzero(left >= 0)
            self._merge_id_arrays = (left[has].astype(np.int64), right[has].astype(np.int64), order[has].astype(np.int64))
        return self._merge_id_arrays

    def __repr__(self) -> str:
        mode = "ranks" if self._rank_mode else "merges"
        return f"<Tokenizer {self.name!r} n_vocab={self.n_vocab} pattern={_short(self.pattern)} mode={mode}>"

    # ------------------------------------------------------------------------------------------
    # encoding

    def encode(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = _NOTHING,
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
        if allowed_special is _NOTHING and disallowed_special == "all" and not self._may_hold_special(text):
            ids = self._short.encode(text)  # the defaults, and no special token can be in the text
            if ids is not None:
                return ids
        try:
            allowed, disallowed = special.special_sets(self, allowed_special, disallowed_special)
            if not allowed and disallowed and self._cuttable and len(text) > self._chunk_bytes:
                # A long text with disallowed tokens only (the default): looked for in each block's
                # UTF-8 while it is streamed, not in the str first (for a 4-byte-kind str that is
                # 4 bytes a character to read, a pass over memory the encoder would not otherwise make).
                # On a possible hit, or a text that
                # cannot be streamed, the search below decides.
                needles = special.block_needles(disallowed)
                if needles is not None:
                    ids = encode_streamed(self, text, needles)
                    if ids is not None:
                        return ids
            if disallowed:
                found = special.special_finder(disallowed)(text)
                if found is not None:
                    raise special.disallowed_error(found)
            if not allowed:
                return encode_plain(self, text)
            data = padded_utf8_of(text)
            docs, doc_special = special.segments(self, data, allowed, 0)
            ids, _ = encode_docs(self, data, docs, doc_special, 1)
            return ids
        except MemoryError as exc:
            raise _text_out_of_memory(exc, text) from exc

    def encode_ordinary(self, text: str) -> np.ndarray:
        """Encode a string, treating special tokens as ordinary text.

        >>> import numtok
        >>> numtok.load("cl100k_base").encode_ordinary("hello <|endoftext|>").tolist()
        [15339, 83739, 8862, 728, 428, 91, 29]
        """
        ids = self._short.encode(text)  # a short text, in one kernel call
        if ids is not None:
            return ids
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        try:
            return encode_plain(self, text)
        except MemoryError as exc:
            raise _text_out_of_memory(exc, text) from exc

    def encode_batch(
        self,
        texts: Iterable[str] | Any,
        *,
        num_threads: int | None = None,
        allowed_special: SpecialSet = frozenset(),
        disallowed_special: SpecialSet = "all",
        offsets: bool = False,
        nulls: str = "raise",
    ) -> BatchEncoding:
        """Encode many strings (in parallel threads) into one :class:`BatchEncoding`.

        Results equal ``[encode(t) for t in texts]``. ``num_threads`` defaults to the number of
        usable cores; the kernels release the GIL. ``offsets=True`` also gives
        ``batch.char_offsets``: the (n_tokens, 2) character offsets of every token in its own
        text, aligned with ``batch.ids`` (see :meth:`encode_with_offsets`).

        ``texts`` may also be Arrow strings (``pip install "numtok[arrow]"``): a pyarrow
        ``StringArray``, ``LargeStringArray``, ``StringViewArray``, a ``ChunkedArray`` of them
        (one BatchEncoding for all chunks, in order), or any object with ``__arrow_c_array__``
        / ``__arrow_c_stream__`` (Polars Series, DuckDB results, nanoarrow). The kernels read
        the Arrow buffers in place (string views are first cast to ``large_string``, a copy).
        A null raises ValueError naming its index, unless ``nulls="empty"`` (encoded as an
        empty text). Bytes that are not valid UTF-8 are encoded as they are: each one that
        starts no valid character is one "other" character for the pre-tokenizer.

        >>> import numtok
        >>> enc = numtok.load("cl100k_base")
        >>> enc.encode_batch(["hello world", "hi"], num_threads=2).to_list()
        [[15339, 1917], [6151]]
        >>> import pyarrow as pa
        >>> enc.encode_batch(pa.array(["hello world", None, "hi"]), nulls="empty").to_arrow().to_pylist()
        [[15339, 1917], [], [6151]]
        """
        if offsets and self._unk_id >= 0:
            if is_arrow(texts):  # the texts are needed again, to check each one's unknown tokens
                raise ValueError("offsets=True with an unk_token takes a list of str, not Arrow input")
            texts = list(texts)
        result = batch.encode_batch(
            self, texts, num_threads=num_threads, allowed_special=allowed_special, disallowed_special=disallowed_special,
            nulls=nulls,
        )
        if offsets:
            if self._unk_id >= 0:
                for i, text in enumerate(texts):
                    offsets_module.check_spells_text(self, result[i], utf8_bytes(text))
            result.char_offsets = offsets_module.token_char_offsets(self, result.ids, result.offsets)
        return result

    def encode_with_offsets(
        self,
        text: str,
        *,
        allowed_special: SpecialSet = _NOTHING,
        disallowed_special: SpecialSet = "all",
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode`, with the ``[start, end)`` character offsets of every token in ``text``
        as an int64 array of shape (n, 2).

        Offsets are those of HF tokenizers' ``Encoding.offsets`` (ByteLevel with
        ``trim_offsets=False``): a token that covers part of a character spans that whole
        character, so ``text[start:end]`` holds all of the token's bytes. A lone surrogate is
        one character, encoded as U+FFFD (as tiktoken does).

        >>> import numtok
        >>> ids, offsets = numtok.load("cl100k_base").encode_with_offsets("hi 👋!")
        >>> ids.tolist(), offsets.tolist()
        ([6151, 62904, 233, 0], [[0, 2], [2, 4], [3, 4], [4, 5]])
        """
        ids = self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        if self._unk_id >= 0:
            offsets_module.check_spells_text(self, ids, utf8_bytes(text))
        return ids, offsets_module.token_char_offsets(self, ids)

    def count_tokens(self, text: str) -> int:
        """``len(encode_ordinary(text))``: the number of tokens of ``text``, special tokens
        treated as ordinary text.

        >>> import numtok
        >>> numtok.load("cl100k_base").count_tokens("hello world")
        2
        """
        n = self._short.count(text)
        if n is not None:
            return n
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        try:
            return count_plain(self, text)
        except MemoryError as exc:
            raise _text_out_of_memory(exc, text) from exc

    def count_tokens_batch(self, texts: Iterable[str] | Any, *, num_threads: int | None = None, nulls: str = "raise") -> np.ndarray:
        """The token count of each text (int64), as :meth:`count_tokens` gives it. The texts are
        encoded as by :meth:`encode_ordinary_batch` (Arrow strings too, ``nulls`` as there), but
        no id is written nor kept: only the counts.

        >>> import numtok
        >>> numtok.load("cl100k_base").count_tokens_batch(["hello world", "", "hi"]).tolist()
        [2, 0, 1]
        """
        return batch.count_batch(self, texts, num_threads=num_threads, nulls=nulls)

    def encode_ordinary_batch(self, texts: Iterable[str] | Any, *, num_threads: int | None = None, nulls: str = "raise") -> BatchEncoding:
        """:meth:`encode_batch` with special tokens treated as ordinary text."""
        return self.encode_batch(texts, num_threads=num_threads, allowed_special=frozenset(), disallowed_special=frozenset(), nulls=nulls)

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
        if type(ids) is list and len(ids) <= _SHORT_IDS:
            raw = self._decode_short(ids)
            if raw is not None:
                return raw
        elif type(ids) is np.ndarray and ids.ndim == 1 and ids.size <= _SHORT_IDS and ids.dtype.kind in "iu":
            raw = self._decode_short(ids.tolist())
            if raw is not None:
                return raw
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
        return self.decode_bytes(ids).decode("utf-8", errors)

    def decode_with_offsets(self, ids: Iterable[int] | np.ndarray) -> tuple[str, np.ndarray]:
        """The text of ``ids`` and the character where each token starts (int64), as tiktoken's
        ``decode_with_offsets``: a token that starts inside a character starts at that
        character. Raises UnicodeDecodeError (a ValueError) where the ids are not valid UTF-8.

        >>> import numtok
        >>> enc = numtok.load("cl100k_base")
        >>> text, starts = enc.decode_with_offsets(enc.encode("hi 👋!"))
        >>> text, starts.tolist()
        ('hi 👋!', [0, 2, 3, 4])
        """
        arr = _as_ids(ids)
        text = self.decode_bytes(arr).decode("utf-8", errors="strict")  # validates the ids too
        return text, offsets_module.token_char_offsets(self, arr)[:, 0].copy()

    def decode_batch(self, batch_or_ids: BatchEncoding | Iterable[Iterable[int] | np.ndarray], *,
                     num_threads: int | None = None, errors: str = "replace") -> list[str]:
        """:meth:`decode` of every text of a :class:`BatchEncoding` or of a list of id arrays.
        The ids of all texts are decoded in one kernel call; ``num_threads`` is accepted for
        symmetry with :meth:`encode_batch` (decoding is memory-bound and runs on one thread).

        >>> import numtok
        >>> enc = numtok.load("cl100k_base")
        >>> enc.decode_batch(enc.encode_batch(["hello world", "", "héllo"]))
        ['hello world', '', 'héllo']
        """
        check_num_threads(num_threads)
        if isinstance(batch_or_ids, BatchEncoding):
            flat, bounds = batch_or_ids.ids, batch_or_ids.offsets
        else:
            if isinstance(batch_or_ids, (str, bytes, np.ndarray)):
                raise TypeError("decode_batch takes a BatchEncoding or a list of id sequences")
            parts = [_as_ids(x) for x in batch_or_ids]
            flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            bounds = np.zeros(len(parts) + 1, dtype=np.int64)
            np.cumsum([len(p) for p in parts], out=bounds[1:])
        flat = _as_ids(flat)
        data = self.decode_bytes(flat)  # checks every id
        ends = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum(self._dec_off[flat + 1] - self._dec_off[flat], out=ends[1:])
        cuts = ends[bounds].tolist()
        return [data[cuts[i] : cuts[i + 1]].decode("utf-8", errors=errors) for i in range(len(cuts) - 1)]

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
    # files (numtok.io)

    def save(self, path: str | os.PathLike) -> None:
        """Write a Hugging Face ``tokenizer.json`` (atomically; see :func:`numtok.io.hf_json.save_hf_json`)."""
        hf_json.save_hf_json(self, path)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Tokenizer:
        """Read a byte-level BPE Hugging Face ``tokenizer.json`` (or the one in a directory
        written by :meth:`save_pretrained` or ``transformers``' ``save_pretrained``)."""
        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        return cls(**hf_json.read_hf_json(path))

    def save_pretrained(
        self,
        directory: str | os.PathLike,
        *,
        bos_token: str | None = None,
        eos_token: str | None = "<|endoftext|>",
        unk_token: str | None = None,
        pad_token: str | None = None,
        model_max_length: int | None = None,
    ) -> None:
        """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``
        into ``directory`` (created if needed; other files there are left alone), so that
        ``transformers.AutoTokenizer.from_pretrained(directory)`` loads this tokenizer offline.
        The bos/eos/unk/pad arguments name special tokens of this tokenizer (the default eos is
        dropped when the tokenizer has no such token); each file is written atomically."""
        pretrained.save_pretrained(
            self, directory, bos_token=bos_token, eos_token=eos_token, unk_token=unk_token,
            pad_token=pad_token, model_max_length=model_max_length,
        )  # fmt: skip

    def save_tiktoken(self, path: str | os.PathLike) -> None:
        """Write a ``.tiktoken`` rank file and its sidecar JSON (see :func:`numtok.io.tiktoken_file.save_tiktoken`)."""
        tiktoken_file.save_tiktoken(self, path)

    def save_gpt2(self, directory: str | os.PathLike) -> None:
        """Write GPT-2 style ``vocab.json`` and ``merges.txt`` into ``directory``."""
        gpt2_files.save_gpt2(self, directory)

    @classmethod
    def from_gpt2(cls, vocab_json: str | os.PathLike, merges_txt: str | os.PathLike, pattern: str = "gpt2") -> Tokenizer:
        """Read GPT-2 style ``vocab.json`` and ``merges.txt``."""
        return cls(**gpt2_files.read_gpt2(vocab_json, merges_txt, pattern))

    # ------------------------------------------------------------------------------------------
    # pickling: by registry name when loaded with numtok.load, else by value

    def __reduce__(self):
        if self._pickle_by_name is not None:
            return self._pickle_by_name  # set by numtok.load: (load, (name,))
        state = {
            "tok_bytes": np.asarray(self._tok_bytes).copy(),
            "tok_off": self._tok_off,
            "mergeable_ids": self._mergeable_ids,
            "merges": None if self._rank_mode else self.merges,
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

    def _decode_short(self, ids: list) -> bytes | None:
        """The bytes of a few ids from a list of each token's bytes, or None for the general
        path (which names what is wrong with the ids)."""
        table = self._decode_list
        if table is None:
            raw = self._dec_bytes.tobytes()
            off = self._dec_off.tolist()
            valid = np.diff(self._tok_off) > 0  # an id with no bytes is not a token
            self._decode_list = table = [raw[a:b] if ok else None for a, b, ok in zip(off, off[1:], valid.tolist())]
        if not ids:
            return b""
        if type(ids[0]) is bool or min(ids) < 0:  # (bools alone are not ids; a negative one would index from the end)
            return None
        try:
            return b"".join(map(table.__getitem__, ids))  # type: ignore[arg-type]  # a None (no token) raises TypeError
        except (IndexError, TypeError):
            return None

    def _may_hold_special(self, text: str) -> bool:
        """Whether ``text`` may hold a special token: it holds the first characters they all
        share, or they share none."""
        head = self._special_head
        return head is None or (head != "" and head in text)

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
        return tables.find_bytes(self._tok_bytes, self._tok_off, self._mergeable_ids, raw)

    def _clear_caches(self) -> None:
        """Forget all cached pieces (benchmarks use it to time a first pass)."""
        self._piece_caches.clear()
        self._short = short_calls.Unbuilt(self)

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


def _text_out_of_memory(exc: MemoryError, text: str) -> MemoryError:
    return out_of_memory(exc, f"encoding a text of {len(text):,} characters", BYTES_PER_CHAR * len(text))


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


def _short(pattern: str) -> str:
    return pattern if len(pattern) < 24 else repr(pattern[:20] + "...")


# What Tokenizer.__reduce__ writes: nothing else is unpickled into a Tokenizer.
_STATE_TYPES: dict[str, Any] = {
    "tok_bytes": np.ndarray, "tok_off": np.ndarray, "mergeable_ids": np.ndarray, "merges": (list, type(None)),
    "pattern": str, "special_tokens": dict, "name": (str, type(None)), "units": str,
    "unk_token": (str, type(None)), "end_of_word": (str, type(None)), "ignore_merges": bool,
}  # fmt: skip


def _check_state(state: Any) -> None:
    """Raise pickle.UnpicklingError unless ``state`` has exactly the shape __reduce__ gives."""
    import pickle

    def bad(why: str):
        return pickle.UnpicklingError(f"not a numtok Tokenizer state: {why}")

    if not isinstance(state, dict) or set(state) != set(_STATE_TYPES):
        keys = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
        raise bad(f"expected the keys {sorted(_STATE_TYPES)}, got {keys}")
    for key, kind in _STATE_TYPES.items():
        if not isinstance(state[key], kind):
            raise bad(f"{key} is a {type(state[key]).__name__}")
    flat, off, ids = state["tok_bytes"], state["tok_off"], state["mergeable_ids"]
    if flat.dtype != np.uint8 or off.dtype != np.int64 or ids.dtype != np.int64 or flat.ndim != 1 or off.ndim != 1 or ids.ndim != 1:
        raise bad("token arrays of the wrong type or shape")
    if len(off) == 0 or off[0] != 0 or off[-1] > len(flat) or bool(np.any(np.diff(off) < 0)):
        raise bad("token offsets out of order or past the token bytes")
    if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= len(off) - 1):
        raise bad("token ids outside the offsets")
    if not all(isinstance(s, str) and isinstance(i, int) and not isinstance(i, bool) for s, i in state["special_tokens"].items()):
        raise bad("special_tokens is not a str -> int mapping")
    merges = state["merges"]
    if merges is not None and not all(isinstance(m, tuple) and len(m) == 2 and all(type(x) is bytes for x in m) for m in merges):
        raise bad("merges are not pairs of bytes")


def _unpickle(state: dict) -> Tokenizer:
    _check_state(state)
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

