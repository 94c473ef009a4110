"""numtok: byte-level BPE and WordPiece tokenizers on Numba kernels over NumPy arrays.

>>> import numtok
>>> enc = numtok.load("cl100k_base")
>>> enc.decode(enc.encode("hello world"))
'hello world'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# What type checkers see (``X as X``: a re-export); at run time __getattr__ imports each on first use.
if TYPE_CHECKING:
    from .encode.batch import BatchEncoding as BatchEncoding
    from .encode.registry import list_encodings as list_encodings
    from .encode.registry import load as load
    from .encode.tokenizer import Tokenizer as Tokenizer
    from .evaluation.runner import evaluate as evaluate
    from .evaluation.sweep import sweep as sweep
    from .precompile import warmup as warmup
    from .pretokenizers import pretokenize as pretokenize
    from .pretokenizers import split_bytes as split_bytes
    from .pretokenizers.patterns import NAMED_PATTERNS as NAMED_PATTERNS
    from .train.trainer import train_bpe as train_bpe
    from .train.trainer import train_bpe_from_counts as train_bpe_from_counts
    from .train.word_counts import WordCounts as WordCounts
    from .train.word_counts import count_words as count_words
    from .wordpiece import WordPiece as WordPiece
    from .wordpiece import train_wordpiece as train_wordpiece

# Public names and the module that defines each. Modules are imported on first use, so
# `import numtok` stays cheap and a tool that needs only one part pays only for that part.
# (No module is named like a public function: importing it would shadow the function.)
_EXPORTS = {
    "pretokenize": "pretokenizers",
    "split_bytes": "pretokenizers",
    "NAMED_PATTERNS": "pretokenizers.patterns",
    "train_bpe": "train.trainer",
    "train_bpe_from_counts": "train.trainer",
    "count_words": "train.word_counts",
    "WordCounts": "train.word_counts",
    "Tokenizer": "encode.tokenizer",
    "BatchEncoding": "encode.batch",
    "load": "encode.registry",
    "list_encodings": "encode.registry",
    "train_wordpiece": "wordpiece",
    "WordPiece": "wordpiece",
    "warmup": "precompile",
    "evaluate": "evaluation.runner",
    "sweep": "evaluation.sweep",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'numtok' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
