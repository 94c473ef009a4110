"""Arrays on 2 MiB pages, for the tables the encoder reads at random.

The token table (8 MiB for o200k), its extension and the pair table are read at random
addresses, one or two per piece. (Piece caches are not: see ``_kernels.new_piece_cache``.) On
4 KiB pages almost every such read also misses the TLB (Zen 3's covers 8 MiB), and the page
walk stalls even a prefetch; on 2 MiB pages the TLB covers the tables and these reads miss
only the data caches (design.md §5, huge pages).
NumPy asks for huge pages itself for arrays >= 4 MiB, but its arrays start anywhere, so the
first and last 2 MiB stay on small pages, and arrays made inside Numba kernels get none.

Where the system has no transparent huge pages (or they are off), these are ordinary arrays.

Arrays of 256 MiB or more written once from start to end (the ids and UTF-8 of texts of
64-256 MB and up) are kept on 4 KiB pages instead (:func:`empty_written_once`): NumPy advises
any array of 4 MiB or more onto huge pages, and a fault there can stall for milliseconds a page
(compaction, or on a VM memory the host must map again). An array written once from start
to end, in order, gains little from huge pages (a TLB miss per 4 KiB at most), so the biggest
ones are kept off them and their calls no longer stall; below that size the stalls are rare
and small pages cost a fault per 4 KiB, so smaller arrays keep NumPy's advice.
"""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np

HUGE_PAGE = 2 << 20


def zeros(shape, dtype) -> np.ndarray:
    """``np.zeros(shape, dtype)``, 2 MiB-aligned and advised onto huge pages if it is at least
    one huge page long (smaller arrays: plain ``np.zeros``).

    >>> a = zeros(1 << 19, np.uint64)
    >>> a.shape, a.dtype, int(a.sum()), a.flags.writeable
    ((524288,), dtype('uint64'), 0, True)
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    advise = getattr(mmap, "MADV_HUGEPAGE", None)
    private = getattr(mmap, "MAP_PRIVATE", None)
    if nbytes < HUGE_PAGE or advise is None or private is None:
        return np.zeros(shape, dtype)
    try:
        # Private and anonymous: shared anonymous memory is shmem, which has its own THP switch.
        region = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=private | mmap.MAP_ANONYMOUS)
        region.madvise(advise)  # before any page is touched, so faults map whole huge pages
    except (OSError, ValueError):
        return np.zeros(shape, dtype)
    raw = np.frombuffer(region, np.uint8)  # the array keeps the mapping alive, and frees it
    start = -raw.ctypes.data % HUGE_PAGE
    return raw[start : start + nbytes].view(dtype).reshape(shape)


def copy(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` made by :func:`zeros` (``a`` itself if it is under one huge page or
    already starts on one).

    >>> a = np.arange(1 << 19, dtype=np.uint64)
    >>> b = copy(a)
    >>> bool(np.array_equal(a, b)), copy(b) is b
    (True, True)
    """
    if a.nbytes < HUGE_PAGE or a.ctypes.data % HUGE_PAGE == 0:
        return a
    out = zeros(a.shape, a.dtype)
    out[...] = a
    return out


# From this size on, an array written once in order goes on 4 KiB pages (see the module notes).
SMALL_PAGES_FROM = 256 << 20
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def empty_written_once(n: int, dtype, small_pages: bool | None = None) -> np.ndarray:
    """``np.empty(n, dtype)`` for an array a kernel writes once in order and that may be shrunk
    in place (``ndarray.resize``): from ``SMALL_PAGES_FROM`` bytes on (or where
    ``small_pages`` says so), NumPy's advice to put it on huge pages is taken back (Linux;
    elsewhere, or if the system refuses, a plain ``np.empty``).

    >>> a = empty_written_once(1 << 21, np.int32)
    >>> a.shape, a.dtype, a.flags.owndata
    ((2097152,), dtype('int32'), True)
    """
    a = np.empty(n, dtype)
    advice = getattr(mmap, "MADV_NOHUGEPAGE", None)
    if small_pages is None:
        small_pages = a.nbytes >= SMALL_PAGES_FROM
    if _libc is None or advice is None or not small_pages:
        return a
    start = -a.ctypes.data % mmap.PAGESIZE  # whole pages only, as NumPy advised them
    length = (a.nbytes - start) // mmap.PAGESIZE * mmap.PAGESIZE
    _libc.madvise(ctypes.c_void_p(a.ctypes.data + start), ctypes.c_size_t(length), ctypes.c_int(advice))
    return a
