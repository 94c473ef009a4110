"""The documents of input files, read as ``numtok encode`` and :func:`encode_files` see them.

* ``.jsonl`` (optionally ``.gz``): one document per record, its ``field``;
* ``.parquet``: each row of the ``field`` column is a document (read as Arrow, in place);
* ``.txt`` (optionally ``.gz``), as ``txt_docs`` says: ``"file"`` the whole file is one
  document; ``"blank-line"`` documents are separated by empty lines (not encoded); ``"line"``
  every line, without its line ending, is a document.

A long ``.txt`` document is read in pieces, cut only where no pre-token of the named patterns
spans the cut (:func:`safe_cut`), so its pieces encode exactly as the whole.

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     path = os.path.join(d, "a.txt")
...     _ = open(path, "w").write("one\\ntwo\\n\\nthree\\n")
...     [(s.text, s.new_doc) for s in iter_documents([path], "blank-line", "text", cut=False)]
[('one\\ntwo\\n', True), ('three\\n', True)]
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from .sources import JsonlRecordError, iter_jsonl_texts, open_binary, raw_position, safe_cut

__all__ = ["ArrowSegment", "InputError", "Segment", "iter_documents", "safe_cut", "DEFAULT_CHUNK_BYTES", "TXT_DOCS"]

DEFAULT_CHUNK_BYTES = 8 << 20  # text encoded per batch: bounds memory
TXT_DOCS = ("file", "blank-line", "line")
_SEGMENT_BYTES = 1 << 20  # pieces of one big document, so it still spreads over all threads


class InputError(ValueError):
    """An input file that cannot be read as documents (bad UTF-8, a bad record, a null row)."""


@dataclass
class Segment:
    """A piece of a document. ``new_doc`` marks the first piece of a document; a document
    cut into several pieces (large .txt files) is cut only where no pre-token spans the cut."""

    text: str
    new_doc: bool
    consumed: int  # input bytes read so far, over all files (compressed bytes for .gz)


@dataclass
class ArrowSegment:
    """Documents of a .parquet file as one Arrow string array (encoded in place)."""

    array: Any
    consumed: int


AnySegment = Segment | ArrowSegment


def _decode_utf8(raw: bytes, path: str, offset: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 at byte {offset + exc.start}") from None


def iter_documents(files: list[str], txt_docs: str, field: str, *, cut: bool,
                   chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[AnySegment]:
    """The documents of ``files`` in order, as Segments (or one ArrowSegment per Parquet batch).

    ``cut``: a ``"file"`` document may be cut into pieces at :func:`safe_cut` positions (only
    right for the named patterns). Raises InputError naming the file and place of bad input.
    """
    base = 0
    for path in files:
        inner = path[:-3] if path.endswith(".gz") else path
        try:
            if inner.lower().endswith((".parquet", ".parq")):
                yield from _parquet_segments(path, field, base, chunk_bytes)
            elif inner.endswith(".jsonl"):
                yield from _jsonl_segments(path, field, base)
            elif txt_docs == "file":
                yield from _file_segments(path, base, cut, min(chunk_bytes, _SEGMENT_BYTES))
            else:
                yield from _line_segments(path, base, txt_docs == "line")
        except (EOFError, gzip.BadGzipFile, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: cannot read: {exc}") from None
        base += os.path.getsize(path)


_JSONL_ERRORS = {
    "json": "{path}:{line_no}: not a JSON record ({detail})",
    "field": "{path}:{line_no}: the record has no {field!r} field (see --field)",
    "type": "{path}:{line_no}: field {field!r} is not a string",
}


def _parquet_segments(path: str, field: str, base: int, chunk_bytes: int) -> Iterator[ArrowSegment]:
    from .arrow import string_arrays
    from .parquet import parquet_batches

    first = 0
    for column, consumed in parquet_batches(path, field, target_bytes=chunk_bytes):
        try:
            string_arrays(column)
        except TypeError as exc:
            raise InputError(f"{path}: column {field!r}: {exc}") from None
        array: Any = column
        if array.null_count:
            row = first + int(np.argmax(array.is_null().to_numpy(zero_copy_only=False)))
            raise InputError(f"{path}: row {row} of column {field!r} is null")
        yield ArrowSegment(array, base + consumed)
        first += len(array)


def _jsonl_segments(path: str, field: str, base: int) -> Iterator[Segment]:
    with open_binary(path) as f:
        try:
            for text in iter_jsonl_texts(f, path, field):
                yield Segment(text, True, base + raw_position(f))
        except JsonlRecordError as exc:
            message = _JSONL_ERRORS[exc.reason].format(path=path, line_no=exc.line_no, field=field, detail=exc.detail)
            raise InputError(message) from None


def _line_segments(path: str, base: int, per_line: bool) -> Iterator[Segment]:
    offset = 0
    with open_binary(path) as f:
        if per_line:
            for raw in f:
                text = _decode_utf8(raw, path, offset)
                offset += len(raw)
                yield Segment(text[:-2] if text.endswith("\r\n") else text.rstrip("\n"), True, base + raw_position(f))
            return
        lines: list[str] = []
        for raw in f:
            text = _decode_utf8(raw, path, offset)
            offset += len(raw)
            if text in ("\n", "\r\n"):
                if lines:
                    yield Segment("".join(lines), True, base + raw_position(f))
                    lines = []
                continue
            lines.append(text)
        if lines:
            yield Segment("".join(lines), True, base + raw_position(f))


def _file_segments(path: str, base: int, cut: bool, chunk_bytes: int) -> Iterator[Segment]:
    offset = 0
    carry = b""
    first = True
    with open_binary(path) as f:
        while True:
            block = f.read(chunk_bytes)
            if not block:
                break
            data = carry + block
            c = safe_cut(data, max(1, len(data) - (chunk_bytes // 2))) if cut else -1
            if c <= 0:
                carry = data  # no safe cut yet: keep reading (memory grows only on such text)
                continue
            yield Segment(_decode_utf8(data[:c], path, offset), first, base + raw_position(f))
            first = False
            offset += c
            carry = data[c:]
        if carry or first:
            yield Segment(_decode_utf8(carry, path, offset), first, base + raw_position(f))
