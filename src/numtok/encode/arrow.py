"""Arrow in, Arrow out: ``encode_batch`` of an Arrow string array, ``BatchEncoding.to_arrow``.

The kernels read the Arrow data buffer where it is (``io.arrow.text_slabs``: no copy of the
text, no Python str per document). Documents are cut into tasks of about a megabyte (long ones
first cut where the pattern allows, as ``engine.encode_docs`` does), tasks run on threads, and
each task's ids are copied, in order, into one output array as soon as they are ready. That
array is sized for the worst case (one id a byte) but only the pages written are ever touched,
and it is shrunk in place at the end: the output costs its own size plus a few tasks' worth,
not the two copies a final concatenation would hold at once.

Invalid UTF-8 (Arrow does not guarantee valid UTF-8) is encoded byte for byte: the
pre-tokenizer takes each byte that starts no valid character as one "other" character (as
``split_bytes`` does), and BPE merges the bytes as for any text.
"""

from __future__ import annotations

import contextlib
import ctypes
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import numpy as np

from .._native.hugepages import empty_written_once
from ..io.arrow import require_pyarrow, string_arrays, text_slabs
from . import _kernels as _k
from .buffers import PAD, padded
from .engine import TASK_BYTES, cut_tasks, output_size, run
from .special import special_documents

_NULL_HINT = " (pass nulls='empty' to encode nulls as empty texts)"


def arrow_ids_and_offsets(tok, obj, *, threads: int, allowed: frozenset, disallowed: frozenset, nulls: str, count: bool):
    """(ids, offsets of each text's ids) of the Arrow strings ``obj`` (see
    ``Tokenizer.encode_batch``); ``count``: ids is None, no id is written nor kept."""
    arrays = string_arrays(obj)
    offsets = np.zeros(sum(len(a) for a in arrays) + 1, dtype=np.int64)
    plans = [_Plan(tok, slab, allowed, disallowed) for slab in text_slabs(arrays, nulls=nulls, readable_after=PAD, null_hint=_NULL_HINT)]
    out = None
    if not count:
        bound = sum(p.text_bytes for p in plans) * (2 if tok._eow_id >= 0 else 1) + sum(p.n_docs for p in plans) + 1
        out = empty_written_once(bound, np.int32)
    tasks = [(plan, a, b) for plan in plans for a, b in plan.tasks(threads, tok._chunk_bytes)]

    def work(task):
        plan, a, b = task
        return run(tok, plan.data, plan.docs_of(a, b), plan.special_of(a, b), count=count)

    k = 0
    with contextlib.ExitStack() as stack:
        results: Iterator = map(work, tasks)
        if threads > 1 and len(tasks) > 1:
            results = stack.enter_context(ThreadPoolExecutor(max_workers=min(threads, len(tasks)))).map(work, tasks)
        for (plan, a, b), (ids, ends) in zip(tasks, results):  # in order, each as soon as it is ready
            size = output_size(ids, ends)
            if out is not None:
                out[k : k + size] = ids
            plan.ended(a, b, ends + k, offsets)
            k += size
    for plan in plans:
        plan.finish(offsets)
    if out is not None:
        out.resize(k, refcheck=False)
    return out, offsets


