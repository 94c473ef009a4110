"""Reading and writing other tokenizers' files: HF ``tokenizer.json``, tiktoken rank files and
GPT-2's ``vocab.json`` + ``merges.txt``.

The :class:`numtok.Tokenizer` methods are thin wrappers around these functions::

    tok.save("tokenizer.json")                 # save_hf_json
    numtok.Tokenizer.from_file("tokenizer.json")   # load_hf_json
    tok.save_tiktoken("tok.tiktoken")          # save_tiktoken (+ sidecar "tok.tiktoken.json")
    tok.save_gpt2("outdir")                    # save_gpt2: outdir/vocab.json, outdir/merges.txt
    numtok.Tokenizer.from_gpt2("vocab.json", "merges.txt", pattern="gpt2")   # load_gpt2

Every save is atomic (temporary file + rename, see ``numtok._atomic``): an interrupted save
leaves the previous file intact.

Two facts shape this module:

* **Byte-level strings.** HF and GPT-2 files store tokens as strings over GPT-2's 256-character
  ``bytes_to_unicode`` alphabet (byte 0x20, the space, is ``"Ġ"``); numtok stores bytes.
* **Two regex engines.** numtok (like tiktoken) reads its pre-tokenization pattern with the
  ``regex`` module's syntax; HF tokenizers compiles the pattern with Oniguruma, which reads some
  constructs differently: ``X{1,3}+`` is a repeated interval there (possessive in ``regex``),
  ``$``/``^`` are line anchors, ``\\Z`` allows a final newline, ``(?s)`` is spelled ``(?m)`` and
  ``\\w`` also takes six superscript/fraction characters. :func:`to_oniguruma` and
  :func:`from_oniguruma` rewrite those constructs so a pattern means the same in both engines.
  Character classes come from each engine's own Unicode tables (Oniguruma's are older): the
  ~5,000 code points assigned after Unicode 15 may split differently in HF.
"""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any

from ._atomic import atomic_write
from .patterns import NAMED_PATTERNS, resolve_pattern

__all__ = [
    "bytes_to_unicode",
    "to_oniguruma",
    "from_oniguruma",
    "hf_tokenizer_dict",
    "save_hf_json",
    "load_hf_json",
    "tokenizer_from_hf_dict",
    "save_tiktoken",
    "read_tiktoken_sidecar",
    "load_tiktoken",
    "tiktoken_sidecar_path",
    "check_rank_consistency",
    "save_gpt2",
    "load_gpt2",
]


