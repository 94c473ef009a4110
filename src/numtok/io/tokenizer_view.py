"""A tokenizer seen as the vocabulary and merges other libraries' files hold.

The writers in this package take any object with numtok's Tokenizer attributes (``vocab``,
``merges``, ``special_tokens``, ``pattern``, ...), so they never import the encoder.
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["attr", "is_rank_mode", "mergeable_vocab", "require_byte_level", "merges_of", "merges_from_ranks", "tokenizer_info",
           "tokenizer_digest"]


def attr(tok: Any, name: str, default: Any = None) -> Any:
    return getattr(tok, name, default)


def is_rank_mode(tok) -> bool:
    """tiktoken semantics (no merge list of its own; ``tok.merges`` is then derived)."""
    mode = getattr(tok, "_rank_mode", None)
    return bool(mode) if mode is not None else attr(tok, "merges") is None


def mergeable_vocab(tok) -> dict[bytes, int]:
    """``tok.vocab`` without the special tokens (which it lists as their UTF-8 bytes)."""
    specials = dict(attr(tok, "special_tokens") or {})
    special_ids = set(specials.values())
    special_bytes = {s.encode("utf-8") for s in specials}
    return {t: i for t, i in tok.vocab.items() if not (i in special_ids and t in special_bytes)}


def require_byte_level(tok, fmt: str) -> None:
    problems = []
    if attr(tok, "units", "bytes") != "bytes":
        problems.append(f"units={tok.units!r} (the {fmt} format is byte-level)")
    if attr(tok, "end_of_word") is not None:
        problems.append(f"end_of_word={tok.end_of_word!r} (no {fmt} equivalent)")
    if problems:
        raise ValueError(f"cannot save as {fmt}: " + "; ".join(problems))


def merges_of(tok) -> tuple[list[tuple[bytes, bytes]], bool]:
    """(merges, from_ranks). A rank-mode tokenizer (merges None) gets derived merges."""
    if is_rank_mode(tok):
        return merges_from_ranks(mergeable_vocab(tok)), True
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
    out: list[tuple[bytes, bytes]] = []
    for token, _ in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) > 1:
            out.extend((token[:i], token[i:]) for i in range(1, len(token)) if token[:i] in ranks and token[i:] in ranks)
    return out


def tokenizer_info(tok, top: int = 10) -> dict:
    """The facts ``numtok info`` prints (``_longest_raw``: the ``top`` longest tokens as
    (bytes, id), the others are JSON-ready)."""
    from ..pretokenizers.patterns import NAMED_PATTERNS

    mergeable = mergeable_vocab(tok)
    longest = sorted(mergeable.items(), key=lambda kv: (-len(kv[0]), kv[1]))[:top]
    rank_mode = is_rank_mode(tok)
    return {
        "name": tok.name,
        "mode": "ranks (tiktoken)" if rank_mode else "merges (Hugging Face BPE)",
        "n_vocab": tok.n_vocab,
        "mergeable_tokens": len(mergeable),
        "merges": None if rank_mode else len(tok.merges),
        "pattern": tok.pattern if tok.pattern in NAMED_PATTERNS else "custom",
        "pattern_regex": NAMED_PATTERNS.get(tok.pattern, tok.pattern),
        "special_tokens": tok.special_tokens,
        "eot_token": tok.special_tokens.get("<|endoftext|>"),
        "longest_tokens": [{"id": i, "bytes": len(t), "token": t.decode("utf-8", "replace")} for t, i in longest],
        "_longest_raw": longest,
    }


def tokenizer_digest(tok) -> str:
    """SHA-256 of what decides ``tok``'s ids: its tokens and ids, merges (merge mode), pattern,
    special tokens and options; equal for two tokenizers that encode alike, whatever their
    names.

    >>> import numtok
    >>> gpt2 = numtok.load("gpt2")
    >>> same = numtok.Tokenizer(mergeable_vocab(gpt2), pattern=gpt2.pattern, special_tokens=gpt2.special_tokens, name="copy")
    >>> tokenizer_digest(same) == tokenizer_digest(gpt2) != tokenizer_digest(numtok.load("cl100k_base"))
    True
    """
    h = hashlib.sha256()
    for token, i in sorted(tok.vocab.items(), key=lambda kv: kv[1]):
        h.update(b"%d:%d:" % (i, len(token)) + token)
    h.update(b"\0merges\0")
    if not is_rank_mode(tok):
        for a, b in tok.merges:
            h.update(b"%d:%d:" % (len(a), len(b)) + bytes(a) + bytes(b))
    from ..pretokenizers.patterns import NAMED_PATTERNS

    pattern = attr(tok, "pattern")
    options = (NAMED_PATTERNS.get(pattern, pattern), sorted((attr(tok, "special_tokens") or {}).items()), attr(tok, "units"),
               attr(tok, "unk_token"), attr(tok, "end_of_word"), attr(tok, "ignore_merges"))
    h.update(repr(options).encode("utf-8", "surrogatepass"))
    return h.hexdigest()
