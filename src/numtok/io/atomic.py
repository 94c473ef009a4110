"""Atomic file writing: a save either completes or leaves the old file untouched.

The data goes to a hidden temporary file in the destination's directory (same file system, so
the final ``os.replace`` is an atomic rename), is flushed and fsynced, and only then renamed
over the destination. Any exception, KeyboardInterrupt included, removes the temporary file.
A process killed outright (SIGKILL, power loss) can leave the temporary file behind, never a
half-written file under the final name.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
>>> with atomic_write(path, "w") as f:
...     _ = f.write("hello\\n")
>>> open(path).read()
'hello\\n'
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import IO, Iterator

__all__ = ["atomic_write", "temporary_path_for"]


def temporary_path_for(path: str | os.PathLike) -> str:
    """Create (empty) and return a hidden temporary file next to ``path``: ``.NAME.<random>.tmp``."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    return tmp


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike,
    mode: str = "wb",
    *,
    encoding: str | None = None,
    newline: str | None = None,
    fsync: bool = True,
) -> Iterator[IO]:
    """Open a temporary file for writing; on a clean exit rename it to ``path``.

    Args:
        path: the destination. Its directory must exist.
        mode: "w" / "wb" (or "w+b" to read back, e.g. to patch a header): the temporary file
            always starts empty.
        encoding, newline: as for :func:`open` in text mode (encoding defaults to UTF-8).
        fsync: flush the data to disk before the rename (and the directory after it).

    The new file gets the permissions of the file it replaces, or the usual ones for a new
    file (0o666 minus the umask) rather than the 0o600 of a temporary file.
    """
    if "w" not in mode or "a" in mode or "x" in mode:
        raise ValueError(f"atomic_write needs a write mode such as 'w' or 'wb', not {mode!r}")
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory does not exist: {directory}")
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    tmp = temporary_path_for(path)
    try:
        with open(tmp, mode, encoding=encoding, newline=newline) as f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.chmod(tmp, _permissions_for(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        _fsync_directory(directory)


def _permissions_for(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    # /proc gives the umask without changing it (os.umask can only set it, racing other threads).
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_directory(directory: str) -> None:
    # Makes the rename itself durable; not possible on every platform (Windows), so best effort.
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