class _Plan:
    """The documents of one slab and where their ends go.

    Usually the documents are the texts, made (m, 2) a task at a time from the slab's bounds,
    and each task's ends go straight into the batch's offsets. When a text holds a special
    token, or is long enough to be cut, the documents are made once for the slab: the texts cut
    by allowed special tokens (``special.special_documents``) and at ``is_cut`` positions."""

    def __init__(self, tok, slab, allowed: frozenset, disallowed: frozenset):
        self.slab = slab
        self.data = _kernel_view(slab.data)
        self.text_bytes = int(slab.bounds[-1] - slab.bounds[0])
        self.docs: np.ndarray | None = None
        self.n_docs = len(slab)
        specials = allowed | disallowed
        long = tok._cuttable and _longest(slab.bounds) > 2 * tok._chunk_bytes
        if long or (specials and tok._special_lookup.may_contain(self.data, specials)):
            docs, doc_special, last = special_documents(tok, self.data, slab.docs(), allowed, disallowed)
            if len(doc_special) != len(docs):
                doc_special = np.full(len(docs), -1, dtype=np.int64)
            self.docs, self.special, self.last = _cut_long(tok, self.data, docs, doc_special, last)
            self.doc_end = np.empty(len(self.docs), dtype=np.int64)
            self.n_docs = len(self.docs)

    def tasks(self, threads: int, chunk: int) -> list[tuple[int, int]]:
        """Runs of documents of about a megabyte (fewer for a small slab, so that every thread
        gets some), as ``engine.cut_tasks`` cuts them; also on one thread, whose output is
        then copied a task at a time instead of all at once."""
        threads = max(2, threads)
        if self.docs is not None:
            return [(a, b) for a, b in cut_tasks(self.docs, threads, chunk) if b > a]
        bounds = self.slab.bounds
        target = min(TASK_BYTES, max(chunk // 4, self.text_bytes // (4 * threads) + 1))
        cuts = np.searchsorted(bounds, np.arange(int(bounds[0]) + target, int(bounds[-1]), target), side="left")
        edges = np.unique(np.concatenate([[0], cuts, [len(self.slab)]]))
        return list(zip(edges[:-1].tolist(), edges[1:].tolist()))

    def docs_of(self, a: int, b: int) -> np.ndarray:
        return self.slab.docs(a, b) if self.docs is None else self.docs[a:b]

    def special_of(self, a: int, b: int) -> np.ndarray:
        return np.full(b - a, -1, dtype=np.int64) if self.docs is None else self.special[a:b]

    def ended(self, a: int, b: int, ends: np.ndarray, offsets: np.ndarray) -> None:
        """Documents ``a:b`` end at ``ends`` in the batch's ids."""
        if self.docs is None:
            first = self.slab.first
            offsets[first + 1 + a : first + 1 + b] = ends
        else:
            self.doc_end[a:b] = ends

    def finish(self, offsets: np.ndarray) -> None:
        if self.docs is not None:
            ends = self.doc_end if self.last is None else self.doc_end[self.last]
            offsets[self.slab.first + 1 : self.slab.first + 1 + len(ends)] = ends


def _longest(bounds: np.ndarray, block: int = 1 << 20) -> int:
    """The longest text's bytes (a block at a time: no array as long as the bounds)."""
    longest = 0
    for start in range(0, len(bounds) - 1, block):
        part = bounds[start : start + block + 1]
        if len(part) > 1:
            longest = max(longest, int(np.diff(part).max()))
    return longest


def _kernel_view(data: np.ndarray) -> np.ndarray:
    """``data`` as the kernels' array type (writable C uint8), without copying Arrow memory.

    Numba compiles a read-only array as a distinct type, so every encoder kernel would be
    compiled (and cached) a second time; the kernels only read, so a writable alias of the
    same memory is given instead, valid while the slab's owner is alive."""
    if data.flags.writeable:
        return data
    if len(data) == 0:
        return padded(b"")
    alias = memoryview((ctypes.c_uint8 * len(data)).from_address(data.ctypes.data)).cast("B")
    return np.frombuffer(alias, dtype=np.uint8)


def _cut_long(tok, data, docs, doc_special, last):
    """Documents longer than twice a chunk cut where the pattern starts a piece, so a task
    stays cache-sized and one long text spreads over threads (as ``encode_docs`` does)."""
    if not (tok._cuttable and len(docs) and int((docs[:, 1] - docs[:, 0]).max()) > 2 * tok._chunk_bytes):
        return docs, doc_special, last
    cut, parent = _k.cut_documents(data, docs, tok._chunk_bytes)
    ends_of = np.flatnonzero(np.append(parent[1:] != parent[:-1], True))
    special = np.full(len(cut), -1, dtype=np.int64)
    special[ends_of] = doc_special
    return cut, special, ends_of if last is None else ends_of[last]


def batch_to_arrow(batch):
    """A ``pa.LargeListArray`` of int32 whose buffers are ``batch.offsets`` and ``batch.ids``
    (no copy when they are contiguous, as ``encode_batch`` makes them)."""
    pa = require_pyarrow()
    ids = np.ascontiguousarray(batch.ids, dtype=np.int32)
    offsets = np.ascontiguousarray(batch.offsets, dtype=np.int64)
    values = pa.Array.from_buffers(pa.int32(), len(ids), [None, pa.py_buffer(ids)])
    return pa.Array.from_buffers(pa.large_list(pa.int32()), len(offsets) - 1, [None, pa.py_buffer(offsets)], children=[values])
