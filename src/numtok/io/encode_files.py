"""Encoding text files into one flat array of token ids: what ``numtok encode`` and
:func:`numtok.dask.encode_files` run.

The documents of the inputs (see :mod:`numtok.io.documents`) are encoded in batches of about
``chunk_bytes`` on all cores while the next batch is read, with the end-of-text id between
consecutive documents. The output is a ``.npy`` array, raw little-endian ids (any other name),
or a directory of token shards (:mod:`numtok.io.shards`); it appears under its final name only
once complete.

>>> import numpy as np, numtok, os, tempfile
>>> enc = numtok.load("gpt2")
>>> with tempfile.TemporaryDirectory() as d:
...     path = os.path.join(d, "a.txt")
...     _ = open(path, "w").write("hello world\\n\\nbye\\n")
...     done = encode_files([path], enc, os.path.join(d, "ids.npy"), txt_docs="blank-line")
...     np.load(os.path.join(d, "ids.npy")).tolist(), done.documents
([31373, 995, 198, 50256, 16390, 198], 2)
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from .._native.threads import check_num_threads
from ..progress import Progress
from .documents import DEFAULT_CHUNK_BYTES, TXT_DOCS, AnySegment, ArrowSegment, Segment, iter_documents
from .shards import DEFAULT_SHARD_TOKENS, ShardWriter

if TYPE_CHECKING:
    from ..encode.batch import BatchEncoding
    from ..encode.tokenizer import Tokenizer

__all__ = ["EncodedFiles", "encode_files", "eot_id", "id_dtype"]

_NPY_HEADER_BYTES = 128  # fixed, so the header can be rewritten with the final shape


@dataclass(frozen=True)
class EncodedFiles:
    """What :func:`encode_files` wrote."""

    output: str
    documents: int
    tokens: int
    input_bytes: int  # on disk (compressed bytes for .gz)
    dtype: np.dtype
    eot: int | None  # the id put between documents
    seconds: float


def id_dtype(tok: Tokenizer, forced: str | np.dtype | None = None) -> np.dtype:
    """The id type of files of ``tok``'s ids: uint16 when the vocabulary fits, else uint32;
    ``forced`` is checked to hold every id.

    >>> import numtok
    >>> id_dtype(numtok.load("gpt2")).name, id_dtype(numtok.load("o200k_base")).name
    ('uint16', 'uint32')
    """
    if forced is not None:
        dtype = np.dtype(forced)
        if tok.n_vocab > np.iinfo(dtype).max + 1:
            raise ValueError(f"dtype {dtype.name} holds ids up to {np.iinfo(dtype).max}, but the vocabulary has {tok.n_vocab:,} ids")
        return dtype
    return np.dtype(np.uint16) if tok.n_vocab <= 65536 else np.dtype(np.uint32)


def eot_id(tok: Tokenizer, eot: str | bool = True) -> int | None:
    """The id that separates documents: ``True`` = ``<|endoftext|>`` if ``tok`` has it, ``False`` =
    none, a str = that special token (ValueError if ``tok`` has no such special token).

    >>> import numtok
    >>> eot_id(numtok.load("gpt2")), eot_id(numtok.load("gpt2"), False)
    (50256, None)
    """
    specials = tok.special_tokens
    if eot is True or eot is False:
        return specials.get("<|endoftext|>") if eot else None
    if eot not in specials:
        shown = ", ".join(list(specials)[:8]) or "none"
        raise ValueError(f"eot {eot!r} is not a special token of this tokenizer (its special tokens: {shown})")
    return specials[eot]


def encode_files(
    inputs: list[str],
    tok: Tokenizer,
    output: str,
    *,
    field: str = "text",
    txt_docs: str = "file",
    dtype: str | np.dtype | None = None,
    eot: str | bool = True,
    allow_special: bool = False,
    shard_tokens: int | None = None,
    num_threads: int | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    show_progress: bool | None = None,
    tokenizer_name: str | None = None,
) -> EncodedFiles:
    """Encode the documents of ``inputs`` (.txt, .jsonl, either optionally .gz, .parquet) into
    ``output``, with the end-of-text id between consecutive documents.

    Args:
        inputs: the input files, in order.
        tok: the tokenizer.
        output: a ``.npy`` file, any other file (raw little-endian ids), or a directory for
            token shards (a path ending in the separator, or ``shard_tokens`` given).
        field: the text field of .jsonl records, the column of .parquet files.
        txt_docs: the documents of .txt files: "file", "blank-line" or "line".
        dtype: the id type (default: :func:`id_dtype`).
        eot: what goes between documents (see :func:`eot_id`).
        allow_special: special-token text encodes to its id (default: as ordinary text).
        shard_tokens: ids per shard (default for a directory: 100,000,000).
        num_threads: encoding threads (default: all usable cores).
        chunk_bytes: text encoded per batch; bounds memory.
        show_progress: a progress bar on stderr (None: when it is a terminal).
        tokenizer_name: recorded in a shard directory's index.json (default: ``tok.name``).

    Raises:
        ValueError: a bad option, or bad input (:class:`numtok.io.documents.InputError`, naming
            the file and the place).
    """
    if txt_docs not in TXT_DOCS:
        raise ValueError(f"txt_docs must be one of {', '.join(TXT_DOCS)}, not {txt_docs!r}")
    shards = shard_tokens is not None or output.endswith(os.sep)
    ids_dtype = id_dtype(tok, dtype)
    eot_token = eot_id(tok, eot)
    threads = check_num_threads(num_threads)
    total = sum(os.path.getsize(p) for p in inputs)

    def encode(texts: Any) -> BatchEncoding:  # a list of str, or an Arrow string array
        if allow_special:
            return tok.encode_batch(texts, num_threads=threads, allowed_special="all", disallowed_special=frozenset())
        return tok.encode_ordinary_batch(texts, num_threads=threads)

    started = time.perf_counter()
    n_tokens = n_docs = 0
    bar = Progress("Encoding", total=total, unit="B", enabled=show_progress)
    segments = iter_documents(inputs, txt_docs, field, cut=_cut_allowed(tok, allow_special), chunk_bytes=chunk_bytes)
    with _open_output(output, shards, shard_tokens, ids_dtype, tokenizer_name or tok.name, eot_token) as out, \
            ThreadPoolExecutor(1) as pool:
        npy = output.endswith(".npy") and not shards
        if npy:
            out.write(_npy_header(ids_dtype, 0))
        pending: tuple[Future, list[AnySegment]] | None = None  # the previous batch encodes while this one is read
        for batch in _batches(segments, chunk_bytes):
            first = batch[0]
            future = pool.submit(encode, first.array if isinstance(first, ArrowSegment) else [s.text for s in batch if isinstance(s, Segment)])
            if pending is not None:
                n, d = _write_batch(out, *pending, eot_token, ids_dtype, n_docs)
                n_tokens, n_docs = n_tokens + n, n_docs + d
                bar.set(pending[1][-1].consumed)
            pending = (future, batch)
        if pending is not None:
            n, d = _write_batch(out, *pending, eot_token, ids_dtype, n_docs)
            n_tokens, n_docs = n_tokens + n, n_docs + d
            bar.set(pending[1][-1].consumed)
        if npy:
            out.seek(0)
            out.write(_npy_header(ids_dtype, n_tokens))
    bar.close()
    return EncodedFiles(output, n_docs, n_tokens, total, ids_dtype, eot_token, time.perf_counter() - started)


def _open_output(output: str, shards: bool, shard_tokens: int | None, dtype: np.dtype, name: str | None, eot: int | None) -> Any:
    if shards:
        return ShardWriter(output, shard_tokens or DEFAULT_SHARD_TOKENS, dtype, {"tokenizer": name, "eot": eot})
    from .atomic import atomic_write

    return atomic_write(output, "w+b")


def _npy_header(dtype: np.dtype, n: int) -> bytes:
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (dtype.str, n)
    body_len = _NPY_HEADER_BYTES - 10
    text = text.ljust(body_len - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + body_len.to_bytes(2, "little") + text.encode("latin-1")


def _cut_allowed(tok: Tokenizer, allow_special: bool) -> bool:
    from ..pretokenizers.patterns import NAMED_PATTERNS

    if tok.pattern not in NAMED_PATTERNS:
        return False  # a custom regex: no cut is known to be safe, each document is read whole
    return not (allow_special and any(" " in s for s in tok.special_tokens))


def _batches(segments: Iterator[AnySegment], chunk_bytes: int) -> Iterator[list[AnySegment]]:
    """Segments in batches of about ``chunk_bytes``; an Arrow segment is a batch of its own."""
    batch: list[AnySegment] = []
    size = 0
    for seg in segments:
        if isinstance(seg, ArrowSegment):
            if batch:
                yield batch
                batch, size = [], 0
            yield [seg]
            continue
        batch.append(seg)
        size += len(seg.text)
        if size >= chunk_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _write_batch(out: Any, future: Future, segments: list[Any], eot: int | None, dtype: np.dtype, docs_before: int) -> tuple[int, int]:
    """Write one encoded batch (to a file, or a ShardWriter); returns (tokens written,
    documents started)."""
    enc = future.result()
    ids = enc.ids
    if isinstance(segments[0], ArrowSegment):
        starts = np.arange(len(enc))
    else:
        starts = np.array([i for i, s in enumerate(segments) if s.new_doc], dtype=np.int64)
    # Where each document's ids start once the end-of-text ids are in.
    doc_starts = enc.offsets[starts]
    if eot is not None and len(starts):
        # The end-of-text id goes before every document but the very first.
        at = starts[starts > 0] if not docs_before else starts
        if len(at):
            ids = np.insert(ids, enc.offsets[at], eot)
            doc_starts = doc_starts + np.searchsorted(enc.offsets[at], doc_starts, side="right")
    arr = ids.astype(dtype, copy=False)
    if hasattr(out, "shard_tokens"):
        out.write(arr, doc_starts=doc_starts)
    else:
        out.write(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
    return len(arr), len(starts)