# ---------------------------------------------------------------------------------------------
# The byte-level alphabet


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> character map: printable latin-1 bytes map to themselves, the other 68
    bytes (controls, space, 0x7F-0xA0, 0xAD) to U+0100.. in byte order.

    >>> m = bytes_to_unicode(); m[ord("a")], m[ord(" ")], m[ord("\\n")]
    ('a', 'Ġ', 'Ċ')
    """
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    others = [b for b in range(256) if b not in set(printable)]
    return {b: chr(b) for b in printable} | {b: chr(0x100 + i) for i, b in enumerate(others)}


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}
# str.translate tables: bytes (decoded as latin-1) -> byte-level string, and back.
_TO_BYTE_LEVEL = {b: c for b, c in _BYTE_TO_CHAR.items()}
_FROM_BYTE_LEVEL = {ord(c): b for c, b in _CHAR_TO_BYTE.items()}
# Latin-1 characters outside the alphabet (space, controls, 0x7F-0xA0, 0xAD) must not pass
# through as their own byte: they become a character latin-1 cannot encode.
_FROM_BYTE_LEVEL.update({c: "\uffff" for c in range(256) if chr(c) not in _CHAR_TO_BYTE})


def _to_byte_level(token: bytes) -> str:
    return token.decode("latin-1").translate(_TO_BYTE_LEVEL)


def _from_byte_level(text: str) -> bytes | None:
    """The bytes a byte-level string stands for, or None if it has a character outside the
    alphabet (an added token such as "<|endoftext|>" is usually *also* valid byte-level)."""
    try:
        return text.translate(_FROM_BYTE_LEVEL).encode("latin-1")
    except UnicodeEncodeError:
        return None


# ---------------------------------------------------------------------------------------------
# Regex translation between the ``regex`` module and Oniguruma


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


def _onig_pattern_for(pattern: str) -> tuple[str | None, str]:
    """(name, oniguruma string) for a numtok pattern (name or regex)."""
    name, string = resolve_pattern(pattern)
    return name, to_oniguruma(string)


# An HF Split regex equal to one of these is the named pattern (files numtok wrote).
_NAME_OF_ONIG = {to_oniguruma(s): n for n, s in NAMED_PATTERNS.items() if n != "gpt2"}


def _pattern_from_oniguruma(onig: str) -> str:
    if onig in _NAME_OF_ONIG:
        return _NAME_OF_ONIG[onig]
    translated = from_oniguruma(onig)
    name, _ = resolve_pattern(translated)  # validates it compiles
    return name or translated


# ---------------------------------------------------------------------------------------------
# HF tokenizer.json


def _tok_attr(tok, name: str, default=None):
    return getattr(tok, name, default)


def _is_rank_mode(tok) -> bool:
    """tiktoken semantics (no merge list of its own; ``tok.merges`` is then derived)."""
    mode = getattr(tok, "_rank_mode", None)
    return bool(mode) if mode is not None else _tok_attr(tok, "merges") is None


def _mergeable_vocab(tok) -> dict[bytes, int]:
    """``tok.vocab`` without the special tokens (which it lists as their UTF-8 bytes)."""
    specials = dict(_tok_attr(tok, "special_tokens") or {})
    special_ids = set(specials.values())
    special_bytes = {s.encode("utf-8") for s in specials}
    return {t: i for t, i in tok.vocab.items() if not (i in special_ids and t in special_bytes)}


def _require_byte_level(tok, fmt: str) -> None:
    problems = []
    if _tok_attr(tok, "units", "bytes") != "bytes":
        problems.append(f"units={tok.units!r} (the {fmt} format is byte-level)")
    if _tok_attr(tok, "end_of_word") is not None:
        problems.append(f"end_of_word={tok.end_of_word!r} (no {fmt} equivalent)")
    if problems:
        raise ValueError(f"cannot save as {fmt}: " + "; ".join(problems))


def _merges_of(tok) -> tuple[list[tuple[bytes, bytes]], bool]:
    """(merges, from_ranks). A rank-mode tokenizer (merges None) gets derived merges."""
    if _is_rank_mode(tok):
        return merges_from_ranks(_mergeable_vocab(tok)), True
    return [(bytes(a), bytes(b)) for a, b in tok.merges], False


def merges_from_ranks(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Merges that make HF's pair-by-pair BPE follow tiktoken's rank rule.

    tiktoken merges *any* adjacent pair whose concatenation is a token, the lowest rank
    first. HF only merges listed pairs, in list order. So every split ``(x, y)`` of a token
    ``t`` into two tokens is listed, ordered by ``(rank(t), len(x))``. Together with
    ``ignore_merges`` (whole-piece lookup, as tiktoken does first) HF then encodes as
    tiktoken does; the one residual difference is the order among two *overlapping* pairs that
    form the same token (e.g. parts ``aa|a|aa`` with both ``aaa`` splits listed): tiktoken
    takes the leftmost, HF the one listed first.

    >>> merges_from_ranks({b"a": 0, b"b": 1, b"ab": 2, b"aab": 3})
    [(b'a', b'b'), (b'a', b'ab')]
    """
    out = []
    for token, _ in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) > 1:
            out.extend((token[:i], token[i:]) for i in range(1, len(token)) if token[:i] in ranks and token[i:] in ranks)
    return out


