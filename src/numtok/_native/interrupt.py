"""Ctrl-C during long GIL-free work: Python runs signal handlers in the main thread only,
between bytecodes, so a long kernel call on the main thread would hold KeyboardInterrupt back
until it returns."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")

__all__ = ["interruptible", "cache_numba_unpickle"]


def interruptible(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, run on a helper thread while the main thread waits for it, so that Ctrl-C
    raises KeyboardInterrupt at once rather than when a long GIL-free call returns. An
    interrupted call finishes in the background and its result is dropped, so ``fn`` must
    write nothing shared. Off the main thread: ``fn(*args)``.

    >>> interruptible(sum, [1, 2, 3])
    6
    """
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, fn(*args)))
        except BaseException as exc:  # re-raised in the caller's thread
            outcome.append((False, exc))

    helper = threading.Thread(target=run, name="numtok-interruptible", daemon=True)
    helper.start()
    helper.join()  # a signal interrupts this wait (POSIX) and its handler raises here
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def cache_numba_unpickle() -> None:
    """Put a C-level cache in front of ``numba.core.serialize._numba_unpickle``.

    Compiled code that boxes an array calls that Python function for its constants (the dtype)
    on every call. A signal handler that runs inside it (Ctrl-C's) leaves KeyboardInterrupt set
    under a result the kernel still returns, which Numba reports as ``SystemError: ...
    returned a result with an exception set``. ``functools.lru_cache`` answers every call
    after a constant's first without running bytecode, so no handler runs there, and
    KeyboardInterrupt is raised at the next bytecode instead. Numba keeps the function it finds
    at its first unpickle: this must run before any kernel does.
    """
    from numba.core import serialize

    if getattr(serialize._numba_unpickle, "numtok_cached", False):
        return
    cached = functools.lru_cache(maxsize=None)(serialize._numba_unpickle)
    cached.numtok_cached = True  # type: ignore[attr-defined]
    serialize._numba_unpickle = cached
