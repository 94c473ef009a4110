"""Training on one process vs on a Dask LocalCluster, and what the unique-word table costs.

    python benchmarks/compare_scale.py --make-long-tail /tmp/long-tail-100M.txt   # 10 M random words
    python benchmarks/compare_scale.py CORPUS [CORPUS ...] [--vocab-size 32768] [--workers 2] [--partition-mb 64]

For each corpus, each in a fresh process: ``numtok.train_bpe(CORPUS)`` (two counting threads),
then ``numtok.dask.train_bpe(CORPUS)`` on a LocalCluster of ``--workers`` single-threaded
worker processes (kernels loaded in every process before the timer starts). Prints wall times
and their ratio, whether the merges are identical, the peak RSS of the single process, of each
worker and of the driver (which hosts the LocalCluster's scheduler); then, per partition (one
counting task, timed again on its own): seconds, unique words and the bytes its WordCounts
pickles to (what it ships); and, in another process, the peak RSS of ``count_words`` and of
summing two halves, per unique word. No figure is typed here: everything printed is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SINGLE = """
import json, resource, sys, time, hashlib
import numtok
numtok.train_bpe(["load the compiled kernels: warm up"], 260)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
tok = numtok.train_bpe(PATH, VOCAB)
elapsed = time.perf_counter() - t0
digest = hashlib.sha256(repr(tok.merges).encode()).hexdigest()
print(json.dumps({"seconds": elapsed, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "rss_before": base * 1024, "merges": digest, "unique_words": tok.training_stats["unique_words"]}))
"""

CLUSTER = """
import json, os, pickle, resource, time, hashlib
import numtok, numtok.dask
from numtok.dask import _count_file
from numtok.io.file_ranges import byte_ranges
from distributed import Client, LocalCluster


def warm():
    import numtok
    numtok.train_bpe(["load the compiled kernels: warm up"], 260)
    _ = numtok.count_words(["a b"]) + numtok.count_words(["b c"])


def peak():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def one_partition(path, start, end, counting):
    import pickle, time
    t0 = time.perf_counter()
    wc = _count_file(path, start, end, counting)
    seconds = time.perf_counter() - t0
    return seconds, len(wc), len(pickle.dumps(wc, protocol=5)), wc.words.nbytes + wc.counts.nbytes


if __name__ == "__main__":
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
            Client(cluster) as client:
        warm()
        client.run(warm)
        t0 = time.perf_counter()
        tok = numtok.dask.train_bpe(PATH, VOCAB, partition_bytes=PARTITION)
        elapsed = time.perf_counter() - t0
        workers = sorted(client.run(peak).values())
        driver = peak()
        ranges = byte_ranges(os.path.getsize(PATH), PARTITION)
        counting = dict(pattern="gpt2", special_tokens=(), field="text", num_threads=1)
        parts = client.gather(client.map(one_partition, [PATH] * len(ranges), [a for a, _ in ranges],
                                         [b for _, b in ranges], [counting] * len(ranges), pure=False))
    digest = hashlib.sha256(repr(tok.merges).encode()).hexdigest()
    print(json.dumps({"seconds": elapsed, "workers_rss": workers, "driver_rss": driver, "merges": digest,
                      "partitions": parts}))
"""

MEMORY_COUNT = """
import gc, json, pickle, resource, time
import numtok
from numtok.dask import _count_file
_ = numtok.count_words(["a b"]) + numtok.count_words(["b c"])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
wc = numtok.count_words(PATH)
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
pickled = len(pickle.dumps(wc, protocol=5))
n, words, offsets, counts = len(wc), wc.words.nbytes, wc.offsets.nbytes, wc.counts.nbytes
del wc
gc.collect()
counting = dict(pattern="gpt2", special_tokens=(), field="text", num_threads=2)
half = os.path.getsize(PATH) // 2
_count_file(PATH, 0, half, counting).save(HALVES[0])
_count_file(PATH, half, None, counting).save(HALVES[1])
print(json.dumps({"unique_words": n, "base_rss": base, "peak": peak, "seconds": seconds, "pickled": pickled,
                  "words": words, "offsets": offsets, "counts": counts}))
"""

MEMORY_MERGE = """
import json, resource, time
import numtok
_ = numtok.count_words(["a b"]) + numtok.count_words(["b c"])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
a, b = numtok.WordCounts.load(HALVES[0]), numtok.WordCounts.load(HALVES[1])
loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
total = a + b
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"unique_words": len(total), "halves": [len(a), len(b)], "base_rss": base, "loaded_rss": loaded,
                  "peak": peak, "seconds": seconds}))
