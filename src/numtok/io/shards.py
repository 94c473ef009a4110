"""Token shards for training: ``DIR/shard-00000.bin``, ``shard-00001.bin``, ... and ``DIR/index.json``.

Each shard is a flat array of little-endian ids (uint16 when the vocabulary fits, else uint32),
the layout nanoGPT-style loaders memory-map; every shard but the last holds exactly
``shard_tokens`` ids (a document may continue in the next shard). ``index.json`` gives the
dtype, and the tokens and documents (those that start there) of every shard.

Nothing appears under a final name until the whole output is written: shards are written to
hidden temporary files in ``DIR`` and fsynced, and only at :meth:`ShardWriter.commit` is the
old ``index.json`` removed, the shards renamed into place, the shards of an earlier, longer
run deleted, and the new ``index.json`` written (atomically, last). A reader that finds an
``index.json`` finds the shards it lists. On an error the temporary files are removed; a
process killed outright may leave them behind (hidden ``.shard-*.tmp`` files, never a
half-written shard under its final name), and the next run replaces everything.

>>> import numpy as np, os, tempfile, json
>>> out = tempfile.mkdtemp()
>>> with ShardWriter(out, shard_tokens=4, dtype=np.uint16) as shards:
...     shards.write(np.arange(10), doc_starts=np.array([0, 3, 9]))
>>> sorted(os.listdir(out))
['index.json', 'shard-00000.bin', 'shard-00001.bin', 'shard-00002.bin']
>>> [(s["tokens"], s["documents"]) for s in json.load(open(os.path.join(out, "index.json")))["shards"]]
[(4, 2), (4, 0), (2, 1)]
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from typing import IO, Any

import numpy as np

from .atomic import atomic_write, permissions_for, temporary_path_for

DEFAULT_SHARD_TOKENS = 100_000_000  # as nanoGPT's and llm.c's FineWeb shards
INDEX = "index.json"
SHARD_NAME = "shard-{:05d}.bin"
_SHARD_FILE = re.compile(r"shard-(\d{5,})\.bin")
_SHARD_TEMPORARY = re.compile(r"\.shard-\d{5,}\.bin\..+\.tmp")


class ShardWriter:
    """Writes ids as token shards into ``directory`` (created if missing); see the module.

    Use as a context manager: a clean exit commits, an exception (KeyboardInterrupt included)
    removes what was written.
    """

    def __init__(self, directory: str | os.PathLike, shard_tokens: int, dtype: Any, metadata: dict | None = None):
        if int(shard_tokens) < 1:
            raise ValueError(f"shard_tokens must be >= 1, got {shard_tokens}")
        self.directory = os.fspath(directory)
        self.shard_tokens = int(shard_tokens)
        self.dtype = np.dtype(dtype).newbyteorder("<")
        if self.dtype.kind != "u" or self.dtype.itemsize not in (2, 4):
            raise ValueError(f"shards hold uint16 or uint32 ids, not {np.dtype(dtype).name}")
        self.metadata = dict(metadata or {})
        self._created = not os.path.isdir(self.directory)
        os.makedirs(self.directory, exist_ok=True)
        self._done: list[tuple[str, int]] = []  # (temporary path, tokens) of full shards
        self._file: IO[bytes] | None = None
        self._tmp: str | None = None
        self._in_shard = 0
        self._tokens = 0
        self._doc_shards: dict[int, int] = {}  # shard index -> documents starting there

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()

    @property
    def tokens(self) -> int:
        return self._tokens

    def write(self, ids: np.ndarray, doc_starts: np.ndarray | None = None) -> None:
        """Append ``ids``; ``doc_starts`` are the positions in ``ids`` where documents start."""
        ids = np.asarray(ids)
        if doc_starts is not None and len(doc_starts):
            shard_of = (self._tokens + np.asarray(doc_starts, dtype=np.int64)) // self.shard_tokens
            for shard, count in zip(*np.unique(shard_of, return_counts=True)):
                self._doc_shards[int(shard)] = self._doc_shards.get(int(shard), 0) + int(count)
        pos = 0
        while pos < len(ids):
            if self._file is None:
                self._file = self._open_next()
            take = min(self.shard_tokens - self._in_shard, len(ids) - pos)
            part = ids[pos : pos + take]
            if len(part) and (int(part.min()) < 0 or int(part.max()) > np.iinfo(self.dtype).max):
                raise ValueError(f"an id does not fit the shards' {self.dtype.name}")
            self._file.write(part.astype(self.dtype, copy=False).tobytes())
            self._in_shard += take
            self._tokens += take
            pos += take
            if self._in_shard == self.shard_tokens:
                self._close_current()

    def commit(self) -> None:
        """Put the shards and then ``index.json`` in place (see the module)."""
        if self._file is not None:
            self._close_current()
        n = len(self._done)
        index = os.path.join(self.directory, INDEX)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(index)  # from here on no index.json lists shards that are being replaced
        shards: list[dict[str, Any]] = []
        for i, (tmp, tokens) in enumerate(self._done):
            name = SHARD_NAME.format(i)
            os.replace(tmp, os.path.join(self.directory, name))
            docs = self._doc_shards.get(i, 0)
            if i == n - 1:  # documents starting at the very end (empty ones) count in the last shard
                docs += sum(count for shard, count in self._doc_shards.items() if shard >= n)
            shards.append({"file": name, "tokens": tokens, "documents": docs})
        self._done = []
        for name in os.listdir(self.directory):  # shards of an earlier, longer run; its leftovers
            match = _SHARD_FILE.fullmatch(name)
            if (match and int(match.group(1)) >= n) or _SHARD_TEMPORARY.fullmatch(name):
                os.unlink(os.path.join(self.directory, name))
        record = {
            "format": "numtok-token-shards",
            "version": 1,
            "dtype": self.dtype.name,
            "byte_order": "little",
            "shard_tokens": self.shard_tokens,
            "tokens": self._tokens,
            "documents": sum(int(s["documents"]) for s in shards),
            **self.metadata,
            "shards": shards,
        }
        with atomic_write(index, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")

    def abort(self) -> None:
        """Remove everything written (the temporary files, and the directory if this created
        it and it is empty)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        for tmp in [t for t, _ in self._done] + ([self._tmp] if self._tmp else []):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._done, self._tmp = [], None
        if self._created:
            with contextlib.suppress(OSError):
                os.rmdir(self.directory)

    def _open_next(self) -> IO[bytes]:
        final = os.path.join(self.directory, SHARD_NAME.format(len(self._done)))
        self._tmp = temporary_path_for(final)
        os.chmod(self._tmp, permissions_for(final))  # as atomic_write gives its files
        self._in_shard = 0
        return open(self._tmp, "wb")

    def _close_current(self) -> None:
        assert self._file is not None and self._tmp is not None
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._done.append((self._tmp, self._in_shard))
        self._file, self._tmp = None, None
