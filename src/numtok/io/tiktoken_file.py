"""tiktoken's ``.tiktoken`` rank files (``base64(token) rank`` per line, optionally gzip'd),
both ways, and the sidecar JSON numtok writes beside them with the pattern and special tokens.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import zlib
from typing import Any

import numpy as np

from ..pretokenizers.patterns import resolve_pattern
from . import _rank_kernels as _rk
from .atomic import atomic_write, fsync_directory
from .tokenizer_view import attr, is_rank_mode, mergeable_vocab, require_byte_level

__all__ = [
    "read_tiktoken_ranks", "read_rank_file", "parse_ranks", "save_tiktoken", "check_rank_consistency",
    "tiktoken_sidecar_path", "read_tiktoken_sidecar", "sidecar_arguments",
]


_RANK_ERRORS = {
    _rk.RF_NO_SPACE: "expected '<base64 token> <rank>'",
    _rk.RF_BAD_BASE64: "invalid base64 token",
    _rk.RF_BAD_RANK: "invalid rank (expected a decimal integer below 2**31 - 1)",
    _rk.RF_EMPTY_TOKEN: "empty token",
}


def read_rank_file(path) -> bytes:
    path = os.fspath(path)
    with open(path, "rb") as f:  # FileNotFoundError carries the path
        content = f.read()
    if content[:2] == b"\x1f\x8b":
        try:
            content = gzip.decompress(content)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{path}: corrupt gzip data ({exc})") from None
    return content


def parse_ranks(content: bytes, path, check_tokens: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat token bytes, offsets, ranks) of a rank file's content; ValueError names the line.

    ``check_tokens=False`` skips the repeated-token check (for sha256-verified files).
    """
    status, line, flat, off, ranks = _rk.parse_tiktoken(np.frombuffer(content, dtype=np.uint8))
    if status != _rk.RF_OK:
        raise ValueError(f"{os.fspath(path)}: line {line}: {_RANK_ERRORS[status]}: {_line(content, line)!r}")
    order = np.argsort(ranks, kind="stable")
    dup = np.flatnonzero(ranks[order][1:] == ranks[order][:-1])
    if len(dup):
        entry = int(order[dup[0] + 1])
        line = _entry_line(content, entry)
        raise ValueError(f"{os.fspath(path)}: line {line}: rank {int(ranks[entry])} appears twice: {_line(content, line)!r}")
    if check_tokens:
        raw = flat.tobytes()
        o = off.tolist()
        tokens = [raw[o[i] : o[i + 1]] for i in range(len(ranks))]
        if len(set(tokens)) != len(tokens):
            seen: set[bytes] = set()
            for i, token in enumerate(tokens):
                if token in seen:
                    line = _entry_line(content, i)
                    raise ValueError(f"{os.fspath(path)}: line {line}: token {token!r} appears twice")
                seen.add(token)
    return flat, off, ranks


def _line(content: bytes, line: int) -> str:
    lines = content.split(b"\n")
    text = lines[line - 1] if 0 < line <= len(lines) else b""
    return text[:80].decode("utf-8", errors="replace")


def _entry_line(content: bytes, entry: int) -> int:
    seen = -1
    for number, text in enumerate(content.split(b"\n"), start=1):
        if text.strip(b"\r"):
            seen += 1
            if seen == entry:
                return number
    return 0


def read_tiktoken_ranks(path: str | os.PathLike) -> dict[bytes, int]:
    """Read a ``.tiktoken`` rank file (optionally gzip-compressed) into ``{token_bytes: rank}``.

    Raises FileNotFoundError for a missing file and ValueError naming the file and line for a
    corrupt one (bad base64, missing or invalid rank, repeated rank or token).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
    >>> _ = open(path, "w").write("YQ== 0\\nYg== 1\\n")
    >>> read_tiktoken_ranks(path)
    {b'a': 0, b'b': 1}
    >>> _ = open(path, "w").write("YQ== 0\\nYg 1\\n")
    >>> read_tiktoken_ranks(path)
    Traceback (most recent call last):
      ...
    ValueError: ...tiny.tiktoken: line 2: invalid base64 token: 'Yg 1'
    """
    content = read_rank_file(path)
    flat, off, ranks = parse_ranks(content, path)
    raw = flat.tobytes()
    o = off.tolist()
    return {raw[o[i] : o[i + 1]]: r for i, r in enumerate(ranks.tolist())}


