"""Where numtok's character classes and the installed ``regex`` module's disagree, for tests
that compare with a ``regex`` split (test_pretokenize, test_fuzz, test_arrow, test_continue).

The shipped table is Unicode 17.0.0 (unicodedata2 17.0.1), the version of regex 2026.5.9's own
tables: with that regex the scanners classify every code point as regex does. A newer regex
(2026.11.19 is built for a newer Unicode) assigns more code points; numtok keeps treating them
as "other" (see numtok/pretokenizers/_unicode.py). So the differences are computed against the
installed regex, named in a warning (test_pretokenize), required to lie only on code points
that Unicode 17.0 leaves "other", and left out of the equality tests.
"""

from __future__ import annotations

import functools

import numpy as np
import regex

from numtok.pretokenizers import _unicode

TABLE_REGEX_VERSION = "2026.5.9"
PROPS = {"L": r"\p{L}", "N": r"\p{N}", "s": r"\s", "Lu": r"\p{Lu}", "Ll": r"\p{Ll}", "Lt": r"\p{Lt}", "Lm": r"\p{Lm}", "Lo": r"\p{Lo}", "M": r"\p{M}"}


@functools.cache
def regex_differences() -> dict[str, tuple[tuple[int, int], ...]]:
    """Per property, the code-point ranges where our flags and the installed regex disagree."""
    ours = _unicode.decode_categories(_unicode.class_table())
    everything = "".join(map(chr, range(_unicode.N_CODE_POINTS)))
    found = {}
    for key, prop in PROPS.items():
        theirs = np.zeros(_unicode.N_CODE_POINTS, dtype=bool)
        for m in regex.finditer(prop + "+", everything):
            theirs[m.start() : m.end()] = True
        ranges: list[list[int]] = []
        for cp in np.flatnonzero(ours[key] != theirs).tolist():
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
        found[key] = tuple((a, b) for a, b in ranges)
    return found


@functools.cache
def differing_code_points() -> frozenset:
    """Every code point in :func:`regex_differences`."""
    return frozenset(cp for ranges in regex_differences().values() for a, b in ranges for cp in range(a, b + 1))


def agreed(chars):
    """The hypothesis strategy ``chars`` without the code points of :func:`differing_code_points`."""
    return chars.filter(lambda c: ord(c) not in differing_code_points())
