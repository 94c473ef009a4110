"""Out-of-memory errors that say what was being built and about how much it needed.

A kernel that cannot allocate raises Numba's ``MemoryError: Allocation failed (probably too
large)``, and NumPy names an array shape: neither tells a user which stage of a pipeline ran out,
nor how much memory to give it. Public entry points turn them into one message.

>>> str(out_of_memory(MemoryError(), "encoding a text of 1,000 characters", 6000))
'out of memory while encoding a text of 1,000 characters (needs roughly 5.9 KiB)'
"""

from __future__ import annotations

import ctypes
import os
import sys
import traceback
from typing import Any

_PREFIX = "out of memory while "
_trim: Any = None  # glibc's malloc_trim, once looked up; False where there is none


def out_of_memory(exc: MemoryError, what: str, needed_bytes: int) -> MemoryError:
    """A MemoryError naming ``what`` was being built and ``needed_bytes``; ``exc`` itself when
    it already says so (an inner stage explained it). Raise it ``from exc``.

    The frames ``exc`` passed through that have returned lose their variables first, so that
    what they built is freed before the error is raised on (a caller whose message takes much
    formatting, or whose own frame holds much, frees that first)."""
    traceback.clear_frames(exc.__traceback__)
    if str(exc).startswith(_PREFIX):
        return exc
    return MemoryError(f"{_PREFIX}{what} (needs roughly {format_bytes(needed_bytes)})")


def format_bytes(n: int) -> str:
    """``n`` bytes in binary units, three significant digits.

    >>> format_bytes(512), format_bytes(3 << 30)
    ('512 B', '3.0 GiB')
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError  # pragma: no cover


def release_free_memory() -> None:
    """Return the C allocator's free memory to the system (glibc ``malloc_trim``; elsewhere
    nothing).

    glibc serves a block below its mmap threshold (which rises to the largest block freed, up
    to 32 MiB) from an arena that keeps it once freed: after a phase that freed many such
    arrays, tens of MB stay resident into the next phase, on top of its own peak.
    """
    global _trim
    if _trim is None:
        _trim = False
        if sys.platform.startswith("linux"):
            try:
                _trim = ctypes.CDLL(None).malloc_trim
                _trim.argtypes = [ctypes.c_size_t]
                _trim.restype = ctypes.c_int
            except (OSError, AttributeError):  # not glibc
                _trim = False
    if _trim:
        _trim(0)


def reservable_bytes() -> int:
    """Address space a table may take beyond what it fills (Linux maps untouched pages to
    nothing, so they cost no memory): a quarter of physical memory, or 0 where address space
    is committed up front (``vm.overcommit_memory = 2``), limited (``RLIMIT_AS``) or the
    system is not Linux."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        import resource

        with open("/proc/sys/vm/overcommit_memory") as f:
            if f.read().strip() == "2" or resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY:
                return 0
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (OSError, ValueError):
        return 0
