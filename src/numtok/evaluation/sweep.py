"""``numtok.sweep``: one training run, every vocabulary size of it evaluated on held-out text.

BPE merges are a sequence, so the tokenizer of size k is a prefix of the run to the largest
size (``train/prefix.py``): the run is made once. The held-out text is read once too: its
documents are grouped, and each group's words (the pieces of the run's pattern) are counted
with the trainer's counter. Encoding is piece by piece, so a text's tokens are its words'
tokens, each word's times its count: every size encodes only the unique words of each group.
The rows are those :func:`numtok.evaluate` gives for each prefix on the held-out text.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._native.threads import check_num_threads, usable_cores
from ..encode.buffers import padded
from ..encode.engine import run
from ..encode.tokenizer import Tokenizer
from ..pretokenizers import split_bytes
from ..pretokenizers._unicode import class_table
from ..progress import Progress
from ..train.prefix import vocab_prefix
from ..train.trainer import train_bpe
from ..train.words import WordCounter
from .documents import iter_labelled_chunks
from .runner import group_field_of, prefetched, report_rows
from .scripts import script_table
from .totals import GroupTotals, fallback_table

__all__ = ["sweep", "SweepResult", "check_sizes"]


@dataclass
class SweepResult:
    """What :func:`sweep` made: ``rows`` (as :func:`numtok.evaluate`'s, tokenizer
    ``bpe-<size>``), ``sizes`` (ascending) and ``tokenizer`` (the run to the largest size)."""

    rows: list[dict[str, Any]]
    sizes: list[int]
    tokenizer: Tokenizer = field(repr=False)

    def tokenizer_of(self, vocab_size: int) -> Tokenizer:
        """The tokenizer of ``vocab_size`` ids (one of ``sizes``, or any size of the run)."""
        return vocab_prefix(self.tokenizer, vocab_size)


def check_sizes(vocab_sizes, minimum: int = 256) -> list[int]:
    """The sizes sorted, without repeats; ValueError for none, or one below ``minimum``."""
    if isinstance(vocab_sizes, int):
        vocab_sizes = [vocab_sizes]
    sizes = sorted({int(k) for k in vocab_sizes if not isinstance(k, bool) and isinstance(k, (int, np.integer))})
    if not sizes or len(sizes) != len(set(vocab_sizes)):
        raise ValueError(f"vocab_sizes must be one or more ints, got {vocab_sizes!r}")
    if sizes[0] < minimum:
        raise ValueError(f"vocab size {sizes[0]} is below {minimum}, the byte tokens and special tokens every size holds")
    return sizes


def sweep(source, vocab_sizes, heldout, *, group_by: str = "script", field: str = "text", train_size: int | None = None,
          num_threads: int | None = None, show_progress: bool | None = None, **train_options) -> SweepResult:
    """Train once to the largest size, evaluate every size's prefix on ``heldout``.

    Args:
        source: the training source, as :func:`numtok.train_bpe` takes it (weighted too).
        vocab_sizes: the sizes to evaluate (special tokens included), e.g. ``[8192, 16384]``.
        heldout: the evaluation source, as :func:`numtok.evaluate` takes it.
        group_by, field: as for :func:`numtok.evaluate` (``field`` is also the training field).
        train_size: train to this size (default: the largest of ``vocab_sizes``).
        num_threads, show_progress: as for :func:`numtok.train_bpe`.
        **train_options: the other options of :func:`numtok.train_bpe` (``pattern``,
            ``special_tokens``, ``min_frequency``, ...).

    Raises:
        ValueError: a size below the byte tokens and special tokens, above ``train_size`` or
            above the size the run reached (it stops when no pair is left), and what
            :func:`numtok.evaluate` and :func:`numtok.train_bpe` raise.

    >>> text = ["the cat sat on the mat with the hat"] * 20
    >>> result = sweep(text, [260, 270], text, show_progress=False)
    >>> [(r["vocab_size"], r["tokens"]) for r in result.rows if r["group"] == "all"]
    [(260, 440), (270, 240)]
    """
    minimum = 256 + len(set(train_options.get("special_tokens", ()))) + (train_options.get("unk_token") is not None)
    sizes = check_sizes(vocab_sizes, minimum)
    top = sizes[-1] if train_size is None else int(train_size)
    if sizes[-1] > top:
        raise ValueError(f"vocab size {sizes[-1]} is above the training size {top}")
    group_field = group_field_of(group_by)
    threads = check_num_threads(num_threads) if num_threads is not None else usable_cores()
    tok = train_bpe(source, top, field=field, num_threads=num_threads, show_progress=show_progress, **train_options)
    if sizes[-1] > tok.n_vocab:
        raise ValueError(f"training stopped at {tok.n_vocab} tokens (no pair left to merge): vocab size {sizes[-1]} cannot be made")
    totals = GroupTotals(sizes)
    labels: dict[str, int] = {}
    counters = _count_heldout(heldout, tok.pattern, field, group_field, labels, totals, threads, show_progress)
    words = [_frozen_words(c) for c in counters]
    bar = Progress("Evaluating sizes", total=len(sizes), unit="sizes", enabled=show_progress)
    for t, k in enumerate(sizes):
        prefix = vocab_prefix(tok, k)
        fallback = fallback_table(prefix)
        for g, (data, spans, counts) in enumerate(words):
            if len(counts):
                ids, word_end = _encode_words(prefix, data, spans, threads)
                totals.add_words(t, g, ids, word_end, counts, fallback)
        bar.update(1)
    bar.close()
    rows = report_rows(totals, [f"bpe-{k}" for k in sizes], [tok.pattern] * len(sizes), group_field, labels)
    return SweepResult(rows, sizes, tok)


def _count_heldout(heldout, pattern: str, field: str, group_field: str | None, labels: dict[str, int], totals: GroupTotals,
                   threads: int, show_progress) -> list[WordCounter]:
    """One WordCounter per group of the held-out documents; their text sums go to ``totals``."""
    counters: list[WordCounter] = []
    classes, scripts = class_table(), script_table()
    bar = Progress("Counting held-out words", total=None, unit="B", enabled=show_progress)
    position = 0
    for chunk, tags in prefetched(iter_labelled_chunks(heldout, field, group_field, labels)):
        if not len(chunk.docs):
            continue
        docs = np.ascontiguousarray(chunk.docs, dtype=np.int64)
        groups = totals.add_text(padded(chunk.data), docs, classes, scripts, tags)
        while len(counters) < totals.n_groups:
            counters.append(WordCounter(track_firsts=False))
        for g in np.unique(groups).tolist():
            part = np.ascontiguousarray(docs[groups == g])
            counters[g].add_spans(chunk.data, split_bytes(chunk.data, part, pattern, num_threads=threads), position)
        position += len(chunk.data)
        bar.set(chunk.consumed)
    bar.close()
    while len(counters) < totals.n_groups:
        counters.append(WordCounter(track_firsts=False))
    return counters


def _frozen_words(counter: WordCounter) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(padded bytes of the words, their (n, 2) spans, their counts) of a counter."""
    counter.freeze()
    bounds = counter.bounds
    spans = np.ascontiguousarray(np.stack([bounds[:-1], bounds[1:]], axis=1), dtype=np.int64)
    return padded(counter.store[: int(bounds[-1])]), spans, np.asarray(counter.counts, dtype=np.int64)


def _encode_words(tok: Tokenizer, data: np.ndarray, spans: np.ndarray, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, end of each word's ids) of words given as spans, each word one piece, on up to
    ``threads`` threads (parts of about equal words)."""
    n = len(spans)
    parts = min(threads, max(1, n // 4096))
    cuts = [n * i // parts for i in range(parts + 1)]

    def encode(i: int):
        a, b = cuts[i], cuts[i + 1]
        return run(tok, data, spans[a:b], np.full(b - a, -1, dtype=np.int64), spans=spans[a:b], cache=False)

    if parts == 1:
        return encode(0)
    with ThreadPoolExecutor(parts) as pool:
        results = list(pool.map(encode, range(parts)))
    bases = np.cumsum([0] + [len(ids) for ids, _ in results[:-1]])
    return np.concatenate([ids for ids, _ in results]), np.concatenate([end + base for (_, end), base in zip(results, bases.tolist())])
