"""Compile every numtok kernel ahead of time, in parallel processes: into the kernel cache
(``numtok warmup``), or for chosen CPU levels into a release wheel (:func:`build_levels`).

A container image, a CI cache or a cluster worker image that runs this once never compiles
again (``RUN numtok warmup`` in a Dockerfile, after ``pip install``). Each job below runs
the public calls of one area on a small text, in its own process (``spawn``), so that the
kernels they reach are compiled and saved (see :mod:`numtok._native.jit` for where). Jobs
that reach kernels another job compiles wait for it, so nothing is compiled twice.

>>> import numtok
>>> sorted(JOBS) == sorted(j.name for j in _ORDER)
True
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Callable

import numpy as np

__all__ = ["warmup", "JOBS", "build_levels"]

_SAMPLE = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
    "want of a wife. Don't—won't 12345 tokens/s, naïve café, 東京タワーは高い。한국어 텍스트 Привет, мир! "
    "नमस्ते दुनिया \t\n\n  trailing   spaces\r\n<|endoftext|> ☃️ 🇫🇷 e\u0301 \U0001f600\n"
)


def _text(repeat: int = 40) -> str:
    return "\n\n".join(f"{i} {_SAMPLE}" for i in range(repeat))


def _encode_paths(enc) -> None:
    """Every way a Tokenizer encodes and decodes: one string (short and long enough to be
    streamed), batches, specials, offsets, counts, decoding."""
    text = _text()
    ids = enc.encode(text, allowed_special="all")
    enc.encode_ordinary(text)
    enc.encode_ordinary("hello")
    enc.encode_ordinary(text * 200)  # past the chunk size: the streamed path
    enc.encode_with_offsets(text, allowed_special="all")
    docs = text.split("\n\n")
    for threads in (1, 2):
        batch = enc.encode_batch(docs, num_threads=threads, allowed_special="all")
        enc.encode_ordinary_batch(docs, num_threads=threads)
        enc.encode_batch(docs, num_threads=threads, offsets=True, allowed_special="all")
        enc.decode_batch(batch, num_threads=threads)
    enc.count_tokens(text)
    enc.count_tokens(text * 200)  # counted a block at a time (into a CountSink)
    enc.count_tokens_batch(docs)
    enc.decode(ids)
    enc.decode_bytes(ids)
    enc.decode_with_offsets(ids)
    enc.decode_tokens_bytes(ids[:10])


def _job_encode() -> None:
    import numtok

    # Each named pattern's scanner has its own scan-and-encode kernels: all of them here, before
    # the jobs that wait for this one build tokenizers of every pattern.
    for name in ("o200k_base", "r50k_base"):
        _encode_paths(numtok.load(name))
    enc = numtok.load("cl100k_base")
    _encode_paths(enc)
    # Past 4 MiB of text the tokenizer's piece caches grow (``grow_piece_cache``): a user's job
    # gets there in its first seconds, and must not stop to compile.
    enc.encode_ordinary(_text() * 300)
    enc.encode_ordinary(_SAMPLE)


def _job_encodings() -> None:
    import numtok

    _encode_paths(numtok.load("p50k_base"))
    big = np.frombuffer((_text() * 100).encode(), dtype=np.uint8)  # > 1 MiB: split over threads
    # Unequal documents: the longer is more than a thread's share, so it is cut too.
    docs = np.array([[0, 3 * len(big) // 4], [3 * len(big) // 4, len(big)]], dtype=np.int64)
    for pattern in ("gpt2", "cl100k", "o200k", r"\w+|[^\w\s]+|\s+"):
        numtok.pretokenize(_text(), pattern)
        numtok.split_bytes(big, docs, pattern, num_threads=2)


def _letters(n: int) -> str:
    """A word of letters only, a different one for each ``n``."""
    word = ""
    while True:
        n, d = divmod(n, 26)
        word += chr(97 + d)
        if not n:
            return word


def _job_train() -> None:
    import numtok

    text = _text(20).splitlines(keepends=True)
    with tempfile.TemporaryDirectory(prefix="numtok-warmup-") as tmp:
        for pattern in ("gpt2", "cl100k", "o200k", r"\w+|[^\w\s]+|\s+"):
            tok = numtok.train_bpe(text, 400, pattern=pattern, special_tokens=["<|endoftext|>"], show_progress=False)
            _encode_paths(tok)
        numtok.train_bpe(text, 400, tie_break="first-seen", min_frequency=2, max_token_length=6, show_progress=False)
        numtok.train_bpe(text, 400, alphabet="observed", units="chars", end_of_word="</w>", unk_token="<unk>", show_progress=False)
        counts = numtok.count_words(text) + numtok.count_words(text[:3])
        counts.save(os.path.join(tmp, "counts.npz"))
        tok = numtok.train_bpe_from_counts(counts, 400, show_progress=False)
        for save, load, path in (
            (tok.save, numtok.Tokenizer.from_file, "tokenizer.json"),
            (tok.save_tiktoken, lambda p: numtok.Tokenizer.from_tiktoken(p, pattern="gpt2"), "t.tiktoken"),
        ):
            save(os.path.join(tmp, path))
            load(os.path.join(tmp, path)).encode_ordinary(_SAMPLE)
        numtok.train_bpe_from_counts({"low": 5, "lower": 2, "newest": 6}, 270, show_progress=False)
        # More unique words than a word table starts with: it grows, and two threads' tables merge.
        many = os.path.join(tmp, "many.txt")
        with open(many, "w", encoding="utf-8") as f:
            f.writelines(" ".join(_letters(i * 200 + j) for j in range(200)) + "\n" for i in range(250))
        for threads in (1, 2):
            numtok.train_bpe(many, 300, num_threads=threads, show_progress=False)
            numtok.count_words(many, num_threads=threads)
        with open(many, encoding="utf-8") as f:
            numtok.train_bpe(f.read().splitlines(keepends=True), 300, show_progress=False)
        # Continued training: on a trained base (the encoder splits the words), and on a base whose
        # merge list makes a token twice (the list is replayed in order: train/_kernels.py).
        numtok.train_bpe(text, 420, base=tok, show_progress=False)
        vocab = {bytes([b]): b for b in range(256)}
        merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c"), (b"a", b"bc")]
        for a, b in merges:
            vocab.setdefault(a + b, len(vocab))
        base = numtok.Tokenizer(vocab, merges=merges, pattern="gpt2")
        numtok.train_bpe(text, base.n_vocab + 20, base=base, show_progress=False)


def _job_wordpiece() -> None:
    import numtok
    from numtok.wordpiece.bert import BertNormalizer
    from numtok.wordpiece.bert import pre_tokenize as bert_pre_tokenize

    text = _text(20).splitlines(keepends=True)
    wp = numtok.train_wordpiece(text, 500, show_progress=False)
    wp.encode(_SAMPLE)
    wp.encode(_SAMPLE, add_special_tokens=True)
    wp.decode(wp.encode_batch(text)[0])
    wp.tokenize(_SAMPLE)
    BertNormalizer().normalize_str(_SAMPLE)
    bert_pre_tokenize(_SAMPLE)
    with tempfile.TemporaryDirectory(prefix="numtok-warmup-") as tmp:
        path = os.path.join(tmp, "wp.json")
        wp.save(path)
        numtok.WordPiece.from_file(path).encode(_SAMPLE)


def _job_arrow() -> None:
    try:
        import pyarrow as pa
    except ImportError:  # the [arrow] extra is not installed: nothing of it to compile
        return
    import numtok

    docs = _text().split("\n\n")
    enc = numtok.load("cl100k_base")
    for array in (pa.array(docs), pa.array(docs, pa.large_string()), pa.chunked_array([docs[:5], docs[5:]])):
        enc.encode_batch(array, num_threads=1, allowed_special="all").to_arrow()
        enc.encode_ordinary_batch(array, num_threads=2)
    numtok.train_bpe(pa.array(docs), 300, show_progress=False)


def _job_cli() -> None:
    """What the command line runs on files: text, JSONL (gzip'd) and Parquet readers, .npy, raw
    and shard writers, decoding, the demo. (The command line only parses and prints around
    these, so the same calls compile the same kernels.)"""
    import contextlib
    import gzip
    import io

    from .demo import run_demo
    from .encode.from_spec import load_tokenizer
    from .io.decode_file import decode_ids, open_ids
    from .io.encode_files import encode_files
    from .io.tokenizer_view import tokenizer_info
    from .train.trainer import train_bpe

    docs = _text().split("\n\n")
    with tempfile.TemporaryDirectory(prefix="numtok-warmup-") as tmp, contextlib.redirect_stdout(io.StringIO()):
        txt, jsonl = os.path.join(tmp, "a.txt"), os.path.join(tmp, "b.jsonl.gz")
        with open(txt, "w", encoding="utf-8") as f:
            f.write("\n".join(docs))
        with gzip.open(jsonl, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps({"text": d}) + "\n" for d in docs)
        inputs = [txt, jsonl]
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq

            inputs.append(os.path.join(tmp, "c.parquet"))
            pq.write_table(pa.table({"text": docs}), inputs[-1])
        except ImportError:  # the [arrow] extra is not installed
            pass
        tok_path = os.path.join(tmp, "tok.json")
        train_bpe(inputs, 400, show_progress=False).save(tok_path)
        run_demo(show_progress=False)
        for name in (tok_path, "cl100k_base"):
            tok = load_tokenizer(name)
            encode_files(inputs, tok, os.path.join(tmp, "ids.npy"), show_progress=False)
            encode_files(inputs, tok, os.path.join(tmp, "shards"), shard_tokens=1000, show_progress=False)
            encode_files([txt], tok, os.path.join(tmp, "ids.bin"), txt_docs="line", show_progress=False)
            decode_ids(open_ids(os.path.join(tmp, "ids.npy"), tok), tok, io.BytesIO())
            tokenizer_info(tok)


def _job_evaluate() -> None:
    import numtok

    text = _text(4).splitlines(keepends=True) + ["Привет, мир", "こんにちは世界", "नमस्ते दुनिया"]
    numtok.evaluate(["cl100k_base", "gpt2"], text, num_threads=2)
    records = [{"text": line, "lang": "en" if line.isascii() else "other"} for line in text]
    numtok.evaluate("gpt2", records, group_by="lang", num_threads=1)
    numtok.sweep(text, [260, 300], text, show_progress=False)
    numtok.train_bpe([(text, 2), (text[:3], 1.5)], 300, show_progress=False)  # weighted sources


@dataclass(frozen=True)
class _Job:
    name: str
    run: Callable[[], None]
    after: tuple[str, ...] = ()


# "encode" first: every other area builds Tokenizers, which encode their own vocabulary.
_ORDER = (
    _Job("encode", _job_encode),
    _Job("wordpiece", _job_wordpiece),
    _Job("encodings", _job_encodings, ("encode",)),
    _Job("train", _job_train, ("encode",)),
    _Job("arrow", _job_arrow, ("encode", "train")),
    _Job("evaluate", _job_evaluate, ("encode", "train")),
    _Job("cli", _job_cli, ("encode", "train", "arrow")),
)
JOBS: dict[str, _Job] = {j.name: j for j in _ORDER}


def _run_job(name: str) -> tuple[str, float]:
    from ._native import jit

    jit.set_quiet(True)
    started = time.perf_counter()
    try:
        JOBS[name].run()
    except Exception as exc:  # a bug of this module: name the job, keep the message
        raise RuntimeError(f"warmup job {name!r} failed: {type(exc).__name__}: {exc}") from None
    return name, time.perf_counter() - started


def warmup(*, processes: int | None = None, jobs: tuple[str, ...] | None = None, quiet: bool = False) -> str:
    """Compile numtok's kernels into the kernel cache; returns where they are kept.

    Args:
        processes: worker processes (default: the usable cores, at most the number of jobs).
        jobs: a subset of :data:`JOBS` ("encode", "encodings", "train", "wordpiece", "arrow", "evaluate", "cli");
            default all. A job's prerequisites run too.
        quiet: no progress lines on stderr.

    Later processes of this installation (and of any other with the same numtok source,
    Numba, Python and CPU, when the cache location is shared) load the kernels instead of
    compiling them.
    """
    from ._native import jit
    from ._native.threads import cores_at_start

    wanted = set(JOBS if jobs is None else jobs)
    unknown = wanted - set(JOBS)
    if unknown:
        raise ValueError(f"unknown warmup job(s) {sorted(unknown)}; the jobs are {list(JOBS)}")
    todo = [j for j in _ORDER if j.name in wanted or any(j.name in JOBS[w].after for w in wanted)]
    if processes is None:
        processes = cores_at_start()
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be a positive int, not {processes!r}")
    location = jit.describe_location()
    say = (lambda msg: None) if quiet else (lambda msg: print(f"numtok warmup: {msg}", file=sys.stderr, flush=True))
    say(f"compiling {len(todo)} job(s) in {min(processes, len(todo))} process(es) into {location}")
    started = time.perf_counter()
    done: set[str] = set()
    pending = list(todo)
    with ProcessPoolExecutor(max_workers=min(processes, len(todo)), mp_context=get_context("spawn")) as pool:
        running: dict = {}
        while pending or running:
            for job in [j for j in pending if all(a in done or a not in {t.name for t in todo} for a in j.after)]:
                if len(running) >= processes:
                    break
                pending.remove(job)
                running[pool.submit(_run_job, job.name)] = job.name
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                name, seconds = future.result()
                del running[future]
                done.add(name)
                say(f"{name} done in {seconds:.1f} s")
    say(f"all kernels compiled in {time.perf_counter() - started:.1f} s; cached in {location}")
    return location


# ---------------------------------------------------------------------------------------------
# Release wheels: the same jobs, compiled for named CPU levels instead of this CPU.

_LEVEL_CHILD = """
import json, sys
import numtok
from numtok._native import jit
from numba.core.registry import cpu_target
numtok.warmup(processes=int(sys.argv[1]), quiet=True)
print(json.dumps({"magic": list(cpu_target.target_context.codegen().magic_tuple()), "digest": jit.source_digest()}))
"""


def build_levels(levels: list[str], out_dir: str, *, processes: int | None = None, quiet: bool = False) -> dict:
    """Compile every kernel the jobs reach once per CPU level into ``out_dir``, laid out as a
    release wheel's ``numtok/_precompiled``: ``<level>/<subpackage>/*.nbi|*.nbc`` and
    ``manifest.json`` (returned). Levels compile in parallel processes, each with Numba's target
    set to the level's CPU name and features (``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES``).

    The jobs run the code they compile, so this machine must have every level's features.
    """
    from ._native import levels as cpu_levels
    from ._native.precompiled import write_precompiled
    from ._native.threads import cores_at_start

    if not levels or len(set(levels)) != len(levels):
        raise ValueError(f"levels must name each level once, not {levels!r}")
    targets = {level: cpu_levels.level_target(level) for level in levels}
    usable = cpu_levels.usable_features()
    for level, (_, features) in targets.items():
        missing = cpu_levels.required_features(features) - usable
        if missing:
            raise ValueError(f"cannot build {level} here: this CPU lacks {', '.join(sorted(missing))}, and the "
                             "build runs the code it compiles; build that level on a machine that has them")
    cores = processes or cores_at_start()
    per_level = max(1, cores // len(levels))
    say = (lambda msg: None) if quiet else (lambda msg: print(f"numtok precompile: {msg}", file=sys.stderr, flush=True))
    say(f"compiling {', '.join(levels)} ({len(levels)} process group(s), {per_level} process(es) each)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="numtok-precompile-") as tmp:
        children = {}
        for level, (cpu_name, features) in targets.items():
            env = dict(os.environ, NUMBA_CPU_NAME=cpu_name, NUMBA_CPU_FEATURES=features, NUMTOK_QUIET="1",
                       NUMTOK_JIT_CACHE=os.path.join(tmp, level), PYTHONDONTWRITEBYTECODE="1")
            env.pop("NUMBA_CACHE_DIR", None)
            children[level] = subprocess.Popen([sys.executable, "-c", _LEVEL_CHILD, str(per_level)], env=env,
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
        results = {}
        for level, child in children.items():
            out, err = child.communicate()
            if child.returncode != 0:
                for other in children.values():
                    other.kill()
                raise RuntimeError(f"compiling {level} failed (exit {child.returncode}):\n{err.strip()}")
            results[level] = json.loads(out.strip().splitlines()[-1])
            say(f"{level} compiled ({time.perf_counter() - started:.1f} s)")
        digests = {r["digest"] for r in results.values()}
        if len(digests) != 1:
            raise RuntimeError(f"the levels were compiled from different sources: {sorted(digests)}")
        digest = digests.pop()
        compiled = {level: (os.path.join(tmp, level, digest[:16]), r["magic"]) for level, r in results.items()}
        manifest = write_precompiled(out_dir, compiled, digest)
    say(f"done in {time.perf_counter() - started:.1f} s")
    return manifest


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m numtok.precompile",
                                     description="Compile numtok's kernels for CPU levels, laid out as a release wheel's numtok/_precompiled.")
    parser.add_argument("--levels", required=True, help="comma list: x86-64-v2, x86-64-v3, x86-64-v4, host")
    parser.add_argument("--out", required=True, help="directory to write (created)")
    parser.add_argument("--processes", type=int, default=None)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    build_levels([lv.strip() for lv in args.levels.split(",") if lv.strip()], args.out, processes=args.processes)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
