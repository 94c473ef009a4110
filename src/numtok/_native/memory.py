"""Out-of-memory errors that say what was being built and about how much it needed.

A kernel that cannot allocate raises Numba's ``MemoryError: Allocation failed (probably too
large)``, and NumPy names an array shape: neither tells a user which stage of a pipeline ran out,
nor how much memory to give it. Public entry points turn them into one message.

>>> str(out_of_memory(MemoryError(), "encoding a text of 1,000 characters", 6000))
'out of memory while encoding a text of 1,000 characters (needs roughly 5.9 KiB)'
"""

from __future__ import annotations

_PREFIX = "out of memory while "


def out_of_memory(exc: MemoryError, what: str, needed_bytes: int) -> MemoryError:
    """A MemoryError naming ``what`` was being built and ``needed_bytes``; ``exc`` itself when
    it already says so (an inner stage explained it). Raise it ``from exc``."""
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
