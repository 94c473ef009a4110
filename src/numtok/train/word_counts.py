"""Mergeable word counts: the map step of BPE training, as NumPy arrays.

Counting the words of a corpus is the expensive, parallel part of training; only the table of
unique words is needed to learn the merges. :func:`count_words` counts one source (with the
trainer's own counter) into a :class:`WordCounts`; ``a + b`` merges two of them, so any
map-reduce engine (Dask, Spark, Ray, a shell loop) can count shards and sum the results, and
:func:`numtok.train_bpe_from_counts` learns the merges from the sum.

Words are kept in the order they first occur: ``a + b`` lists a's words, then b's new ones, which
is the first-occurrence order of a's text followed by b's, so ``tie_break="first-seen"`` still
sees the corpus order when shards are summed in that order.

>>> a = count_words(["low lower", "lowest"])
>>> b = count_words(["low low"])
>>> total = a + b
>>> len(total), total.total
(4, 5)
>>> [(w.decode(), c) for w, c in total.items()]
[('low', 2), (' lower', 1), ('lowest', 1), (' low', 1)]
"""

from __future__ import annotations

import json
import os
from typing import Iterator

import numpy as np

from ..io.atomic import atomic_write
from ..pretokenizers.patterns import resolve_pattern
from .weights import scale_counts, scale_total
from .words import WordCounter, gather_words

__all__ = ["WordCounts", "count_words"]

FORMAT = "numtok.WordCounts/1"


