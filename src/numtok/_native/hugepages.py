"""Arrays on 2 MiB pages, for the tables the encoder reads at random.

The token table (8 MiB for o200k), its extension and the piece cache (up to 64 MiB, and its arena) are read at
random addresses, one or two per piece. On 4 KiB pages almost every such read also misses the
TLB (Zen 3's covers 8 MiB), and the page walk stalls even a prefetch: ``encode_spans`` ran 5-9 %
faster on o200k with these tables on 2 MiB pages (25 MB of text, one process).
NumPy asks for huge pages itself for arrays >= 4 MiB, but its arrays start anywhere, so the
first and last 2 MiB stay on small pages, and arrays made inside Numba kernels get none.

Where the system has no transparent huge pages (or they are off), these are ordinary arrays.
"""

from __future__ import annotations

import mmap

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
