"""Benchmark inputs (the corpus named by NUMTOK_BENCH_CORPUS, or a generated one) and the
warm-up and timing loops the asv suites and the compare_* scripts share.

Build the real corpora with ``sudo ../shared/corpus/build-corpus DIR`` and point
NUMTOK_BENCH_CORPUS at ``DIR/mixed-10M.txt`` (or 100M); without it a deterministic synthetic
corpus of mixed scripts is generated under the system temp directory. The per-script suite
reads NUMTOK_BENCH_MULTI_CORPUS (``sudo benchmarks/corpus/build-multilingual DIR``, then
``DIR/multi-10M.txt``), else the multilingual sample in tests/data.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np

ENV = "NUMTOK_BENCH_CORPUS"
MULTI_ENV = "NUMTOK_BENCH_MULTI_CORPUS"
# Real multilingual text that ships with the repository (tests/data/README.md says from where).
MULTI_SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "multilingual_sample.txt")


def corpus_path(megabytes: int = 10) -> str:
    path = os.environ.get(ENV)
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{ENV}={path} does not exist")
        return path
    path = os.path.join(tempfile.gettempdir(), f"numtok-bench-{megabytes}M.txt")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(generate_text(megabytes * 1_000_000))
        os.replace(tmp, path)
    return path


def warm_piece_caches(enc, call, limit: int = 8) -> None:
    """Run ``call()`` until ``enc``'s piece caches stop growing (they grow as the pieces they
    keep crowd them, up to ``piece_cache.CACHE_BITS``): a call that grows them copies them,
    which is not what is timed."""
    call()
    for _ in range(limit):
        bits = getattr(enc._piece_caches, "bits", None)
        call()
        if getattr(enc._piece_caches, "bits", None) == bits:
            break


def multilingual_text(min_bytes: int = 2_000_000) -> str:
    """The multilingual corpus named by NUMTOK_BENCH_MULTI_CORPUS (``multi-10M.txt`` of
    ``benchmarks/corpus/build-multilingual``), or else the 206 KB sample in tests/data, its
    pages repeated in turn up to ``min_bytes`` (every piece then repeats: a warm-cache figure)."""
    path = os.environ.get(MULTI_ENV)
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{MULTI_ENV}={path} does not exist")
        with open(path, encoding="utf-8") as f:
            return f.read()
    with open(MULTI_SAMPLE, encoding="utf-8") as f:
        sample = f.read()
    copies = -(-min_bytes // len(sample.encode("utf-8")))
    return "\n\n".join([sample] * copies)


def corpus_text(megabytes: int = 10, limit: int | None = None) -> str:
    with open(corpus_path(megabytes), encoding="utf-8") as f:
        return f.read(limit) if limit else f.read()


def corpus_bytes(path: str) -> np.ndarray:
    """The file's bytes as a uint8 array."""
    with open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8)


def line_docs(data: np.ndarray) -> np.ndarray:
    """(start, end) byte ranges of the lines of ``data`` (with their line endings), int64 (m, 2)."""
    ends = np.flatnonzero(data == 0x0A) + 1
    if not len(ends) or ends[-1] != len(data):
        ends = np.r_[ends, len(data)]
    return np.stack([np.r_[0, ends[:-1]], ends], axis=1)


def warm_up_bpe() -> None:
    """Compile (or load from the Numba cache) the BPE training kernels before anything is timed."""
    import numtok

    numtok.train_bpe(["warm up the kernels, warm up"] * 4, 300)


def warm_up_wordpiece() -> None:
    """Compile (or load from the Numba cache) every WordPiece kernel before anything is timed."""
    import numtok

    wp = numtok.train_wordpiece(["warm up the kernels, warm up"] * 3, 40)
    wp.decode(wp.encode("warm up"))
    wp.encode_batch(["a", "b"])


class TrainingSuite:
    """asv settings shared by the training suites (a subclass sets ``params`` and may set
    ``warm_up``): one call a sample, three samples, the 10 MB corpus's path in ``self.path``."""

    param_names = ["vocab_size"]
    timeout = 900
    number = 1
    repeat = 3
    warm_up = staticmethod(warm_up_bpe)

    def setup(self, vocab_size):
        self.path = corpus_path(10)
        self.warm_up()


def timings(fn, repeat: int) -> list[float]:
    """Wall seconds of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def median_seconds(fn, repeat: int) -> float:
    return statistics.median(timings(fn, repeat))


def interleaved(contenders: dict, repeat: int) -> dict:
    """Median seconds of each contender, running them round-robin ``repeat`` times."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            times[name] += timings(fn, 1)
    return {name: statistics.median(ts) for name, ts in times.items()}


def mb_per_s(fn, nbytes: int, repeat: int = 1) -> float:
    """Throughput of ``fn`` over ``nbytes`` bytes, from the fastest of ``repeat`` calls."""
    return nbytes / min(timings(fn, repeat)) / 1e6


def generate_text(n_bytes: int, seed: int = 0) -> str:
    """Zipf-distributed words over several scripts, with punctuation, digits and code-like lines."""
    rng = np.random.default_rng(seed)
    alphabets = [
        "etaoinshrdlcumwfgypbvkjxqz",
        "etaoinshrdlcumwfgypbvkjxqzéèàçôü",
        "абвгдежзийклмнопрстуфхцчшщыэюя",
        "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
    ]
    words = []
    for i in range(30_000):
        letters = alphabets[0 if i % 10 < 6 else 1 if i % 10 < 8 else 2 if i % 10 < 9 else 3]
        n = 1 + min(int(rng.geometric(0.25)), 14)
        w = "".join(letters[j] for j in rng.integers(0, len(letters), n))
        words.append(w.capitalize() if i % 7 == 0 else w)
    ranks = np.arange(1, len(words) + 1)
    p = 1.0 / ranks**1.1
    p /= p.sum()
    out = []
    size = 0
    punct = [",", ".", ";", ":", "!", "?", " (", ") ", " -", "'s", "...", " 1999", " 42", " = ", "()", "{", "}"]
    while size < n_bytes:
        ids = rng.choice(len(words), size=4096, p=p)
        parts = []
        for k, i in enumerate(ids.tolist()):
            parts.append(words[i])
            r = k % 13
            parts.append(punct[k % len(punct)] + " " if r == 0 else "\n" if r == 12 else "    " if r == 6 and k % 3 == 0 else " ")
        chunk = "".join(parts)
        out.append(chunk)
        size += len(chunk.encode("utf-8"))
    return "".join(out)


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
