"""Slow, obviously-correct references for the evaluation kernels (numtok/evaluation/_kernels.py)
and the script grouping: Python over str and lists, with the `regex` module's properties."""

from __future__ import annotations

import regex

SCRIPT_PROPERTIES = {
    "latin": ["Latin"], "greek": ["Greek"], "cyrillic": ["Cyrillic"], "arabic": ["Arabic"], "hebrew": ["Hebrew"],
    "devanagari": ["Devanagari"], "thai": ["Thai"], "cjk": ["Han", "Hiragana", "Katakana", "Bopomofo"], "korean": ["Hangul"],
}
_LETTER = regex.compile(r"\p{L}")
_SPACE = regex.compile(r"\s")


def script_of(c: str) -> str | None:
    """The script of a letter (the first listed whose Script_Extensions hold it, else "other"), None for a non-letter."""
    if not _LETTER.fullmatch(c):
        return None
    for name, values in SCRIPT_PROPERTIES.items():
        if any(regex.fullmatch(rf"\p{{Script_Extensions={v}}}", c) for v in values):
            return name
    return "other"


def text_stats(text: str) -> tuple[int, int, dict[str, int]]:
    """(characters, whitespace-separated words, UTF-8 bytes of letters per script)."""
    words = len([w for w in _SPACE.split(text) if w])
    letters: dict[str, int] = {}
    for c in text:
        s = script_of(c)
        if s is not None:
            letters[s] = letters.get(s, 0) + len(c.encode("utf-8"))
    return len(text), words, letters


def group_of(text: str) -> str:
    """The script holding >= 60 % of the letter bytes, else "mixed"; "none" without letters."""
    letters = text_stats(text)[2]
    total = sum(letters.values())
    if not total:
        return "none"
    best = max(letters, key=lambda s: (letters[s], -list(SCRIPT_PROPERTIES).index(s) if s in SCRIPT_PROPERTIES else -99))
    return best if letters[best] * 5 >= total * 3 else "mixed"


def token_stats(ids_per_doc: list[list[int]], token_bytes) -> tuple[list[int], set[int]]:
    """(byte-fallback tokens of each document, the ids used): a fallback token is one byte >= 0x80."""
    fallbacks = [sum(1 for t in ids if len(token_bytes(t)) == 1 and token_bytes(t)[0] >= 0x80) for ids in ids_per_doc]
    return fallbacks, {t for ids in ids_per_doc for t in ids}
