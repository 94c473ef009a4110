"""Hugging Face ``tokenizer.json``: the BPE model with a ByteLevel pipeline, both ways.

Written files load in HF tokenizers and transformers and encode as numtok does; read files
give the arguments of a :class:`numtok.Tokenizer` (``Tokenizer.from_file`` builds it), or one
ValueError listing everything numtok cannot represent exactly.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .atomic import atomic_write
from .byte_level import from_byte_level, to_byte_level
from .oniguruma import onig_pattern_for, pattern_from_oniguruma
from .tokenizer_view import attr, mergeable_vocab, merges_of, require_byte_level

__all__ = ["hf_tokenizer_dict", "save_hf_json", "read_hf_json", "hf_dict_arguments", "MAX_ADDED_TOKENS", "too_many_added"]

# Special and added tokens are looked for in every text (one regex alternation of them all): a
# file with more is refused rather than compiled for minutes.
MAX_ADDED_TOKENS = 100_000


def too_many_added(n: int) -> str | None:
    """The problem with ``n`` special and added tokens, or None."""
    if n <= MAX_ADDED_TOKENS:
        return None
    return f"{n:,} special and added tokens (numtok takes at most {MAX_ADDED_TOKENS:,}: each is looked for in every text)"


def hf_tokenizer_dict(tok) -> dict[str, Any]:
    """The tokenizer.json content for ``tok`` (see :func:`save_hf_json`)."""
    require_byte_level(tok, "HF tokenizer.json")
    name, onig = onig_pattern_for(tok.pattern)
    merges, from_ranks = merges_of(tok)
    specials = dict(attr(tok, "special_tokens") or {})

    mergeable = mergeable_vocab(tok)
    as_str = {t: to_byte_level(t) for t in mergeable}
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
            "ignore_merges": bool(from_ranks or attr(tok, "ignore_merges", False)),
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


def read_hf_json(path: str | os.PathLike) -> dict[str, Any]:
    """The :class:`numtok.Tokenizer` arguments of a byte-level BPE ``tokenizer.json`` (as
    written by HF tokenizers or by numtok): ``Tokenizer(**read_hf_json(path))``.

    That tokenizer encodes as ``tokenizers.Tokenizer.from_file(path).encode(text,
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
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        raise ValueError(f"{path}: not a tokenizer.json file (invalid JSON: {exc})") from None
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "tokenizer":  # ".../gpt2/tokenizer.json" is better named by its directory
        name = os.path.basename(os.path.dirname(os.path.abspath(path))) or name
    return hf_dict_arguments(data, source=path, name=name)


def hf_dict_arguments(data: Any, source: str = "tokenizer.json", name: str | None = None) -> dict[str, Any]:
    """The :class:`numtok.Tokenizer` arguments of parsed tokenizer.json content."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise ValueError(f"{source}: not a tokenizer.json file (no 'model' object)")
    model = data["model"]
    model_type = model.get("type")
    if model_type is None:  # older files name no type: tell the two models apart by their fields
        wordpiece = "continuing_subword_prefix" in model and "max_input_chars_per_word" in model
        model_type = "BPE" if "merges" in model else "WordPiece" if wordpiece else None
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
    return dict(
        vocab=vocab,
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
            return pattern_from_oniguruma(pat["Regex"])
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
    if not isinstance(added, list) or not all(isinstance(tok, dict) and isinstance(tok.get("id"), int) for tok in added):
        problems.append("added_tokens is not a list of objects with an int id")
        return specials
    problem = too_many_added(len(added))
    if problem is not None:
        problems.append(problem)
        return specials
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
        b = from_byte_level(s)
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
