"""Training and encoding on a Dask cluster (``pip install "numtok[dask]"``).

Training is a map-reduce: every task counts the words of its part of the corpus into a
:class:`numtok.WordCounts`, a tree of ``+`` tasks merges them in corpus order, and the merge
loop runs once, on a worker, on the merged table. The result is exactly
:func:`numtok.train_bpe` on the same sources in the same order with the same options.

Encoding writes one ``<input name>.bin`` per input file, each the output of
``numtok encode -t TOKENIZER FILE -o OUT.bin`` (the same code runs in the worker), saved
atomically, and beside it ``<input name>.bin.numtok.json``, what produced it (the tokenizer's
digest, the options, the input's size and time): a rerun skips an output whose record matches,
and redoes any other. A task retried after a lost worker writes the same bytes.

``client=None`` uses the current default client (the last ``distributed.Client`` created), as
``xgboost.dask`` and ``lightgbm.dask`` do. Importing this module imports dask; ``import numtok``
does not.
"""

from __future__ import annotations

import contextlib
import glob
import json
import operator
import os
import socket
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ._native.threads import check_num_threads
from .train.weights import weighted_sources
from .train.word_counts import WordCounts, count_words

if TYPE_CHECKING:
    from .encode.tokenizer import Tokenizer

__all__ = ["train_bpe", "encode_files"]

DEFAULT_PARTITION_BYTES = 128 << 20  # one counting task reads about this much of an uncompressed file
_COUNT_OPTIONS = ("pattern", "special_tokens", "unk_token")


def _default_client(client):
    if client is not None:
        return client
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        raise ValueError("no Dask client: create one first (distributed.Client(...) or a LocalCluster) "
                         "or pass client=") from None


# -- training ---------------------------------------------------------------------------------


def train_bpe(source, vocab_size: int, *, client=None, partition_bytes: int = DEFAULT_PARTITION_BYTES, **options) -> Tokenizer:
    """Train a byte-level BPE tokenizer on a Dask cluster; equal to :func:`numtok.train_bpe`.

    Args:
        source: a path, a glob or a list of them (``.txt``, ``.jsonl``, optionally ``.gz``, and
            ``.parquet`` read with pyarrow, its ``field`` column), read by the workers (so the
            paths must be valid there); a ``dask.bag`` of str; or a ``dask.dataframe`` column
            (a DataFrame: its ``field`` column).
        vocab_size: the final number of tokens, special tokens included.
        client: a ``distributed.Client`` (default: the current one).
        partition_bytes: uncompressed ``.txt``/``.jsonl`` files visible to this process are read
            in ranges of about this many bytes, one task each; other files are one task each.
        **options: those of :func:`numtok.train_bpe`. ``num_threads`` is the counting threads
            per task (default 1: Dask runs one task per worker thread); ``show_progress`` shows
            nothing here (the Dask dashboard does).

    Returns:
        A :class:`numtok.Tokenizer`.

    Raises:
        FileNotFoundError: a file missing on the worker that reads it (host and path named), or
            a glob matching nothing here.
        ValueError: what :func:`numtok.train_bpe` raises for bad options or input, and no client.
        distributed.KilledWorker: a task whose workers kept dying.
    """
    from .train.options import TrainOptions
    from .train.trainer import train_bpe_from_counts

    num_threads = options.pop("num_threads", None)
    num_threads = 1 if num_threads is None else check_num_threads(num_threads)
    client = _default_client(client)
    options.pop("show_progress", None)
    field = options.pop("field", "text")
    checked = TrainOptions.check(vocab_size, **options)  # bad options fail here, before any work
    counting = dict(pattern=checked.pattern, special_tokens=tuple(checked.special_tokens), field=field, num_threads=num_threads)
    weighted = weighted_sources(source)
    if weighted is None:
        parts = _count_tasks(client, source, counting, partition_bytes)
    else:
        # Scaled after each source is summed whole: a rounded weight rounds the source's counts,
        # as on one machine, not each part's.
        parts = []
        for part_source, weight in weighted:
            counted = _count_tasks(client, part_source, counting, partition_bytes)
            if counted:
                parts.append(client.submit(operator.mul, _tree_sum(client, counted), weight, pure=False))
    if not parts:
        raise ValueError("the corpus is empty: no file or partition to read")
    total = _tree_sum(client, parts)
    trained = client.submit(train_bpe_from_counts, total, vocab_size, **options, pure=False)
    return trained.result()


