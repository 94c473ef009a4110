"""Regex translation between the ``regex`` module (numtok's and tiktoken's syntax) and
Oniguruma (the engine HF tokenizers compiles a Split pattern with).

The two read some constructs differently: ``X{1,3}+`` is a repeated interval in Oniguruma
(possessive in ``regex``), ``$``/``^`` are line anchors, ``\\Z`` allows a final newline,
``(?s)`` is spelled ``(?m)`` and ``\\w`` also takes six superscript/fraction characters.
:func:`to_oniguruma` and :func:`from_oniguruma` rewrite those constructs so a pattern means the
same in both engines. Character classes come from each engine's own Unicode tables
(Oniguruma's are older): the ~5,000 code points assigned after Unicode 15 may split
differently in HF.
"""

from __future__ import annotations

import re

from ..pretokenizers.patterns import NAMED_PATTERNS, resolve_pattern

__all__ = ["to_oniguruma", "from_oniguruma", "onig_pattern_for", "pattern_from_oniguruma"]


class _Item:
    """One syntactic element of a regex: kind in {esc, class, open, flags, close, quant,
    anchor, alt, char}; ``text`` is its source."""

    __slots__ = ("kind", "text")

    def __init__(self, kind: str, text: str):
        self.kind, self.text = kind, text


_GROUP_OPEN = re.compile(r"\(\?(?:P?<[A-Za-z_]\w*>|[:=!>]|<[=!]|[a-zA-Z]*(?:-[a-zA-Z]*)?:)|\(")
_FLAGS_ONLY = re.compile(r"\(\?[a-zA-Z]*(?:-[a-zA-Z]*)?\)")
_QUANT = re.compile(r"(?:[*+?]|\{\d+(?:,\d*)?\}|\{,\d+\})[?+]?")


def _scan(pattern: str) -> list[_Item]:
    items: list[_Item] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            j = _escape_end(pattern, i)
            items.append(_Item("esc", pattern[i:j]))
        elif c == "[":
            j = _class_end(pattern, i)
            items.append(_Item("class", pattern[i:j]))
        elif c == "(":
            if pattern.startswith("(?#", i):
                j = pattern.find(")", i)
                if j < 0:
                    raise ValueError("unterminated comment group")
                i = j + 1
                continue
            m = _FLAGS_ONLY.match(pattern, i)
            if m:
                items.append(_Item("flags", m.group()))
                j = m.end()
            else:
                m = _GROUP_OPEN.match(pattern, i)
                assert m is not None  # every "(" opens a group of some kind
                if pattern.startswith("(?", i) and m.group() == "(":
                    raise ValueError(f"unsupported group syntax at {pattern[i:i + 8]!r}")
                items.append(_Item("open", m.group()))
                j = m.end()
        elif c == ")":
            items.append(_Item("close", c))
            j = i + 1
        elif c in "*+?{":
            m = _QUANT.match(pattern, i)
            if m is None:
                if c != "{":
                    raise ValueError(f"misplaced quantifier {c!r} at offset {i}")
                items.append(_Item("char", c))  # a literal brace
                j = i + 1
            else:
                items.append(_Item("quant", m.group()))
                j = m.end()
        elif c in "^$":
            items.append(_Item("anchor", c))
            j = i + 1
        elif c == "|":
            items.append(_Item("alt", c))
            j = i + 1
        else:
            items.append(_Item("char", c))
            j = i + 1
        i = j
    return items


def _escape_end(p: str, i: int) -> int:
    if i + 1 >= len(p):
        raise ValueError("the pattern ends with a lone backslash")
    c = p[i + 1]
    if c in "pPxNgk" and i + 2 < len(p) and p[i + 2] in "{<":
        end = p.find("}" if p[i + 2] == "{" else ">", i + 2)
        if end < 0:
            raise ValueError(f"unterminated escape {p[i:i + 6]!r}")
        return end + 1
    return i + {"x": 4, "u": 6, "U": 10, "p": 3, "P": 3}.get(c, 2)


