"""The Unicode script of each code point, and the script group of a document.

A letter is a code point of ``\\p{L}`` (the pre-tokenizers' class table, ``BIT_L``); its script
comes from the ``regex`` module's Script_Extensions property (the same Unicode version as the
class table). Letters of no listed script count as ``other``. A document's group is the script
holding at least 60 % of its letters' UTF-8 bytes, else ``mixed``; a document without letters
is ``none``. Scripts written without spaces between words (``NO_SPACE_SCRIPTS``) get no
tokens-per-word figure.

>>> int(script_table()[ord("ж")]) - 1 == SCRIPTS.index("cyrillic"), int(script_table()[ord("1")])
(True, 0)
>>> [GROUPS[g] for g in document_groups(np.array([[5, 0], [5, 5], [0, 0]]))]
['latin', 'mixed', 'none']
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..pretokenizers._unicode import BIT_L, class_table

__all__ = ["SCRIPTS", "GROUPS", "MIXED", "NONE", "NO_SPACE_SCRIPTS", "DOMINANT", "script_table", "document_groups"]

# Script_Extensions values of each script (Japanese kana and Han share marks such as U+30FC).
_PROPERTIES = {
    "latin": ["Latin"],
    "greek": ["Greek"],
    "cyrillic": ["Cyrillic"],
    "arabic": ["Arabic"],
    "hebrew": ["Hebrew"],
    "devanagari": ["Devanagari"],
    "thai": ["Thai"],
    "cjk": ["Han", "Hiragana", "Katakana", "Bopomofo"],
    "korean": ["Hangul"],
}
SCRIPTS = (*_PROPERTIES, "other")
MIXED, NONE = "mixed", "none"
GROUPS = (*SCRIPTS, MIXED, NONE)
NO_SPACE_SCRIPTS = ("cjk", "thai")
DOMINANT = (3, 5)  # a group needs at least 3/5 of a document's letter bytes


@cache
def script_table() -> np.ndarray:
    """uint8 per code point: 0 = not a letter, ``s + 1`` = a letter of ``SCRIPTS[s]``."""
    import regex

    letters = np.flatnonzero(class_table() & BIT_L).astype(np.uint32)
    text = letters.tobytes().decode("utf-32-le")
    table = np.zeros(len(class_table()), dtype=np.uint8)
    table[letters] = SCRIPTS.index("other") + 1
    # In reverse order, so a letter of several scripts (by extension) gets the first listed.
    for s, names in reversed(list(enumerate(_PROPERTIES.values()))):
        found = regex.compile("[" + "".join(f"\\p{{Script_Extensions={n}}}" for n in names) + "]")
        hits = np.array([m.start() for m in found.finditer(text)], dtype=np.int64)
        table[letters[hits]] = s + 1
    table.setflags(write=False)
    return table


def document_groups(letters: np.ndarray) -> np.ndarray:
    """The index in ``GROUPS`` of each document, from its letter bytes per script
    (``letters``: documents x ``len(SCRIPTS)``)."""
    letters = np.asarray(letters, dtype=np.int64)
    total = letters.sum(axis=1)
    best = letters.argmax(axis=1) if letters.shape[1] else np.zeros(len(letters), dtype=np.int64)
    top = letters[np.arange(len(letters)), best] if len(letters) else total
    num, den = DOMINANT
    groups = np.where(top * den >= total * num, best, GROUPS.index(MIXED))
    return np.where(total == 0, GROUPS.index(NONE), groups).astype(np.int32)