"""


def run_child(code: str, path: str, vocab: int, **extra) -> dict:
    header = f"import os\nPATH = {path!r}\nVOCAB = {vocab}\n" + "".join(f"{k} = {v!r}\n" for k, v in extra.items())
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(header + code)  # a file, not -c: the LocalCluster's worker processes re-import __main__
    try:
        r = subprocess.run([sys.executable, f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        raise SystemExit(f"child failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def make_long_tail(path: str, n_words: int, seed: int = 0) -> None:
    """``n_words`` random lowercase words of 5-14 letters, 20 to a line (almost all distinct)."""
    rng = np.random.default_rng(seed)
    with open(path + ".tmp", "wb") as f:
        for start in range(0, n_words, 1_000_000):
            n = min(1_000_000, n_words - start)
            lengths = rng.integers(5, 15, n)
            letters = rng.integers(ord("a"), ord("z") + 1, (n, 15)).astype(np.uint8)
            letters[np.arange(15)[None, :] >= lengths[:, None]] = 0
            sep = np.where((np.arange(start, start + n) + 1) % 20 == 0, ord("\n"), ord(" ")).astype(np.uint8)
            letters[np.arange(n), lengths] = sep
            f.write(letters[letters != 0].tobytes())
    os.replace(path + ".tmp", path)


def mb(x: float) -> str:
    return f"{x / 1e6:,.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="*")
    ap.add_argument("--vocab-size", type=int, default=32768)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partition-mb", type=int, default=64)
    ap.add_argument("--make-long-tail", metavar="PATH")
    ap.add_argument("--words", type=int, default=10_000_000)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: single, cluster, memory")
    args = ap.parse_args()
    if args.make_long_tail:
        make_long_tail(args.make_long_tail, args.words)
        print(f"wrote {args.make_long_tail}: {os.path.getsize(args.make_long_tail):,} bytes")
    skip = set(filter(None, args.skip.split(",")))
    for path in args.corpora:
        if not os.path.isfile(path):
            print(f"{path}: not found, skipped")
            continue
        size = os.path.getsize(path)
        print(f"\n== {path} ({mb(size)}), vocab {args.vocab_size}, {time.strftime('%Y-%m-%d')}")
        single = cluster = None
        if "single" not in skip:
            single = run_child(SINGLE, path, args.vocab_size)
            print(f"single process : {single['seconds']:7.1f} s   peak RSS {mb(single['rss'])} "
                  f"(after warm-up {mb(single['rss_before'])}), {single['unique_words']:,} unique words")
        if "cluster" not in skip:
            cluster = run_child(CLUSTER, path, args.vocab_size, WORKERS=args.workers, PARTITION=args.partition_mb << 20)
            print(f"LocalCluster x{args.workers}: {cluster['seconds']:7.1f} s   peak RSS per worker "
                  f"{', '.join(mb(x) for x in cluster['workers_rss'])}; driver (+ scheduler) {mb(cluster['driver_rss'])}")
            if single:
                print(f"cluster / single time: {cluster['seconds'] / single['seconds']:.2f}x; "
                      f"merges identical: {cluster['merges'] == single['merges']}")
            parts = np.array(cluster["partitions"], dtype=np.float64)
            print(f"per partition ({len(parts)} x {args.partition_mb} MB): median {np.median(parts[:, 0]):.1f} s counting, "
                  f"{np.median(parts[:, 1]):,.0f} unique words, ships {mb(np.median(parts[:, 2]))} pickled "
                  f"({np.median(parts[:, 2] / parts[:, 3]):.3f}x words + counts); all partitions ship {mb(parts[:, 2].sum())}")
        if "memory" not in skip:
            with tempfile.TemporaryDirectory() as tmp:
                halves = [os.path.join(tmp, "a.npz"), os.path.join(tmp, "b.npz")]
                c = run_child(MEMORY_COUNT, path, args.vocab_size, HALVES=halves)
                m = run_child(MEMORY_MERGE, path, args.vocab_size, HALVES=halves)
            n = c["unique_words"]
            print(f"count_words    : {c['seconds']:.1f} s, {n:,} unique words, peak RSS {mb(c['peak'])} = "
                  f"{c['peak'] / n:.0f} B/word ({(c['peak'] - c['base_rss']) / n:.0f} B/word above the "
                  f"{mb(c['base_rss'])} of the loaded runtime)")
            print(f"its WordCounts : words {mb(c['words'])} + offsets {mb(c['offsets'])} + counts {mb(c['counts'])}; "
                  f"pickles to {mb(c['pickled'])} = {c['pickled'] / (c['words'] + c['offsets'] + c['counts']):.3f}x the "
                  f"arrays, {c['pickled'] / (c['words'] + c['counts']):.3f}x words + counts")
            print(f"halves summed  : {m['seconds']:.1f} s ({m['halves'][0]:,} + {m['halves'][1]:,} words -> "
                  f"{m['unique_words']:,}), peak RSS {mb(m['peak'])} = {m['peak'] / m['unique_words']:.0f} B/word "
                  f"({(m['peak'] - m['base_rss']) / m['unique_words']:.0f} B/word above the loaded runtime; the halves "
                  f"alone {(m['loaded_rss'] - m['base_rss']) / m['unique_words']:.0f} B/word)")

if __name__ == "__main__":
    main()
