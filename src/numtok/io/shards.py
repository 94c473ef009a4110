"""Token shards for training: ``DIR/shard-00000.bin``, ``shard-00001.bin``, ... and ``DIR/index.json``.

Each shard is a flat array of little-endian ids (uint16 when the vocabulary fits, else uint32),
the layout nanoGPT-style loaders memory-map; every shard but the last holds exactly
``shard_tokens`` ids (a document may continue in the next shard). ``index.json`` gives the
dtype, and the tokens and documents (those that start there) of every shard.

The directory appears as a whole (:class:`numtok.io.atomic.atomic_directory`): shards and
``index.json`` are written into a hidden temporary directory beside ``DIR``, which takes
``DIR``'s place at :meth:`ShardWriter.commit`; an earlier run's shards and index go, other
files in ``DIR`` stay. On an error the temporary directory is removed; one left by a process
killed outright is removed when the next run starts.

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

import json
import os
import re
from typing import IO, Any

import numpy as np

from .atomic import atomic_directory

DEFAULT_SHARD_TOKENS = 100_000_000  # as nanoGPT's and llm.c's FineWeb shards
INDEX = "index.json"
SHARD_NAME = "shard-{:05d}.bin"
_SHARD_FILE = re.compile(r"shard-(\d{5,})\.bin")
_SHARD_TEMPORARY = re.compile(r"\.shard-\d{5,}\.bin\..+\.tmp")  # an older numtok's


def _replaced(name: str) -> bool:
    """Whether ``name`` in an existing shard directory belongs to the run being replaced."""
    return name == INDEX or _SHARD_FILE.fullmatch(name) is not None or _SHARD_TEMPORARY.fullmatch(name) is not None


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
        self._output = atomic_directory(self.directory, carry_over=lambda name: not _replaced(name))
        self._done: list[tuple[str, int]] = []  # (path in the temporary directory, tokens) of full shards
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
        """Write ``index.json`` and put the directory in place (see the module)."""
        if self._file is not None:
            self._close_current()
        n = len(self._done)
        shards: list[dict[str, Any]] = []
        for i, (_, tokens) in enumerate(self._done):
            docs = self._doc_shards.get(i, 0)
            if i == n - 1:  # documents starting at the very end (empty ones) count in the last shard
                docs += sum(count for shard, count in self._doc_shards.items() if shard >= n)
            shards.append({"file": SHARD_NAME.format(i), "tokens": tokens, "documents": docs})
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
        with open(os.path.join(self._output.tmp, INDEX), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
        self._done = []
        self._output.commit()

    def abort(self) -> None:
        """Remove everything written (the temporary directory)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._done, self._tmp = [], None
        self._output.abort()

    def _open_next(self) -> IO[bytes]:
        self._tmp = os.path.join(self._output.tmp, SHARD_NAME.format(len(self._done)))
        self._in_shard = 0
        return open(self._tmp, "wb")

    def _close_current(self) -> None:
        assert self._file is not None and self._tmp is not None
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._done.append((self._tmp, self._in_shard))
        self._file, self._tmp = None, None
