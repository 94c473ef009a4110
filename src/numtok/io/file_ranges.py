"""Line-aligned byte ranges of one uncompressed text file, read as TextChunks.

A large ``.txt`` or ``.jsonl`` file is cut into nominal ranges ``[start, end)`` that any
process can read without looking at the others: a range holds the lines that *start* inside
it (the first partial line belongs to the range before). Reading every range in order gives
exactly the sequences :func:`numtok.io.sources.iter_chunks` gives for the whole file.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
>>> _ = open(path, "wb").write(b"one\\ntwo\\nthree\\nfour")
>>> ranges = byte_ranges(os.path.getsize(path), 6)
>>> ranges
[(0, 6), (6, 12), (12, 18)]
>>> [[bytes(c.data[s:e]) for c in iter_range_chunks(path, a, b) for s, e in c.docs] for a, b in ranges]
[[b'one\\n', b'two\\n'], [b'three\\n'], [b'four']]
"""

from __future__ import annotations

import io
import re
from typing import Iterable, Iterator

import numpy as np

from .._native.utf8 import utf8_bytes
from .sources import (
    DEFAULT_CHUNK_BYTES,
    JsonlRecordError,
    TextChunk,
    chunk_from_parts,
    cut_out,
    iter_jsonl_texts,
    line_chunk,
    validate_utf8,
)

__all__ = ["byte_ranges", "iter_range_chunks", "splittable"]


def splittable(path: str) -> bool:
    """Whether ``path`` can be read in ranges (uncompressed .txt or .jsonl)."""
    return not path.endswith(".gz")


def byte_ranges(size: int, range_bytes: int) -> list[tuple[int, int]]:
    """``[start, end)`` ranges of about ``range_bytes`` covering ``size`` bytes (one for an empty file)."""
    if range_bytes <= 0:
        raise ValueError(f"range_bytes must be positive, got {range_bytes}")
    n = max(1, -(-size // range_bytes))
    bounds = [size * i // n for i in range(n + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def iter_range_chunks(
    path: str,
    start: int,
    end: int | None,
    *,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    special_tokens: Iterable[str] = (),
    field: str = "text",
) -> Iterator[TextChunk]:
    """The lines of ``path`` that start in ``[start, end)`` (``end=None``: to the end of the file),
    as TextChunks: each line one sequence, or for ``.jsonl`` the ``field`` of each record.
    Special tokens are cut out as :func:`numtok.io.sources.iter_chunks` does."""
    specials = [s for s in special_tokens if s]
    cutter = re.compile(b"|".join(re.escape(s.encode("utf-8")) for s in sorted(specials, key=len, reverse=True))) if specials else None
    jsonl = path.endswith(".jsonl")
    with open(path, "rb") as f:
        for block, offset in _line_blocks(f, start, end, chunk_bytes):
            if jsonl:
                chunk = _jsonl_chunk(f, path, block, offset, field)
            else:
                data = np.frombuffer(block, dtype=np.uint8)
                validate_utf8(data, path, offset)
                chunk = line_chunk(data, offset + len(block) - start)
            if cutter is not None:
                chunk.docs = cut_out(chunk.data, chunk.docs, cutter)
            yield chunk


def _line_blocks(f, start: int, end: int | None, chunk_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Whole lines starting in [start, end), in blocks of about chunk_bytes, with their file offset."""
    if start > 0:
        f.seek(start - 1)
        f.readline()  # the line running into the range belongs to the range before
    position = f.tell()  # the file offset of ``carry[0]``
    carry = b""
    while end is None or position < end:
        block = f.read(chunk_bytes)
        if not block:
            if carry:
                yield carry, position
            return
        data = carry + block if carry else block
        if end is not None and end - position <= len(data):
            # The range's last line is the one holding byte end - 1: it ends at the next newline.
            nl = data.find(b"\n", end - position - 1)
            if nl >= 0:
                yield data[: nl + 1], position
                return
            carry = data
            continue
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        yield data[:cut], position
        position += cut
        carry = data[cut:]


def _jsonl_chunk(f, path: str, block: bytes, offset: int, field: str) -> TextChunk:
    try:
        parts = [utf8_bytes(t) for t in iter_jsonl_texts(io.BytesIO(block), path, field)]
    except JsonlRecordError as exc:
        # Line numbers count from the file's start, as when the file is read whole.
        here = f.tell()
        f.seek(0)
        before = f.read(offset).count(b"\n")
        f.seek(here)
        raise JsonlRecordError(path, exc.line_no + before, exc.field, exc.reason, exc.detail) from None
    return chunk_from_parts(parts, offset + len(block))
