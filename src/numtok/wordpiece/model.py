"""WordPiece encoding: greedy longest-match-first, identical to Hugging Face ``tokenizers``.

A word with any unmatched position, or longer than ``max_input_chars_per_word`` (100)
characters, is a single ``[UNK]``. Loaded from a BERT ``tokenizer.json``
(:meth:`WordPiece.from_file`) or ``vocab.txt`` (:meth:`WordPiece.from_vocab`), it gives the ids
HF gives, normalizer and pre-tokenizer included.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, Iterable, Sequence

import numpy as np

from ..io.atomic import atomic_write
from ..io.hf_json import too_many_added
from . import _kernels as K
from .bert import BertNormalizer, class_table, code_points, lower_table_packed, pre_tokenizer_mode

__all__ = ["WordPiece", "BERT_SPECIAL_TOKENS"]

BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# The largest id: tables indexed by id are at most 16 MiB, whatever id a file names (the trie
# holds at most 2**21 - 1 nodes, so no vocabulary has more tokens).
MAX_ID = (1 << 21) - 2
_NO_LOWER = np.zeros(0, dtype=np.int32)
_NO_LOWER.setflags(write=False)


class WordPiece:
    """A WordPiece tokenizer: vocabulary, normalizer, pre-tokenizer, special tokens.

    Build one with :func:`train_wordpiece`, :meth:`from_file`, :meth:`from_vocab` or
    directly from a vocabulary:

    >>> wp = WordPiece({"[UNK]": 0, "un": 1, "##able": 2, "a": 3}, special_tokens=["[UNK]"])
    >>> wp.tokenize("unable a unab")
    ['un', '##able', 'a', '[UNK]']

    Args:
        vocab: token -> id. Ids need not be contiguous, but must be unique and >= 0.
        unk_token: the token of a word that cannot be matched (must be in ``vocab``).
        prefix: the continuing-subword prefix (``"##"``).
        max_input_chars_per_word: longer words (after normalization) become ``unk_token``.
        normalizer: a :class:`numtok.wordpiece.bert.BertNormalizer`, or None for none.
        pre_tokenizer: "bert" (whitespace + isolated punctuation, HF ``BertPreTokenizer``)
            or "whitespace" (HF ``WhitespaceSplit``).
        special_tokens: strings matched in the raw text before anything else (leftmost,
            longest first) and encoded as their own id, as HF does with its added tokens;
            ``decode(..., skip_special_tokens=True)`` drops them.
        added_tokens: more strings matched like ``special_tokens`` but kept by ``decode``
            (HF's added tokens with ``special: false``).
        template: (ids before, ids after) the text when ``add_special_tokens=True``;
            None = nothing is added.
        decoder_cleanup: whether :meth:`decode` applies HF's WordPiece decoder cleanup
            (`` .`` -> ``.``, `` n't`` -> ``n't`` ...); None = no decoder (tokens joined by
            spaces, as HF does without one).
    """

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        unk_token: str = "[UNK]",
        prefix: str = "##",
        max_input_chars_per_word: int = 100,
        normalizer: BertNormalizer | None = None,
        pre_tokenizer: str = "bert",
        special_tokens: Iterable[str] = (),
        added_tokens: Iterable[str] = (),
        template: tuple[Sequence[int], Sequence[int]] | None = None,
        decoder_cleanup: bool | None = True,
    ):
        self._vocab = {str(k): int(v) for k, v in vocab.items()}
        if unk_token not in self._vocab:
            raise ValueError(f"unk_token {unk_token!r} is not in the vocabulary")
        if not all(0 <= i <= MAX_ID for i in self._vocab.values()):
            token, i = next((t, i) for t, i in self._vocab.items() if not 0 <= i <= MAX_ID)
            raise ValueError(f"vocab[{token!r}] = {i} is out of range (ids are 0 .. {MAX_ID})")
        ids = np.fromiter(self._vocab.values(), dtype=np.int64, count=len(self._vocab))
        if len(np.unique(ids)) != len(ids):
            raise ValueError("two tokens share an id in the vocabulary")
        if not isinstance(max_input_chars_per_word, int) or max_input_chars_per_word < 0:
            raise ValueError("max_input_chars_per_word must be an int >= 0")
        self._mode = pre_tokenizer_mode(pre_tokenizer)
        self.pre_tokenizer = pre_tokenizer
        self.unk_token = unk_token
        self.unk_id = self._vocab[unk_token]
        self.prefix = prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        self.normalizer = normalizer
        self.decoder_cleanup = decoder_cleanup
        self.merges: list[tuple[str, str, str]] = []
        size = int(ids.max()) + 1 if len(ids) else 0
        self._id_to_token: list[str | None] = [None] * size
        for token, i in self._vocab.items():
            self._id_to_token[i] = token
        self.special_tokens = tuple(dict.fromkeys(special_tokens))
        self.added_tokens = tuple(s for s in dict.fromkeys(added_tokens) if s not in self.special_tokens)
        matched = self.special_tokens + self.added_tokens
        too_many = too_many_added(len(matched))
        if too_many is not None:
            raise ValueError(too_many)
        for s in matched:
            if not isinstance(s, str) or not s:
                raise ValueError(f"special and added tokens must be non-empty strings, not {s!r}")
            if s not in self._vocab:
                raise ValueError(f"special token {s!r} is not in the vocabulary")
        self._special_ids = np.array([self._vocab[s] for s in self.special_tokens], dtype=np.int64)
        self._special_re = (
            re.compile("|".join(re.escape(s) for s in sorted(matched, key=len, reverse=True))) if matched else None
        )
        self.template = None if template is None else (list(map(int, template[0])), list(map(int, template[1])))
        self._build_trie()
        self._decode_tables: tuple | None = None
        params = np.zeros(8, dtype=np.int64)
        if normalizer is not None:
            n = normalizer
            params[[K.P_NORMALIZE, K.P_CLEAN, K.P_CJK, K.P_STRIP, K.P_LOWER]] = [
                1, n.clean_text, n.handle_chinese_chars, n.strips_accents, n.lowercase]
        params[[K.P_MODE, K.P_UNK, K.P_MAX_CHARS]] = [self._mode, self.unk_id, max_input_chars_per_word]
        self._params = params
        self._lower = lower_table_packed() if normalizer is not None and normalizer.lowercase else _NO_LOWER

    # ------------------------------------------------------------------------------------------
    # construction

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> WordPiece:
        """Load a HF ``tokenizer.json`` holding a WordPiece model.

        Understood: model WordPiece; normalizer BertNormalizer or none; pre-tokenizer
        BertPreTokenizer or WhitespaceSplit; post-processor TemplateProcessing (single
        sequence), BertProcessing or none; decoder WordPiece or none; added tokens that are
        matched on the raw text (``normalized: false``, no lstrip/rstrip/single_word).
        ``truncation`` and ``padding`` are ignored: numtok returns the whole sequence.

        Raises:
            ValueError: listing everything in the file that numtok cannot represent.
        """
        with open(path, encoding="utf-8") as f:
            return cls.from_str(f.read(), source=os.fspath(path))

    @classmethod
    def from_str(cls, text: str, *, source: str = "tokenizer.json") -> WordPiece:
        """Load a HF ``tokenizer.json`` from its text (see :meth:`from_file`)."""
        try:
            d = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
            raise ValueError(f"{source}: not JSON: {exc}") from None
        if not isinstance(d, dict):
            raise ValueError(f"{source}: not a tokenizer.json object")
        problems: list[str] = []
        model = d.get("model") or {}
        if model.get("type", "WordPiece" if "continuing_subword_prefix" in model else None) != "WordPiece":
            problems.append(f"model type {model.get('type')!r} (only WordPiece)")
        vocab = model.get("vocab")
        if not isinstance(vocab, dict):
            problems.append("model.vocab missing or not an object")
            vocab = {}
        normalizer = _normalizer_from_json(d.get("normalizer"), problems)
        pre = d.get("pre_tokenizer")
        pre_name = {"BertPreTokenizer": "bert", "WhitespaceSplit": "whitespace"}.get(str((pre or {}).get("type")))
        if pre_name is None:
            kind = pre if pre is None else pre.get("type")
            problems.append(f"pre_tokenizer {kind!r} (only BertPreTokenizer, WhitespaceSplit)")
        vocab = dict(vocab)
        specials: list[str] = []
        added: list[str] = []
        added_tokens = d.get("added_tokens") or []
        if not isinstance(added_tokens, list) or not all(isinstance(tok, dict) for tok in added_tokens):
            problems.append("added_tokens is not a list of objects")
            added_tokens = []
        too_many = too_many_added(len(added_tokens))
        if too_many is not None:
            problems.append(too_many)
            added_tokens = []
        for tok in added_tokens:
            content, tid = tok.get("content"), tok.get("id")
            bad = [k for k in ("single_word", "lstrip", "rstrip", "normalized") if tok.get(k)]
            if bad:
                problems.append(f"added token {content!r} with {', '.join(b + '=true' for b in bad)}")
                continue
            if vocab.get(content, tid) != tid:
                problems.append(f"added token {content!r} has id {tid} but the vocabulary says {vocab[content]}")
                continue
            vocab[content] = tid
            (specials if tok.get("special", True) else added).append(content)
        template = _template_from_json(d.get("post_processor"), vocab, problems)
        dec = d.get("decoder")
        cleanup: bool | None
        if dec is None:
            cleanup = None
        elif dec.get("type") == "WordPiece" and dec.get("prefix", "##") == model.get(
                "continuing_subword_prefix", "##"):
            cleanup = bool(dec.get("cleanup", True))
        else:
            problems.append(f"decoder {dec!r} (only WordPiece with the model's prefix)")
            cleanup = None
        if problems:
            raise ValueError(f"{source}: numtok's WordPiece cannot represent: " + "; ".join(problems))
        assert pre_name is not None  # else a problem was listed
        return cls(
            vocab,
            unk_token=model.get("unk_token", "[UNK]"),
            prefix=model.get("continuing_subword_prefix", "##"),
            max_input_chars_per_word=int(model.get("max_input_chars_per_word", 100)),
            normalizer=normalizer,
            pre_tokenizer=pre_name,
            special_tokens=specials,
            added_tokens=added,
            template=template,
            decoder_cleanup=cleanup,
        )

    @classmethod
    def from_vocab(cls, path: str | os.PathLike, lowercase: bool = True, **options) -> WordPiece:
        """A BERT tokenizer from a ``vocab.txt`` (one token per line, id = line number), set up
        as HF's ``BertWordPieceTokenizer`` / ``BertTokenizerFast``: BertNormalizer (with
        ``lowercase``), BertPreTokenizer, ``[CLS] ... [SEP]`` template, WordPiece decoder.
        The BERT special tokens present in the file are matched in the text.

        ``options`` go to the constructor (``unk_token``, ``max_input_chars_per_word`` ...).
        """
        vocab: dict[str, int] = {}
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                vocab[line.rstrip()] = i  # HF trims trailing whitespace; a later duplicate wins
        specials = [s for s in BERT_SPECIAL_TOKENS if s in vocab]
        template = ([vocab["[CLS]"]], [vocab["[SEP]"]]) if "[CLS]" in vocab and "[SEP]" in vocab else None
        kw: dict[str, Any] = dict(normalizer=BertNormalizer(lowercase=lowercase), pre_tokenizer="bert",
                                  special_tokens=specials, template=template)
        kw.update(options)
        return cls(vocab, **kw)

    def _build_trie(self) -> None:
        tokens = list(self._vocab)
        lens = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        off = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum(lens, out=off[1:])
        cps = np.frombuffer("".join(tokens).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
        tids = np.fromiter(self._vocab.values(), dtype=np.int32, count=len(tokens))
        prefix = np.array([ord(c) for c in self.prefix], dtype=np.int64)
        self._trie = K.build_trie(cps, off, tids, prefix)

    # ------------------------------------------------------------------------------------------
    # properties

    @property
    def vocab(self) -> dict[str, int]:
        """token -> id (a copy)."""
        return dict(self._vocab)

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def __len__(self) -> int:
        return len(self._vocab)

    def token_to_id(self, token: str) -> int | None:
        return self._vocab.get(token)

    def id_to_token(self, i: int) -> str:
        if not 0 <= i < len(self._id_to_token) or self._id_to_token[i] is None:
            raise ValueError(f"id {i} is not in the vocabulary")
        return self._id_to_token[i]  # type: ignore[return-value]

    def __repr__(self) -> str:
        return (f"WordPiece(vocab_size={len(self._vocab)}, pre_tokenizer={self.pre_tokenizer!r}, "
                f"normalizer={self.normalizer!r}, special_tokens={list(self.special_tokens)!r})")

    # ------------------------------------------------------------------------------------------
    # encoding

    def encode(self, text: str, *, add_special_tokens: bool = False) -> np.ndarray:
        """Token ids of ``text`` (int32).

        ``add_special_tokens=False`` (the default) returns exactly the text's tokens, i.e. HF's
        ``encode(text, add_special_tokens=False).ids``; ``True`` adds the template's tokens
        (``[CLS] ... [SEP]`` for BERT), HF's default.

        >>> wp = WordPiece({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hello": 3, ",": 4, "world": 5, "!": 6},
        ...                normalizer=BertNormalizer(), special_tokens=["[CLS]", "[SEP]"], template=([1], [2]))
        >>> wp.encode("Hello, World!").tolist(), wp.encode("Hello", add_special_tokens=True).tolist()
        ([3, 4, 5, 6], [1, 3, 2])
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        segments, forced = self._segments(text)
        ids, _ = self._run(segments, forced)
        if add_special_tokens:
            ids = self._wrap(ids)
        return ids

    def encode_batch(self, texts: Iterable[str], *, add_special_tokens: bool = False) -> list[np.ndarray]:
        """:meth:`encode` of each text, in one kernel call (cheaper than a loop for short texts)."""
        texts = list(texts)
        segments: list[str] = []
        forced: list[int] = []
        first_doc = np.empty(len(texts) + 1, dtype=np.int64)
        for t, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts must be str, not {type(text).__name__}")
            first_doc[t] = len(segments)
            s, f = self._segments(text)
            segments += s
            forced += f
        first_doc[len(texts)] = len(segments)
        ids, offsets = self._run(segments, forced)
        cuts = offsets[first_doc]
        out = [ids[cuts[i] : cuts[i + 1]] for i in range(len(texts))]
        if add_special_tokens:
            out = [self._wrap(x) for x in out]
        return out

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text`` as strings (no ``[CLS]``/``[SEP]``)."""
        table = self._id_to_token
        return [table[i] for i in self.encode(text).tolist()]

    def _segments(self, text: str) -> tuple[list[str], list[int]]:
        """Cut the special tokens out of ``text``: segments with -1, specials with their id."""
        if self._special_re is None or self._special_re.search(text) is None:
            return [text], [-1]
        segments, forced = [], []
        pos = 0
        for m in self._special_re.finditer(text):
            if m.start() > pos:
                segments.append(text[pos : m.start()])
                forced.append(-1)
            segments.append("")
            forced.append(self._vocab[m.group()])
            pos = m.end()
        if pos < len(text):
            segments.append(text[pos:])
            forced.append(-1)
        return segments, forced

    def _run(self, segments: list[str], forced: list[int]) -> tuple[np.ndarray, np.ndarray]:
        norm = self.normalizer
        if norm is not None:
            segments = [norm.prepare(s) for s in segments]
        if len(segments) == 1:
            cps = code_points(segments[0])
            spec = np.array([0, len(cps), forced[0]], dtype=np.int64)
        else:
            cps = code_points("".join(segments))
            spec = np.zeros(2 * len(segments) + 1, dtype=np.int64)
            lengths = np.fromiter(map(len, segments), dtype=np.int64, count=len(segments))
            np.cumsum(lengths, out=spec[1 : len(segments) + 1])
            spec[len(segments) + 1 :] = forced
        return K.encode_kernel(cps, spec, class_table(), self._lower, self._trie, self._params)

    def _wrap(self, ids: np.ndarray) -> np.ndarray:
        if self.template is None:
            return ids
        before, after = self.template
        return np.concatenate([np.array(before, dtype=np.int32), ids, np.array(after, dtype=np.int32)])

    # ------------------------------------------------------------------------------------------
    # decoding

    def decode(self, ids, *, skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` as HF's WordPiece decoder writes it: pieces starting with the
        prefix are glued to the previous one, others get a space; with cleanup, spaces before
        ``. ? ! ,`` and in `` n't``, `` 's`` ... are removed. Same as HF's
        ``decode(ids, skip_special_tokens=...)``. Normalization (lowercasing, accents) is not
        undone.

        Raises:
            ValueError: an id that is not in the vocabulary (the message names it).
        """
        arr = np.asarray(ids)
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise TypeError("ids must be a 1-d sequence of ints")
        arr = arr.astype(np.int64, copy=False)
        first_b, first_o, rest_b, rest_o, valid = self._decoder()
        bad = (arr < 0) | (arr >= len(valid))
        bad[~bad] = ~valid[arr[~bad]]
        if bad.any():
            first = int(arr[np.flatnonzero(bad)[0]])
            raise ValueError(f"id {first} is not in the vocabulary (size {len(self._vocab)})")
        if skip_special_tokens and len(self._special_ids):
            arr = arr[~np.isin(arr, self._special_ids)]
        return K.decode_kernel(arr, first_b, first_o, rest_b, rest_o).tobytes().decode("utf-8", "surrogatepass")

    def _decoder(self):
        if self._decode_tables is None:
            firsts, rests = [], []
            for tok in self._id_to_token:
                tok = tok or ""
                if self.decoder_cleanup is None:
                    first, rest = tok, " " + tok
                else:
                    rest = tok[len(self.prefix):] if tok.startswith(self.prefix) else " " + tok
                    first = tok
                    if self.decoder_cleanup:
                        first, rest = _cleanup(first), _cleanup(rest)
                firsts.append(first.encode("utf-8", "surrogatepass"))
                rests.append(rest.encode("utf-8", "surrogatepass"))
            valid = np.array([t is not None for t in self._id_to_token], dtype=bool)
            self._decode_tables = (*pack_tokens(firsts), *pack_tokens(rests), valid)
        return self._decode_tables

    # ------------------------------------------------------------------------------------------
    # saving

    def to_json(self) -> dict:
        """A HF ``tokenizer.json`` document for this tokenizer (loadable by HF and numtok)."""
        added = [
            {"id": self._vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": s in self.special_tokens}
            for s in self.special_tokens + self.added_tokens
        ]
        post = None
        if self.template is not None:
            before, after = self.template
            single = ([{"SpecialToken": {"id": self._id_to_token[i], "type_id": 0}} for i in before]
                      + [{"Sequence": {"id": "A", "type_id": 0}}]
                      + [{"SpecialToken": {"id": self._id_to_token[i], "type_id": 0}} for i in after])
            pair = single + [{"Sequence": {"id": "B", "type_id": 1}}] + [
                {"SpecialToken": {"id": self._id_to_token[i], "type_id": 1}} for i in after]
            post = {"type": "TemplateProcessing", "single": single, "pair": pair,
                    "special_tokens": {self._id_to_token[i]: {"id": self._id_to_token[i], "ids": [i],
                                                              "tokens": [self._id_to_token[i]]}
                                       for i in before + after}}
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added,
            "normalizer": None if self.normalizer is None else self.normalizer.to_json(),
            "pre_tokenizer": {"type": "BertPreTokenizer" if self.pre_tokenizer == "bert" else "WhitespaceSplit"},
            "post_processor": post,
            "decoder": None if self.decoder_cleanup is None else
            {"type": "WordPiece", "prefix": self.prefix, "cleanup": self.decoder_cleanup},
            "model": {"type": "WordPiece", "unk_token": self.unk_token, "continuing_subword_prefix": self.prefix,
                      "max_input_chars_per_word": self.max_input_chars_per_word, "vocab": self._vocab},
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_json` to ``path`` (a HF ``tokenizer.json``), atomically."""
        with atomic_write(path, "w") as f:
            json.dump(self.to_json(), f, ensure_ascii=False, indent=1)


def _cleanup(s: str) -> str:
    """HF's WordPiece decoder cleanup, applied to each decoded piece."""
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                 (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        s = s.replace(a, b)
    return s


def pack_tokens(parts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)), out=off[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), off


def _normalizer_from_json(d, problems: list[str]) -> BertNormalizer | None:
    if d is None:
        return None
    if not isinstance(d, dict):
        problems.append(f"normalizer {d!r} (not an object)")
        return None
    if d.get("type") != "BertNormalizer":
        problems.append(f"normalizer {d.get('type')!r} (only BertNormalizer)")
        return None
    return BertNormalizer(
        clean_text=bool(d.get("clean_text", True)),
        handle_chinese_chars=bool(d.get("handle_chinese_chars", True)),
        strip_accents=d.get("strip_accents"),
        lowercase=bool(d.get("lowercase", True)),
    )


def _template_from_json(d, vocab: dict, problems: list[str]):
    if d is None:
        return None
    kind = d.get("type")
    if kind == "BertProcessing":
        (_, sep_id), (_, cls_id) = d.get("sep", ("[SEP]", 102)), d.get("cls", ("[CLS]", 101))
        return [cls_id], [sep_id]
    if kind == "TemplateProcessing":
        before: list[int] = []
        after: list[int] = []
        seen_a = False
        for item in d.get("single", []):
            if "Sequence" in item:
                if item["Sequence"].get("id") != "A" or seen_a:
                    problems.append("post_processor template with a sequence other than one $A")
                    return None
                seen_a = True
            elif "SpecialToken" in item:
                name = item["SpecialToken"]["id"]
                spec = (d.get("special_tokens") or {}).get(name)
                ids = spec["ids"] if spec else [vocab[name]] if name in vocab else None
                if ids is None:
                    problems.append(f"post_processor special token {name!r} unknown")
                    return None
                (after if seen_a else before).extend(ids)
        return before, after
    problems.append(f"post_processor {kind!r} (only TemplateProcessing, BertProcessing)")
    return None
