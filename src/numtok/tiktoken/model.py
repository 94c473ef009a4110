"""Model name -> encoding name, as tiktoken 0.14.0 maps them (exact names, then prefixes).

>>> from numtok.tiktoken.model import encoding_name_for_model
>>> encoding_name_for_model("gpt-4-0613"), encoding_name_for_model("text-davinci-003")
('cl100k_base', 'p50k_base')
"""

from __future__ import annotations

from .core import Encoding
from .registry import get_encoding

__all__ = ["MODEL_TO_ENCODING", "MODEL_PREFIX_TO_ENCODING", "encoding_name_for_model", "encoding_for_model"]


def _table(rows: dict[str, tuple[str, ...]]) -> dict[str, str]:
    return {model: encoding for encoding, models in rows.items() for model in models}


# Prefixes are tried in this order (a fine-tuned "ft:gpt-4o..." before "ft:gpt-4...").
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "o1-": "o200k_base", "o3-": "o200k_base", "o4-mini-": "o200k_base", "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base", "gpt-4.1-": "o200k_base", "chatgpt-4o-": "o200k_base", "gpt-4o-": "o200k_base",
    "gpt-4-": "cl100k_base", "gpt-3.5-turbo-": "cl100k_base", "gpt-35-turbo-": "cl100k_base",
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": "o200k_base", "ft:gpt-4": "cl100k_base", "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base", "ft:babbage-002": "cl100k_base",
}  # fmt: skip

MODEL_TO_ENCODING: dict[str, str] = _table({
    "o200k_base": ("o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"),
    "cl100k_base": (
        "gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo", "davinci-002", "babbage-002",
        "text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large",
    ),
    "p50k_base": (
        "text-davinci-003", "text-davinci-002", "code-davinci-002", "code-davinci-001",
        "code-cushman-002", "code-cushman-001", "davinci-codex", "cushman-codex",
    ),
    "r50k_base": (
        "text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001", "davinci", "curie", "babbage", "ada",
        "text-similarity-davinci-001", "text-similarity-curie-001", "text-similarity-babbage-001",
        "text-similarity-ada-001", "text-search-davinci-doc-001", "text-search-curie-doc-001",
        "text-search-babbage-doc-001", "text-search-ada-doc-001", "code-search-babbage-code-001",
        "code-search-ada-code-001",
    ),
    "p50k_edit": ("text-davinci-edit-001", "code-davinci-edit-001"),
    "gpt2": ("gpt2", "gpt-2"),
})  # fmt: skip


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding a model uses; KeyError if the model is not known.

    >>> encoding_name_for_model("gpt-oss-120b")
    'o200k_harmony'
    """
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return encoding_name
    raise KeyError(
        f"Could not automatically map {model_name} to a tokeniser. "
        "Please use `tiktoken.get_encoding` to explicitly get the tokeniser you expect."
    )


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding a model uses; KeyError if the model is not known."""
    return get_encoding(encoding_name_for_model(model_name))
