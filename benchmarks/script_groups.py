"""Script groups of multilingual text: the rule of benchmarks/corpus/build-multilingual (keep
the two in step), shared by ``compare_encode.py --by-script``, ``encode_stages.py --by-script``
and the asv suite ``EncodeByScript``.

A document gets the group holding >= 60% of its letter bytes (UTF-8 bytes of all characters
but whitespace, ASCII digits and punctuation and U+0300-U+036F; a document without letters
counts as latin), else ``mixed``.

>>> script_group("Привет, мир! Hello")
'cyrillic'
>>> sorted(group_texts("中文文本\\n\\nEnglish text\\n\\n한국어 텍스트"))
['cjk', 'korean', 'latin']
"""

from __future__ import annotations

import re

GROUP_RANGES = {
    "cjk": r"\u2E80-\u2FDF\u3000-\u303F\u3040-\u309F\u30A0-\u30FF\u3100-\u312F\u3190-\u31FF"
    r"\u3200-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF9F"
    r"\uFFE0-\uFFEF\U00020000-\U0003FFFF",
    "korean": r"\u1100-\u11FF\u3130-\u318F\uA960-\uA97F\uAC00-\uD7FF\uFFA0-\uFFDF",
    "cyrillic": r"\u0400-\u052F\u1C80-\u1C8F\u2DE0-\u2DFF\uA640-\uA69F",
    "devanagari": r"\u0900-\u097F\u1CD0-\u1CFF\uA8E0-\uA8FF",
    "latin": r"A-Za-z\u00AA\u00BA\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F\u1E00-\u1EFF",
}
GROUP_RE = {g: re.compile(f"[{r}]+") for g, r in GROUP_RANGES.items()}
NEUTRAL_RE = re.compile(r"[\s!-@\[-`{-~\u0300-\u036F]+")  # whitespace, ASCII digits/punctuation, combining marks
GROUPS = ("cjk", "korean", "cyrillic", "devanagari", "latin", "mixed")
DOMINANT = 0.60


def _utf8_len(parts: list[str]) -> int:
    return len("".join(parts).encode("utf-8"))


def script_group(text: str) -> str:
    """The group holding >= 60% of text's letter bytes, else "mixed" (no letters: "latin")."""
    letters = len(text.encode("utf-8")) - _utf8_len(NEUTRAL_RE.findall(text))
    if letters <= 0:
        return "latin"
    counts = {g: _utf8_len(p.findall(text)) for g, p in GROUP_RE.items()}
    group = max(counts, key=counts.get)
    return group if counts[group] >= DOMINANT * letters else "mixed"


def group_documents(docs: list[str]) -> dict[str, list[str]]:
    """The documents of each group (every group a key, in ``GROUPS`` order)."""
    groups: dict[str, list[str]] = {g: [] for g in GROUPS}
    for d in docs:
        groups[script_group(d)].append(d)
    return groups


def group_texts(text: str) -> dict[str, str]:
    """Each group's documents (``text`` split on blank lines) joined by blank lines; groups
    without documents are left out."""
    docs = group_documents([d for d in text.split("\n\n") if d])
    return {g: "\n\n".join(ds) for g, ds in docs.items() if ds}
