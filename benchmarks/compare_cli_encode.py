"""``numtok encode`` against a Python loop over tiktoken that writes the same .bin file.

    python benchmarks/compare_cli_encode.py /work/corpus/mixed-100M.txt [--encoding cl100k_base] [--repeat 3]

Both sides run as fresh processes (start-up, loading the encoding and writing the file
included) on the whole corpus as one document, so the outputs must be byte-identical; the
script checks that, then prints the median wall time, MB/s, the median CPU time (user +
system: steadier than wall time on a shared machine) and the ratios. The tiktoken side
is what a user would write: read 1 MB blocks, cut each after the last "letter + space" (the
same safe cut numtok uses, so both see the same pieces), ``encode_ordinary_batch`` ~16 MB of
blocks at a time on all cores, append the ids to the file.

Needs tiktoken and the rank files of ../shared/ref (tiktoken is not allowed to download).
The first numtok run is a warm-up (Numba compiles or loads its cache) and is not counted.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "..", "..", "shared", "ref")

_TIKTOKEN_LOOP = r'''
import os, sys, time
import numpy as np
import tiktoken, tiktoken.load
from numtok.pretokenizers.patterns import NAMED_PATTERNS

corpus, out, ranks_path, pattern, eot_name, eot_id, threads = sys.argv[1:8]
enc = tiktoken.Encoding("bench", pat_str=NAMED_PATTERNS[pattern],
                        mergeable_ranks=tiktoken.load.load_tiktoken_bpe(ranks_path),
                        special_tokens={eot_name: int(eot_id)})
dtype = np.uint16 if enc.n_vocab <= 65536 else np.uint32

def cut(block):  # the last ASCII letter followed by a space
    c = block.rfind(b" ")
    while c > 0:
        if 97 <= (block[c - 1] | 0x20) <= 122:
            return c
        c = block.rfind(b" ", 0, c)
    return -1

def segments(path):
    carry = b""
    with open(path, "rb") as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                break
            data = carry + block
            c = cut(data)
            if c <= 0:
                carry = data
                continue
            yield data[:c].decode("utf-8")
            carry = data[c:]
    if carry:
        yield carry.decode("utf-8")

with open(out, "wb") as f:
    batch, size = [], 0
    def flush(batch):
        ids = enc.encode_ordinary_batch(batch, num_threads=int(threads))
        np.concatenate([np.array(doc, dtype=dtype) for doc in ids]).tofile(f)
    for seg in segments(corpus):
        batch.append(seg)
        size += len(seg)
        if size >= 16 << 20:
            flush(batch)
            batch, size = [], 0
    if batch:
        flush(batch)
'''

_ENCODINGS = {
    # name: (rank file, pattern, end-of-text id)
    "gpt2": ("r50k_base.tiktoken", "r50k", 50256),
    "r50k_base": ("r50k_base.tiktoken", "r50k", 50256),
    "cl100k_base": ("cl100k_base.tiktoken", "cl100k", 100257),
    "o200k_base": ("o200k_base.tiktoken", "o200k", 199999),
}


def _run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds = user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--encoding", default="cl100k_base", choices=sorted(_ENCODINGS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--ref", default=REF, help="directory of the .tiktoken rank files")
    args = parser.parse_args()

    ranks, pattern, eot = _ENCODINGS[args.encoding]
    ranks_path = os.path.join(args.ref, ranks)
    size_mb = os.path.getsize(args.corpus) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = os.path.join(tmp, "numtok.bin"), os.path.join(tmp, "tiktoken.bin")
        numtok_cmd = [sys.executable, "-m", "numtok", "encode", "-q", "-t", args.encoding, args.corpus,
                      "-o", ours, "--threads", str(args.threads)]
        tiktoken_cmd = [sys.executable, "-c", _TIKTOKEN_LOOP, args.corpus, theirs, ranks_path, pattern,
                        "<|endoftext|>", str(eot), str(args.threads)]
        _run(numtok_cmd)  # warm-up: Numba cache
        times = {"numtok encode": [], "tiktoken loop": []}
        for _ in range(args.repeat):  # interleaved, so both sides see the same machine load
            times["numtok encode"].append(_run(numtok_cmd))
            times["tiktoken loop"].append(_run(tiktoken_cmd))
        with open(ours, "rb") as a, open(theirs, "rb") as b:
            identical = a.read() == b.read()
        n_ids = os.path.getsize(ours)
    print(f"corpus {args.corpus}: {size_mb:,.1f} MB, encoding {args.encoding}, {args.threads} threads, "
          f"{args.repeat} runs each; outputs byte-identical: {identical} ({n_ids:,} bytes)")
    wall = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    for k, v in times.items():
        print(f"  {k:14s} median wall {wall[k]:6.2f} s ({size_mb / wall[k]:6.1f} MB/s), CPU {cpu[k]:6.2f} s"
              f"   wall runs: {', '.join(f'{w:.2f}' for w, _ in v)}")
    print(f"  ratio tiktoken/numtok: wall {wall['tiktoken loop'] / wall['numtok encode']:.2f}x, "
          f"CPU {cpu['tiktoken loop'] / cpu['numtok encode']:.2f}x")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
