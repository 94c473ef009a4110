"""Named encodings shipped with numtok (OpenAI's rank files, offline).

The rank files live in ``numtok/data/`` gzip-compressed; p50k_base is stored as r50k_base plus
its 24 extra lines. A file's decompressed content is checked against the official sha256 (the
hash tiktoken checks) whenever it is read. The tables built from it are cached on disk (see
``_cache_dir``), so later processes load an encoding in a few tens of milliseconds.

>>> import numtok
>>> numtok.list_encodings()
['cl100k_base', 'gpt2', 'o200k_base', 'o200k_harmony', 'p50k_base', 'p50k_edit', 'r50k_base']
>>> enc = numtok.load("o200k_base")
>>> enc.name, enc.n_vocab, enc.eot_token
('o200k_base', 200019, 199999)
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io.atomic import atomic_write
from ..io.tiktoken_file import parse_ranks, read_rank_file, read_tiktoken_ranks
from . import _kernels as _encode_kernels
from . import _segments, tables
from .tokenizer import Tokenizer

__all__ = ["load", "list_encodings", "read_tiktoken_ranks", "DATA_DIR"]

DATA_DIR = Path(__file__).resolve().parent.parent / "data"

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class _RankFile:
    parts: tuple[str, ...]  # files in DATA_DIR whose decompressed contents concatenate to the rank file
    sha256: str  # of the official .tiktoken file


@dataclass(frozen=True)
class _Encoding:
    ranks: str  # key of _RANK_FILES
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    n_vocab: int | None = None  # tiktoken's explicit_n_vocab, checked when given


_RANK_FILES = {
    "r50k_base": _RankFile(
        ("r50k_base.tiktoken.gz",), "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
    ),
    "p50k_base": _RankFile(
        ("r50k_base.tiktoken.gz", "p50k_base.extra.tiktoken.gz"),
        "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    ),
    "cl100k_base": _RankFile(
        ("cl100k_base.tiktoken.gz",), "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    ),
    "o200k_base": _RankFile(
        ("o200k_base.tiktoken.gz",), "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    ),
}


def _harmony_specials() -> dict[str, int]:
    named = {
        "<|startoftext|>": 199998, ENDOFTEXT: 199999, "<|return|>": 200002, "<|constrain|>": 200003,
        "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008, "<|call|>": 200012,
    }  # fmt: skip
    specials = {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}
    for i in range(200000, 201088):
        specials[f"<|reserved_{i}|>"] = i
    for s, i in named.items():
        specials.pop(f"<|reserved_{i}|>", None)
        specials[s] = i
    # As in tiktoken, 200018 is both <|endofprompt|> and <|reserved_200018|>; the latter,
    # inserted last, is what 200018 decodes to.
    del specials["<|reserved_200018|>"]
    specials["<|reserved_200018|>"] = 200018
    return specials


_ENCODINGS: dict[str, _Encoding] = {
    "gpt2": _Encoding("r50k_base", "r50k", {ENDOFTEXT: 50256}, 50257),
    "r50k_base": _Encoding("r50k_base", "r50k", {ENDOFTEXT: 50256}, 50257),
    "p50k_base": _Encoding("p50k_base", "r50k", {ENDOFTEXT: 50256}, 50281),
    "p50k_edit": _Encoding("p50k_base", "r50k", {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283}),
    "cl100k_base": _Encoding(
        "cl100k_base",
        "cl100k",
        {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276},
    ),
    "o200k_base": _Encoding("o200k_base", "o200k", {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}),
    "o200k_harmony": _Encoding("o200k_base", "o200k", _harmony_specials()),
}

_LOCK = threading.Lock()
_LOADED: dict[str, Tokenizer] = {}
_RANKS: dict[str, tuple] = {}


def list_encodings() -> list[str]:
    """Names accepted by :func:`load`."""
    return sorted(_ENCODINGS)


def load(name: str) -> Tokenizer:
    """The named encoding (cached: every call returns the same thread-safe Tokenizer).

    Pickles by name, so worker processes reload it from the package data.

    >>> import numtok
    >>> numtok.load("cl100k_base").encode("tiktoken is great!").tolist()
    [83, 1609, 5963, 374, 2294, 0]
    >>> numtok.load("cl200k")
    Traceback (most recent call last):
      ...
    ValueError: unknown encoding 'cl200k'; known encodings: cl100k_base, gpt2, o200k_base, o200k_harmony, p50k_base, p50k_edit, r50k_base
    """
    tok = _LOADED.get(name)
    if tok is not None:
        return tok
    spec = _ENCODINGS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"unknown encoding {name!r}; known encodings: {', '.join(list_encodings())}")
    with _LOCK:
        tok = _LOADED.get(name)
        if tok is None:
            tok = _build(name, spec)
            if spec.n_vocab is not None and tok.n_vocab != spec.n_vocab:
                raise ValueError(f"{name}: expected n_vocab {spec.n_vocab}, got {tok.n_vocab}")
            tok._pickle_by_name = (load, (name,))
            _LOADED[name] = tok
    return tok


def _build(name: str, spec: _Encoding) -> Tokenizer:
    options = dict(pattern=spec.pattern, special_tokens=spec.special_tokens, name=name)
    path = _table_cache_path(name, spec)
    state = _read_table_cache(path)
    if state is not None and _plausible(state):
        try:
            return Tokenizer._from_arrays(None, None, None, None, prebuilt=state, **options)
        except Exception:  # noqa: BLE001 - a damaged cache is rebuilt, never trusted
            pass
    flat, off, ranks = _ranks(spec.ranks)
    tok = Tokenizer._from_arrays(flat, off[:-1], off[1:] - off[:-1], ranks, **options)
    _write_table_cache(path, tables.table_state(tok))
    return tok


# ----------------------------------------------------------------------------------------------
# On-disk cache of the built tables (building them from the rank file is the slow part of load).
# Keyed by the encoding, the rank file's sha256, its special tokens and the kernel source (the
# table layout lives there); written atomically; anything unreadable is rebuilt. Location:
# $NUMTOK_CACHE_DIR, else $XDG_CACHE_HOME/numtok, else ~/.cache/numtok; NUMTOK_CACHE_DIR=""
# turns it off.


def _cache_dir() -> Path | None:
    env = os.environ.get("NUMTOK_CACHE_DIR")
    if env is not None:
        return Path(env) if env else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "numtok"


_LAYOUT: str | None = None


def _table_cache_path(name: str, spec: _Encoding) -> Path | None:
    global _LAYOUT
    directory = _cache_dir()
    if directory is None:
        return None
    if _LAYOUT is None:
        _LAYOUT = hashlib.sha256(b"".join(Path(str(m.__file__)).read_bytes() for m in (_encode_kernels, _segments))).hexdigest()[:16]
    key = hashlib.sha256(
        repr((name, _RANK_FILES[spec.ranks].sha256, sorted(spec.special_tokens.items()), spec.pattern, _LAYOUT)).encode()
    ).hexdigest()[:24]
    return directory / f"{name}-{key}.npz"


def _read_table_cache(path: Path | None) -> dict | None:
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except Exception:  # noqa: BLE001
        return None


def _plausible(state: dict) -> bool:
    """Structural checks on cached tables (types, sizes, offsets)."""
    types = dict(n_bytes=np.int64, tok_bytes=np.uint8, tok_off=np.int64, mergeable_ids=np.int64,
                 tok_tab=np.uint64, pair_tab=np.uint64, bp=np.int32, seg_filter=np.uint64, char_flags=np.uint8)  # fmt: skip
    if set(state) != set(types) or any(state[k].dtype != t for k, t in types.items()):
        return False
    n, off, ids = int(state["n_bytes"]), state["tok_off"], state["mergeable_ids"]
    pow2 = lambda x: x > 0 and x & (x - 1) == 0  # noqa: E731
    return (
        len(state["tok_bytes"]) >= n + 16 and len(off) >= 2 and off[0] == 0 and off[-1] == n
        and bool(np.all(np.diff(off) >= 0)) and len(ids) > 0 and 0 <= ids.min() and ids.max() < len(off) - 1
        and len(state["bp"]) == 65536 and pow2(len(state["pair_tab"])) and pow2(len(state["tok_tab"]) // 2)
        and pow2(len(state["seg_filter"])) and len(state["char_flags"]) == _segments.BMP
    )  # fmt: skip


def _write_table_cache(path: Path | None, state: dict) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb", fsync=False) as f:  # a cache: losing it to a crash costs a rebuild
            np.savez(f, **state)
        # Tables of older layouts (another numtok version) are of no more use.
        for old in path.parent.glob(path.name.rsplit("-", 1)[0] + "-*.npz"):
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass


def rank_file_content(ranks: str) -> bytes:
    """The exact (decompressed, sha256-checked) content of a shipped rank file."""
    spec = _RANK_FILES[ranks]
    content = b"".join(read_rank_file(DATA_DIR / part) for part in spec.parts)
    digest = hashlib.sha256(content).hexdigest()
    if digest != spec.sha256:
        raise ValueError(f"{DATA_DIR / spec.parts[-1]}: sha256 {digest} does not match the official {spec.sha256} of {ranks}")
    return content


def _ranks(ranks: str):
    cached = _RANKS.get(ranks)
    if cached is None:
        spec = _RANK_FILES[ranks]
        cached = parse_ranks(rank_file_content(ranks), DATA_DIR / spec.parts[-1], check_tokens=False)
        _RANKS[ranks] = cached
    return cached
