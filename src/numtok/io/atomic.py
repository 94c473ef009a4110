"""Atomic file writing: a save either completes or leaves the old file untouched, and a killed
run leaves nothing behind.

Where the OS has unnamed files (Linux ``O_TMPFILE``), the data goes to a file without a name in
the destination's directory: if the process dies, the kernel frees it. Once the data is written
and fsynced, the file is linked under a hidden name (``.NAME.numtok-<8 hex digits>.tmp``) and renamed
over the destination at once (same file system, so the rename is atomic). Elsewhere the data goes
to such a hidden named file from the start.

A hidden temporary exists only while its writer holds an exclusive lock (``flock``) on it, so a
temporary that can be locked belongs to a dead process: the first write of a process into a
directory removes those (a run killed between link and rename, or one on a file system without
unnamed files). Any exception, KeyboardInterrupt included, removes the temporary at once.
Running out of disk space raises an ``OSError`` naming the destination, which keeps its old
content.

A set of files that belong together (a tokenizer directory, token shards) is written with
:class:`atomic_directory` into a hidden temporary directory beside the destination
(``.NAME.numtok-<8 hex digits>.tmp``, locked the same way), which then takes the destination's
place in one step: renamed there if there is none, else exchanged with it (Linux
``renameat2(RENAME_EXCHANGE)``), the old directory's other files carried over as hard links.
Stale temporary directories are removed like stale files.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
>>> with atomic_write(path, "w") as f:
...     _ = f.write("hello\\n")
>>> open(path).read(), os.listdir(os.path.dirname(path))
('hello\\n', ['vocab.txt'])
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import re
import secrets
import shutil
import stat
import threading
import time
from typing import IO, Callable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows)
    fcntl = None  # type: ignore[assignment]

__all__ = ["atomic_write", "atomic_directory", "is_temporary_name", "remove_stale_temporaries"]

# .NAME.numtok-<8 hex digits>.tmp: hidden, and distinct from other programs' temporaries.
_TEMPORARY = re.compile(r"\..+\.numtok-[0-9a-f]{8}\.tmp")
# Without locks (no fcntl) a temporary is taken for stale once it is this old.
_STALE_SECONDS = 24 * 3600
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}

_swept: set[str] = set()
_swept_lock = threading.Lock()


def is_temporary_name(name: str) -> bool:
    """Whether ``name`` (a file name, not a path) is one of numtok's hidden temporaries."""
    return _TEMPORARY.fullmatch(name) is not None


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike,
    mode: str = "wb",
    *,
    encoding: str | None = None,
    newline: str | None = None,
    fsync: bool = True,
) -> Iterator[IO]:
    """Open a temporary file for writing; on a clean exit put it in place as ``path``.

    Args:
        path: the destination. Its directory must exist.
        mode: "w" / "wb" (or "w+b" to read back, e.g. to patch a header): the temporary file
            always starts empty.
        encoding, newline: as for :func:`open` in text mode (encoding defaults to UTF-8).
        fsync: flush the data to disk before the rename (and the directory after it).

    The new file gets the permissions of the file it replaces, or the usual ones for a new
    file (0o666 minus the umask) rather than the 0o600 of a temporary file.

    Raises:
        OSError: the disk (or quota) is full, naming ``path``; the old file is kept.
    """
    if "w" not in mode or "a" in mode or "x" in mode:
        raise ValueError(f"atomic_write needs a write mode such as 'w' or 'wb', not {mode!r}")
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory does not exist: {directory}")
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    _sweep_once(directory)
    fd, named = _open_temporary(path, directory)
    f = None
    try:
        f = open(fd, mode, encoding=encoding, newline=newline)
        try:
            yield f
            f.flush()
            if fsync:
                os.fsync(fd)
        except OSError as exc:
            if exc.errno in _NO_SPACE and not getattr(exc, "numtok_named", False):  # not yet named by a nested write
                named_exc = OSError(exc.errno, f"{os.strerror(exc.errno)} while writing {path} (its previous content is kept)", path)
                named_exc.numtok_named = True  # type: ignore[attr-defined]
                raise named_exc from exc
            raise
        if named is None:
            os.chmod(fd, permissions_for(path))
            named = _link_unnamed(fd, path, directory)
        else:
            os.chmod(named, permissions_for(path))
        if fcntl is None:  # pragma: no cover (Windows cannot rename an open file)
            f.close()
        os.replace(named, path)
        named = None
    finally:
        if named is not None:
            with contextlib.suppress(OSError):
                os.unlink(named)
        # On failure, data still buffered may not fit either: the first error is the one to see.
        with contextlib.suppress(OSError):
            if f is not None:
                f.close()
            else:
                os.close(fd)
    if fsync:
        fsync_directory(directory)