def _count_tasks(client, source, counting: dict, partition_bytes: int) -> list:
    """Futures of the WordCounts of each part of ``source``, in corpus order."""
    bag_type, series_type, frame_type = _dask_collection_types()
    if bag_type is not None and isinstance(source, bag_type):
        from dask import delayed

        return client.compute([delayed(_count_texts)(part, counting) for part in source.to_delayed()])
    if series_type is not None and isinstance(source, (series_type, frame_type)):
        from dask import delayed

        if isinstance(source, frame_type):
            if counting["field"] not in source.columns:
                raise ValueError(f"the dataframe has no column {counting['field']!r} (pass field=, or a column)")
            source = source[counting["field"]]
        return client.compute([delayed(_count_column)(part, counting) for part in source.to_delayed()])
    paths = _expand(source)
    if isinstance(partition_bytes, bool) or not isinstance(partition_bytes, int) or partition_bytes <= 0:
        raise ValueError(f"partition_bytes must be a positive int, got {partition_bytes!r}")
    from .io.file_ranges import byte_ranges, splittable

    futures = []
    for path in paths:
        ranges: list[tuple[int, int | None]] = [(0, None)]
        if not path.endswith(".parquet") and splittable(path) and os.path.isfile(path):
            ranges = list(byte_ranges(os.path.getsize(path), partition_bytes))
            ranges[-1] = (ranges[-1][0], None)  # to the end, whatever the file's size on the worker
        for start, end in ranges:
            futures.append(client.submit(_count_file, path, start, end, counting, pure=False))
    return futures


def _dask_collection_types() -> tuple[Any, Any, Any]:
    """(dask.bag.Bag, dask.dataframe.Series, DataFrame), None for those not installed."""
    bag: Any = None
    try:
        from dask import bag as bags

        bag = bags.Bag
    except ImportError:  # pragma: no cover (dask.bag ships with dask)
        pass
    try:
        from dask import dataframe as frames
    except ImportError:  # dask[dataframe] (pandas) not installed: no dataframe can be passed either
        return bag, None, None
    return bag, frames.Series, frames.DataFrame


def _expand(source) -> list[str]:
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    if not isinstance(source, (list, tuple)) or not all(isinstance(s, (str, os.PathLike)) for s in source):
        raise TypeError("source must be a path, a glob, a list of them, a dask.bag of str or a dask.dataframe "
                        f"column, not {type(source).__name__}")
    paths = []
    for item in map(os.fspath, source):
        if glob.has_magic(item):
            matches = sorted(glob.glob(item))
            if not matches:
                raise FileNotFoundError(f"no file matches {item!r} on {socket.gethostname()}")
            paths.extend(matches)
        else:
            paths.append(item)
    return paths


def _tree_sum(client, futures: list):
    """Merge neighbours pairwise until one is left (corpus order kept, log2(n) rounds)."""
    while len(futures) > 1:
        merged = [client.submit(operator.add, a, b, pure=False) for a, b in zip(futures[0::2], futures[1::2])]
        if len(futures) % 2:
            merged.append(futures[-1])
        futures = merged
    return futures[0]


def _missing_on_worker(path: str) -> FileNotFoundError:
    where = socket.gethostname()
    with contextlib.suppress(ImportError, ValueError):
        from distributed import get_worker

        where += f" (worker {get_worker().address})"
    return FileNotFoundError(f"{path}: no such file on {where}")


def _count_file(path: str, start: int, end: int | None, counting: dict) -> WordCounts:
    """Task: the WordCounts of one file, or of the lines starting in [start, end) of it."""
    from .train.counting import count_chunks

    if not os.path.isfile(path):
        raise _missing_on_worker(path)
    pattern, specials = counting["pattern"], counting["special_tokens"]
    if path.endswith(".parquet"):
        return count_words(_parquet_texts(path, counting["field"]), pattern=pattern, special_tokens=specials,
                           num_threads=counting["num_threads"], show_progress=False)
    if start == 0 and end is None:
        return count_words(path, pattern=pattern, special_tokens=specials, field=counting["field"],
                           num_threads=counting["num_threads"], show_progress=False)
    from .io.file_ranges import iter_range_chunks

    chunks = iter_range_chunks(path, start, end, special_tokens=specials, field=counting["field"])
    counter, corpus_bytes = count_chunks(chunks, pattern, None, False, counting["num_threads"])
    return WordCounts.from_counter(counter, pattern, specials, corpus_bytes)


