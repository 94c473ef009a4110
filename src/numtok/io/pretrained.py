"""A directory ``transformers.AutoTokenizer.from_pretrained`` loads: ``tokenizer.json`` plus
``tokenizer_config.json`` and ``special_tokens_map.json`` naming the bos/eos/unk/pad tokens.

The config names ``PreTrainedTokenizerFast`` (which reads ``tokenizer.json`` as it is), so the
ids are numtok's; no model, vocabulary file or network access is involved.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .atomic import atomic_directory, atomic_write
from .hf_json import save_hf_json
from .tokenizer_view import attr

__all__ = ["save_pretrained", "PRETRAINED_FILES"]

PRETRAINED_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
_ROLES = ("bos_token", "eos_token", "unk_token", "pad_token")
_NO_LIMIT = int(1e30)  # transformers' own "no maximum length"
_DEFAULT_EOS = "<|endoftext|>"


def save_pretrained(tok, directory: str | os.PathLike, *, bos_token: str | None = None, eos_token: str | None = _DEFAULT_EOS,
                    unk_token: str | None = None, pad_token: str | None = None, model_max_length: int | None = None) -> None:
    """Write the three files of :data:`PRETRAINED_FILES` into ``directory`` as a set
    (:class:`numtok.io.atomic.atomic_directory`); other files in it are kept. ``*_token``
    name special tokens of ``tok`` (ValueError names one that is not); the default eos is
    dropped when ``tok`` has no such token."""
    specials = dict(attr(tok, "special_tokens") or {})
    roles: dict[str, str] = {}
    for role, token in zip(_ROLES, (bos_token, eos_token, unk_token, pad_token)):
        if token is None or (role == "eos_token" and token == _DEFAULT_EOS and token not in specials):
            continue
        if not isinstance(token, str) or token not in specials:
            known = ", ".join(sorted(specials)) or "none"
            raise ValueError(f"{role}={token!r} is not a special token of this tokenizer (its special tokens: {known})")
        roles[role] = token
    if model_max_length is not None and (isinstance(model_max_length, bool) or not isinstance(model_max_length, int) or model_max_length < 1):
        raise ValueError(f"model_max_length must be a positive int or None, got {model_max_length!r}")
    directory = os.fspath(directory)
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": model_max_length or _NO_LIMIT,
        "clean_up_tokenization_spaces": False,
        "add_bos_token": False,
        "add_eos_token": False,
        **roles,
        "added_tokens_decoder": {
            str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
            for s, i in sorted(specials.items(), key=lambda kv: kv[1])
        },
    }
    with atomic_directory(directory) as tmp:
        save_hf_json(tok, os.path.join(tmp, "tokenizer.json"))
        for name, content in (("tokenizer_config.json", config), ("special_tokens_map.json", roles)):
            with atomic_write(os.path.join(tmp, name), "w") as f:
                json.dump(content, f, ensure_ascii=False, indent=2)
                f.write("\n")
