"""The ids array of one encoding call: sized for what text usually gives, grown when it fills.

A kernel needs room for the worst case of the piece it is about to write (one id a byte, two
with an end-of-word suffix), and says ``ST_FULL`` where that room is missing. The array starts
at ``EXPECTED_IDS_PER_BYTE`` of the text, not at the worst case for all of it: that is several
times the ids (a str's characters times the most bytes one of them may take), which NumPy puts
on huge pages from 4 MiB on, and each call faulted in and cleared fresh pages. An array near the
ids' size is smaller and, below the C library's mmap threshold, made of memory the process
already has, with no page to fault in or clear. Counting (``CountSink``) keeps the worst case:
it writes nothing; so does ``encode_text`` (at most 256 KiB of text), which returns a copy of
its ids.
"""

from __future__ import annotations

import numpy as np

from .._native.hugepages import empty_written_once
from .._native.sink import CountSink

# Every script measured gives 0.2-0.4 ids a byte (English 0.22, Chinese and Hindi 0.37).
EXPECTED_IDS_PER_BYTE = 0.5
IDS_SLACK = 64
# The ids of texts of this many bytes or more stay on 4 KiB pages (see _native/hugepages.py):
# on huge pages a fault may stall while the system finds a 2 MiB page, so a first call on a
# long text, and calls on new strs, ran slower and varied more.
SMALL_PAGES_TEXT = 64 << 20


class IdsOut:
    """The ids of a call's ``nbytes`` of text (at most) and ``n_docs`` documents (each may add
    a special token), sized for ``likely_bytes`` of text if given; ``count``: a ``CountSink``
    for the worst case instead.

    >>> out = IdsOut(nbytes=1000, n_docs=1, per_byte=1)
    >>> len(out.array)
    565
    >>> out.array[:3] = [7, 8, 9]
    >>> out.grow(k=3, rest_bytes=2000, rest_docs=1)
    >>> len(out.array) >= 3 + 1000, out.array[:3].tolist()
    (True, [7, 8, 9])
    >>> out.result(3).tolist()
    [7, 8, 9]
    """

    __slots__ = ("array", "per_byte", "small_pages")

    def __init__(self, nbytes: int, n_docs: int, per_byte: int, count: bool = False, likely_bytes: int | None = None):
        likely = nbytes if likely_bytes is None else likely_bytes
        self.per_byte = per_byte
        self.small_pages = likely >= SMALL_PAGES_TEXT
        worst = _worst(nbytes, n_docs, per_byte)
        self.array = CountSink(worst) if count else empty_written_once(min(worst, _expected(likely, n_docs)), np.int32, self.small_pages)

    def grow(self, k: int, rest_bytes: int, rest_docs: int) -> None:
        """More room after the ``k`` ids written, for ``rest_bytes`` of text and ``rest_docs``
        documents still to encode: at least 1.5x, never past their worst case."""
        if isinstance(self.array, CountSink):  # pragma: no cover - sized for the worst case
            raise AssertionError("a count sink is never full")
        size = min(k + _worst(rest_bytes, rest_docs, self.per_byte), max(len(self.array) * 3 // 2, k + _expected(rest_bytes, rest_docs)))
        grown = empty_written_once(size, np.int32, self.small_pages)
        grown[:k] = self.array[:k]
        self.array = grown

    def result(self, k: int) -> np.ndarray:
        """The first ``k`` ids, in the array itself (shrunk in place)."""
        array = self.array
        assert isinstance(array, np.ndarray)  # a count sink has no ids
        if k < len(array):
            array.resize(k, refcheck=False)
        return array


def _worst(nbytes: int, n_docs: int, per_byte: int) -> int:
    return nbytes * per_byte + n_docs + 1


def _expected(nbytes: int, n_docs: int) -> int:
    return int(nbytes * EXPECTED_IDS_PER_BYTE) + n_docs + IDS_SLACK