def _parquet_texts(path: str, field: str):
    """The ``field`` column of a Parquet file, batch by batch (lists of str)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("reading .parquet needs pyarrow: pip install pyarrow") from None
    parquet = pq.ParquetFile(path)
    if field not in parquet.schema_arrow.names:
        raise ValueError(f"{path}: no column {field!r} (columns: {', '.join(parquet.schema_arrow.names)})")
    for batch in parquet.iter_batches(columns=[field]):
        texts = batch.column(0).to_pylist()
        if any(t is None for t in texts):
            raise ValueError(f"{path}: column {field!r} has missing (null) values")
        yield texts


def _count_texts(texts, counting: dict) -> WordCounts:
    """Task: the WordCounts of one partition of str (a dask.bag partition)."""
    return count_words(texts, pattern=counting["pattern"], special_tokens=counting["special_tokens"],
                       num_threads=counting["num_threads"], show_progress=False)


def _count_column(column, counting: dict) -> WordCounts:
    """Task: the WordCounts of one dataframe partition's column (a pandas Series of str)."""
    if column.isna().any():
        raise ValueError(f"column {column.name!r} has missing values")
    return _count_texts(column, counting)


# -- encoding ---------------------------------------------------------------------------------

# The keywords of encode_files, checked here before any task runs: a switch takes a bool, the
# others their type (None: the default).
_ENCODE_OPTIONS: dict[str, type] = {"dtype": str, "eot": str, "no_eot": bool, "txt_docs": str, "field": str,
                                    "allow_special": bool, "num_threads": int, "chunk_mb": int}


def encode_files(paths, tokenizer, out_dir, *, client=None, **options) -> list[str]:
    """Encode each input file into ``out_dir/<input file name>.bin`` on a Dask cluster.

    Each output is byte for byte ``numtok encode -t TOKENIZER FILE -o OUT.bin`` (both run
    :func:`numtok.io.encode_files.encode_files`), written atomically. Outputs already present are skipped, so a
    rerun after a crash does only what is left; delete an output to redo it.

    Args:
        paths: a path, a glob or a list of them (.txt, .jsonl, optionally .gz), valid on the workers.
        tokenizer: a :class:`numtok.Tokenizer` (sent to each worker once), or what
            ``numtok encode -t`` takes (a bundled name or a tokenizer file the workers can read).
        out_dir: the output directory (created if missing), shared by the workers.
        client: a ``distributed.Client`` (default: the current one).
        **options: ``numtok encode``'s options: ``dtype`` ("uint16"/"uint32"), ``eot`` (the
            special token between documents), ``no_eot`` (True: none), ``txt_docs`` ("file",
            "blank-line", "line"), ``field``, ``allow_special``, ``num_threads`` (per task),
            ``chunk_mb``.

    Returns:
        The output paths, in input order.

    Raises:
        FileNotFoundError: an input missing on the worker that reads it (host and path named).
        ValueError: two inputs with the same file name, or a bad option.
        distributed.KilledWorker: a task whose workers kept dying (no partial output is left
            under a final name, and no temporary file).
    """
    from distributed import wait

    from .encode.tokenizer import Tokenizer

    client = _default_client(client)
    checked = _encode_options(options)
    inputs = _expand(paths)
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    outputs = [os.path.join(out_dir, os.path.basename(p) + ".bin") for p in inputs]
    seen: dict[str, str] = {}
    for src, out in zip(inputs, outputs):
        if out in seen:
            raise ValueError(f"{seen[out]} and {src} would both be written to {out}: input file names must differ")
        seen[out] = src
    if isinstance(tokenizer, Tokenizer):
        tok = client.scatter(tokenizer, broadcast=True, hash=False)
    elif isinstance(tokenizer, (str, os.PathLike)):
        tok = os.fspath(tokenizer)
    else:
        raise TypeError(f"tokenizer must be a numtok.Tokenizer or a name/path, not {type(tokenizer).__name__}")
    todo = list(zip(inputs, outputs))  # each task skips an output its record shows is done
    futures = [client.submit(_encode_file, src, out, tok, checked, pure=False) for src, out in todo]
    try:
        wait(futures)
        client.gather(futures)  # raises the first task's error
    finally:
        wait(futures)  # nothing still writing when the leftovers of killed workers go
        for _, out in todo:
            _remove_temporaries(out)
    return outputs


