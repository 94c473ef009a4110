"""Running the encoder kernels over documents: pre-tokenize, encode, on one or many threads.

Functions here take the :class:`numtok.Tokenizer` whose tables they pass to the kernels. A
named pattern's short text is split and encoded by one kernel call (``encode_whole``); longer
input is cut into documents and groups of about ``CHUNK_BYTES`` so that one huge text still
spreads over threads. A named pattern's kernels scan and encode a batch of pieces at a time
(``encode_scanned``), so the pieces' spans stay in cache.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..pretokenizers import _scanners, split_bytes
from ..pretokenizers._unicode import class_table
from . import _kernels as _k
from .output import IdsOut
from .piece_cache import NO_CACHE
from .special import NO_SPECIAL

# Pieces of at least this many symbols are merged with the heap (O(n log n)); shorter ones
# with the O(n*m) scan, which is faster when n is small (tiktoken switches at 100 bytes). CJK
# letter runs of 16-63 bytes merge faster with the heap (behind the pair filter); English is
# the same either way.
HEAP_MIN = 16
# encode_batch cuts the documents into tasks of about this many bytes (more tasks than
# threads, so that uneven documents still balance).
TASK_BYTES = 1 << 20
# Documents are pre-tokenized and encoded in groups of about this many bytes (within a group,
# a named pattern's pieces a batch at a time: encode_scanned).
CHUNK_BYTES = 1 << 18


def encode_docs(tok, data, docs, doc_special, threads: int, count: bool = False):
    """Encode documents (ranges of ``data``) on ``threads`` threads; returns (ids, doc_end).
    ``count``: only count the ids (ids is None; ``doc_end`` as when they are written).

    For the named patterns, long documents are first cut where every pattern ends a piece,
    so that the pre-tokenizer's output stays small and cache-resident, and so that one huge
    text still spreads over threads.
    """
    n_docs = len(docs)
    if len(doc_special) != n_docs:
        doc_special = np.full(n_docs, -1, dtype=np.int64)
    if len(data) <= tok._chunk_bytes:  # short input: one group on this thread, no cutting
        return run(tok, data, docs, doc_special, total=len(data), count=count)
    last = None
    if tok._cuttable and n_docs and int((docs[:, 1] - docs[:, 0]).max()) > 2 * tok._chunk_bytes:
        docs, parent = _k.cut_documents(data, docs, tok._chunk_bytes)
        last = np.flatnonzero(np.append(parent[1:] != parent[:-1], True))
        special = np.full(len(docs), -1, dtype=np.int64)
        special[last] = doc_special
        doc_special = special
    tasks = cut_tasks(docs, threads, tok._chunk_bytes)
    if threads == 1 or len(tasks) == 1:
        results = [run(tok, data, docs[a:b], doc_special[a:b], count=count) for a, b in tasks]
    else:
        with ThreadPoolExecutor(max_workers=min(threads, len(tasks))) as pool:
            results = list(pool.map(lambda ab: run(tok, data, docs[ab[0] : ab[1]], doc_special[ab[0] : ab[1]], count=count), tasks))
    if len(results) == 1:
        ids, doc_end = results[0]
    else:
        sizes = np.array([output_size(r[0], r[1]) for r in results], dtype=np.int64)
        bases = np.cumsum(sizes) - sizes
        ids = None if count else np.concatenate([r[0] for r in results])
        doc_end = np.concatenate([r[1] + b for r, b in zip(results, bases.tolist())])
    if last is not None:
        doc_end = doc_end[last]
    return ids, doc_end


def output_size(ids, doc_end) -> int:
    """The number of ids a :func:`run` gave (``ids`` None: it only counted them)."""
    if ids is not None:
        return len(ids)
    return int(doc_end[-1]) if len(doc_end) else 0


def run(tok, data, docs, doc_special, *, spans=None, total=None, cache: bool = True, strict: bool = True, count: bool = False):
    """Pre-tokenize and encode consecutive documents on this thread; returns (ids, doc_end).

    ``data`` is a padded buffer from :func:`padded`. Documents are pre-tokenized
    in groups of about ``_chunk_bytes`` (or ``spans`` is given: one group). The ids go to an
    :class:`IdsOut`. ``count``: no ids are written nor kept (ids is None), ``doc_end`` is the
    same.
    """
    n_docs = len(docs)
    if total is None:
        total = int((docs[:, 1] - docs[:, 0]).sum()) if n_docs else 0
    if spans is not None or total <= tok._chunk_bytes:
        groups = [(0, n_docs)]
    else:
        groups = cut_tasks(docs, 1, tok._chunk_bytes, by_chunk=True)
    out = ids_out(tok, total, n_docs, count)
    doc_end = np.empty(n_docs, dtype=np.int64)
    caches = [tok._piece_caches.take(total) if cache else NO_CACHE]  # run_groups may grow it
    try:
        k = run_groups(tok, data, docs, doc_special, spans, groups, out, doc_end, caches, strict)
    finally:
        if cache:
            tok._piece_caches.give(caches[0])
    if count:
        return None, doc_end
    return out.result(k), doc_end


def ids_out(tok, nbytes: int, n_docs: int, count: bool = False, likely_bytes: int | None = None) -> IdsOut:
    """The ids array of a call on at most ``nbytes`` of text in ``n_docs`` documents (see
    :class:`IdsOut`)."""
    return IdsOut(nbytes, n_docs, 2 if tok._eow_id >= 0 else 1, count, likely_bytes)


def encode_range(tok, data: np.ndarray, start: int, stop: int, out: IdsOut, k: int, piece_cache: np.ndarray) -> int:
    """Encode the text ``data[start:stop]`` of a named pattern (padded, or followed by more
    text) into ``out`` from position ``k`` (growing it); returns the new end of its ids."""
    docs = np.array([[start, stop]], dtype=np.int64)
    return encode_scanned(tok, data, docs, NO_SPECIAL, np.empty(1, np.int64), out, k, piece_cache)


def encode_scanned(tok, data, docs, doc_special, doc_end, out: IdsOut, k: int, piece_cache: np.ndarray) -> int:
    """Pre-tokenize and encode documents of a named pattern into ``out`` from ``k`` (growing
    it), a batch of pieces at a time (``_k.ENCODE_DOCS_RANGE``); returns the new end of its
    ids."""
    while True:
        status, k, d, pos = _k.ENCODE_DOCS_RANGE[tok._scanner_id](
            data, docs, doc_special, doc_end, class_table(), out.array, k, _k.SPAN_BATCH, tok._core, piece_cache, tok._heap_min,
        )  # fmt: skip
        if status == _k.ST_DONE:
            return int(k)
        if status == _k.ST_NO_SYMBOL:
            raise ValueError(tok._no_symbol_message(data, pos))
        # ST_FULL: document d is done up to pos; the rest starts there.
        out.grow(int(k), int(docs[-1, 1] - pos), len(docs) - int(d))
        docs = docs[d:].copy()
        docs[0, 0] = pos
        doc_special, doc_end = doc_special[d:], doc_end[d:]


def run_groups(tok, data, docs, doc_special, spans, groups, out, doc_end, caches, strict) -> int:
    """Encode the documents of each group into ``out``; returns the ids written. ``caches``
    holds the call's piece cache, which may be replaced by a bigger one between groups (see
    ``PieceCaches.check``): the caller gives back ``caches[0]``."""
    k = 0
    whole = len(groups) == 1
    piece_cache = caches[0]
    for g, (g0, g1) in enumerate(groups):
        if g > 0 and piece_cache is not NO_CACHE:  # the call's bytes were counted when it took the cache
            p0, p1 = groups[g - 1]
            caches[0] = piece_cache = tok._piece_caches.check(piece_cache, int(docs[p1 - 1, 1] - docs[p0, 0]))
        gdocs, gend, gspecial = (docs, doc_end, doc_special) if whole else (docs[g0:g1], doc_end[g0:g1], doc_special[g0:g1])
        if spans is None and strict and tok._scanner_id >= 0:
            k = encode_scanned(tok, data, gdocs, gspecial, gend, out, k, piece_cache)
            continue
        gspans = spans
        if gspans is None:
            gspans = tok._split(data, gdocs)
            if gspans.dtype != np.int64 or not gspans.flags.c_contiguous or not gspans.flags.writeable:
                gspans = np.require(gspans, dtype=np.int64, requirements=["C", "W"])
        n_spans = len(gspans)
        j = d = 0
        while True:
            status, k, j, d, pos = _k.encode_spans(
                data, gspans, gdocs, gspecial, gend, j, d, out.array, k, tok._core, piece_cache, tok._heap_min,
            )  # fmt: skip
            if status == _k.ST_DONE:
                break
            if status == _k.ST_NO_SYMBOL:
                if strict:
                    raise ValueError(tok._no_symbol_message(data, pos))
                # Lenient (used by _self_encoding): drop the rest of document d and go on.
                stop = gdocs[d, 1]
                while j < n_spans and gspans[j, 0] < stop:
                    j += 1
                gend[d] = k
                d += 1
                continue
            out.grow(int(k), int(gdocs[-1, 1] - (gspans[j, 0] if j < n_spans else gdocs[d, 1])), len(gdocs) - int(d))
    return k

# Piece caches: kernels write to the cache they are given, so each running call takes one
# from this tokenizer's free list (or makes one) and gives it back afterwards; caches
# outlive calls and threads, and are never shared by two calls at once.


def splitter(pattern: str, name: str | None):
    """A function (data, docs) -> piece spans, on the calling thread.

    Our inputs are already checked (C-contiguous uint8 data, int64 (m, 2) ranges inside it),
    so a named pattern goes straight to its Numba scanner (``_scanners.split_named``, which
    skips ``split_bytes``'s argument checks, which cost more than a short text's scan); anything else through
    ``split_bytes``.
    """
    if name is not None and _scanners.has_scanner(name):
        split_named = _scanners.split_named
        return lambda data, docs: split_named(data, docs, name, 1)
    return lambda data, docs: split_bytes(data, docs, pattern, 1)



def cut_tasks(docs: np.ndarray, threads: int, chunk: int, by_chunk: bool = False) -> list[tuple[int, int]]:
    """Cut documents into consecutive groups of roughly equal bytes.

    ``by_chunk``: groups of about ``chunk`` bytes (pre-tokenizer output stays cache-sized);
    else one group per thread-task: about 4 tasks per thread, at most 1 MiB each, so that
    uneven documents still balance.
    """
    n = len(docs)
    if n == 0:
        return [(0, 0)]
    sizes = docs[:, 1] - docs[:, 0]
    total = int(sizes.sum())
    if by_chunk:
        target = chunk
    elif threads == 1:
        return [(0, n)]
    else:
        target = min(TASK_BYTES, max(chunk // 4, total // (4 * threads) + 1))
    if total <= target:
        return [(0, n)]
    ends = np.cumsum(sizes)
    cuts = np.searchsorted(ends, np.arange(target, total, target), side="left") + 1
    bounds = np.unique(np.concatenate([[0], cuts[cuts < n], [n]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))