def _class_end(p: str, i: int) -> int:
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1  # a leading "]" is a literal
    depth = 1
    while j < len(p):
        c = p[j]
        if c == "\\":
            j = _escape_end(p, j)
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise ValueError("unterminated character class")


def _rebuild(items: list[_Item], item_fn, quant_fn) -> str:
    """Reassemble items, letting ``quant_fn(atom, quantifier)`` rewrite a quantified atom and
    ``item_fn(item)`` any other element. A group is one atom (its whole rewritten text)."""
    stack: list[list[str]] = [[]]
    heads: list[str] = []
    for k, item in enumerate(items):
        if item.kind == "open":
            heads.append(item_fn(item))
            stack.append([])
        elif item.kind == "close":
            if not heads:
                raise ValueError("unbalanced ')'")
            inner = "".join(stack.pop())
            stack[-1].append(heads.pop() + inner + ")")
        elif item.kind == "quant":
            if not stack[-1]:
                raise ValueError(f"quantifier {item.text!r} has nothing to repeat")
            stack[-1][-1] = quant_fn(stack[-1][-1], item.text)
        else:
            if item.kind == "flags" and (k != 0 or "-" in item.text):
                # Scoped flags differ between engines (Oniguruma: to the end of the group,
                # ``regex`` V0: the whole pattern); only a leading "(?i)" means the same.
                raise ValueError(f"inline flags {item.text!r} are only supported at the start of the pattern")
            stack[-1].append(item_fn(item))
    if heads:
        raise ValueError("unbalanced '('")
    return "".join(stack[0])


def _hex_escape(code_point: int) -> str:
    return "\\x{%x}" % code_point


# \w in Oniguruma also matches these six (superscripts 2, 3, 1 and fractions 1/4, 1/2, 3/4).
_W_EXTRA_ONIG = r"\x{b2}\x{b3}\x{b9}\x{bc}-\x{be}"
_W_EXTRA_RE = r"\xb2\xb3\xb9\xbc-\xbe"


def _map_flags(text: str, table: dict[str, str], engine: str) -> str:
    head, flags, tail = text[:2], text[2:].rstrip(":)"), text[len(text.rstrip(":)")):]
    out = []
    for f in flags:
        if f not in table:
            raise ValueError(f"inline flag {f!r} in {text!r} has no {engine} equivalent")
        out.append(table[f])
    return head + "".join(out) + tail


def to_oniguruma(pattern: str) -> str:
    """Rewrite a ``regex``-module pattern so Oniguruma (HF tokenizers) matches the same pieces.

    >>> to_oniguruma(r"\\p{N}{1,3}+|\\s++$|(?s:.)")
    '(?>\\\\p{N}{1,3})|\\\\s++(?=\\\\n?\\\\z)|(?m:.)'

    Raises ValueError for a construct without an equivalent (e.g. ``(?m)``, scoped flags).
    """

    def item(it: _Item) -> str:
        t = it.text
        if it.kind == "anchor":
            return r"\A" if t == "^" else r"(?=\n?\z)"  # regex: "$" = end, or before a final "\n"
        if it.kind == "esc":
            if t == r"\Z":
                return r"\z"
            if t[:2] in (r"\u", r"\U"):
                return _hex_escape(int(t[2:], 16))
            if t.startswith(r"\N{"):
                import unicodedata

                return _hex_escape(ord(unicodedata.lookup(t[3:-1])))
            if t == r"\w":
                return "[\\w&&[^" + _W_EXTRA_ONIG + "]]"
            if t == r"\W":
                return "[\\W" + _W_EXTRA_ONIG + "]"
            if t in (r"\b", r"\B", r"\h", r"\H", r"\G", r"\K", r"\X", r"\R") or t.startswith((r"\g", r"\k")):
                raise ValueError(f"{t} has no exact Oniguruma equivalent")
            return t
        if it.kind == "class":
            if r"\w" in t or r"\W" in t or r"\b" in t:
                raise ValueError(r"\w or \W inside a character class cannot be translated exactly")
            if r"\u" in t or r"\U" in t or r"\N{" in t:
                t = re.sub(r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})", lambda m: _hex_escape(int(m.group(1) or m.group(2), 16)), t)
                if r"\N{" in t:
                    raise ValueError(r"\N{...} inside a character class is not supported")
            if "&&" in t or "--" in t or "||" in t or "~~" in t:
                raise ValueError(f"set operations in {t!r} are not supported")
            return t
        if it.kind in ("open", "flags"):
            if t.startswith("(?P<"):
                return "(?<" + t[4:]
            if t.startswith("(?") and t[2:3].isalpha() or t[2:3] == "-":
                return _map_flags(t, {"i": "i", "x": "x", "s": "m"}, "Oniguruma")
            return t
        return t

    def quant(atom: str, q: str) -> str:
        if q.startswith("{") and q.endswith("}+"):
            return "(?>" + atom + q[:-1] + ")"  # Oniguruma has no possessive interval
        return atom + q

    return _rebuild(_scan(pattern), item, quant)


