"""A tokenizer named the way the command line and ``numtok.dask`` name one: a bundled encoding,
a tokenizer.json, a .tiktoken rank file (its .tiktoken.json sidecar gives pattern and special
tokens), or a directory holding tokenizer.json or vocab.json + merges.txt.

>>> load_tokenizer("gpt2").n_vocab
50257
"""

from __future__ import annotations

import os
from typing import Any, Callable

from ..io.tiktoken_file import sidecar_arguments
from . import registry
from .tokenizer import Tokenizer

__all__ = ["load_tokenizer"]


def load_tokenizer(spec: str) -> Tokenizer:
    """The Tokenizer ``spec`` names; ValueError (one line, naming ``spec``) if it names none."""
    if spec in registry.list_encodings():
        return registry.load(spec)
    if not os.path.exists(spec):
        raise ValueError(f"tokenizer {spec!r} is neither a file nor a bundled encoding ({', '.join(registry.list_encodings())})")
    if os.path.isdir(spec):
        if os.path.isfile(os.path.join(spec, "tokenizer.json")):
            return load_tokenizer(os.path.join(spec, "tokenizer.json"))
        vocab, merges = os.path.join(spec, "vocab.json"), os.path.join(spec, "merges.txt")
        if os.path.isfile(vocab) and os.path.isfile(merges):
            return _readable(Tokenizer.from_gpt2, spec, vocab, merges)
        raise ValueError(f"{spec}: directory has neither tokenizer.json nor vocab.json + merges.txt")
    with open(spec, "rb") as f:
        head = f.read(64)
    if head.lstrip()[:1] == b"{":
        return _readable(Tokenizer.from_file, spec, spec)
    return _readable(lambda path: Tokenizer.from_tiktoken(path, **sidecar_arguments(path)), spec, spec)


def _readable(loader: Callable[..., Any], spec: str, *args: str) -> Tokenizer:
    try:
        return loader(*args)
    except (ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
        text = str(exc)
        if "WordPiece.from_file" in text:
            text = (f"{spec} is a WordPiece tokenizer; the command line handles byte-level BPE only "
                    "(in Python: numtok.WordPiece.from_file)")
        raise ValueError(text if spec in text else f"cannot read tokenizer {spec}: {text}") from None
