"""Benchmark inputs: the corpus named by NUMTOK_BENCH_CORPUS, or a generated one.

Build the real corpora with ``sudo ../shared/corpus/build-corpus DIR`` and point
NUMTOK_BENCH_CORPUS at ``DIR/mixed-10M.txt`` (or 100M); without it a deterministic synthetic
corpus of mixed scripts is generated under the system temp directory.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

ENV = "NUMTOK_BENCH_CORPUS"


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


def corpus_text(megabytes: int = 10, limit: int | None = None) -> str:
    with open(corpus_path(megabytes), encoding="utf-8") as f:
        return f.read(limit) if limit else f.read()


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