def hf_tokenizer_dict(tok) -> dict[str, Any]:
    """The tokenizer.json content for ``tok`` (see :func:`save_hf_json`)."""
    _require_byte_level(tok, "HF tokenizer.json")
    name, onig = _onig_pattern_for(tok.pattern)
    merges, from_ranks = _merges_of(tok)
    specials = dict(_tok_attr(tok, "special_tokens") or {})

    mergeable = _mergeable_vocab(tok)
    as_str = {t: _to_byte_level(t) for t in mergeable}
    vocab = {as_str[t]: int(i) for t, i in sorted(mergeable.items(), key=lambda kv: kv[1])}
    ids_used = set(vocab.values())
    for content, i in specials.items():
        # HF keeps special tokens in the model vocab too (its trainer does); a merge that
        # spells one (numtok's trainer re-uses the special's id then) finds it there.
        if content not in vocab and int(i) not in ids_used:
            vocab[content] = int(i)
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))

    if name == "gpt2":
        pre_tokenizer = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    else:
        pre_tokenizer = {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": onig}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        }
    added = [
        {"id": int(i), "content": s, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for s, i in sorted(specials.items(), key=lambda kv: kv[1])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": bool(from_ranks or _tok_attr(tok, "ignore_merges", False)),
            "vocab": vocab,
            "merges": [[as_str[a], as_str[b]] for a, b in merges],
        },
    }


def save_hf_json(tok, path: str | os.PathLike) -> None:
    """Write ``tok`` as a Hugging Face ``tokenizer.json``, atomically.

    The file loads in ``tokenizers.Tokenizer.from_file`` and
    ``transformers.PreTrainedTokenizerFast(tokenizer_file=...)`` and encodes as numtok does:
    a BPE model (ByteLevel-string vocab and merges), the ByteLevel pre-tokenizer for pattern
    "gpt2" and otherwise a Split on the pattern (rewritten for Oniguruma, see
    :func:`to_oniguruma`) followed by ByteLevel without its own regex, the ByteLevel decoder,
    and the special tokens as added tokens (``special=True``).

    A rank-mode tokenizer (``merges`` None, tiktoken semantics) is written with the merges of
    :func:`merges_from_ranks` and ``ignore_merges=True``.

    Raises:
        ValueError: a tokenizer HF's byte-level BPE cannot express (``units="chars"``,
            ``end_of_word``) or a pattern without an Oniguruma equivalent.
    """
    text = _dumps_tokenizer_json(hf_tokenizer_dict(tok))
    with atomic_write(path, "w") as f:
        f.write(text)


def _dumps_tokenizer_json(data: dict) -> str:
    """Indented like HF's own files, but one vocab entry / merge per line (and fast: the big
    parts are joined from C-encoded strings, not run through the pure-Python indenter)."""
    quote = json.encoder.encode_basestring  # C implementation, no ASCII escaping
    model = dict(data["model"])
    vocab, merges = model.pop("vocab"), model.pop("merges")
    model["vocab"], model["merges"] = "\0vocab\0", "\0merges\0"
    head = json.dumps({**data, "model": model}, ensure_ascii=False, indent=2)
    vocab_text = "{\n" + ",\n".join(f"      {quote(k)}: {v}" for k, v in vocab.items()) + "\n    }"
    merges_text = "[\n" + ",\n".join(f"      [{quote(a)}, {quote(b)}]" for a, b in merges) + "\n    ]"
    if not vocab:
        vocab_text = "{}"
    if not merges:
        merges_text = "[]"
    head = head.replace(json.dumps("\0vocab\0"), vocab_text, 1).replace(json.dumps("\0merges\0"), merges_text, 1)
    return head + "\n"


def load_hf_json(path: str | os.PathLike):
    """Load a byte-level BPE ``tokenizer.json`` (as written by HF tokenizers or by numtok).

    The result encodes as ``tokenizers.Tokenizer.from_file(path).encode(text,
    add_special_tokens=False)`` does (added tokens in the text are recognised:
    compare with numtok's ``encode(text, allowed_special="all")``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not JSON / not a tokenizer.json, or a tokenizer numtok cannot represent
            exactly; the message lists every unsupported feature. A WordPiece file names
            ``numtok.WordPiece.from_file`` instead.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a tokenizer.json file (invalid JSON: {exc})") from None
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "tokenizer":  # ".../gpt2/tokenizer.json" is better named by its directory
        name = os.path.basename(os.path.dirname(os.path.abspath(path))) or name
    return tokenizer_from_hf_dict(data, source=path, name=name)


def tokenizer_from_hf_dict(data: Any, source: str = "tokenizer.json", name: str | None = None):
    """Build a :class:`numtok.Tokenizer` from parsed tokenizer.json content."""
    from .tokenizer import Tokenizer

    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise ValueError(f"{source}: not a tokenizer.json file (no 'model' object)")
    model = data["model"]
    model_type = model.get("type") or ("BPE" if "merges" in model else "WordPiece" if "continuing_subword_prefix" in model and "max_input_chars_per_word" in model else None)
    if model_type == "WordPiece":
        raise ValueError(f"{source}: a WordPiece tokenizer; load it with numtok.WordPiece.from_file({source!r})")
    if model_type != "BPE":
        raise ValueError(f"{source}: unsupported model type {model_type!r} (numtok reads byte-level BPE and WordPiece)")

    problems: list[str] = []
    pattern = _hf_pattern(data.get("pre_tokenizer"), problems)
    _check_hf_model(model, problems)
    _check_hf_pipeline(data, problems)
    specials = _hf_added_tokens(data.get("added_tokens") or [], problems)
    vocab, merges = _hf_vocab_and_merges(model, specials, problems)
    if problems:
        raise ValueError(f"{source}: cannot be represented exactly by numtok: " + "; ".join(problems))
    return Tokenizer(
        vocab,
        merges=merges,
        pattern=pattern,
        special_tokens=specials,
        ignore_merges=bool(model.get("ignore_merges", False)),
        name=name,
    )


def _hf_pattern(pre: Any, problems: list[str]) -> str:
    steps = pre.get("pretokenizers", []) if isinstance(pre, dict) and pre.get("type") == "Sequence" else [pre]
    steps = [s for s in steps if s is not None]
    if not steps:
        problems.append("no ByteLevel pre-tokenizer (not a byte-level BPE)")
        return "gpt2"
    *splits, last = steps
    if not isinstance(last, dict) or last.get("type") != "ByteLevel":
        kinds = ", ".join(str(s.get("type") if isinstance(s, dict) else s) for s in steps)
        problems.append(f"pre-tokenizer {kinds} (numtok needs an optional Split followed by ByteLevel)")
        return "gpt2"
    if last.get("add_prefix_space", True):
        problems.append("ByteLevel add_prefix_space=true (HF prepends a space to every text)")
    use_regex = last.get("use_regex", True)
    if len(splits) > 1 or (splits and use_regex):
        problems.append("more than one splitting step in the pre-tokenizer")
        return "gpt2"
    if not splits:
        return "gpt2" if use_regex else r"(?s:.+)"
    split = splits[0]
    if not isinstance(split, dict) or split.get("type") != "Split":
        problems.append(f"pre-tokenizer {split.get('type') if isinstance(split, dict) else repr(split)} before ByteLevel")
        return "gpt2"
    if split.get("behavior") != "Isolated" or split.get("invert", False):
        problems.append(f"Split behavior {split.get('behavior')!r} invert={split.get('invert', False)} (only Isolated is supported)")
    pat = split.get("pattern") or {}
    if "Regex" in pat:
        try:
            return _pattern_from_oniguruma(pat["Regex"])
        except ValueError as exc:
            problems.append(f"Split regex {pat['Regex']!r}: {exc}")
            return "gpt2"
    if "String" in pat:
        import regex

        return regex.escape(pat["String"])
    problems.append(f"Split pattern {pat!r}")
    return "gpt2"


def _check_hf_model(model: dict, problems: list[str]) -> None:
    if model.get("dropout") not in (None, 0, 0.0):
        problems.append(f"BPE dropout={model['dropout']} (random segmentation)")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            problems.append(f"BPE {key}={model[key]!r}")


_ID_NEUTRAL_POST = {"ByteLevel"}


def _check_hf_pipeline(data: dict, problems: list[str]) -> None:
    norm = data.get("normalizer")
    if norm is not None and not (isinstance(norm, dict) and norm.get("type") == "Sequence" and not norm.get("normalizers")):
        problems.append(f"normalizer {norm.get('type') if isinstance(norm, dict) else repr(norm)}")
    post = data.get("post_processor")
    for step in (post.get("processors", []) if isinstance(post, dict) and post.get("type") == "Sequence" else [post]):
        if step is None or step.get("type") in _ID_NEUTRAL_POST:
            continue
        if step.get("type") == "TemplateProcessing" and _template_is_identity(step):
            continue
        problems.append(f"post-processor {step.get('type')} (adds tokens to every encoding)")
    dec = data.get("decoder")
    for step in (dec.get("decoders", []) if isinstance(dec, dict) and dec.get("type") == "Sequence" else [dec]):
        if step is not None and step.get("type") != "ByteLevel":
            problems.append(f"decoder {step.get('type')} (numtok decodes by joining token bytes)")
    if data.get("truncation") is not None:
        problems.append("truncation (numtok never truncates; set it to null)")
    if data.get("padding") is not None:
        problems.append("padding (numtok never pads; set it to null)")


def _template_is_identity(step: dict) -> bool:
    def plain(seq):
        return all("Sequence" in part for part in seq or [])

    return plain(step.get("single")) and plain(step.get("pair"))


def _hf_added_tokens(added: list, problems: list[str]) -> dict[str, int]:
    specials: dict[str, int] = {}
    for tok in added:
        content = tok.get("content")
        flags = [k for k in ("single_word", "lstrip", "rstrip") if tok.get(k)]
        if flags:
            problems.append(f"added token {content!r} with {', '.join(flags)}")
        specials[content] = int(tok["id"])
    return specials


def _hf_vocab_and_merges(model: dict, specials: dict[str, int], problems: list[str]):
    special_ids = set(specials.values())
    vocab: dict[bytes, int] = {}
    as_bytes: dict[str, bytes] = {}  # vocab string -> bytes, reused for the merges
    strings = model.get("vocab") or {}
    if not isinstance(strings, dict):
        problems.append("model.vocab is not an object")
        return {}, []
    for s, i in strings.items():
        if i in special_ids and specials.get(s) == i:
            continue  # the special token itself (kept as a special token)
        b = _from_byte_level(s)
        if b is None:
            continue  # not a byte-level string: no byte sequence can produce it
        if b in vocab:
            problems.append(f"two vocab entries for the bytes {b!r}")
            continue
        vocab[b] = int(i)
        as_bytes[s] = b
    missing = [x for x in range(256) if bytes([x]) not in vocab]
    if missing:
        problems.append(f"the vocab lacks {len(missing)} of the 256 byte tokens (e.g. byte 0x{missing[0]:02x})")
    merges: list[tuple[bytes, bytes]] = []
    for m in model.get("merges") or []:
        parts = m.split(" ") if isinstance(m, str) else m
        if len(parts) != 2:
            problems.append(f"malformed merge {m!r}")
            break
        a, b = as_bytes.get(parts[0]), as_bytes.get(parts[1])
        if a is None or b is None or a + b not in vocab:
            problems.append(f"merge {m!r}: a token it uses or makes is not a byte-level vocab entry")
            break
        merges.append((a, b))
    return vocab, merges


# ---------------------------------------------------------------------------------------------
# tiktoken rank files


def tiktoken_sidecar_path(path: str | os.PathLike) -> str:
    """The sidecar JSON written next to a rank file: ``NAME.tiktoken`` -> ``NAME.tiktoken.json``."""
    return os.fspath(path) + ".json"


def check_rank_consistency(tok) -> None:
    """Raise ValueError unless the merge-mode ``tok`` can be written as tiktoken ranks.

    tiktoken's rank of a token is its id *and* its merge priority, so the merges, in order,
    must produce strictly increasing ids, each larger than the ids of its two parts, and no
    token may be produced by two merges.
    """
    if _is_rank_mode(tok):
        return
    merges = tok.merges
    vocab = _mergeable_vocab(tok)
    specials = dict(_tok_attr(tok, "special_tokens") or {})
    special_of_bytes = {s.encode("utf-8"): i for s, i in specials.items()}
    last = -1
    for k, (a, b) in enumerate(merges):
        t = vocab.get(a + b, special_of_bytes.get(a + b))
        ia, ib = vocab.get(a), vocab.get(b)
        if t is None or ia is None or ib is None:
            raise ValueError(f"merge {k} ({a!r}, {b!r}) refers to a token outside the vocab")
        if t <= last or t <= ia or t <= ib:
            raise ValueError(
                f"merges are not rank-consistent: merge {k} ({a!r} + {b!r}) makes id {t}, "
                f"{'not above the previous merge' if t <= last else 'not above its parts'}; tiktoken "
                "uses the id as the merge priority, so it would encode differently (save with "
                "save() or save_gpt2() instead)"
            )
        last = t


def save_tiktoken(tok, path: str | os.PathLike) -> None:
    """Write ``tok`` as a tiktoken rank file plus a sidecar JSON, both atomically.

    The rank file has one line per mergeable token, ``base64(bytes) rank``, sorted by rank,
    with rank = numtok id (tiktoken's ``load_tiktoken_bpe`` reads it). The sidecar
    (``PATH.json``, see :func:`tiktoken_sidecar_path`) holds what tiktoken needs besides the
    ranks, under the names of ``tiktoken.Encoding``'s arguments::

        {"name": ..., "pat_str": <regex>, "special_tokens": {...}, "numtok": {"pattern": ...}}

    so ``tiktoken.Encoding(**{k: side[k] for k in ("name", "pat_str", "special_tokens")},
    mergeable_ranks=tiktoken.load.load_tiktoken_bpe(path))`` is the same tokenizer, and
    ``numtok.Tokenizer.from_tiktoken(path)`` reads the sidecar when it exists.

    Merge-mode tokenizers: tiktoken has no merge list. Its rule is "merge the adjacent pair
    whose concatenation has the lowest rank", so the ids must follow the merge order
    (:func:`check_rank_consistency`); a tokenizer whose merges are not rank-consistent (ids
    out of merge order, a token made by two merges) raises ValueError rather than writing a
    file that encodes differently. Trained tokenizers (numtok's or HF's BpeTrainer) are
    rank-consistent. tiktoken also merges a pair whose concatenation is a token even when
    that pair is not the token's own merge, and looks whole pieces up first; for trained
    tokenizers this gives the same ids on real text (tested on each named pattern), but it
    can differ on rare inputs: reload with ``from_tiktoken`` for tiktoken semantics in numtok.

    Raises:
        ValueError: not rank-consistent, not byte-level (``units="chars"``, ``end_of_word``),
            or a vocab without all 256 single bytes (tiktoken cannot encode the others).
    """
    _require_byte_level(tok, "tiktoken")
    check_rank_consistency(tok)
    vocab = _mergeable_vocab(tok)
    missing = [x for x in range(256) if bytes([x]) not in vocab]
    if missing:
        raise ValueError(
            f"cannot save as tiktoken: the vocab lacks {len(missing)} of the 256 single bytes "
            f"(e.g. 0x{missing[0]:02x}); tiktoken fails on text containing them"
        )
    name, pattern_string = resolve_pattern(tok.pattern)
    specials = {s: int(i) for s, i in (_tok_attr(tok, "special_tokens") or {}).items()}
    sidecar = {
        "name": _tok_attr(tok, "name") or os.path.basename(os.fspath(path)).split(".")[0] or "numtok",
        "pat_str": pattern_string,
        "special_tokens": specials,
        "numtok": {"format_version": 1, "pattern": name or pattern_string},
    }
    lines = [base64.b64encode(t) + b" " + str(int(i)).encode() + b"\n"
             for t, i in sorted(vocab.items(), key=lambda kv: kv[1])]
    with atomic_write(path, "wb") as f:
        f.writelines(lines)
    with atomic_write(tiktoken_sidecar_path(path), "w") as f:
        json.dump(sidecar, f, ensure_ascii=False, indent=2)
        f.write("\n")


def read_tiktoken_sidecar(path: str | os.PathLike) -> dict | None:
    """The sidecar of a rank file as ``{"name", "pattern", "special_tokens"}``, or None when
    there is none. ``pattern`` is a numtok pattern (a name when it is a named one).

    Raises ValueError when the sidecar exists but is malformed.
    """
    side_path = tiktoken_sidecar_path(path)
    if not os.path.isfile(side_path):
        return None
    try:
        with open(side_path, encoding="utf-8") as f:
            side = json.load(f)
        pattern = (side.get("numtok") or {}).get("pattern") or side["pat_str"]
        specials = {str(s): int(i) for s, i in (side.get("special_tokens") or {}).items()}
        name = side.get("name")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{side_path}: malformed tiktoken sidecar ({exc})") from None
    resolved, _ = resolve_pattern(pattern)
    return {"name": name, "pattern": resolved or pattern, "special_tokens": specials}


def load_tiktoken(path: str | os.PathLike, pattern: str | None = None, special_tokens: dict[str, int] | None = None,
                  name: str | None = None):
    """``Tokenizer.from_tiktoken`` that fills omitted arguments from the sidecar
    (:func:`read_tiktoken_sidecar`); without a sidecar the pattern defaults to "cl100k" and
    there are no special tokens."""
    from .tokenizer import Tokenizer

    side = read_tiktoken_sidecar(path) if pattern is None or special_tokens is None or name is None else None
    if side is not None:
        pattern = side["pattern"] if pattern is None else pattern
        special_tokens = side["special_tokens"] if special_tokens is None else special_tokens
        name = side["name"] if name is None else name
    return Tokenizer.from_tiktoken(path, pattern=pattern or "cl100k", special_tokens=special_tokens, name=name)


# ---------------------------------------------------------------------------------------------
# GPT-2 vocab.json + merges.txt


def save_gpt2(tok, directory: str | os.PathLike) -> None:
    """Write ``DIRECTORY/vocab.json`` and ``DIRECTORY/merges.txt`` (GPT-2 / HF "slow" format),
    each atomically; the directory is created if needed.

    ``vocab.json`` maps byte-level strings to ids and includes the special tokens (as GPT-2's
    ``<|endoftext|>``); ``merges.txt`` starts with ``#version: 0.2`` and has one
    ``left right`` line per merge. The pattern is not part of this format: pass it again to
    :func:`load_gpt2`. A rank-mode tokenizer gets the merges of :func:`merges_from_ranks`
    (this format has no whole-piece lookup, so prefer ``save``/``save_tiktoken`` for those).
    """
    _require_byte_level(tok, "GPT-2 vocab.json/merges.txt")
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    merges, _ = _merges_of(tok)
    vocab = {_to_byte_level(t): int(i) for t, i in _mergeable_vocab(tok).items()}
    for content, i in (_tok_attr(tok, "special_tokens") or {}).items():
        vocab.setdefault(content, int(i))
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    with atomic_write(os.path.join(directory, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
        f.write("\n")
    with atomic_write(os.path.join(directory, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{_to_byte_level(a)} {_to_byte_level(b)}\n")


def load_gpt2(vocab_json: str | os.PathLike, merges_txt: str | os.PathLike, pattern: str = "gpt2"):
    """Load a GPT-2 style ``vocab.json`` + ``merges.txt`` pair (merge semantics).

    Entries of ``vocab.json`` that no merge produces and that are not single bytes (GPT-2's
    ``<|endoftext|>``, anything that is not a byte-level string) become special tokens: BPE
    can never produce them, so text can only reach them as special tokens.

    Raises:
        FileNotFoundError: a missing file.
        ValueError: malformed files, a merge whose parts or result are not in the vocab.
    """
    vocab_json, merges_txt = os.fspath(vocab_json), os.fspath(merges_txt)
    from .tokenizer import Tokenizer

    try:
        with open(vocab_json, encoding="utf-8") as f:
            strings = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{vocab_json}: not a vocab.json file ({exc})") from None
    if not isinstance(strings, dict) or not all(isinstance(i, int) for i in strings.values()):
        raise ValueError(f"{vocab_json}: not a vocab.json file (expected an object of token -> id)")
    with open(merges_txt, encoding="utf-8") as f:
        lines = f.read().split("\n")
    merges: list[tuple[bytes, bytes]] = []
    produced: set[bytes] = set()
    for line_no, line in enumerate(lines, start=1):
        if not line or (line_no == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        pair = [_from_byte_level(p) for p in parts]
        if len(parts) != 2 or None in pair:
            raise ValueError(f"{merges_txt}:{line_no}: not a byte-level merge line: {line!r}")
        merges.append((pair[0], pair[1]))
        produced.add(pair[0] + pair[1])
    vocab: dict[bytes, int] = {}
    specials: dict[str, int] = {}
    for s, i in strings.items():
        b = _from_byte_level(s)
        if b is None or (len(b) > 1 and b not in produced):
            specials[s] = i
        else:
            vocab[b] = i
    for line_no, (a, b) in enumerate(merges, start=1):
        if a not in vocab or b not in vocab or a + b not in vocab:
            raise ValueError(f"{merges_txt}: merge {line_no} ({_to_byte_level(a)} {_to_byte_level(b)}) uses a token not in {vocab_json}")
    name = os.path.basename(os.path.dirname(os.path.abspath(vocab_json))) or None
    return Tokenizer(vocab, merges=merges, pattern=pattern, special_tokens=specials, name=name)

