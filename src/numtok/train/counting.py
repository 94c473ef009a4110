"""Counting the words of a stream of text chunks on up to two threads.

Shared by :func:`numtok.train_bpe`, :func:`numtok.count_words` and the Dask counting tasks, so
all three count exactly alike.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

import numpy as np

from .._native.memory import out_of_memory, release_free_memory
from .._native.threads import check_num_threads
from ..io.sources import DEFAULT_CHUNK_BYTES, TextChunk
from ..pretokenizers import split_bytes
from ..progress import Progress
from .words import WordCounter

__all__ = ["count_chunks"]

# Text pre-tokenized at a time by a counting thread: its spans (16 B a piece, room for one piece
# per 3 bytes) are counting's largest buffer, so a few MB, not the chunk's half.
_SPLIT_BYTES = 1 << 20


def count_chunks(chunks: Iterable[TextChunk], pattern: str, total: int | None, show_progress, num_threads,
                  track_firsts: bool = True) -> tuple[WordCounter, int]:
    """Count the words of a stream of TextChunks; returns (counter, bytes of text)."""
    threads = min(2, check_num_threads(num_threads))
    counters = [WordCounter(track_firsts=track_firsts) for _ in range(threads)]
    bar = Progress("Counting words", total=total, unit="B", enabled=show_progress)
    position = 0

    def work(k, data, docs, base):
        for part in _batches(docs, _SPLIT_BYTES):
            counters[k].add_spans(data, split_bytes(data, part, pattern, num_threads=1), base)

    try:
        with ThreadPoolExecutor(threads) as pool:
            pending: list = []
            for chunk in chunks:
                for future in pending:  # the previous chunk; reading this one overlapped with it
                    future.result()
                pending = [pool.submit(work, k, chunk.data, part, position)
                           for k, part in enumerate(_halves(chunk.docs, threads))]
                position += len(chunk.data)
                bar.set(chunk.consumed)
            chunk = None  # type: ignore[assignment]  # the last chunk's text, freed before the tables are merged
            for future in pending:
                future.result()
        bar.close()
        for other in counters[1:]:
            counters[0].merge(other)
        del counters[1:]
        release_free_memory()  # what counting freed, before the merge loop allocates
    except MemoryError as exc:
        held = sum(c.nbytes for c in counters)
        words = sum(c.n_words for c in counters)
        counters = chunk = pending = None  # type: ignore[assignment]  # freed before the message is built
        # The word tables double when they fill, beside two chunks of input in flight.
        raise out_of_memory(exc, f"counting the words of the corpus ({position:,} bytes read, {words:,} unique words so far)",
                            2 * held + 4 * DEFAULT_CHUNK_BYTES) from exc
    return counters[0], position


def _batches(docs: np.ndarray, size: int) -> list[np.ndarray]:
    """Split document ranges into runs of about ``size`` bytes (a bigger document stays whole)."""
    if len(docs) < 2:
        return [docs]
    ends = np.cumsum(docs[:, 1] - docs[:, 0])
    if ends[-1] <= size:
        return [docs]
    cuts = np.searchsorted(ends, np.arange(size, int(ends[-1]), size), side="right")
    return [d for d in np.split(docs, np.unique(cuts)) if len(d)]


def _halves(docs: np.ndarray, parts: int) -> list[np.ndarray]:
    """Split document ranges into ``parts`` groups of about equal bytes."""
    if parts == 1 or len(docs) < 2:
        return [docs]
    sizes = np.cumsum(docs[:, 1] - docs[:, 0])
    cuts = np.searchsorted(sizes, sizes[-1] * np.arange(1, parts) / parts)
    return [d for d in np.split(docs, cuts) if len(d)]
