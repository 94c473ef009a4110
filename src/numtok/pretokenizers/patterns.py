"""The named pre-tokenization patterns and their resolution.

"gpt2" is Hugging Face ByteLevel's original GPT-2 form; "r50k", "cl100k" and "o200k" are
tiktoken's (tiktoken_ext/openai_public.py). "r50k" and "gpt2" split every text identically.
"""

from __future__ import annotations

import regex

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

NAMED_PATTERNS: dict[str, str] = {
    "gpt2": GPT2_PATTERN,
    "r50k": R50K_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
}

# The regex string of each named pattern is also accepted as that name (files written by
# tiktoken or by HF carry the string, not our name).
_NAME_OF_STRING = {s: n for n, s in NAMED_PATTERNS.items()}


def resolve_pattern(pattern: str) -> tuple[str | None, str]:
    """Return ``(name, regex_string)`` for a pattern name or a regex string.

    ``name`` is None for a custom regex. An invalid regex raises ValueError carrying the
    regex module's message.

    >>> resolve_pattern("cl100k")[0]
    'cl100k'
    >>> resolve_pattern(r"\\w+")
    (None, '\\\\w+')
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str (a name or a regex), not {type(pattern).__name__}")
    if pattern in NAMED_PATTERNS:
        return pattern, NAMED_PATTERNS[pattern]
    if pattern in _NAME_OF_STRING:
        return _NAME_OF_STRING[pattern], pattern
    if pattern.isidentifier() and pattern.lower() in {n + "_base" for n in NAMED_PATTERNS} | set(NAMED_PATTERNS):
        # "cl100k_base" and friends: the encoding names users type.
        return resolve_pattern(pattern.lower().removesuffix("_base"))
    if pattern.isidentifier() and len(pattern) > 2 and not regex.search(r"[\\\[\](){}|?*+^$.]", pattern):
        # A bare word is almost certainly a mistyped name, not a regex meant to match itself.
        raise ValueError(f"unknown pattern {pattern!r}; known names: {', '.join(NAMED_PATTERNS)} (or pass a regex)")
    compile_pattern(pattern)
    return None, pattern


_COMPILED: dict[str, regex.Pattern[str]] = {}


def compile_pattern(pattern_string: str) -> regex.Pattern[str]:
    """Compile (and cache) a regex string; an invalid one raises ValueError with the reason."""
    compiled = _COMPILED.get(pattern_string)
    if compiled is None:
        try:
            compiled = regex.compile(pattern_string)
        except regex.error as exc:
            raise ValueError(f"invalid pattern regex {pattern_string!r}: {exc}") from None
        _COMPILED[pattern_string] = compiled
    return compiled
