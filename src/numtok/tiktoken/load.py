"""tiktoken's rank-file functions (``tiktoken.load``), offline.

Local files are read as tiktoken reads them. A URL is served from numtok's bundled copy when it
is one of OpenAI's public rank files (sha256-checked), else from tiktoken's download cache
(``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or ``<tmp>/data-gym-cache``, same keys); nothing
is downloaded.

>>> import os, tempfile
>>> from numtok.tiktoken.load import dump_tiktoken_bpe, load_tiktoken_bpe
>>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
>>> dump_tiktoken_bpe({b"a": 0, b"b": 1, b"ab": 2}, path)
>>> load_tiktoken_bpe(path)
{b'a': 0, b'b': 1, b'ab': 2}
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile

__all__ = ["read_file", "read_file_cached", "check_hash", "load_tiktoken_bpe", "dump_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks"]

_OPENAI_PUBLIC = "https://openaipublic.blob.core.windows.net/encodings/"
_BUNDLED_FILES = {f"{_OPENAI_PUBLIC}{name}.tiktoken": name for name in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base")}


def read_file(blobpath: str) -> bytes:
    """The bytes of a local file, or of one of OpenAI's public rank files (bundled copy).
    Any other URL raises OSError: this module never downloads."""
    if "://" not in blobpath:
        with open(blobpath, "rb", buffering=0) as f:
            return f.read()
    bundled = _BUNDLED_FILES.get(blobpath)
    if bundled is not None:
        from ..encode.registry import rank_file_content

        return rank_file_content(bundled)
    raise OSError(f"numtok.tiktoken does not download: {blobpath} is not a bundled file and not in the tiktoken cache ({_cache_dir()})")


def check_hash(data: bytes, expected_hash: str) -> bool:
    return hashlib.sha256(data).hexdigest() == expected_hash


def _cache_dir() -> str:
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def read_file_cached(blobpath: str, expected_hash: str | None = None) -> bytes:
    """:func:`read_file`, a URL looked up first in tiktoken's cache (a file named by the
    sha1 of the URL); ValueError if the content does not have ``expected_hash``."""
    cache_dir = _cache_dir()
    if "://" in blobpath and blobpath not in _BUNDLED_FILES and cache_dir:
        cache_path = os.path.join(cache_dir, hashlib.sha1(blobpath.encode()).hexdigest())
        if os.path.exists(cache_path):
            with open(cache_path, "rb", buffering=0) as f:
                data = f.read()
            if expected_hash is None or check_hash(data, expected_hash):
                return data
    contents = read_file(blobpath)
    if expected_hash and not check_hash(contents, expected_hash):
        raise ValueError(
            f"Hash mismatch for data downloaded from {blobpath} (expected {expected_hash}). "
            f"This may indicate a corrupted download. Please try again."
        )
    return contents


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """A ``.tiktoken`` rank file as ``{token bytes: rank}``; ValueError naming a bad line."""
    contents = read_file_cached(tiktoken_bpe_file, expected_hash)
    from ..io.tiktoken_file import parse_ranks

    try:
        flat, off, ranks = parse_ranks(contents, tiktoken_bpe_file, check_tokens=False)
    except ValueError:
        # numtok's parser refuses what tiktoken's accepts (a repeated rank, lenient base64):
        # tiktoken's own reading, line by line
        return _parse_lines(contents, tiktoken_bpe_file)
    raw = flat.tobytes()
    o = off.tolist()
    return {raw[o[i] : o[i + 1]]: r for i, r in enumerate(ranks.tolist())}


def _parse_lines(contents: bytes, name: str) -> dict[bytes, int]:
    ranks = {}
    for line in contents.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except Exception as e:
            raise ValueError(f"Error parsing line {line!r} in {name}") from e
    return ranks


def dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    """Write ``bpe_ranks`` as a ``.tiktoken`` file (``base64(token) rank`` per line, by rank),
    atomically."""
    from ..io.atomic import atomic_write

    lines = [base64.b64encode(token) + b" " + str(rank).encode() + b"\n" for token, rank in sorted(bpe_ranks.items(), key=lambda x: x[1])]
    with atomic_write(tiktoken_bpe_file, "wb") as f:
        f.writelines(lines)


def data_gym_to_mergeable_bpe_ranks(
    vocab_bpe_file: str,
    encoder_json_file: str,
    vocab_bpe_hash: str | None = None,
    encoder_json_hash: str | None = None,
    clobber_one_byte_tokens: bool = False,
) -> dict[bytes, int]:
    """Ranks from GPT-2's ``vocab.bpe`` (merges) and ``encoder.json``: the 256 bytes in GPT-2's
    order, then one token per merge; AssertionError unless ``encoder.json`` agrees."""
    # GPT-2 writes printable non-space bytes as themselves and the others as chr(256 + n).
    byte_order = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    char_to_byte = {chr(b): b for b in byte_order}
    for n, b in enumerate(b for b in range(256) if b not in char_to_byte.values()):
        byte_order.append(b)
        char_to_byte[chr(256 + n)] = b

    def to_bytes(word: str) -> bytes:
        return bytes(char_to_byte[c] for c in word)

    ranks = {bytes([b]): i for i, b in enumerate(byte_order)}
    merges = read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode().split("\n")[1:-1]
    for line in merges:
        first, second = line.split()
        ranks[to_bytes(first) + to_bytes(second)] = len(ranks)
    encoder = {to_bytes(k): v for k, v in json.loads(read_file_cached(encoder_json_file, encoder_json_hash)).items()}
    encoder.pop(b"<|endoftext|>", None)  # special tokens, not mergeable ones
    encoder.pop(b"<|startoftext|>", None)
    if clobber_one_byte_tokens:
        ranks.update({k: v for k, v in encoder.items() if len(k) == 1})
    assert ranks == encoder
    return ranks
