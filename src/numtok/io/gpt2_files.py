"""GPT-2's ``vocab.json`` + ``merges.txt`` (the "slow" HF format), both ways."""

from __future__ import annotations

import json
import os
from typing import Any

from .atomic import atomic_directory, atomic_write
from .byte_level import from_byte_level, to_byte_level
from .tokenizer_view import attr, mergeable_vocab, merges_of, require_byte_level

__all__ = ["save_gpt2", "read_gpt2"]


def save_gpt2(tok, directory: str | os.PathLike) -> None:
    """Write ``DIRECTORY/vocab.json`` and ``DIRECTORY/merges.txt`` (GPT-2 / HF "slow" format),
    as a set (:class:`numtok.io.atomic.atomic_directory`; other files in it are kept).

    ``vocab.json`` maps byte-level strings to ids and includes the special tokens (as GPT-2's
    ``<|endoftext|>``); ``merges.txt`` starts with ``#version: 0.2`` and has one
    ``left right`` line per merge. The pattern is not part of this format: pass it again to
    :func:`read_gpt2`. A rank-mode tokenizer gets the merges of :func:`merges_from_ranks`
    (this format has no whole-piece lookup, so prefer ``save``/``save_tiktoken`` for those).
    """
    require_byte_level(tok, "GPT-2 vocab.json/merges.txt")
    directory = os.fspath(directory)
    merges, _ = merges_of(tok)
    vocab = {to_byte_level(t): int(i) for t, i in mergeable_vocab(tok).items()}
    for content, i in (attr(tok, "special_tokens") or {}).items():
        vocab.setdefault(content, int(i))
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    with atomic_directory(directory) as tmp:
        with atomic_write(os.path.join(tmp, "vocab.json"), "w") as f:
            json.dump(vocab, f, ensure_ascii=False)
            f.write("\n")
        with atomic_write(os.path.join(tmp, "merges.txt"), "w") as f:
            f.write("#version: 0.2\n")
            for a, b in merges:
                f.write(f"{to_byte_level(a)} {to_byte_level(b)}\n")


def read_gpt2(vocab_json: str | os.PathLike, merges_txt: str | os.PathLike, pattern: str = "gpt2") -> dict[str, Any]:
    """The :class:`numtok.Tokenizer` arguments of a GPT-2 style ``vocab.json`` +
    ``merges.txt`` pair (merge semantics): ``Tokenizer(**read_gpt2(...))``.

    Entries of ``vocab.json`` that no merge produces and that are not single bytes (GPT-2's
    ``<|endoftext|>``, anything that is not a byte-level string) become special tokens: BPE
    can never produce them, so text can only reach them as special tokens.

    Raises:
        FileNotFoundError: a missing file.
        ValueError: malformed files, a merge whose parts or result are not in the vocab.
    """
    vocab_json, merges_txt = os.fspath(vocab_json), os.fspath(merges_txt)
    try:
        with open(vocab_json, encoding="utf-8") as f:
            strings = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
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
        left, right = (from_byte_level(p) for p in parts) if len(parts) == 2 else (None, None)
        if left is None or right is None:
            raise ValueError(f"{merges_txt}:{line_no}: not a byte-level merge line: {line!r}")
        merges.append((left, right))
        produced.add(left + right)
    vocab: dict[bytes, int] = {}
    specials: dict[str, int] = {}
    for s, i in strings.items():
        b = from_byte_level(s)
        if b is None or (len(b) > 1 and b not in produced):
            specials[s] = i
        else:
            vocab[b] = i
    for line_no, (a, b) in enumerate(merges, start=1):
        if a not in vocab or b not in vocab or a + b not in vocab:
            raise ValueError(f"{merges_txt}: merge {line_no} ({to_byte_level(a)} {to_byte_level(b)}) uses a token not in {vocab_json}")
    name = os.path.basename(os.path.dirname(os.path.abspath(vocab_json))) or None
    return dict(vocab=vocab, merges=merges, pattern=pattern, special_tokens=specials, name=name)
