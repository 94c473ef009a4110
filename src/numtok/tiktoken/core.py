"""``Encoding``: tiktoken's class, with its methods, return types and exceptions, over a
:class:`numtok.Tokenizer`.

Encoding runs numtok's kernels into int32 arrays; the list-returning methods convert those with
one ``ndarray.tolist()`` per call (a batch: one for all its ids, then slices), which is where
a list costs its time. ``encode_to_numpy`` gives the array itself (as tiktoken, ``uint32``).

>>> import numtok.tiktoken as tiktoken
>>> enc = tiktoken.get_encoding("cl100k_base")
>>> enc.encode("hello world"), enc.decode([15339, 1917])
([15339, 1917], 'hello world')
>>> enc.encode_ordinary_batch(["hello world", "hi"])
[[15339, 1917], [6151]]
"""

from __future__ import annotations

import bisect
import functools
import operator
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, AbstractSet, Any, Literal, NoReturn

import numpy as np

if TYPE_CHECKING:
    from ..encode.tokenizer import Tokenizer

__all__ = ["Encoding", "raise_disallowed_special_token"]

SpecialArg = Literal["all"] | AbstractSet[str]
DisallowedArg = Literal["all"] | Collection[str]

_U32 = 1 << 32
# Id arrays at least this long become lists through the table of int objects (Encoding._list);
# below, ndarray.tolist() is as fast.
_TABLE_MIN = 128
_INT_TABLE = np.zeros(0, dtype=object)  # _INT_TABLE[i] is i
# Rust's char::is_whitespace (Unicode White_Space), used by encode_with_unstable.
_WHITE_SPACE = frozenset(map(chr, [*range(9, 14), 32, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))


class Encoding:
    """tiktoken's ``Encoding``: the same constructor, methods, results and exceptions.

    Args:
        name: the encoding's name.
        pat_str: the regex that splits text into pieces (tiktoken's four built-in ones run as
            numtok's scanners; any other through the ``regex`` module).
        mergeable_ranks: token bytes -> rank (the rank is the id and the merge priority).
        special_tokens: special token string -> id.
        explicit_n_vocab: if given, checked against the number of tokens (AssertionError).

    >>> from numtok.tiktoken import Encoding
    >>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    >>> enc = Encoding("tiny", pat_str=r"\\w+|\\W", mergeable_ranks=ranks, special_tokens={"<eot>": 257})
    >>> enc.encode("abab <eot>", allowed_special="all")
    [256, 256, 32, 257]
    >>> enc.n_vocab, enc.eot_token if "<|endoftext|>" in enc.special_tokens_set else None
    (258, None)
    """

    name: str
    max_token_value: int
    _pat_str: str
    _special_tokens: dict[str, int]
    _special_token_values: set[int]
    _tok: Tokenizer

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
    ):
        from ..encode.tokenizer import Tokenizer

        max_token_value = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
        if explicit_n_vocab:
            assert len(mergeable_ranks) + len(special_tokens) == explicit_n_vocab
            assert max_token_value == explicit_n_vocab - 1
        tok = Tokenizer(mergeable_ranks, pattern=_numtok_pattern(pat_str), special_tokens=special_tokens, name=name)
        self._setup(name, pat_str, special_tokens, tok, max_token_value, mergeable_ranks)

    @classmethod
    def _from_tokenizer(cls, name: str, pat_str: str, special_tokens: dict[str, int], tok: Tokenizer) -> Encoding:
        """An Encoding over an existing rank-mode Tokenizer (the bundled encodings: their tables
        come from numtok's on-disk cache and no ranks dict is made unless asked for)."""
        self = cls.__new__(cls)
        self._setup(name, pat_str, special_tokens, tok, tok.max_token_value, None)
        return self

    def _setup(self, name, pat_str, special_tokens, tok, max_token_value, ranks) -> None:
        self.name = name
        self._pat_str = pat_str
        self._special_tokens = special_tokens
        self.max_token_value = max_token_value
        self._special_token_values = set(special_tokens.values())
        self._tok = tok
        self._ranks = ranks
        self._decoder: dict[int, bytes] | None = None
        self._sorted_token_bytes: list[bytes] | None = None
        self._by_name: Callable[[str], Encoding] | None = None  # set by registry.get_encoding: pickled by name

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # ------------------------------------------------------------------------------------------
    # encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode a string into tokens, special tokens as ordinary text.

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").encode_ordinary("hello world")
        [31373, 995]
        """
        try:
            return self._list(self._tok.encode_ordinary(text))
        except TypeError:
            _check_str(text)
            raise

    def encode(self, text: str, *, allowed_special: SpecialArg = frozenset(), disallowed_special: DisallowedArg = "all") -> list[int]:
        """Encode a string into tokens; text of a disallowed special token (by default, all of
        them) raises ValueError, an allowed one becomes its id.

        >>> import numtok.tiktoken as tiktoken
        >>> enc = tiktoken.get_encoding("gpt2")
        >>> enc.encode("<|endoftext|>", allowed_special="all"), enc.encode("<|endoftext|>", disallowed_special=())
        ([50256], [27, 91, 437, 1659, 5239, 91, 29])
        >>> enc.encode("<|endoftext|>")
        Traceback (most recent call last):
          ...
        ValueError: Encountered text corresponding to disallowed special token '<|endoftext|>'...
        """
        return self._list(self._encode_array(text, allowed_special, disallowed_special))

    def encode_to_numpy(
        self, text: str, *, allowed_special: SpecialArg = frozenset(), disallowed_special: DisallowedArg = "all"
    ) -> np.ndarray:
        """:meth:`encode` as a ``uint32`` array, with no list made.

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").encode_to_numpy("hello world")
        array([31373,   995], dtype=uint32)
        """
        return self._encode_array(text, allowed_special, disallowed_special).view(np.uint32)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8) -> list[list[int]]:
        """:meth:`encode_ordinary` of each text, on up to ``num_threads`` threads."""
        texts = _texts(text, num_threads)
        if not texts:
            return []
        tok = self._tok
        try:
            batch = tok.encode_batch(texts, num_threads=_threads(num_threads), allowed_special=frozenset(), disallowed_special=frozenset())
        except TypeError:
            for t in texts:
                _check_str(t)
            raise
        return self._split_lists(batch.ids, batch.offsets)

    def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: SpecialArg = frozenset(),
        disallowed_special: DisallowedArg = "all",
    ) -> list[list[int]]:
        """:meth:`encode` of each text, on up to ``num_threads`` threads.

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").encode_batch(["hello world", "goodbye world"])
        [[31373, 995], [11274, 16390, 995]]
        """
        texts = _texts(text, num_threads)
        if not texts:
            return []
        try:
            batch = self._tok.encode_batch(
                texts, num_threads=_threads(num_threads), allowed_special=allowed_special, disallowed_special=_as_set(disallowed_special)
            )
        except (ValueError, TypeError):
            for t in texts:  # the first text in order that holds a disallowed token raises, as in tiktoken
                self._check_disallowed(t, allowed_special, disallowed_special)
                _check_str(t)
            raise
        return self._split_lists(batch.ids, batch.offsets)

    def encode_with_unstable(
        self, text: str, *, allowed_special: SpecialArg = frozenset(), disallowed_special: DisallowedArg = "all"
    ) -> tuple[list[int], list[list[int]]]:
        """The stable tokens of ``text`` and the token sequences its last piece may complete to
        (tiktoken's algorithm; the completions in sorted order, where tiktoken's is arbitrary).

        >>> import numtok.tiktoken as tiktoken
        >>> stable, completions = tiktoken.get_encoding("gpt2").encode_with_unstable("hello fanta")
        >>> stable, [8842] in completions
        ([31373], True)
        """
        self._check_disallowed(text, allowed_special, disallowed_special)
        allowed = self.special_tokens_set if allowed_special == "all" else allowed_special
        text = _fix_surrogates(text)
        tokens, last = self._encode_native(text, frozenset(allowed))
        if last == 0:
            return tokens, []
        last = self._increase_last_piece_token_len(tokens, last)
        unstable = self.decode_bytes(tokens[len(tokens) - last :])
        del tokens[len(tokens) - last :]
        if not unstable:
            return tokens, []
        return tokens, [list(c) for c in sorted(self._unstable_completions(unstable))]

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the one token ``text_or_bytes`` (special tokens included); KeyError if none.

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").encode_single_token("hello")
        31373
        """
        raw = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        token = self._mergeable_ranks.get(raw)
        if token is not None:
            return token
        try:
            return self._special_tokens[raw.decode("utf-8")]
        except (UnicodeDecodeError, KeyError):
            raise KeyError(raw) from None

    # ------------------------------------------------------------------------------------------
    # decoding

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of ``tokens``; KeyError for an id that is no token.

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").decode_bytes([31373, 995])
        b'hello world'
        """
        return self._decode_ids(_ids_array(tokens))

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of ``tokens``; invalid UTF-8 handled by ``errors`` (lossy by default).

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").decode([31373, 995])
        'hello world'
        """
        return self._decode_ids(_ids_array(tokens)).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (special tokens included); KeyError if it is none.

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").decode_single_token_bytes(31373)
        b'hello'
        """
        raw = self._token_decoder.get(_u32(token))
        if raw is None:
            raise KeyError(str(token))
        return raw

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each token.

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").decode_tokens_bytes([31373, 995])
        [b'hello', b' world']
        """
        decoder = self._token_decoder
        out = []
        for token in tokens:
            raw = decoder.get(_u32(token))
            if raw is None:
                raise KeyError(str(token))
            out.append(raw)
        return out

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text of ``tokens`` and the character where each token starts (a token that starts
        inside a character: that character). Raises UnicodeDecodeError for invalid UTF-8.

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("cl100k_base").decode_with_offsets([15339, 1917])
        ('hello world', [0, 5])
        """
        arr = _ids_array(tokens)
        self._check_ids(arr)
        text, starts = self._tok.decode_with_offsets(arr)
        return text, starts.tolist()

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8) -> list[str]:
        """:meth:`decode` of each token list (one kernel call for all of them).

        >>> import numtok.tiktoken as tiktoken
        >>> tiktoken.get_encoding("gpt2").decode_batch([[31373, 995], []])
        ['hello world', '']
        """
        data, cuts = self._decode_many(batch, num_threads)
        return [data[cuts[i] : cuts[i + 1]].decode("utf-8", errors=errors) for i in range(len(cuts) - 1)]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        """:meth:`decode_bytes` of each token list."""
        data, cuts = self._decode_many(batch, num_threads)
        return [data[cuts[i] : cuts[i + 1]] for i in range(len(cuts) - 1)]

    # ------------------------------------------------------------------------------------------
    # miscellaneous

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every mergeable token, sorted."""
        return list(self._sorted_tokens())

    @property
    def eot_token(self) -> int:
        return self._special_tokens["<|endoftext|>"]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens.keys())

    def is_special_token(self, token: int) -> bool:
        assert isinstance(token, int)
        return token in self._special_token_values

    @property
    def n_vocab(self) -> int:
        """``max_token_value + 1`` (as tiktoken)."""
        return self.max_token_value + 1

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> rank: the dict given to the constructor, or made once from the tables."""
        if self._ranks is None:
            tok = self._tok
            raw = tok._tok_bytes.tobytes()
            off = tok._tok_off.tolist()
            self._ranks = {raw[off[i] : off[i + 1]]: i for i in tok._mergeable_ids.tolist()}
        return self._ranks

    # ------------------------------------------------------------------------------------------
    # private methods of tiktoken's that its tests call

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """BPE of ``text_or_bytes`` as one piece (no regex split, no special tokens)."""
        raw = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        return self._piece_ids(raw).tolist()

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """:meth:`encode_ordinary` with the split done by the ``regex`` module."""
        import regex

        out: list[int] = []
        for piece in regex.findall(regex.compile(self._pat_str), text):
            out.extend(self._encode_single_piece(piece))
        return out

    def _encode_bytes(self, text: bytes) -> list[int]:
        """Ids of bytes that may not be UTF-8: the valid prefix is encoded as text, then its last
        piece and the rest as one piece (tiktoken's rule, so ``decode_bytes`` gives them back)."""
        raw = bytes(text)
        try:
            return self.encode_ordinary(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            valid = exc.start
        tokens, last = self._encode_native(raw[:valid].decode("utf-8"), frozenset())
        last = self._increase_last_piece_token_len(tokens, last)
        if tokens and last > 0:
            unstable = self.decode_bytes(tokens[len(tokens) - last :]) + raw[valid:]
            del tokens[len(tokens) - last :]
        else:
            unstable = raw[valid:]
        if unstable:
            tokens.extend(self._piece_ids(unstable).tolist())
        return tokens

    # ------------------------------------------------------------------------------------------
    # pickling: registered encodings by name, others by their numtok tables

    def __reduce__(self):
        if self._by_name is not None:
            return (self._by_name, (self.name,))
        return (_unpickle, (self.name, self._pat_str, self._special_tokens, self.max_token_value, self._tok))

    # ------------------------------------------------------------------------------------------
    # internals

    def _list(self, ids: np.ndarray) -> list[int]:
        """``ids.tolist()``, made faster for long arrays: a long one takes its ints from a table
        of one int object per id, 0 to 2**18 or more (a copy of references instead of making an int per
        id, and the list is freed faster too: its ints are shared, not freed one by one)."""
        if len(ids) < _TABLE_MIN:
            return ids.tolist()
        global _INT_TABLE
        table = _INT_TABLE
        if len(table) <= self.max_token_value:  # made once per process, shared by every Encoding
            table = _INT_TABLE = np.array(range(max(self.max_token_value + 1, 1 << 18)), dtype=object)
        return table.take(ids).tolist()

    def _split_lists(self, ids: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
        """One list per text of a batch's flat ids: one conversion for all of them, then slices."""
        flat = self._list(ids)
        cuts = offsets.tolist()
        return [flat[cuts[i] : cuts[i + 1]] for i in range(len(cuts) - 1)]

    def _encode_array(self, text: str, allowed_special, disallowed_special) -> np.ndarray:
        try:
            return self._tok.encode(text, allowed_special=allowed_special, disallowed_special=_as_set(disallowed_special))
        except (ValueError, TypeError):
            # numtok found a disallowed token or no str: tiktoken's search and messages say which
            self._check_disallowed(text, allowed_special, disallowed_special)
            _check_str(text)
            raise

    def _check_disallowed(self, text: str, allowed_special, disallowed_special) -> None:
        """tiktoken's check: raise its ValueError for the first disallowed special token in ``text``."""
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - allowed_special
        if disallowed_special:
            if not isinstance(disallowed_special, frozenset):
                disallowed_special = frozenset(disallowed_special)
            match = _special_token_regex(disallowed_special).search(text)
            if match:
                raise_disallowed_special_token(match.group())

    def _encode_native(self, text: str, allowed: frozenset) -> tuple[list[int], int]:
        """(ids, how many of them the last piece gave) as tiktoken's core ``encode``: 0 when the
        text ends with an allowed special token or has no piece after the last one."""
        from ..pretokenizers import pretokenize

        tokens = self._tok.encode(text, allowed_special=allowed, disallowed_special=frozenset()).tolist()
        allowed = allowed & self.special_tokens_set
        tail = text
        if allowed:
            import regex

            # the pieces after the last allowed special token (numtok's match: longest first)
            alternatives = sorted(allowed, key=lambda t: (-len(t.encode("utf-8")), t.encode("utf-8")))
            ends = [m.end() for m in regex.finditer("|".join(map(regex.escape, alternatives)), text)]
            tail = text[ends[-1] :] if ends else text
        if not tail:
            return tokens, 0
        spans = pretokenize(tail, self._tok.pattern)
        if len(spans) == 0:
            return tokens, 0
        start, stop = spans[-1].tolist()
        return tokens, len(self._piece_ids(tail.encode("utf-8")[start:stop]))

    def _increase_last_piece_token_len(self, tokens: list[int], last: int) -> int:
        # A trailing whitespace piece can merge with whitespace before it once text follows
        # (cl100k's \s*[\r\n]), so those tokens count as unstable too (tiktoken's rule).
        def all_space(token: int) -> bool:
            raw = self._mergeable_decoder.get(token)
            return raw is not None and all(b in b" \n\t" for b in raw)

        if last > 0 and all_space(tokens[len(tokens) - last]):
            while last < len(tokens) and all_space(tokens[len(tokens) - last - 1]):
                last += 1
        return last

    def _unstable_completions(self, unstable: bytes) -> set[tuple[int, ...]]:
        ranks = self._mergeable_ranks
        decoder = self._mergeable_decoder
        sorted_tokens = self._sorted_tokens()
        completions: set[tuple[int, ...]] = set()
        # every token that starts with the unstable bytes
        point = bisect.bisect_left(sorted_tokens, unstable)
        while point < len(sorted_tokens) and sorted_tokens[point].startswith(unstable):
            completions.add((ranks[sorted_tokens[point]],))
            point += 1
        # a token straddling each later position: re-encode prefix + that token
        for i in range(1, len(unstable)):
            prefix, suffix = unstable[:i], unstable[i:]
            point = bisect.bisect_left(sorted_tokens, suffix)
            while point < len(sorted_tokens) and sorted_tokens[point].startswith(suffix):
                possibility = prefix + sorted_tokens[point]
                try:
                    encoded = self.encode_ordinary(possibility.decode("utf-8"))
                except UnicodeDecodeError:
                    encoded = self._byte_pair_encode(possibility)
                seq: list[int] = []
                seq_len = 0
                for token in encoded:
                    seq.append(token)
                    seq_len += len(decoder[token])
                    if seq_len >= len(unstable):
                        break
                completions.add(tuple(seq))
                point += 1
        # a whitespace character at the end may split off once text follows (\s+(?!\S))
        if len(unstable) > 1:
            last_char = _last_utf8_char(unstable)
            if last_char is not None and last_char in _WHITE_SPACE:
                cut = len(unstable) - len(last_char.encode("utf-8"))
                if cut > 0:
                    completions.add(tuple(self._byte_pair_encode(unstable[:cut]) + self._byte_pair_encode(unstable[cut:])))
        return completions

    def _byte_pair_encode(self, piece: bytes) -> list[int]:
        """tiktoken's ``byte_pair_encode``: merges only, with no lookup of the whole piece first."""
        ranks = self._mergeable_ranks
        if len(piece) == 1 or piece not in ranks:
            return self._piece_ids(piece).tolist()  # numtok's rank-mode merge is the same there
        # A piece that is a token is short: the plain loop (lowest rank, leftmost first).
        parts = [piece[i : i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            best, at = None, -1
            for i in range(len(parts) - 1):
                rank = ranks.get(parts[i] + parts[i + 1])
                if rank is not None and (best is None or rank < best):
                    best, at = rank, i
            if best is None:
                break
            parts[at : at + 2] = [parts[at] + parts[at + 1]]
        return [ranks[p] for p in parts]

    def _piece_ids(self, raw: bytes) -> np.ndarray:
        """numtok's encoding of ``raw`` as one piece (the whole piece if it is a token, else BPE)."""
        from ..encode.buffers import padded
        from ..encode.engine import run
        from ..encode.special import NO_SPECIAL

        if not raw:
            return np.zeros(0, dtype=np.int32)
        docs = np.array([[0, len(raw)]], dtype=np.int64)
        ids, _ = run(self._tok, padded(raw), docs, NO_SPECIAL, spans=docs.copy())
        return ids

    def _check_ids(self, arr: np.ndarray) -> None:
        """KeyError as tiktoken's ``decode_tokens_bytes`` for the first id of ``arr`` that is no token."""
        from ..encode import _kernels as _k

        tok = self._tok
        _, bad = _k.decode_ids(arr, tok._tok_off, tok._dec_bytes, tok._dec_off)
        if bad >= 0:
            raise KeyError(str(int(arr[bad])))

    def _decode_ids(self, arr: np.ndarray) -> bytes:
        from ..encode import _kernels as _k

        tok = self._tok
        out, bad = _k.decode_ids(arr, tok._tok_off, tok._dec_bytes, tok._dec_off)
        if bad >= 0:
            raise KeyError(f"Invalid token for decoding: {int(arr[bad])}")
        return out.tobytes()

    def _decode_many(self, batch: Sequence[Sequence[int]], num_threads: int) -> tuple[bytes, list[int]]:
        """The bytes of all token lists of ``batch`` decoded at once, and each list's byte range."""
        _threads(num_threads)
        if isinstance(batch, (str, bytes)):
            raise TypeError(f"batch must be a sequence of token sequences, not {type(batch).__name__}")
        parts = [_ids_array(t) for t in batch]  # checks each list in order, as tiktoken's map
        flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        data = self._decode_ids(flat)
        dec_off = self._tok._dec_off
        ends = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum(dec_off[flat + 1] - dec_off[flat], out=ends[1:])
        bounds = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=bounds[1:])
        return data, ends[bounds].tolist()

    @property
    def _token_decoder(self) -> dict[int, bytes]:
        """id -> bytes of every token, special tokens included (made once)."""
        if self._decoder is None:
            decoder = dict(self._mergeable_decoder)
            for s, i in self._special_tokens.items():
                decoder.setdefault(i, s.encode("utf-8"))
            self._decoder = decoder
        return self._decoder

    @functools.cached_property
    def _mergeable_decoder(self) -> dict[int, bytes]:
        return {i: b for b, i in self._mergeable_ranks.items()}

    def _sorted_tokens(self) -> list[bytes]:
        if self._sorted_token_bytes is None:
            self._sorted_token_bytes = sorted(self._mergeable_ranks)
        return self._sorted_token_bytes


def _unpickle(name: str, pat_str: str, special_tokens: dict[str, int], max_token_value: int, tok: Any) -> Encoding:
    from ..encode.tokenizer import Tokenizer

    if not isinstance(tok, Tokenizer):
        raise TypeError(f"not a numtok Tokenizer: {type(tok).__name__}")
    enc = Encoding._from_tokenizer(name, pat_str, special_tokens, tok)
    enc.max_token_value = max_token_value
    return enc


def _numtok_pattern(pat_str: str) -> str:
    """``pat_str`` as numtok's pattern argument: numtok reads a bare word as a pattern *name*
    ("cl100k"), which to tiktoken is a regex matching that word, so a word is grouped."""
    return f"(?:{pat_str})" if isinstance(pat_str, str) and pat_str.isidentifier() else pat_str


def _check_str(text: Any) -> None:
    if not isinstance(text, str):
        raise TypeError(f"'{type(text).__name__}' object is not an instance of 'str'")


def _as_set(tokens: DisallowedArg) -> SpecialArg:
    """tiktoken's ``disallowed_special`` (any collection) as numtok's (a set or "all")."""
    return tokens if tokens == "all" or isinstance(tokens, AbstractSet) else frozenset(tokens)


def _texts(text: Sequence[str], num_threads: int | None) -> list[str]:
    _threads(num_threads)
    return text if type(text) is list else list(text)


def _threads(num_threads: int | None) -> int | None:
    """tiktoken's ``num_threads`` (a ThreadPoolExecutor's size) as numtok's: the same errors,
    and no more threads than cores (the ids do not depend on it)."""
    if num_threads is None:
        return None
    if num_threads <= 0:
        raise ValueError("max_workers must be greater than 0")
    from .._native.threads import cores_at_start

    return min(operator.index(num_threads), cores_at_start())



def _u32(token: Any) -> int:
    """A token argument as tiktoken's Rust receives it: an int in [0, 2**32) (TypeError,
    OverflowError otherwise)."""
    if type(token) is not int:
        token = operator.index(token)
    if not 0 <= token < _U32:
        raise OverflowError("out of range integral type conversion attempted")
    return token


def _ids_array(tokens: Any) -> np.ndarray:
    """A sequence of token ids as an int64 array, with the exceptions tiktoken's argument
    conversion raises (TypeError for a str, a non-sequence or a non-int, OverflowError outside
    [0, 2**32))."""
    if isinstance(tokens, np.ndarray):
        arr = tokens
    else:
        if isinstance(tokens, str):
            raise TypeError("Can't extract `str` to `Vec`")
        if not isinstance(tokens, Sequence):
            raise TypeError(f"'{type(tokens).__name__}' object is not an instance of 'Sequence'")
        if len(tokens) == 0:
            return np.zeros(0, dtype=np.int64)
        try:
            arr = np.array(tokens)
        except (OverflowError, ValueError, TypeError):
            return _ids_one_by_one(tokens)
    if arr.ndim != 1 or arr.dtype.kind not in "iub":
        return _ids_one_by_one(tokens)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if (arr.dtype.kind == "i" and int(arr.min()) < 0) or int(arr.max()) >= _U32:
        raise OverflowError("out of range integral type conversion attempted")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _ids_one_by_one(tokens: Any) -> np.ndarray:
    return np.array([_u32(t) for t in tokens], dtype=np.int64)


def _fix_surrogates(text: str) -> str:
    """tiktoken's repair: a surrogate pair becomes its character, a lone surrogate U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _last_utf8_char(raw: bytes) -> str | None:
    """The character the last bytes of ``raw`` encode, or None if they are no valid UTF-8."""
    start = len(raw) - 1
    while start > 0 and len(raw) - start < 4 and 0x80 <= raw[start] < 0xC0:
        start -= 1
    try:
        char = raw[start:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return char if len(char) == 1 else None


@functools.lru_cache(maxsize=128)
def _special_token_regex(tokens: frozenset[str]):
    import regex

    return regex.compile("(" + "|".join(regex.escape(token) for token in tokens) + ")")


def raise_disallowed_special_token(token: str) -> NoReturn:
    """tiktoken's ValueError for a disallowed special token found in the text (same message)."""
    raise ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )
