"""The code-point class table used by the pre-tokenizer scanners (``_scanners``).

``class_table()`` returns a uint8 array with one entry per code point U+0000..U+10FFFF; each
entry is a set of bit flags:

=============  =====  =========================================================
bit            value  set for
=============  =====  =========================================================
``BIT_L``          1  ``\\p{L}`` (Lu, Ll, Lt, Lm, Lo)
``BIT_N``          2  ``\\p{N}`` (Nd, Nl, No)
``BIT_S``          4  ``\\s`` as the ``regex`` module defines it for str patterns: the
                      White_Space property (U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680,
                      U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000; *not*
                      U+001C..U+001F, which ``str.isspace`` accepts)
``BIT_U``          8  o200k's "upper" group ``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]``
``BIT_W``         16  o200k's "lower" group ``[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]``
``BIT_X``         32  Lt or Lm (unused by the scanners; it makes every category above
                      recoverable from the flags, see ``decode_categories``)
``BIT_CRLF``      64  ``\\r`` and ``\\n``
``BIT_O``        128  none of L, N, S: the ``[^\\s\\p{L}\\p{N}]`` class (includes \\p{M})
=============  =====  =========================================================

Unicode version: the shipped table (``data/unicode_classes.npz``, written by
``tools/gen_unicode_tables.py``) is built from the ``unicodedata2`` package at **Unicode
17.0.0**, the version of the ``regex`` module's own tables (regex 2026.5.9), so the scanners
classify every code point exactly as ``regex`` does: the list of code points where they
differ is empty, and ``tests/test_pretokenize.py`` checks that on all 1,114,112 code points.
(Python 3.11's ``unicodedata`` is Unicode 14.0: building from it would classify the ~5,000
code points assigned since then as unassigned, i.e. as "other".) The version is stored in the
file and exposed as ``unicode_version()``.

Should the installed ``regex`` be built for another Unicode version, the scanners still follow
this table: a code point assigned after Unicode 17.0 is "other" (``[^\\s\\p{L}\\p{N}]``, like
U+FFFD), and a code point whose category changed is classified by its Unicode 17.0 category.
tiktoken's Rust regex (regex-syntax) lags one or more versions behind, so on code points
assigned in its newer versions it may split differently from ``regex`` and from numtok.

Bytes that are not valid UTF-8 (the scanners never fail on them) are each treated as one
"other" character, like U+FFFD.
"""

from __future__ import annotations

import os
from functools import cache

import numpy as np

__all__ = ["class_table", "unicode_version", "decode_categories"]

N_CODE_POINTS = 0x110000

BIT_L = 1
BIT_N = 2
BIT_S = 4
BIT_U = 8
BIT_W = 16
BIT_X = 32
BIT_CRLF = 64
BIT_O = 128

_TABLE_PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "unicode_classes.npz")


def _read_table(path) -> tuple[np.ndarray, str]:
    # The file holds the distinct 256-code-point blocks and, per block of the code space, the
    # index of its content (see tools/gen_unicode_tables.py).
    with np.load(path, allow_pickle=False) as npz:
        blocks = npz["blocks"]
        block_index = npz["block_index"]
        version = str(npz["unicode_version"])
    flags = np.ascontiguousarray(blocks[block_index].reshape(-1), dtype=np.uint8)
    if flags.shape != (N_CODE_POINTS,):
        raise RuntimeError(f"corrupt Unicode class table {path}: shape {flags.shape}")
    return flags, version


@cache
def _load() -> tuple[np.ndarray, str]:
    flags, version = _read_table(_TABLE_PATH)
    flags.setflags(write=False)
    return flags, version


def class_table() -> np.ndarray:
    """The read-only uint8 flag table, indexed by code point (loaded once per process)."""
    return _load()[0]


def unicode_version() -> str:
    """The Unicode version the shipped table was built from, e.g. ``'17.0.0'``."""
    return _load()[1]


def decode_categories(flags: np.ndarray) -> dict[str, np.ndarray]:
    """Boolean membership of every code point in the properties the flags encode.

    Keys: ``L``, ``N``, ``s``, ``Lu``, ``Ll``, ``Lt``, ``Lm``, ``Lo``, ``M``.
    """
    f = np.asarray(flags)
    letter = (f & BIT_L) != 0
    upper = (f & BIT_U) != 0
    lower = (f & BIT_W) != 0
    extra = (f & BIT_X) != 0
    return {
        "L": letter,
        "N": (f & BIT_N) != 0,
        "s": (f & BIT_S) != 0,
        "Lu": letter & upper & ~lower & ~extra,
        "Lt": letter & upper & ~lower & extra,
        "Ll": letter & lower & ~upper,
        "Lm": letter & upper & lower & extra,
        "Lo": letter & upper & lower & ~extra,
        "M": ~letter & upper & lower,
    }
