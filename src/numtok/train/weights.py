"""Weighted training sources: every word counted in a source counts ``w`` times.

The rule, applied to each word's count ``c`` in one source (after that source is counted whole):

* an integer weight (``3``, ``3.0``) multiplies exactly: ``c * w`` in int64, so training on
  ``{src: 3}`` is training on ``[src, src, src]``;
* any other weight rounds to the nearest integer, halves up: ``floor(c * w + 0.5)``, computed
  in float64. A word whose weighted count is 0 stays in the table (it adds no pair count).

A weight is a finite real number above 0; bool, NaN, infinities, 0 and negative numbers are
refused, as is a weighted count past the int64 limit.

>>> scale_counts(np.array([1, 2, 5]), 3).tolist(), scale_counts(np.array([1, 2, 5]), 0.5).tolist()
([3, 6, 15], [1, 1, 3])
>>> weighted_sources({"en.txt": 1, "zh.txt": 2.5})
[('en.txt', 1), ('zh.txt', 2.5)]
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = ["check_weight", "scale_counts", "scale_total", "weighted_sources"]

_COUNT_MAX = 2**63 - 1


def check_weight(weight: Any, what: str = "weight") -> int | float:
    """``weight`` as an int (an integer value) or a float; ValueError unless finite and > 0."""
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
        raise TypeError(f"{what} must be a number, not {type(weight).__name__}")
    value = float(weight)
    if math.isnan(value) or math.isinf(value) or value <= 0:
        raise ValueError(f"{what} must be a finite number above 0, got {weight!r}")
    if isinstance(weight, numbers.Integral):
        return int(weight)
    return int(value) if value.is_integer() else value


def scale_counts(counts: np.ndarray, weight: int | float) -> np.ndarray:
    """Each count times ``weight`` by the module's rule (a new int64 array)."""
    w = check_weight(weight)
    counts = np.asarray(counts, dtype=np.int64)
    if not len(counts):
        return counts.copy()
    largest = int(counts.max())
    if isinstance(w, int):
        if largest * w > _COUNT_MAX:
            raise ValueError(f"a count of {largest} times weight {w} passes the int64 limit of counts")
        return counts * np.int64(w)
    if largest * w >= 2.0**63:
        raise ValueError(f"a count of {largest} times weight {w} passes the int64 limit of counts")
    return np.floor(counts * w + 0.5).astype(np.int64)


def scale_total(total: int, weight: int | float) -> int:
    """A byte total times ``weight``, by the same rule (what ``corpus_bytes`` records)."""
    w = check_weight(weight)
    return int(total) * w if isinstance(w, int) else math.floor(int(total) * w + 0.5)


def weighted_sources(source: Any) -> list[tuple[Any, int | float]] | None:
    """``[(source, weight), ...]`` of a weighted source, or None for a plain one.

    A weighted source is a dict ``{source: weight}`` or a list of ``(source, weight)`` pairs
    (each source what :func:`numtok.train_bpe` takes: a path, a list of paths, an iterable of
    str, Arrow strings). Raises ValueError for a bad weight or an empty dict or list.
    """
    if isinstance(source, dict):
        pairs = list(source.items())
    elif isinstance(source, list) and source and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[1], numbers.Real) and not isinstance(p[1], bool) for p in source
    ):
        pairs = list(source)
    else:
        return None
    if not pairs:
        raise ValueError("the weighted source is empty: give at least one {source: weight}")
    return [(src, check_weight(w, f"the weight of {src!r}")) for src, w in pairs]