def _encode_options(options: dict) -> dict:
    """``options`` as :func:`numtok.io.encode_files.encode_files` keywords, checked."""
    from .io.documents import TXT_DOCS

    unknown = sorted(set(options) - set(_ENCODE_OPTIONS))
    if unknown:
        raise TypeError(f"unknown encode option(s) {', '.join(unknown)}; known: {', '.join(_ENCODE_OPTIONS)}")
    given = {key: value for key, value in options.items() if value is not None}
    for key, value in given.items():
        kind = _ENCODE_OPTIONS[key]
        if kind is bool and not isinstance(value, bool):
            raise TypeError(f"{key} must be True or False, not {value!r}")
        if kind is not bool and (not isinstance(value, kind) or isinstance(value, bool)):
            raise ValueError(f"bad encode option: {key} must be a {kind.__name__}, not {value!r}")
    choices = {"dtype": ("uint16", "uint32"), "txt_docs": TXT_DOCS}
    for key, allowed in choices.items():
        if key in given and given[key] not in allowed:
            raise ValueError(f"bad encode option: {key} must be one of {', '.join(allowed)}, not {given[key]!r}")
    for key in ("num_threads", "chunk_mb"):
        if key in given and given[key] <= 0:
            raise ValueError(f"bad encode option: {key} must be a positive integer, not {given[key]!r}")
    eot: str | bool = False if given.pop("no_eot", False) else given.pop("eot", True)
    given.pop("eot", None)
    if "chunk_mb" in given:
        given["chunk_bytes"] = given.pop("chunk_mb") << 20
    return {**given, "eot": eot}


def _encode_file(path: str, out: str, tokenizer, options: dict) -> str:
    """Task: encode ``path`` into ``out`` unless the record beside ``out`` shows it is done."""
    from .io.atomic import atomic_write
    from .io.encode_files import encode_files  # looked up per task, so a worker plugin can wrap it

    if not os.path.isfile(path):
        raise _missing_on_worker(path)
    tok = _load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    record = _provenance(tok, path, options)
    if _done(out, record):
        return out
    with contextlib.suppress(FileNotFoundError):
        os.unlink(out + RECORD_SUFFIX)  # an output being replaced has no record until it is complete
    encode_files([path], tok, out, show_progress=False, **options)
    record["output_bytes"] = os.path.getsize(out)
    with atomic_write(out + RECORD_SUFFIX, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    return out


RECORD_SUFFIX = ".numtok.json"
# Options that change the work, not the output.
_NOT_RECORDED = ("num_threads", "chunk_bytes")


def _provenance(tok, path: str, options: dict) -> dict:
    st = os.stat(path)
    return {
        "format": "numtok-encoded-file",
        "version": 1,
        "tokenizer": _digest_of(tok),
        "options": {k: v for k, v in sorted(options.items()) if k not in _NOT_RECORDED},
        "input": {"path": os.path.abspath(path), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns},
    }


def _digest_of(tok) -> str:
    """``tokenizer_digest(tok)``, computed once for the tokenizer a worker's tasks share."""
    from .io.tokenizer_view import tokenizer_digest

    if _LAST_DIGEST and _LAST_DIGEST[0] is tok:
        return _LAST_DIGEST[1]
    digest = tokenizer_digest(tok)
    _LAST_DIGEST[:] = [tok, digest]
    return digest


_LAST_DIGEST: list = []


def _done(out: str, record: dict) -> bool:
    """Whether ``out`` is complete and was produced as ``record`` says it would be now."""
    try:
        with open(out + RECORD_SUFFIX, encoding="utf-8") as f:
            saved = json.load(f)
        size = os.path.getsize(out)
    except (OSError, ValueError):
        return False
    if not isinstance(saved, dict):
        return False
    return saved.pop("output_bytes", None) == size and saved == json.loads(json.dumps(record))


@lru_cache(maxsize=4)
def _load_tokenizer(spec: str):
    from .encode.from_spec import load_tokenizer

    return load_tokenizer(spec)


def _remove_temporaries(out: str) -> None:
    """Remove what an atomic save of ``out`` by a killed worker left behind (io.atomic's names)."""
    directory, name = os.path.split(out)
    for leftover in glob.glob(os.path.join(glob.escape(directory), glob.escape("." + name + ".") + "*.tmp")):
        with contextlib.suppress(OSError):
            os.unlink(leftover)
