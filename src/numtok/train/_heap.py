"""A binary max-heap of int64 rows, shared by the BPE and WordPiece trainers.

Row ``i`` of a 2-D array is an entry; the best entry has the highest column 0, then the lowest
column 1 (the trainers' tie-break); the other columns ride along. The heap lives in
``rows[:n]``, and callers grow the array themselves.
"""

from __future__ import annotations

from .._native.jit import cached_njit


@cached_njit(nogil=True)
def better(rows, i, j):
    """Whether entry i goes above entry j."""
    return rows[i, 0] > rows[j, 0] or (rows[i, 0] == rows[j, 0] and rows[i, 1] < rows[j, 1])


@cached_njit(nogil=True)
def swap_rows(rows, i, j):
    for c in range(rows.shape[1]):
        t = rows[i, c]
        rows[i, c] = rows[j, c]
        rows[j, c] = t


@cached_njit(nogil=True)
def sift_up(rows, i):
    while i > 0:
        parent = (i - 1) >> 1
        if not better(rows, i, parent):
            return
        swap_rows(rows, i, parent)
        i = parent


@cached_njit(nogil=True)
def sift_down(rows, i, n):
    while True:
        left = 2 * i + 1
        if left >= n:
            return
        best = left
        if left + 1 < n and better(rows, left + 1, left):
            best = left + 1
        if not better(rows, best, i):
            return
        swap_rows(rows, i, best)
        i = best