class WordCounts:
    """Unique pre-tokenized words with exact 64-bit counts, and how they were counted.

    Attributes:
        words: uint8, the words' UTF-8 bytes back to back, in first-occurrence order.
        offsets: int64, ``len(self) + 1`` entries; word i is ``words[offsets[i]:offsets[i + 1]]``.
        counts: int64, the count of each word.
        pattern: the pre-tokenizer the text was split with (a name, or the regex).
        special_tokens: the tokens cut out of the text before splitting.
        corpus_bytes: the UTF-8 bytes of text counted.

    ``a + b`` needs the same pattern and special tokens (ValueError otherwise). It is
    associative, and commutative as a mapping ``{word: count}`` (``==`` compares that); only
    the word order, which ``tie_break="first-seen"`` reads, follows the operands' order.
    Pickling and :meth:`save` write the words, their lengths (one byte each while words are
    shorter than 256 bytes) and the counts: no Python object per word.
    """

    __slots__ = ("words", "offsets", "counts", "pattern", "special_tokens", "corpus_bytes", "_pattern_string")

    def __init__(self, words: np.ndarray, offsets: np.ndarray, counts: np.ndarray, *, pattern: str = "gpt2",
                 special_tokens=(), corpus_bytes: int = 0):
        words = np.ascontiguousarray(words, dtype=np.uint8).reshape(-1)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64).reshape(-1)
        counts = np.ascontiguousarray(counts, dtype=np.int64).reshape(-1)
        if len(offsets) != len(counts) + 1 or offsets[0] != 0 or offsets[-1] != len(words):
            raise ValueError(f"WordCounts: {len(counts)} counts need {len(counts) + 1} offsets from 0 to "
                             f"{len(words)}, got {len(offsets)} offsets")
        if len(counts) and (np.any(np.diff(offsets) <= 0) or counts.min() < 0):
            raise ValueError("WordCounts: words must be non-empty (increasing offsets) and counts non-negative")
        name, string = resolve_pattern(pattern)
        if isinstance(special_tokens, str) or not all(isinstance(s, str) and s for s in special_tokens):
            raise TypeError(f"special_tokens must be a sequence of non-empty str, got {special_tokens!r}")
        self.words, self.offsets, self.counts = words, offsets, counts
        self.pattern = name if name is not None else string
        self._pattern_string = string
        self.special_tokens = tuple(dict.fromkeys(special_tokens))
        self.corpus_bytes = int(corpus_bytes)

    @classmethod
    def from_counter(cls, counter: WordCounter, pattern: str, special_tokens, corpus_bytes: int) -> WordCounts:
        """The counter's words in first-occurrence order (two counting threads interleave them).
        The counter is frozen: its table is freed before the words are gathered."""
        counter.freeze()
        firsts = counter.firsts
        if len(firsts) > 1 and bool((firsts[1:] < firsts[:-1]).any()):
            order = np.argsort(firsts, kind="stable")
            words, offsets, counts = gather_words(counter.store, counter.bounds, counter.counts, order)
            del order
        else:  # already in order (one counting thread): the counter's arrays are the result
            words, offsets, counts = counter.store, counter.bounds, counter.counts
        return cls(words, offsets, counts, pattern=pattern, special_tokens=special_tokens, corpus_bytes=corpus_bytes)

    # -- size ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def total(self) -> int:
        """The number of words counted (the sum of the counts)."""
        return int(self.counts.sum(dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return self.words.nbytes + self.offsets.nbytes + self.counts.nbytes

    def __repr__(self) -> str:
        return (f"WordCounts({len(self):,} unique words, {self.total:,} in all, pattern={self.pattern!r}, "
                f"special_tokens={list(self.special_tokens)!r}, {self.corpus_bytes:,} bytes of text)")

    def items(self) -> Iterator[tuple[bytes, int]]:
        """``(word, count)`` pairs in order (a Python object per word: for small tables)."""
        data = self.words.tobytes()
        bounds = self.offsets.tolist()
        for i, c in enumerate(self.counts.tolist()):
            yield data[bounds[i]:bounds[i + 1]], c

    # -- what the trainer reads (the attributes of a train.words.WordCounter) -----------------

    @property
    def n_words(self) -> int:
        return len(self.counts)

    @property
    def store(self) -> np.ndarray:
        return self.words

    @property
    def store_used(self) -> int:
        """Bytes of the unique words, end to end."""
        return int(self.offsets[-1])

    @property
    def starts(self) -> np.ndarray:
        return self.offsets[:-1]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def firsts(self) -> np.ndarray:
        return np.arange(len(self.counts), dtype=np.int64)

    # -- merging ------------------------------------------------------------------------------

    def check_compatible(self, other: WordCounts) -> None:
        """Raise ValueError unless ``other`` was counted with the same pattern and special tokens."""
        if not isinstance(other, WordCounts):
            raise TypeError(f"can only combine WordCounts with WordCounts, not {type(other).__name__}")
        if self._pattern_string != other._pattern_string:
            raise ValueError(f"cannot merge WordCounts counted with different patterns: {self.pattern!r} and {other.pattern!r}")
        if set(self.special_tokens) != set(other.special_tokens):
            raise ValueError("cannot merge WordCounts counted with different special tokens: "
                             f"{list(self.special_tokens)!r} and {list(other.special_tokens)!r}")

    def __add__(self, other: WordCounts) -> WordCounts:
        if not isinstance(other, WordCounts):
            return NotImplemented
        self.check_compatible(other)
        if len(other) == 0 or len(self) == 0:
            kept = self if len(other) == 0 else other
            return WordCounts(kept.words, kept.offsets, kept.counts, pattern=self.pattern,
                              special_tokens=self.special_tokens, corpus_bytes=self.corpus_bytes + other.corpus_bytes)
        # Words enter the counter in order, so its word order is already a's then b's new ones:
        # it keeps no first positions.
        counter = WordCounter(len(self) + len(other), store_bytes=len(self.words) + len(other.words), track_firsts=False)
        no_firsts = np.zeros(0, dtype=np.int64)
        counter.add_words(self.words, self.offsets, self.counts, no_firsts)
        counter.add_words(other.words, other.offsets, other.counts, no_firsts)
        counter.freeze()  # its arrays become the result's
        return WordCounts(counter.store, counter.bounds, counter.counts, pattern=self.pattern,
                          special_tokens=self.special_tokens, corpus_bytes=self.corpus_bytes + other.corpus_bytes)

    def __mul__(self, weight) -> WordCounts:
        """Every count times ``weight`` (the rule of :mod:`numtok.train.weights`: exact for an
        integer, else rounded halves up); ``a * 3 == a + a + a``.

        >>> [(w.decode(), c) for w, c in (count_words(["to be or not to be"]) * 2).items()]
        [('to', 2), (' be', 4), (' or', 2), (' not', 2), (' to', 2)]
        """
        if isinstance(weight, WordCounts):
            return NotImplemented
        return WordCounts(self.words, self.offsets, scale_counts(self.counts, weight), pattern=self.pattern,
                          special_tokens=self.special_tokens, corpus_bytes=scale_total(self.corpus_bytes, weight))

    __rmul__ = __mul__

    def __radd__(self, other):
        if isinstance(other, int) and other == 0:  # sum(list_of_word_counts)
            return self
        return NotImplemented

    def __eq__(self, other) -> bool:
        """The same ``{word: count}`` mapping counted the same way (word order aside)."""
        if not isinstance(other, WordCounts):
            return NotImplemented
        if (self._pattern_string, set(self.special_tokens), len(self), self.total) != (
                other._pattern_string, set(other.special_tokens), len(other), other.total):
            return False
        both = self + other
        # ``both`` lists self's words first: the same words, and other's count of each is self's.
        return len(both) == len(self) and bool(np.array_equal(both.counts, 2 * self.counts))

    __hash__ = None  # type: ignore[assignment]

    # -- files and pickling -------------------------------------------------------------------

    def _metadata(self) -> dict:
        return {"format": FORMAT, "pattern": self.pattern, "special_tokens": list(self.special_tokens),
                "corpus_bytes": self.corpus_bytes}

    def _lengths(self) -> np.ndarray:
        """Word lengths in the narrowest unsigned type that holds them (1 byte a word, usually):
        what pickles and files hold instead of the 8-byte offsets."""
        lengths = np.diff(self.offsets)
        longest = int(lengths.max()) if len(lengths) else 0
        dtype = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if longest <= np.iinfo(t).max)
        return lengths.astype(dtype)

    def __reduce__(self):
        return (_rebuild, (self.words, self._lengths(), self.counts, self._metadata()))

    def save(self, path: str | os.PathLike) -> None:
        """Write one uncompressed ``.npz`` file, atomically (a killed save leaves the old file)."""
        meta = np.frombuffer(json.dumps(self._metadata()).encode("utf-8"), dtype=np.uint8)
        with atomic_write(path, "wb") as f:
            np.savez(f, words=self.words, lengths=self._lengths(), counts=self.counts, metadata=meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> WordCounts:
        """Read a file written by :meth:`save`."""
        path = os.fspath(path)
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(data["metadata"].tobytes().decode("utf-8"))
                arrays = data["words"], data["lengths"], data["counts"]
        except FileNotFoundError:
            raise
        except (OSError, ValueError, KeyError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a WordCounts file ({exc})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ValueError(f"{path}: not a WordCounts file (format {meta.get('format') if isinstance(meta, dict) else None!r})")
        return _rebuild(*arrays, meta)


def _rebuild(words, lengths, counts, meta: dict) -> WordCounts:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return WordCounts(words, offsets, counts, pattern=meta["pattern"], special_tokens=meta["special_tokens"],
                      corpus_bytes=meta["corpus_bytes"])


def count_words(source, *, pattern: str = "gpt2", special_tokens=(), field: str = "text",
                num_threads: int | None = None, show_progress: bool | None = None) -> WordCounts:
    """Pre-tokenize and count a source as :func:`numtok.train_bpe` does, without training.

    Args:
        source: what :func:`numtok.train_bpe` takes: an iterable of str, or a path / list of
            paths (``.txt``, ``.jsonl``, optionally ``.gz``).
        pattern: "gpt2", "r50k", "cl100k", "o200k" or a regex.
        special_tokens: tokens cut out of the text (train with the same ones, ``unk_token``
            included: :func:`numtok.train_bpe_from_counts` checks).
        field: the field of ``.jsonl`` records that holds the text.
        num_threads: counting threads (default: all cores, at most 2 are used).
        show_progress: a progress bar on stderr (default: when stderr is a terminal).

    Returns:
        A :class:`WordCounts`; ``numtok.train_bpe_from_counts(count_words(src), n)`` equals
        ``numtok.train_bpe(src, n)``.
    """
    from ..io.sources import iter_chunks, source_size
    from .counting import count_chunks
    from .options import special_token_list

    name, string = resolve_pattern(pattern)
    specials = special_token_list(special_tokens)
    chunks = iter_chunks(source, special_tokens=specials, field=field, cut_long_lines=name is not None)
    counter, corpus_bytes = count_chunks(chunks, name or string, source_size(source), show_progress, num_threads)
    return WordCounts.from_counter(counter, name or string, specials, corpus_bytes)
