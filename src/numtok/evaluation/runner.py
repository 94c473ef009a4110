"""``numtok.evaluate``: compression of several tokenizers on the same documents, per group.

The source is read once, a chunk of about 8 MB at a time (the next chunk is read while this
one is encoded); each chunk's text sums are made once, then every tokenizer encodes it with
the batch encoder on all threads (special-token text as ordinary text) and only its sums are
kept: memory is a chunk and its ids, whatever the source's size.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, TypeVar

import numpy as np

from .._native.threads import check_num_threads, usable_cores
from ..encode.buffers import padded
from ..encode.engine import encode_docs
from ..encode.special import NO_SPECIAL
from ..encode.tokenizer import Tokenizer
from ..io.sources import source_size
from ..pretokenizers._unicode import class_table
from ..progress import Progress
from .documents import iter_labelled_chunks
from .scripts import GROUPS, script_table
from .totals import ALL, GroupTotals, fallback_table

__all__ = ["evaluate", "named_tokenizers", "group_field_of", "prefetched", "report_rows"]

_T = TypeVar("_T")


def evaluate(tokenizers, source, *, group_by: str = "script", field: str = "text", num_threads: int | None = None,
             show_progress: bool | None = None) -> list[dict[str, Any]]:
    """Bytes, characters and words per token of each tokenizer on each group of documents.

    Args:
        tokenizers: a :class:`numtok.Tokenizer` or a name / path :func:`numtok.load` and the
            command line accept (``"cl100k_base"``, ``"my/tokenizer.json"``), a list of them,
            or a dict ``{name: tokenizer}``. Each encodes with its own pattern.
        source: what :func:`numtok.train_bpe` reads (paths of ``.txt`` / ``.jsonl`` /
            ``.parquet`` files, optionally ``.gz``; an iterable of str), each line, record or
            str one document; with ``group_by`` a field, ``.jsonl`` / ``.parquet`` files or an
            iterable of mappings (records).
        group_by: ``"script"`` (each document's dominant script: ``evaluation/scripts.py``)
            or the name of a field holding each document's group (such as ``"lang"``).
        field: the text field of records (``.jsonl``, ``.parquet``, mappings).
        num_threads: encoding threads (default: all usable cores).
        show_progress: a progress bar on stderr (default: when stderr is a terminal).

    Returns:
        One dict per tokenizer and group (then group ``"all"``), with the columns of
        :data:`numtok.evaluation.totals.COLUMNS`.

    Raises:
        ValueError: no document, a record without the group field, an empty group, a group
            named ``"all"``, a tokenizer that cannot be loaded, duplicate names.

    >>> rows = evaluate(["gpt2", "cl100k_base"], ["Hello world, hello tokenizers!", "Привет, мир"])
    >>> [(r["tokenizer"], r["group"], r["tokens"]) for r in rows][:3]
    [('gpt2', 'latin', 7), ('gpt2', 'cyrillic', 12), ('gpt2', 'all', 19)]
    """
    named = named_tokenizers(tokenizers)
    group_field = group_field_of(group_by)
    threads = check_num_threads(num_threads) if num_threads is not None else usable_cores()
    fallbacks = [fallback_table(tok) for _, tok in named]
    totals = GroupTotals([tok.n_vocab for _, tok in named])
    labels: dict[str, int] = {}
    classes, scripts = class_table(), script_table()
    bar = Progress("Evaluating", total=source_size(source) if group_field is None else _size(source), unit="B", enabled=show_progress)
    for chunk, tags in prefetched(iter_labelled_chunks(source, field, group_field, labels)):
        if not len(chunk.docs):
            continue
        data = padded(chunk.data)
        docs = np.ascontiguousarray(chunk.docs, dtype=np.int64)
        groups = totals.add_text(data, docs, classes, scripts, tags)
        for t, (_, tok) in enumerate(named):
            ids, doc_end = encode_docs(tok, data, docs, NO_SPECIAL, threads)
            totals.add_ids(t, ids, doc_end, groups, fallbacks[t])
        bar.set(chunk.consumed)
    bar.close()
    return report_rows(totals, [name for name, _ in named], [tok.pattern for _, tok in named], group_field, labels)


def report_rows(totals: GroupTotals, names: list[str], patterns: list[str], group_field: str | None, labels: dict[str, int]) -> list[dict]:
    """The rows of ``totals``; ValueError when no document was read or a group is named ``all``."""
    if not totals.documents.sum():
        raise ValueError("no document to evaluate: the source holds no text")
    if group_field is not None and ALL in labels:
        raise ValueError(f"a document's group {group_field!r} is {ALL!r}, the name of the row of all documents: rename it")
    group_names = list(GROUPS) if group_field is None else list(labels)
    return totals.rows(names, patterns, group_names, by_script=group_field is None)


def group_field_of(group_by: str) -> str | None:
    """None for ``"script"``, else the field name (checked)."""
    if not isinstance(group_by, str) or not group_by:
        raise ValueError(f"group_by must be 'script' or a field name, got {group_by!r}")
    return None if group_by == "script" else group_by


def named_tokenizers(tokenizers) -> list[tuple[str, Tokenizer]]:
    """``[(name, Tokenizer)]`` of what :func:`evaluate` takes; names must differ."""
    from ..encode.from_spec import load_tokenizer

    if isinstance(tokenizers, dict):
        items = list(tokenizers.items())
    else:
        if isinstance(tokenizers, (str, os.PathLike, Tokenizer)):
            tokenizers = [tokenizers]
        items = [(None, t) for t in tokenizers]
    if not items:
        raise ValueError("no tokenizer to evaluate")
    named: list[tuple[str, Tokenizer]] = []
    for i, (name, spec) in enumerate(items):
        if isinstance(spec, Tokenizer):
            tok = spec
            name = name if name is not None else spec.name or f"tokenizer-{i + 1}"
        elif isinstance(spec, (str, os.PathLike)):
            tok = load_tokenizer(os.fspath(spec))
            name = name if name is not None else os.fspath(spec)
        else:
            raise TypeError(f"a tokenizer must be a numtok.Tokenizer, a name or a path, not {type(spec).__name__}")
        if any(name == other for other, _ in named):
            raise ValueError(f"two tokenizers are named {name!r}: pass a dict {{name: tokenizer}}")
        named.append((str(name), tok))
    return named


def prefetched(items: Iterator[_T]) -> Iterator[_T]:
    """``items``, the next one read on another thread while the caller works on this one."""
    done = object()
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(next, items, done)
        while True:
            item = future.result()
            if item is done:
                return
            future = pool.submit(next, items, done)
            yield item  # type: ignore[misc]


def _size(source) -> int | None:
    try:
        return source_size(source)
    except (TypeError, ValueError):
        return None
