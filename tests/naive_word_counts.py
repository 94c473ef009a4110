"""Slow, obviously-correct word-count tables that numtok.WordCounts is checked against."""

from __future__ import annotations

import collections


def gather_naive(words: list[bytes], counts: list[int], order) -> tuple[bytes, list[int], list[int]]:
    """The words in ``order``, packed back to back, their offsets and their counts."""
    picked = [words[i] for i in order]
    offsets = [0]
    for w in picked:
        offsets.append(offsets[-1] + len(w))
    return b"".join(picked), offsets, [counts[i] for i in order]


def merge_naive(*tables: dict[bytes, int]) -> dict[bytes, int]:
    """Counts summed, words in first-seen order across the tables taken in turn."""
    total: collections.Counter = collections.Counter()
    for table in tables:
        total.update(table)  # Counter keeps insertion order: first table's words first
    return dict(total)
