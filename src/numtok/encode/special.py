"""Special tokens in text: which are allowed or disallowed, where they are, and the errors.

Allowed special tokens cut a text into documents encoded as ordinary text, with each token's
id between them; a disallowed one raises ValueError naming it (tiktoken's rules). Most texts
hold none, so every search starts with one cheap scan that releases the GIL.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
import regex

from .._native.utf8 import contains_any
from ..pretokenizers import _scanners

NO_SPECIAL = np.full(1, -1, dtype=np.int64)  # "no special token after this document"
_EMPTY: frozenset = frozenset()


def special_sets(tok, allowed_special, disallowed_special) -> tuple[frozenset, frozenset]:
    """(the allowed special tokens this tokenizer has, the disallowed tokens to look for)
    of the ``allowed_special`` / ``disallowed_special`` arguments, checked."""
    if not tok._special_tokens and not allowed_special and disallowed_special == "all":
        return _EMPTY, _EMPTY  # nothing to allow or check
    if allowed_special == "all":
        allowed = frozenset(tok._special_tokens)
    elif isinstance(allowed_special, str):
        raise ValueError(f"allowed_special must be 'all' or a set of strings, not {allowed_special!r}")
    else:
        allowed = frozenset(allowed_special)
    if disallowed_special == "all":
        disallowed = frozenset(tok._special_tokens) - allowed
    elif isinstance(disallowed_special, str):
        raise ValueError(f"disallowed_special must be 'all' or a set of strings, not {disallowed_special!r}")
    else:
        disallowed = frozenset(disallowed_special)
    return frozenset(t for t in allowed if t in tok._special_tokens), disallowed


def segments(tok, data, allowed: frozenset, base: int) -> tuple[np.ndarray, np.ndarray]:
    """Documents (ranges between allowed special tokens) of one text at ``base``."""
    if not allowed or not tok._special_lookup.may_contain(data, allowed):
        docs = np.empty((1, 2), dtype=np.int64)
        docs[0, 0] = base
        docs[0, 1] = base + len(data)
        return docs, NO_SPECIAL
    starts, stops, specials = [base], [], []
    for m in tok._special_lookup.regex(allowed).finditer(data):
        stops.append(base + m.start())
        specials.append(tok._special_tokens[m.group().decode("utf-8")])
        starts.append(base + m.end())
    stops.append(base + len(data))
    specials.append(-1)
    docs = np.stack([np.array(starts, dtype=np.int64), np.array(stops, dtype=np.int64)], axis=1)
    return np.ascontiguousarray(docs), np.array(specials, dtype=np.int64)


def special_documents(tok, data: np.ndarray, texts: np.ndarray, allowed: frozenset, disallowed: frozenset):
    """(documents, the special token id after each or -1, the index of each text's last
    document or None when documents are the texts) of the texts at byte ranges ``texts`` of
    ``data``: ValueError if one holds a ``disallowed`` special token; ``allowed`` ones cut
    their text. One scan of the UTF-8 (without the GIL) finds whether there is any; only then
    is each text looked at."""
    specials = allowed | disallowed
    if not specials or not tok._special_lookup.may_contain(data, specials):
        return texts, NO_SPECIAL, None
    raw = data.tobytes()
    bounds = texts.tolist()
    if disallowed and tok._special_lookup.may_contain(data, disallowed):
        finder = tok._special_lookup.regex(disallowed)
        for start, stop in bounds:  # text by text: a token may straddle two texts
            m = finder.search(raw, start, stop)
            if m is not None:
                raise disallowed_error(m.group().decode("utf-8"))
    parts = [segments(tok, raw[start:stop], allowed, start) for start, stop in bounds]
    n_docs = np.fromiter((len(p[0]) for p in parts), dtype=np.int64, count=len(parts))
    docs = np.ascontiguousarray(np.concatenate([p[0] for p in parts])) if parts else texts
    doc_special = np.concatenate([p[1] for p in parts]) if parts else NO_SPECIAL
    return docs, doc_special, np.cumsum(n_docs) - 1


def disallowed_error(token: str) -> ValueError:
    return ValueError(
        f"the text contains the disallowed special token {token!r}; pass "
        f"allowed_special={{{token!r}}} (or 'all') to encode it as its id, or "
        f"disallowed_special=() to encode it as ordinary text"
    )



class SpecialMatcher:
    """Finds allowed special tokens in UTF-8 bytes (longest first at each position)."""

    def __init__(self, specials: Mapping[str, int]):
        self._specials = specials

    @staticmethod
    @functools.lru_cache(maxsize=64)
    def _compiled(allowed: frozenset) -> regex.Pattern[bytes]:
        alts = sorted((t.encode("utf-8") for t in allowed), key=lambda b: (-len(b), b))
        return regex.compile(b"|".join(regex.escape(a) for a in alts))

    def regex(self, allowed: frozenset) -> regex.Pattern[bytes]:
        return self._compiled(allowed)

    def may_contain(self, data, tokens: frozenset) -> bool:
        """Whether a token of ``tokens`` occurs in ``data`` (bytes or a uint8 array that
        nothing changes meanwhile), without the GIL (batch workers): ``contains_any`` when the
        tokens start with at most two distinct bytes (eight bytes a step, quicker than a regex
        scan), else one regex scan (quicker than a bytes substring test for their common prefix
        "<|": code holds it often, and each occurrence would need a closer look)."""
        found = token_needles(tokens)
        if found is not None:
            arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
            return bool(contains_any(arr, len(arr), *found))
        return self._compiled(tokens).search(data, concurrent=True) is not None


@functools.lru_cache(maxsize=64)
def token_needles(tokens: frozenset) -> tuple | None:
    """``contains_any``'s arguments after the text: the UTF-8 of ``tokens``, their offsets and
    their (one or two) first bytes; None for more than two first bytes (or an empty token)."""
    raw = [t.encode("utf-8") for t in sorted(tokens)]
    firsts = sorted({r[0] for r in raw if r})
    if not raw or not all(raw) or len(firsts) > 2:
        return None
    flat = np.frombuffer(b"".join(raw), dtype=np.uint8)
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in raw], out=offsets[1:])
    return flat, offsets, firsts[0], firsts[-1]


@functools.lru_cache(maxsize=64)
def block_needles(tokens: frozenset) -> tuple | None:
    """``token_needles`` for the streamed search, or None where it would not do: a token with a cut
    inside (a space after an ASCII letter, where a block may end and the rest of it be encoded
    in the next one)."""
    for t in tokens:
        raw = np.frombuffer(t.encode("utf-8"), dtype=np.uint8)
        if _scanners.last_cut(raw, 0, len(raw)) > 0:
            return None
    return token_needles(tokens)


@functools.lru_cache(maxsize=64)
def special_finder(tokens: frozenset):
    """A function text -> first token of ``tokens`` occurring in text (or None)."""
    alts = sorted(tokens, key=lambda t: (-len(t), t))
    compiled = regex.compile("|".join(regex.escape(t) for t in alts))

    def find(text: str) -> str | None:
        # One regex scan: cheaper than substring tests first ("<|" is common in code).
        m = compiled.search(text)
        return m.group() if m else None

    return find