def from_oniguruma(pattern: str) -> str:
    """Rewrite an Oniguruma pattern (from a tokenizer.json) for the ``regex`` module.

    >>> from_oniguruma(r"\\p{N}{1,3}+|\\s+$")
    '(?:\\\\p{N}{1,3})+|\\\\s+(?![^\\\\n])'
    """

    def item(it: _Item) -> str:
        t = it.text
        if it.kind == "anchor":
            return r"(?<![^\n])" if t == "^" else r"(?![^\n])"  # line anchors
        if it.kind == "esc":
            if t == r"\z":
                return r"\Z"
            if t == r"\Z":
                return r"(?=\n?\Z)"
            if t == r"\h":
                return "[0-9a-fA-F]"
            if t == r"\H":
                return "[^0-9a-fA-F]"
            if t == r"\w":
                return "[\\w" + _W_EXTRA_RE + "]"
            if t == r"\W":
                return "[^\\w" + _W_EXTRA_RE + "]"
            if t.startswith(r"\x{"):
                return "\\U%08x" % int(t[3:-1], 16)
            if t in (r"\b", r"\B", r"\G", r"\K", r"\X", r"\R", r"\O") or t.startswith((r"\g", r"\k")):
                raise ValueError(f"{t} has no exact equivalent in numtok's regex syntax")
            return t
        if it.kind == "class":
            if re.search(r"\\[wWhH]", t):
                raise ValueError(r"\w, \W, \h or \H inside a character class cannot be translated exactly")
            if "&&" in t:
                raise ValueError(f"set intersection in {t!r} is not supported")
            return re.sub(r"\\x\{([0-9a-fA-F]+)\}", lambda m: "\\U%08x" % int(m.group(1), 16), t)
        if it.kind in ("open", "flags"):
            if t.startswith("(?") and (t[2:3].isalpha() or t[2:3] == "-") and not t.startswith("(?<"):
                return _map_flags(t, {"i": "i", "x": "x", "m": "s"}, "regex-module")
            return t
        return t

    def quant(atom: str, q: str) -> str:
        if q.startswith("{") and q.endswith("}+"):
            return "(?:" + atom + q[:-1] + ")+"  # Oniguruma: an interval, then "+"
        return atom + q

    return _rebuild(_scan(pattern), item, quant)


def onig_pattern_for(pattern: str) -> tuple[str | None, str]:
    """(name, oniguruma string) for a numtok pattern (name or regex)."""
    name, string = resolve_pattern(pattern)
    return name, to_oniguruma(string)


# An HF Split regex equal to one of these is the named pattern (files numtok wrote).
_NAME_OF_ONIG = {to_oniguruma(s): n for n, s in NAMED_PATTERNS.items() if n != "gpt2"}


def pattern_from_oniguruma(onig: str) -> str:
    if onig in _NAME_OF_ONIG:
        return _NAME_OF_ONIG[onig]
    translated = from_oniguruma(onig)
    name, _ = resolve_pattern(translated)  # validates it compiles
    return name or translated