def remove_stale_temporaries(directory: str | os.PathLike) -> list[str]:
    """Remove numtok's hidden temporaries in ``directory`` that no live writer holds; returns
    their names. :func:`atomic_write` calls it once per process and directory."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(os.fspath(directory)))
    except OSError:
        return removed
    for entry in entries:
        if is_temporary_name(entry.name) and _remove_if_stale(entry.path):
            removed.append(entry.name)
    return removed


def _sweep_once(directory: str) -> None:
    with _swept_lock:
        if directory in _swept:
            return
        _swept.add(directory)
    remove_stale_temporaries(directory)


def _remove_if_stale(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # a live writer holds it
        elif time.time() - os.fstat(fd).st_mtime < _STALE_SECONDS:  # pragma: no cover
            return False
        if not _same_file(fd, path):
            return False
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _same_file(fd: int, path: str) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _temporary_name(path: str, directory: str) -> str:
    return os.path.join(directory, f".{os.path.basename(path)}.numtok-{secrets.token_hex(4)}.tmp")


def _open_temporary(path: str, directory: str) -> tuple[int, str | None]:
    """(fd, None) for an unnamed file where the OS has them, else (fd, name) of a hidden file
    held locked."""
    unnamed = getattr(os, "O_TMPFILE", 0)
    if unnamed and os.path.isdir("/proc/self/fd"):
        try:
            fd = os.open(directory, unnamed | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError:
            pass  # this file system has no unnamed files (EOPNOTSUPP, EISDIR, EINVAL)
        else:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # held once linked, until it is renamed
            return fd, None
    while True:
        name = _temporary_name(path, directory)
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileExistsError:  # pragma: no cover (2**32 names)
            continue
        if fcntl is None:  # pragma: no cover
            return fd, name
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _same_file(fd, name):
            return fd, name
        # Removed as stale between its creation and the lock: take another name.
        os.close(fd)  # pragma: no cover


def _link_unnamed(fd: int, path: str, directory: str) -> str:
    """Give the unnamed file ``fd`` a hidden name in ``directory`` (a rename can then put it
    over ``path``: link cannot replace a file)."""
    # A directory fd makes os.link call linkat, which follows the /proc link to the file
    # (plain link(2) would try to link the symbolic link itself).
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        while True:
            name = _temporary_name(path, directory)
            try:
                os.link(f"/proc/self/fd/{fd}", os.path.basename(name), dst_dir_fd=dir_fd, follow_symlinks=True)
                return name
            except FileExistsError:  # pragma: no cover
                continue
    finally:
        os.close(dir_fd)


def permissions_for(path: str) -> int:
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


def fsync_directory(directory: str) -> None:
    # Makes the rename itself durable; not possible on every platform (Windows), so best effort.
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class atomic_directory:
    """A directory of several files that appears, or replaces the old one, as a whole.

    >>> import os, tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "tok")
    >>> with atomic_directory(out) as tmp:
    ...     for name in ("a.json", "b.txt"):
    ...         _ = open(os.path.join(tmp, name), "w").write(name)
    >>> sorted(os.listdir(out))
    ['a.json', 'b.txt']

    The files are written into ``tmp``, a hidden directory beside ``path`` (plain ``open`` will
    do: nothing is visible before the commit, and they are fsynced then). On a clean exit it
    takes ``path``'s place: entries of the old directory that the new one lacks and
    ``carry_over(name)`` keeps (default: all) stay, as hard links. An exception removes it.
    Where the old directory cannot be exchanged in one step (it holds a subdirectory to keep,
    it is the working directory, the OS or file system has no exchange), the new files are
    renamed into it one after another instead.
    """

    def __init__(self, path: str | os.PathLike, *, carry_over: Callable[[str], bool] | None = None):
        path = os.path.abspath(os.fspath(path))
        if os.path.islink(path):
            path = os.path.realpath(path)
        if os.path.exists(path) and not os.path.isdir(path):
            raise NotADirectoryError(f"{path} exists and is not a directory")
        self.path = path
        self.carry_over = carry_over or (lambda name: True)
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        _sweep_once(parent)
        self.tmp, fd = _make_temporary_directory(path, parent)
        self._fd: int | None = fd

    def __enter__(self) -> str:
        return self.tmp

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()

    def commit(self) -> None:
        """Put the directory in place (see the class)."""
        if self._fd is None:
            raise ValueError("this directory was already committed or aborted")
        try:
            for name in os.listdir(self.tmp):
                _fsync_path(os.path.join(self.tmp, name))
            if not os.path.isdir(self.path):
                try:
                    os.rename(self.tmp, self.path)
                    fsync_directory(os.path.dirname(self.path))
                    return
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise  # else it appeared meanwhile: replace it as below
            keep = [e for e in os.scandir(self.path) if not os.path.lexists(os.path.join(self.tmp, e.name)) and self.carry_over(e.name)]
            if any(e.is_dir(follow_symlinks=False) for e in keep) or _is_working_directory(self.path) or not _exchange_supported():
                self._rename_files_into_place()
                return
            for entry in keep:
                target = os.path.join(self.tmp, entry.name)
                if entry.is_symlink():
                    os.symlink(os.readlink(entry.path), target)
                else:
                    os.link(entry.path, target, follow_symlinks=False)
            os.chmod(self.tmp, stat.S_IMODE(os.stat(self.path).st_mode))
            fsync_directory(self.tmp)
            if not _exchange(self.tmp, self.path):
                self._rename_files_into_place()
                return
            fsync_directory(os.path.dirname(self.path))
            # self.tmp now holds the old directory (unlocked: a sweep may remove it too).
        finally:
            self._release()

    def abort(self) -> None:
        """Remove the temporary directory and everything in it."""
        self._release()

    def _rename_files_into_place(self) -> None:
        for name in sorted(os.listdir(self.tmp)):
            os.replace(os.path.join(self.tmp, name), os.path.join(self.path, name))
        fsync_directory(self.path)

    def _release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            shutil.rmtree(self.tmp)
        os.close(self._fd)
        self._fd = None


def _make_temporary_directory(path: str, parent: str) -> tuple[str, int]:
    """A new hidden directory beside ``path``, and a descriptor of it holding its lock."""
    while True:
        name = _temporary_name(path, parent)
        try:
            os.mkdir(name)
        except FileExistsError:  # pragma: no cover (2**32 names)
            continue
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        if _same_file(fd, name):
            return name, fd
        os.close(fd)  # pragma: no cover - removed as stale between its creation and the lock


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@functools.cache
def _renameat2() -> Callable | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def _exchange_supported() -> bool:
    return _renameat2() is not None


def _exchange(a: str, b: str) -> bool:
    """Swap the directories ``a`` and ``b`` in one step; False where the file system cannot."""
    function = _renameat2()
    if function is None:
        return False
    if function(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, f"{os.strerror(code)} while putting {b} in place", b)


def _is_working_directory(path: str) -> bool:
    with contextlib.suppress(OSError):
        a, b = os.stat(path), os.stat(os.getcwd())
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
    return False


def _fsync_path(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