def tiktoken_sidecar_path(path: str | os.PathLike) -> str:
    """The sidecar JSON written next to a rank file: ``NAME.tiktoken`` -> ``NAME.tiktoken.json``."""
    return os.fspath(path) + ".json"


def check_rank_consistency(tok) -> None:
    """Raise ValueError unless the merge-mode ``tok`` can be written as tiktoken ranks.

    tiktoken's rank of a token is its id *and* its merge priority, so the merges, in order,
    must produce strictly increasing ids, each larger than the ids of its two parts, and no
    token may be produced by two merges.
    """
    if is_rank_mode(tok):
        return
    merges = tok.merges
    vocab = mergeable_vocab(tok)
    specials = dict(attr(tok, "special_tokens") or {})
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
    require_byte_level(tok, "tiktoken")
    check_rank_consistency(tok)
    vocab = mergeable_vocab(tok)
    missing = [x for x in range(256) if bytes([x]) not in vocab]
    if missing:
        raise ValueError(
            f"cannot save as tiktoken: the vocab lacks {len(missing)} of the 256 single bytes "
            f"(e.g. 0x{missing[0]:02x}); tiktoken fails on text containing them"
        )
    name, pattern_string = resolve_pattern(tok.pattern)
    specials = {s: int(i) for s, i in (attr(tok, "special_tokens") or {}).items()}
    sidecar = {
        "name": attr(tok, "name") or os.path.basename(os.fspath(path)).split(".")[0] or "numtok",
        "pat_str": pattern_string,
        "special_tokens": specials,
        "numtok": {"format_version": 1, "pattern": name or pattern_string},
    }
    lines = [base64.b64encode(t) + b" " + str(int(i)).encode() + b"\n"
             for t, i in sorted(vocab.items(), key=lambda kv: kv[1])]
    # A save killed between the two renames leaves a pair that reading then refuses.
    sidecar["numtok"] = {"format_version": 1, "pattern": name or pattern_string,
                         "ranks_sha256": hashlib.sha256(b"".join(lines)).hexdigest()}
    # Both are written and fsynced before either is renamed into place (the sidecar first), so
    # that the two renames follow each other at once; one directory fsync after both covers them.
    with atomic_write(path, "wb", fsync=False) as f:
        f.writelines(lines)
        f.flush()
        os.fsync(f.fileno())
        with atomic_write(tiktoken_sidecar_path(path), "w", fsync=False) as side:
            json.dump(sidecar, side, ensure_ascii=False, indent=2)
            side.write("\n")
            side.flush()
            os.fsync(side.fileno())
    fsync_directory(os.path.dirname(os.path.abspath(path)))


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
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise ValueError(f"{side_path}: malformed tiktoken sidecar ({exc})") from None
    expected = (side.get("numtok") or {}).get("ranks_sha256") if isinstance(side.get("numtok"), dict) else None
    if expected is not None:
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != expected:
                raise ValueError(f"{side_path} was written with another rank file than {os.fspath(path)} (an interrupted "
                                 "save?): save again, or pass pattern= and special_tokens=")
    resolved, _ = resolve_pattern(pattern)
    return {"name": name, "pattern": resolved or pattern, "special_tokens": specials}


def sidecar_arguments(path: str | os.PathLike, pattern: str | None = None,
                      special_tokens: dict[str, int] | None = None, name: str | None = None) -> dict[str, Any]:
    """``pattern``, ``special_tokens`` and ``name`` for ``Tokenizer.from_tiktoken(path, ...)``,
    the omitted ones filled from the sidecar (:func:`read_tiktoken_sidecar`); without a
    sidecar the pattern defaults to "cl100k" and there are no special tokens."""
    side = read_tiktoken_sidecar(path) if pattern is None or special_tokens is None or name is None else None
    if side is not None:
        pattern = side["pattern"] if pattern is None else pattern
        special_tokens = side["special_tokens"] if special_tokens is None else special_tokens
        name = side["name"] if name is None else name
    return {"pattern": pattern or "cl100k", "special_tokens": special_tokens, "name": name}
