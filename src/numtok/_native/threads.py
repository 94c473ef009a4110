"""How many threads numtok uses: the default, and the one rule every public ``num_threads`` follows."""

from __future__ import annotations

import functools
import numbers
import os


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


@functools.lru_cache(maxsize=1)
def cores_at_start() -> int:
    """:func:`usable_cores` once per process (a system call is too much for every short call)."""
    return usable_cores()


def check_num_threads(num_threads: object) -> int:
    """A public ``num_threads`` argument as a thread count: ``None`` means :func:`usable_cores`,
    otherwise it must be an int >= 1.

    >>> check_num_threads(3)
    3
    >>> check_num_threads(0)
    Traceback (most recent call last):
    ValueError: num_threads must be an int >= 1 or None, got 0
    """
    if num_threads is None:
        return usable_cores()
    # numbers.Integral covers NumPy integers without importing NumPy; bool is an int but no count.
    if isinstance(num_threads, bool) or not isinstance(num_threads, numbers.Integral):
        raise TypeError(f"num_threads must be an int >= 1 or None, not {type(num_threads).__name__}")
    if num_threads < 1:
        raise ValueError(f"num_threads must be an int >= 1 or None, got {num_threads}")
    return int(num_threads)
