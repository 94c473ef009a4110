#!/usr/bin/env python
"""Generate ``src/numtok/data/unicode_classes.npz``: the code-point class table of the scanners.

The table holds one uint8 of bit flags for every code point U+0000..U+10FFFF (the bits are
documented in ``numtok.pretokenizers._unicode``). It is built from the Unicode Character Database:
``unicodedata2`` when installed (a generation-time tool only, never a runtime dependency of
numtok), else the standard library's ``unicodedata``. ``\\s`` is the White_Space property,
which is what the ``regex`` module's ``\\s`` matches on str patterns.

Pick the Unicode version the ``regex`` module was built with, so that the scanners classify
exactly like it: ``regex`` 2026.5.9 uses Unicode 17.0.0, hence::

    pip install "unicodedata2>=17,<18"
    python tools/gen_unicode_tables.py            # writes the table, reports differences to regex
    python tools/gen_unicode_tables.py --check    # exit 1 if the shipped table is not what this builds

When ``regex`` is importable the script compares every property the scanners use with it and
prints the differing code points (as ranges); the same list is asserted by
``tests/test_pretokenize.py::test_unicode_table_matches_regex``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "numtok" / "data" / "unicode_classes.npz"
sys.path.insert(0, str(REPO / "src"))

from numtok.pretokenizers._unicode import (  # noqa: E402  (the bit values live in one place)
    BIT_CRLF,
    BIT_L,
    BIT_N,
    BIT_O,
    BIT_S,
    BIT_U,
    BIT_W,
    BIT_X,
    N_CODE_POINTS,
    decode_categories,
)

# White_Space (PropList.txt) = Zs, Zl, Zp and these controls; unicodedata has no accessor for it.
_WHITE_SPACE_CONTROLS = (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85)


def _ucd():
    try:
        import unicodedata2 as ucd
    except ImportError:
        import unicodedata as ucd
    return ucd


def build_flags(ucd) -> np.ndarray:
    flags = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for cp in range(N_CODE_POINTS):
        cat = ucd.category(chr(cp))
        major = cat[0]
        f = 0
        if major == "L":
            f |= BIT_L
            if cat in ("Lu", "Lt", "Lm", "Lo"):
                f |= BIT_U
            if cat in ("Ll", "Lm", "Lo"):
                f |= BIT_W
            if cat in ("Lt", "Lm"):
                f |= BIT_X
        elif major == "M":
            f |= BIT_U | BIT_W
        elif major == "N":
            f |= BIT_N
        if cat in ("Zs", "Zl", "Zp") or cp in _WHITE_SPACE_CONTROLS:
            f |= BIT_S
        if cp in (0x0A, 0x0D):
            f |= BIT_CRLF
        if not f & (BIT_L | BIT_N | BIT_S):
            f |= BIT_O
        flags[cp] = f
    return flags


def _ranges(mask: np.ndarray) -> list[tuple[int, int]]:
    idx = np.flatnonzero(mask)
    if not len(idx):
        return []
    breaks = np.flatnonzero(np.diff(idx) != 1)
    starts = np.r_[idx[0], idx[breaks + 1]]
    ends = np.r_[idx[breaks], idx[-1]]
    return [(int(a), int(b)) for a, b in zip(starts, ends)]


REGEX_PROPERTIES = {
    "L": r"\p{L}", "N": r"\p{N}", "s": r"\s", "Lu": r"\p{Lu}", "Ll": r"\p{Ll}", "Lt": r"\p{Lt}",
    "Lm": r"\p{Lm}", "Lo": r"\p{Lo}", "M": r"\p{M}",
}


def regex_sets() -> dict[str, np.ndarray]:
    """Boolean membership of every code point in each property, as the regex module sees it."""
    import regex

    everything = "".join(map(chr, range(N_CODE_POINTS)))
    out = {}
    for name, prop in REGEX_PROPERTIES.items():
        member = np.zeros(N_CODE_POINTS, dtype=bool)
        for m in regex.finditer(prop + "+", everything):
            member[m.start() : m.end()] = True
        out[name] = member
    return out


def differences(flags: np.ndarray) -> dict[str, list[tuple[int, int]]]:
    ours = decode_categories(flags)
    theirs = regex_sets()
    return {name: _ranges(ours[name] != theirs[name]) for name in REGEX_PROPERTIES}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare with the shipped table instead of writing")
    args = ap.parse_args(argv)

    ucd = _ucd()
    flags = build_flags(ucd)
    version = ucd.unidata_version
    print(f"built from {ucd.__name__} (Unicode {version})")
    try:
        diffs = differences(flags)
    except ImportError:
        print("regex not installed: no comparison")
    else:
        import regex

        total = sum(b - a + 1 for rs in diffs.values() for a, b in rs)
        print(f"differences with regex {regex.__version__}: {total} code points")
        for name, rs in diffs.items():
            if rs:
                print(f"  {name}: " + ", ".join(f"{a:04X}..{b:04X}" if a != b else f"{a:04X}" for a, b in rs))

    if args.check:
        from numtok.pretokenizers._unicode import _read_table

        shipped, shipped_version = _read_table(args.out)
        same = np.array_equal(shipped, flags) and shipped_version == version
        print("shipped table is up to date" if same else "shipped table DIFFERS from a fresh build")
        return 0 if same else 1

    args.out.parent.mkdir(parents=True, exist_ok=True)
    # Stored as 256-code-point blocks plus a block index (the file holds ~300 distinct
    # blocks): ~80 KB to inflate at import instead of 1.1 MB.
    blocks, block_index = np.unique(flags.reshape(-1, 256), axis=0, return_inverse=True)
    np.savez_compressed(
        args.out,
        blocks=blocks.astype(np.uint8),
        block_index=block_index.reshape(-1).astype(np.uint16),
        unicode_version=np.array(version),
        source=np.array(f"{ucd.__name__} {getattr(ucd, '__version__', '')}".strip()),
    )
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
