"""numtok's notices on stderr (the "compiling" notice, a precompiled kernel file not used) and
the switch that silences them: ``numtok --quiet``, :func:`set_quiet`, ``NUMTOK_QUIET=1``.

>>> set_quiet(True); is_quiet()
True
>>> set_quiet(False)
"""

from __future__ import annotations

import os
import sys

__all__ = ["is_quiet", "notify", "set_quiet"]

_quiet = False
_notified: set[str] = set()


def set_quiet(quiet: bool = True) -> None:
    """Silence (or allow) numtok's notices on stderr."""
    global _quiet
    _quiet = bool(quiet)


def is_quiet() -> bool:
    """Whether numtok's notices on stderr are silenced (:func:`set_quiet`, ``NUMTOK_QUIET=1``)."""
    return _quiet or bool(os.environ.get("NUMTOK_QUIET"))


def notify(message: str) -> None:
    """One line on stderr, once per message, unless numtok was asked to be quiet."""
    if message in _notified or is_quiet():
        return
    _notified.add(message)
    print(f"numtok: {message}", file=sys.stderr, flush=True)
