"""Training and encoding input as a stream of UTF-8 chunks.

A source is an iterable of str (each item one sequence, like HF ``train_from_iterator``), Arrow
strings (each one sequence, read in place: ``io/arrow.py``), or a path / list of paths:
``.txt`` (each line, with its line ending, one sequence, like HF ``train(files)``), ``.jsonl``
(the "text" field of each record), either optionally ``.gz``, or ``.parquet`` (the "text"
column, streamed: ``io/parquet.py``).
Chunks carry many sequences in one uint8 buffer plus their byte ranges, so the corpus is never
held as Python strings: only the current chunk is in memory.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterable, Iterator, cast

import numpy as np

from .._native.utf8 import utf8_bytes, utf8_error_offset
from .arrow import is_arrow, is_parquet_path, string_arrays, text_slabs

DEFAULT_CHUNK_BYTES = 8 << 20  # bounds memory: a chunk, its line ranges and its spans, twice in flight


@dataclass
class TextChunk:
    """One piece of a source: ``docs`` are [start, end) byte ranges of sequences in ``data``."""

    data: np.ndarray  # uint8, valid UTF-8
    docs: np.ndarray  # int64 (m, 2)
    consumed: int  # source bytes read so far (for progress), after this chunk


def is_path_source(source) -> bool:
    """A str or PathLike is a path; a list is a list of paths when any item is a PathLike or an
    existing file (then a missing one raises FileNotFoundError), else a list of sequences."""
    if isinstance(source, (str, os.PathLike)):
        return True
    return isinstance(source, (list, tuple)) and any(
        isinstance(s, os.PathLike) or (isinstance(s, str) and len(s) < 4096 and os.path.isfile(s)) for s in source
    )


def source_paths(source) -> list[str]:
    paths = [os.fspath(source)] if isinstance(source, (str, os.PathLike)) else [os.fspath(p) for p in source]
    for p in paths:
        if not os.path.isfile(p):
            raise FileNotFoundError(f"training file not found: {p}")
    return paths


def source_size(source) -> int | None:
    """Total bytes of a path source (compressed size for .gz), of the text of a pyarrow array,
    or None for an iterable."""
    if is_arrow(source):
        return arrow_text_bytes(source)
    if not is_path_source(source):
        return None
    return sum(os.path.getsize(p) for p in source_paths(source))


def iter_chunks(
    source,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    special_tokens: Iterable[str] = (),
    field: str = "text",
    cut_long_lines: bool = False,
) -> Iterator[TextChunk]:
    """Yield the source as TextChunks of about ``chunk_bytes`` bytes.

    ``cut_long_lines``: a .txt line longer than a chunk is streamed in parts cut where no piece
    of the named patterns spans (only right for them; not done when a special token holds a
    space, which could span the cut).

    Occurrences of ``special_tokens`` are cut out of the sequences (they end a sequence and are
    not part of any piece), so nothing is ever merged across or into a special token.

    >>> [bytes(c.data[s:e]) for c in iter_chunks(["ab<s>c", "d"], special_tokens=["<s>"]) for s, e in c.docs]
    [b'ab', b'c', b'd']
    """
    specials = [s for s in special_tokens if s]
    cutter = re.compile(b"|".join(re.escape(s.encode("utf-8")) for s in sorted(specials, key=len, reverse=True))) if specials else None
    if is_arrow(source):
        raw = _iter_arrow_chunks(string_arrays(source), chunk_bytes)
    elif is_path_source(source):
        cut = cut_long_lines and not any(" " in s for s in specials)
        raw = _iter_path_chunks(source_paths(source), chunk_bytes, field, cut)
    elif isinstance(source, (bytes, bytearray)):
        raise TypeError("source must be an iterable of str or a path (or list of paths), not bytes")
    else:
        try:
            iterator = iter(source)
        except TypeError:
            raise TypeError(f"source must be an iterable of str or a path, not {type(source).__name__}") from None
        raw = _iter_text_chunks(iterator, chunk_bytes)
    for chunk in raw:
        if cutter is not None:
            chunk.docs = cut_out(chunk.data, chunk.docs, cutter)
        yield chunk


def _iter_text_chunks(items: Iterator, chunk_bytes: int) -> Iterator[TextChunk]:
    parts: list[bytes] = []
    size = 0
    consumed = 0
    for item in items:
        texts: list | tuple
        if isinstance(item, str):
            texts = (item,)
        elif isinstance(item, (list, tuple)):
            texts = item  # a batch of sequences, as HF accepts
        else:
            raise TypeError(f"source items must be str, not {type(item).__name__}")
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"source items must be str, not {type(text).__name__}")
            b = utf8_bytes(text)
            parts.append(b)
            size += len(b)
            consumed += len(b)
        if size >= chunk_bytes:
            yield chunk_from_parts(parts, consumed)
            parts, size = [], 0
    if parts:
        yield chunk_from_parts(parts, consumed)


def chunk_from_parts(parts: list[bytes], consumed: int) -> TextChunk:
    lengths = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))
    ends = np.cumsum(lengths)
    docs = np.stack([ends - lengths, ends], axis=1)
    data = np.frombuffer(b"".join(parts), dtype=np.uint8)
    return TextChunk(data, docs[lengths > 0], consumed)


def open_binary(path: str) -> BinaryIO:
    """``path`` opened for reading bytes, decompressed if it ends in ``.gz``."""
    return cast(BinaryIO, gzip.open(path, "rb")) if path.endswith(".gz") else open(path, "rb")


def _iter_path_chunks(paths: list[str], chunk_bytes: int, field: str, cut_long_lines: bool = False) -> Iterator[TextChunk]:
    consumed_before = 0
    for path in paths:
        inner = path[:-3] if path.endswith(".gz") else path
        reader = _iter_jsonl_file if inner.endswith(".jsonl") else _iter_text_file
        if is_parquet_path(path):
            reader = _iter_parquet_file
        chunks = _iter_text_file(path, chunk_bytes, field, cut_long_lines) if reader is _iter_text_file else reader(path, chunk_bytes, field)
        for chunk in chunks:
            chunk.consumed += consumed_before
            yield chunk
        consumed_before += os.path.getsize(path)


def raw_position(f) -> int:
    # For .gz report the compressed position, so progress matches the file size on disk.
    inner = getattr(f, "fileobj", None)
    return inner.tell() if inner is not None else f.tell()


def validate_utf8(data: np.ndarray, path: str, offset: int) -> None:
    bad = utf8_error_offset(data)
    if bad >= 0:
        raise ValueError(f"{path}: not valid UTF-8 at byte offset {offset + bad}")


def safe_cut(block: bytes | bytearray, lo: int, hi: int | None = None) -> int:
    """The last position ``c > lo`` in ``block[:hi]`` where an ASCII letter is followed by a space,
    or -1. No piece of the named patterns (gpt2, r50k, cl100k, o200k) spans such a position
    (the letter run ends there, and the piece that starts there is the same whether or not
    text precedes it), so the two sides encode exactly as the whole does.

    >>> safe_cut(b"hello world, 1 2", 1)
    5
    """
    hi = len(block) if hi is None else hi
    c = block.rfind(b" ", lo, hi)
    while c > lo:
        if 97 <= (block[c - 1] | 0x20) <= 122:
            return c
        c = block.rfind(b" ", lo, c)
    return -1


def _iter_text_file(path: str, chunk_bytes: int, field: str, cut_long_lines: bool = False) -> Iterator[TextChunk]:
    """Each line with its line ending is one sequence (HF ``train(files)``). ``cut_long_lines``:
    a line longer than a chunk is cut at :func:`safe_cut` positions into sequences of about a
    chunk (the named patterns' pieces, and so the counts, are those of the whole line), so it
    is streamed; otherwise it is read whole."""
    offset = 0
    carry = b""
    try:
        with open_binary(path) as f:
            while True:
                # Read into one buffer after the carried bytes: a read then a concatenation
                # would hold the block twice.
                buf = bytearray(len(carry) + chunk_bytes)
                buf[: len(carry)] = carry
                size = len(carry) + _read_into(f, memoryview(buf)[len(carry) :])
                if size == len(carry):
                    break
                cut = buf.rfind(b"\n", 0, size) + 1
                if cut == 0 and cut_long_lines and size >= chunk_bytes:
                    cut = max(0, safe_cut(buf, size // 2, size))
                if cut == 0:
                    carry = bytes(buf[:size])
                    continue
                data = np.frombuffer(buf, dtype=np.uint8)[:cut]  # a view: no copy
                carry = bytes(buf[cut:size])
                validate_utf8(data, path, offset)
                yield line_chunk(data, raw_position(f))
                offset += cut
            if carry:
                data = np.frombuffer(carry, dtype=np.uint8)
                validate_utf8(data, path, offset)
                yield line_chunk(data, raw_position(f))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot read: {exc}") from None


def _read_into(f, view: memoryview) -> int:
    """Fill ``view`` from ``f`` (to the end of the file at most); returns the bytes read."""
    done = 0
    while done < len(view):
        n = f.readinto(view[done:])
        if not n:
            break
        done += n
    return done


_LINE_SCAN_BYTES = 1 << 20  # newlines are found a slice at a time: no chunk-sized mask


def line_chunk(data: np.ndarray, consumed: int) -> TextChunk:
    parts = [np.flatnonzero(data[k : k + _LINE_SCAN_BYTES] == 10) + (k + 1) for k in range(0, len(data), _LINE_SCAN_BYTES)]
    n = sum(len(p) for p in parts)
    docs = np.empty((n + 1, 2), dtype=np.int64)
    if n:
        np.concatenate(parts, out=docs[:n, 1])
    if n == 0 or docs[n - 1, 1] != len(data):  # the last line has no newline
        docs[n, 1] = len(data)
        n += 1
    docs = docs[:n]
    docs[0, 0] = 0
    docs[1:, 0] = docs[:-1, 1]
    return TextChunk(data, docs, consumed)


class JsonlRecordError(ValueError):
    """A line of a .jsonl file that is not a record with a string ``field``.

    ``reason`` says what is wrong: "json" (not JSON; ``detail`` is the parser's message),
    "field" (not an object with ``field``) or "type" (``field`` is not a string).
    """

    _MESSAGES = {
        "json": "{path}: line {line_no} is not a JSON object: {detail}",
        "field": "{path}: line {line_no} has no {field!r} field",
        "type": "{path}: line {line_no}: field {field!r} is not a string",
    }

    def __init__(self, path: str, line_no: int, field: str, reason: str, detail: str = ""):
        self.path, self.line_no, self.field, self.reason, self.detail = path, line_no, field, reason, detail
        super().__init__(self._MESSAGES[reason].format(path=path, line_no=line_no, field=field, detail=detail))


def iter_jsonl_texts(f, path: str, field: str = "text") -> Iterator[str]:
    """The ``field`` of each record of the open binary .jsonl file ``f`` (blank lines skipped).

    Raises JsonlRecordError on a line that is not a record with a string ``field``.
    """
    for line_no, line in enumerate(io.BufferedReader(f) if not hasattr(f, "peek") else f, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise JsonlRecordError(path, line_no, field, "json", str(exc)) from None
        if not isinstance(record, dict) or field not in record:
            raise JsonlRecordError(path, line_no, field, "field")
        text = record[field]
        if not isinstance(text, str):
            raise JsonlRecordError(path, line_no, field, "type")
        yield text


def _iter_jsonl_file(path: str, chunk_bytes: int, field: str) -> Iterator[TextChunk]:
    """Each record's ``field`` is one sequence."""
    parts: list[bytes] = []
    size = 0
    try:
        with open_binary(path) as f:
            for text in iter_jsonl_texts(f, path, field):
                b = utf8_bytes(text)
                parts.append(b)
                size += len(b)
                if size >= chunk_bytes:
                    yield chunk_from_parts(parts, raw_position(f))
                    parts, size = [], 0
            if parts:
                yield chunk_from_parts(parts, raw_position(f))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot read: {exc}") from None


def arrow_text_bytes(source) -> int | None:
    """Bytes of text in a pyarrow array or chunked array (None for other Arrow objects, whose
    stream may be read only once)."""
    import pyarrow as pa

    if not isinstance(source, (pa.Array, pa.ChunkedArray)):
        return None
    return sum(int(slab.bounds[-1] - slab.bounds[0]) for slab in text_slabs(string_arrays(source), nulls="empty"))


def _iter_arrow_chunks(arrays: list, chunk_bytes: int, where: str = "", first: int = 0) -> Iterator[TextChunk]:
    """Arrow strings as TextChunks of about ``chunk_bytes`` (views of the Arrow buffers),
    checked like files: a null or invalid UTF-8 raises ValueError naming the text (counted
    from ``first``), after ``where``."""
    consumed = 0
    try:
        for slab in text_slabs(arrays, nulls="raise", first=first, null_hint=" (drop or fill the nulls first)"):
            bounds = slab.bounds
            cuts = np.searchsorted(bounds, np.arange(int(bounds[0]) + chunk_bytes, int(bounds[-1]), chunk_bytes), side="left")
            edges = np.unique(np.concatenate([[0], cuts, [len(slab)]]))
            for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()):
                lo, hi = int(bounds[a]), int(bounds[b])
                data = slab.data[lo:hi]
                part = slab.docs(a, b) - lo
                bad = utf8_error_offset(data)
                if bad >= 0:
                    k = int(np.searchsorted(part[:, 1], bad, side="right"))
                    raise ValueError(f"text {slab.first + a + k} is not valid UTF-8 (at its byte {bad - int(part[k, 0])})")
                consumed += hi - lo
                yield TextChunk(data, part[part[:, 1] > part[:, 0]], consumed)
    except ValueError as exc:
        raise ValueError(f"{where}{exc}") from None


def _iter_parquet_file(path: str, chunk_bytes: int, field: str) -> Iterator[TextChunk]:
    """Each row's ``field`` is one sequence; row groups are streamed a batch at a time."""
    from .parquet import parquet_batches

    first = 0
    column: Any
    for column, consumed in parquet_batches(path, field, target_bytes=chunk_bytes):
        for chunk in _iter_arrow_chunks(string_arrays(column), chunk_bytes, f"{path}: column {field!r}: ", first):
            chunk.consumed = consumed
            yield chunk
        first += len(column)


def cut_out(data: np.ndarray, docs: np.ndarray, cutter: re.Pattern[bytes]) -> np.ndarray:
    """Remove every match of ``cutter`` from the document ranges (a match ends a sequence)."""
    matches = np.array([m.span() for m in cutter.finditer(data.tobytes())], dtype=np.int64).reshape(-1, 2)
    if not len(matches):
        return docs
    # Cut at every document and match boundary; keep the intervals inside a document and
    # outside every match.
    points = np.unique(np.concatenate([docs.ravel(), matches.ravel()]))
    lo, hi = points[:-1], points[1:]
    d = np.searchsorted(docs[:, 0], lo, side="right") - 1
    in_doc = (d >= 0) & (hi <= docs[np.maximum(d, 0), 1])
    k = np.searchsorted(matches[:, 0], lo, side="right") - 1
    in_match = (k >= 0) & (lo < matches[np.maximum(k, 0), 1])
    keep = in_doc & ~in_match & (hi > lo)
    return np.stack([lo[keep], hi[keep]], axis=1)
