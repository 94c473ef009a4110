"""Decoding a file of token ids (as :func:`numtok.io.encode_files.encode_files` writes) back to
documents: what ``numtok decode`` runs.

End-of-text ids separate documents, written back as ``txt_docs`` says ("file": back to back,
"blank-line": one empty line between them, "line": one per line) or as one JSON record per
document (``jsonl``), so encoding then decoding gives the text back.

>>> import io, numpy as np, numtok, os, tempfile
>>> enc = numtok.load("gpt2")
>>> with tempfile.TemporaryDirectory() as d:
...     path = os.path.join(d, "ids.npy")
...     np.save(path, np.array([31373, 50256, 16390], dtype=np.uint16))
...     out = io.BytesIO()
...     decode_ids(open_ids(path, enc), enc, out, txt_docs="line")
...     out.getvalue()
2
b'hello\\nbye\\n'
"""

from __future__ import annotations

import json
import os
from typing import IO, TYPE_CHECKING

import numpy as np

from .documents import InputError
from .encode_files import eot_id, id_dtype

if TYPE_CHECKING:
    from ..encode.tokenizer import Tokenizer

__all__ = ["decode_ids", "open_ids"]

_STEP = 1 << 20  # ids decoded at a time: bounds memory on any file size


def open_ids(path: str, tok: Tokenizer, dtype: str | None = None) -> np.ndarray:
    """The ids of a ``.npy`` file or a raw little-endian file of ``dtype`` ids (default: as
    :func:`~numtok.io.encode_files.id_dtype`), memory-mapped and checked against ``tok``."""
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "No such file", path)
    ids = _read_npy(path) if path.endswith(".npy") else _read_raw(path, np.dtype(dtype) if dtype else id_dtype(tok))
    if len(ids) and int(ids.max()) >= tok.n_vocab:
        bad = int(np.argmax(np.asarray(ids) >= tok.n_vocab))
        raise InputError(f"{path}: id {int(ids[bad])} at position {bad} is not in the vocabulary "
                         f"({tok.n_vocab:,} ids): wrong tokenizer or --dtype?")
    return ids


def _read_npy(path: str) -> np.ndarray:
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"{path}: not a readable .npy file ({exc})") from None
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InputError(f"{path}: expected a 1-D integer array, got {arr.dtype} with shape {arr.shape}")
    return arr


def _read_raw(path: str, dtype: np.dtype) -> np.ndarray:
    size = os.path.getsize(path)
    if size % dtype.itemsize:
        raise InputError(f"{path}: {size} bytes is not a whole number of {dtype.name} ids (see --dtype)")
    if size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype.newbyteorder("<"), mode="r")


class _DocWriter:
    """Writes decoded documents in the ``txt_docs`` / ``jsonl`` convention, part by part."""

    def __init__(self, out: IO[bytes], txt_docs: str, jsonl: bool, field: str):
        self.out, self.jsonl, self.field = out, jsonl, field
        self.sep = {"file": b"", "blank-line": b"\n", "line": b"\n"}[txt_docs]
        self.final = b"\n" if txt_docs == "line" else b""
        self.docs = 0
        self.parts: list[bytes] = []
        self.started = False

    def part(self, data: bytes) -> None:
        if self.jsonl:
            self.parts.append(data)
            return
        if not self.started:
            self._begin()
        self.out.write(data)

    def end(self) -> None:
        if self.jsonl:
            record = {self.field: b"".join(self.parts).decode("utf-8", errors="replace")}
            self.out.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
            self.parts = []
        elif not self.started:
            self._begin()  # an empty document still takes its separator
        self.docs += 1
        self.started = False

    def close(self) -> None:
        if self.docs and not self.jsonl:
            self.out.write(self.final)

    def _begin(self) -> None:
        if self.docs:
            self.out.write(self.sep)
        self.started = True


def decode_ids(ids: np.ndarray, tok: Tokenizer, out: IO[bytes], *, eot: str | bool = True,
               txt_docs: str = "file", jsonl: bool = False, field: str = "text") -> int:
    """Decode ``ids`` (as :func:`open_ids` gives them) to the binary stream ``out``; returns the
    documents written.

    ``eot`` is the separator (see :func:`~numtok.io.encode_files.eot_id`; False: none, its
    text is kept); ``field`` names the text of ``jsonl`` records.
    """
    separator = eot_id(tok, eot)
    writer = _DocWriter(out, txt_docs, jsonl, field)
    for lo in range(0, len(ids), _STEP):
        chunk = np.asarray(ids[lo : lo + _STEP], dtype=np.int64)
        start = 0
        if separator is not None:
            for c in np.flatnonzero(chunk == separator).tolist():
                writer.part(tok.decode_bytes(chunk[start:c]))
                writer.end()
                start = c + 1
        writer.part(tok.decode_bytes(chunk[start:]))
    writer.end()  # the text after the last separator is the last document
    writer.close()
    return writer.docs
