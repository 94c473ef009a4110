"""Per-group sums of an evaluation, and the report rows made from them.

Text sums (documents, bytes, characters, words, letter bytes per script) are the same for every
tokenizer; token sums (tokens, byte-fallback tokens, the ids used) are per tokenizer. Groups
are numbered as they are met; a group's row appears once it has a document.

Columns of a row (``COLUMNS``): ``tokenizer`` (its name), ``vocab_size`` (``n_vocab``),
``group`` (``all`` for every document), ``documents``, ``bytes`` (UTF-8), ``chars``, ``words``
(whitespace-separated), ``tokens``, ``bytes_per_token``, ``chars_per_token``,
``tokens_per_word`` (None for groups of scripts written without spaces, of no letters, or
without words),
``byte_fallback_share`` (the share of bytes encoded as one-byte tokens of a byte >= 0x80,
pieces of a character the vocabulary has no token for), ``vocab_used_share`` (the share of
the ``vocab_size`` ids used at least once) and ``pattern`` (each tokenizer's own).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _kernels
from .scripts import GROUPS, NO_SPACE_SCRIPTS, NONE, SCRIPTS, document_groups

__all__ = ["COLUMNS", "ALL", "GroupTotals", "fallback_table"]

COLUMNS = ("tokenizer", "vocab_size", "group", "documents", "bytes", "chars", "words", "tokens", "bytes_per_token",
           "chars_per_token", "tokens_per_word", "byte_fallback_share", "vocab_used_share", "pattern")
ALL = "all"


def fallback_table(tok) -> np.ndarray:
    """uint8 per id of ``tok``: 1 for the token of one byte >= 0x80 (a byte fallback)."""
    table = np.zeros(tok.n_vocab, dtype=np.uint8)
    for b in range(0x80, 0x100):
        try:
            table[tok.encode_single_token(bytes([b]))] = 1
        except KeyError:
            pass
    return table


class GroupTotals:
    """Sums per group for ``n_vocabs`` tokenizers (their vocabulary sizes)."""

    def __init__(self, n_vocabs: list[int]):
        self.n_vocabs = list(n_vocabs)
        self.documents = np.zeros(0, dtype=np.int64)
        self.bytes = np.zeros(0, dtype=np.int64)
        self.chars = np.zeros(0, dtype=np.int64)
        self.words = np.zeros(0, dtype=np.int64)
        self.letters = np.zeros((0, len(SCRIPTS)), dtype=np.int64)
        self.tokens = np.zeros((len(n_vocabs), 0), dtype=np.int64)
        self.fallback = np.zeros((len(n_vocabs), 0), dtype=np.int64)
        self.used = [np.zeros((0, v), dtype=np.uint8) for v in n_vocabs]

    @property
    def n_groups(self) -> int:
        return len(self.documents)

    def ensure(self, n_groups: int) -> None:
        """Room for groups ``0 .. n_groups - 1``."""
        more = n_groups - self.n_groups
        if more <= 0:
            return
        def longer(a: np.ndarray, axis: int = 0) -> np.ndarray:
            shape = list(a.shape)
            shape[axis] = more
            return np.concatenate([a, np.zeros(shape, dtype=a.dtype)], axis=axis)

        self.documents, self.bytes, self.chars, self.words = (longer(a) for a in (self.documents, self.bytes, self.chars, self.words))
        self.letters = longer(self.letters)
        self.tokens, self.fallback = longer(self.tokens, 1), longer(self.fallback, 1)
        self.used = [longer(u) for u in self.used]

    def add_text(self, data: np.ndarray, docs: np.ndarray, classes: np.ndarray, scripts: np.ndarray,
                 labels: np.ndarray | None) -> np.ndarray:
        """Add the text sums of documents ``docs`` of ``data``; returns each document's group
        (``labels``, or by script when None)."""
        n = len(docs)
        chars = np.zeros(n, dtype=np.int64)
        words = np.zeros(n, dtype=np.int64)
        letters = np.zeros((n, len(SCRIPTS)), dtype=np.int64)
        _kernels.text_stats(data, docs, classes, scripts, chars, words, letters)
        groups = document_groups(letters) if labels is None else np.asarray(labels, dtype=np.int32)
        self.ensure(len(GROUPS) if labels is None else int(groups.max(initial=-1)) + 1)
        np.add.at(self.documents, groups, 1)
        np.add.at(self.bytes, groups, docs[:, 1] - docs[:, 0])
        np.add.at(self.chars, groups, chars)
        np.add.at(self.words, groups, words)
        np.add.at(self.letters, groups, letters)
        return groups

    def add_ids(self, t: int, ids: np.ndarray, doc_end: np.ndarray, groups: np.ndarray, fallback: np.ndarray) -> None:
        """Add tokenizer ``t``'s ids of documents (in groups ``groups``) ending at ``doc_end``."""
        per_doc = np.zeros(len(doc_end), dtype=np.int64)
        _kernels.token_stats(ids, doc_end, groups, fallback, self.used[t], per_doc)
        np.add.at(self.tokens[t], groups, np.diff(doc_end, prepend=0))
        np.add.at(self.fallback[t], groups, per_doc)

    def add_words(self, t: int, group: int, ids: np.ndarray, word_end: np.ndarray, counts: np.ndarray, fallback: np.ndarray) -> None:
        """Add tokenizer ``t``'s ids of unique words (ending at ``word_end``, each counted
        ``counts`` times) of one group."""
        used = np.zeros(self.n_vocabs[t], dtype=np.uint8)
        tokens, fallbacks = _kernels.word_token_stats(ids, word_end, counts, fallback, used)
        self.tokens[t, group] += tokens
        self.fallback[t, group] += fallbacks
        self.used[t][group] |= used

    def rows(self, names: list[str], patterns: list[str], group_names: list[str], by_script: bool) -> list[dict[str, Any]]:
        """The report rows: per tokenizer, each group with documents (in ``group_names``
        order), then ``all``."""
        present = [g for g in range(self.n_groups) if self.documents[g] > 0]
        out = []
        for t, name in enumerate(names):
            for g in [*present, None]:
                pick: Any = slice(None) if g is None else g
                letters = self.letters[pick].reshape(-1, len(SCRIPTS)).sum(axis=0)
                script = SCRIPTS[int(letters.argmax())] if letters.any() else None
                if g is not None and by_script:
                    script = group_names[g]
                words = int(self.words[pick].sum())
                tokens = int(self.tokens[t, pick].sum())
                nbytes = int(self.bytes[pick].sum())
                used = self.used[t][pick].reshape(-1, self.n_vocabs[t]).any(axis=0)
                out.append({
                    "tokenizer": name, "vocab_size": self.n_vocabs[t], "group": ALL if g is None else group_names[g],
                    "documents": int(self.documents[pick].sum()), "bytes": nbytes, "chars": int(self.chars[pick].sum()),
                    "words": words, "tokens": tokens, "bytes_per_token": _ratio(nbytes, tokens),
                    "chars_per_token": _ratio(int(self.chars[pick].sum()), tokens),
                    "tokens_per_word": None if script in NO_SPACE_SCRIPTS or script == NONE or not words else _ratio(tokens, words),
                    "byte_fallback_share": _ratio(int(self.fallback[t, pick].sum()), nbytes),
                    "vocab_used_share": _ratio(int(used.sum()), self.n_vocabs[t]), "pattern": patterns[t],
                })  # fmt: skip
        return out


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 6) if b else None
