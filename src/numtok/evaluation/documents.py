"""The documents evaluation reads, as flat UTF-8 chunks, each document with its group label.

Documents are what training reads (``io/sources.py``): each line of a ``.txt`` file (with its
line ending), the ``field`` of each ``.jsonl`` record, each row of a ``.parquet`` column, each
str of an iterable. Empty documents are left out. Grouped by a field (``group_field``), the
inputs are ``.jsonl`` / ``.parquet`` files (the field of each record / row) or an iterable of
mappings (records); every document's group must be a non-empty value.

>>> labels = {}
>>> [(bytes(c.data[s:e]), int(labels_of[i])) for c, labels_of in iter_labelled_chunks(
...     [{"text": "hi", "lang": "en"}, {"text": "да", "lang": "ru"}], "text", "lang", labels)
...  for i, (s, e) in enumerate(c.docs)], labels
([(b'hi', 0), (b'\\xd0\\xb4\\xd0\\xb0', 1)], {'en': 0, 'ru': 1})
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Iterable, Iterator

import numpy as np

from .._native.utf8 import utf8_bytes, utf8_error_offset
from ..io.arrow import is_parquet_path, require_pyarrow, string_arrays, text_slabs
from ..io.sources import DEFAULT_CHUNK_BYTES, TextChunk, chunk_from_parts, is_path_source, iter_chunks, open_binary, source_paths

__all__ = ["iter_labelled_chunks"]


def iter_labelled_chunks(source, field: str, group_field: str | None, labels: dict[str, int], *,
                         chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[tuple[TextChunk, np.ndarray | None]]:
    """(chunk, int32 label of each of its documents, or None without ``group_field``).

    ``labels`` maps each group value met to its label (new values are added in the order met).
    Raises ValueError for a record without ``group_field``, an empty or null group, or an input
    that cannot carry one (a ``.txt`` file, an iterable of str).
    """
    if group_field is None:
        for chunk in iter_chunks(source, field=field, chunk_bytes=chunk_bytes):
            yield chunk, None
        return
    if is_path_source(source):
        for path in source_paths(source):
            inner = path[:-3] if path.endswith(".gz") else path
            if is_parquet_path(path):
                yield from _parquet_chunks(path, field, group_field, labels, chunk_bytes)
            elif inner.endswith(".jsonl"):
                with open_binary(path) as f:
                    yield from _record_chunks(_jsonl_records(f, path), field, group_field, labels, chunk_bytes, path)
            else:
                raise ValueError(f"{path}: grouping by the field {group_field!r} reads .jsonl and .parquet files, not this one "
                                 "(group .txt files by script)")
        return
    if isinstance(source, (str, bytes)) or not isinstance(source, Iterable):
        raise TypeError(f"source must be a path, a list of paths or an iterable of records, not {type(source).__name__}")
    yield from _record_chunks(iter(source), field, group_field, labels, chunk_bytes, "records")


def _label(value: Any, labels: dict[str, int], where: str, group_field: str) -> int:
    if value is None or value == "" or isinstance(value, (dict, list)):
        raise ValueError(f"{where}: the group {group_field!r} is empty" if value in (None, "") else
                         f"{where}: the group {group_field!r} is not a single value")
    name = value if isinstance(value, str) else str(value)
    label = labels.get(name)
    if label is None:
        label = labels[name] = len(labels)
    return label


def _jsonl_records(f, path: str) -> Iterator[Any]:
    for line_no, line in enumerate(f, start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}:{line_no}: not a JSON record ({exc})") from None


def _record_chunks(records: Iterator[Any], field: str, group_field: str, labels: dict[str, int], chunk_bytes: int,
                   name: str) -> Iterator[tuple[TextChunk, np.ndarray]]:
    parts: list[bytes] = []
    tags: list[int] = []
    size = 0
    for i, record in enumerate(records, start=1):
        where = f"{name}: record {i}"
        if not isinstance(record, Mapping):
            raise ValueError(f"{where} is not a mapping (a JSON object)")
        if field not in record:
            raise ValueError(f"{where} has no text field {field!r}")
        if group_field not in record:
            raise ValueError(f"{where} has no group field {group_field!r}")
        text = record[field]
        if not isinstance(text, str):
            raise ValueError(f"{where}: the text field {field!r} is not a string")
        label = _label(record[group_field], labels, where, group_field)
        if text:
            b = utf8_bytes(text)
            parts.append(b)
            tags.append(label)
            size += len(b)
        if size >= chunk_bytes:
            yield chunk_from_parts(parts, size), np.array(tags, dtype=np.int32)
            parts, tags, size = [], [], 0
    if parts:
        yield chunk_from_parts(parts, size), np.array(tags, dtype=np.int32)


def _parquet_chunks(path: str, field: str, group_field: str, labels: dict[str, int],
                    chunk_bytes: int) -> Iterator[tuple[TextChunk, np.ndarray]]:
    pa = require_pyarrow()
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None
    names = handle.schema_arrow.names
    for column in (field, group_field):
        if column not in names:
            raise ValueError(f"{path}: no column {column!r} (columns: {', '.join(names) or 'none'})")
    rows = 0
    consumed = 0
    size = os.path.getsize(path)
    total_rows = max(handle.metadata.num_rows, 1)
    for batch in handle.iter_batches(batch_size=max(1, min(1 << 16, chunk_bytes // 256)), columns=[field, group_field]):
        groups = batch.column(1)
        if groups.null_count:
            row = rows + int(np.argmax(groups.is_null().to_numpy(zero_copy_only=False)))
            raise ValueError(f"{path}: row {row}: the group {group_field!r} is empty")
        encoded = pc.dictionary_encode(groups.cast(pa.string()) if not pa.types.is_string(groups.type) else groups)
        values = encoded.dictionary.to_pylist()  # the distinct groups of the batch: few objects
        table = np.array([_label(v, labels, f"{path}: rows {rows}-{rows + len(batch) - 1}", group_field) for v in values] or [0],
                         dtype=np.int32)
        batch_labels = table[encoded.indices.to_numpy(zero_copy_only=False)]
        first = 0
        try:
            for slab in text_slabs(string_arrays(batch.column(0)), nulls="raise", first=rows):
                docs = slab.docs()
                bad = utf8_error_offset(slab.data)
                if bad >= 0:
                    raise ValueError(f"row {rows + first + int(np.searchsorted(docs[:, 1], bad, side='right'))} is not valid UTF-8")
                tags = batch_labels[first : first + len(slab)]
                keep = docs[:, 1] > docs[:, 0]
                first += len(slab)
                yield TextChunk(slab.data, docs[keep], consumed), tags[keep]
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: column {field!r}: {exc}") from None
        rows += len(batch)
        consumed = size * rows // total_rows
