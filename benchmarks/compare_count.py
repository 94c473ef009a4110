#!/usr/bin/env python
"""Token counts: numtok's count_tokens_batch against its encode_ordinary_batch (the same
encoding, ids kept) and tiktoken's ``len`` of each of ``encode_ordinary_batch``'s lists, on the
paragraphs of one corpus, same threads (MB/s of UTF-8 input), and the peak RSS each adds.

    python benchmarks/compare_count.py /work/corpus/mixed-100M.txt --max-mb 10 --repeat 7

Ratios are medians over rounds that time each contender once, one after another, so that a
change in the machine's load hits both sides of a ratio alike. Peak RSS is measured in a fresh
process per contender, documents read and kernels loaded: its high-water mark over one call
(numtok: calls until its piece caches are full size, 64 MiB seen, the same for both), minus its
RSS before them (Linux).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numtok  # noqa: E402
from benchmarks.common import warm_piece_caches  # noqa: E402
from benchmarks.compare_encode import Tiktoken  # noqa: E402


def read_docs(path: str, max_mb: float) -> tuple[list[str], float]:
    with open(path, encoding="utf-8") as f:
        text = f.read(int(max_mb * 1e6))
    return [d for d in text.split("\n\n") if d], len(text.encode("utf-8")) / 1e6


def contenders(encoding: str, threads: int, docs: list[str]) -> dict:
    """name -> a function of the documents giving their counts (warmed up)."""
    enc = numtok.load(encoding)
    funcs = {
        "numtok count_tokens_batch": lambda d: enc.count_tokens_batch(d, num_threads=threads),
        "numtok encode_ordinary_batch": lambda d: enc.encode_ordinary_batch(d, num_threads=threads).lengths,
    }
    try:
        ref = Tiktoken(encoding, None)  # built offline from the rank file numtok ships
    except ImportError:
        ref = None
    if ref is not None:
        funcs["tiktoken len(encode_ordinary_batch)"] = lambda d: [len(x) for x in ref.batch(d, threads)]
    for f in funcs.values():
        f(docs[:2000])
    return enc, funcs


def warm_up(enc, func, docs: list[str]) -> None:
    """Call ``func`` until numtok's piece caches stop growing (``common.warm_piece_caches``)."""
    warm_piece_caches(enc, lambda: func(docs))


def peak_rss_child(args) -> int:
    docs, _ = read_docs(args.corpus, args.max_mb)
    enc, funcs = contenders(args.encoding, args.threads, docs)
    before = rss_kib("VmRSS")
    reset_peak_rss()
    if args.rss_of.startswith("numtok"):
        warm_up(enc, funcs[args.rss_of], docs)
    else:
        funcs[args.rss_of](docs)
    print(json.dumps(rss_kib("VmHWM") - before))
    return 0


def rss_kib(field: str) -> int:
    """A memory figure of this process from /proc/self/status (Linux), in KiB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def reset_peak_rss() -> None:
    """Set this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0): the text read and
    split before the call does not count."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--encoding", default="o200k_base")
    ap.add_argument("--max-mb", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rss-of", help=argparse.SUPPRESS)  # child: peak RSS of one contender
    args = ap.parse_args()
    if args.rss_of:
        return peak_rss_child(args)

    docs, mb = read_docs(args.corpus, args.max_mb)
    enc, funcs = contenders(args.encoding, args.threads, docs)
    warm_up(enc, funcs["numtok count_tokens_batch"], docs)
    counts = {name: list(map(int, f(docs))) for name, f in funcs.items()}
    first = next(iter(counts.values()))
    assert all(c == first for c in counts.values()), "the contenders' counts differ"
    seconds: dict[str, list[float]] = {name: [] for name in funcs}
    for _ in range(args.repeat):
        for name, f in funcs.items():
            t0 = time.perf_counter()
            f(docs)
            seconds[name].append(time.perf_counter() - t0)
    print(f"{args.corpus}: {mb:.1f} MB, {len(docs)} documents, {sum(first):,} tokens, {args.encoding}, "
          f"{args.threads} threads, median of {args.repeat}, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    for name in funcs:
        cmd = [sys.executable, __file__, args.corpus, "--encoding", args.encoding, "--max-mb", str(args.max_mb),
               "--threads", str(args.threads), "--rss-of", name]  # fmt: skip
        rss = int(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        print(f"  {name:38s} {mb / statistics.median(seconds[name]):8.1f} MB/s   peak RSS +{rss / 1024:7.1f} MiB")
    count = seconds["numtok count_tokens_batch"]
    for name in list(funcs)[1:]:
        ratio = statistics.median(b / a for a, b in zip(count, seconds[name]))
        print(f"  count_tokens_batch / {name}: {ratio:.2f}x" + (" (target >= 1.2x)" if "numtok" in name else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
