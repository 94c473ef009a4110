"""How many threads numtok uses by default."""

from __future__ import annotations

import functools
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


def check_threads(num_threads) -> int:
    """The thread count a public ``num_threads`` argument asks for: None means every usable
    core; otherwise an int >= 1 (TypeError / ValueError name the bad value)."""
    if num_threads is None:
        return usable_cores()
    if isinstance(num_threads, bool) or not isinstance(num_threads, int):
        raise TypeError(f"num_threads must be an int or None, not {type(num_threads).__name__}")
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    return num_threads
