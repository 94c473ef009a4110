#!/usr/bin/env python
"""numtok eval and numtok sweep against the work they are built from, side by side, one process:

1. ``numtok.evaluate`` of three tokenizers on a corpus against encoding the same documents (its
   lines, read in 8 MB blocks) once with each tokenizer's ``encode_ordinary_batch``;
2. a sweep's training against one ``train_bpe`` to the largest size, on the corpus minus its
   last ``--heldout-mb`` (the held-out text);
3. the sweep's evaluation of every size against ``numtok.evaluate`` of the largest size alone,
   on the held-out text;
4. weighted training ``{train: 2}`` against ``train_bpe(train)`` (the same merges: every count
   doubled).

    python benchmarks/eval_sweep.py /work/corpus/mixed-100M.txt --threads 2

Prints seconds, ratios and the process's peak RSS after each part (Linux ``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numtok  # noqa: E402


def rss() -> str:
    return f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB"


def encode_lines(tok, path: str, threads: int) -> int:
    """Tokens of the file's lines, encoded 8 MB of lines at a time (as evaluate reads them)."""
    tokens = 0
    with open(path, encoding="utf-8", newline="") as f:
        while True:
            block = f.read(8 << 20)
            if not block:
                break
            block += f.readline()
            tokens += int(tok.encode_ordinary_batch(block.splitlines(keepends=True), num_threads=threads).lengths.sum())
    return tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--tokenizers", default="cl100k_base,o200k_base,gpt2")
    ap.add_argument("--sizes", default="1024,2048,4096,8192,16384,32768,65536,131072")
    ap.add_argument("--heldout-mb", type=float, default=20)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    names = args.tokenizers.split(",")
    sizes = [int(k) for k in args.sizes.split(",")]
    toks = {n: numtok.load(n) for n in names}
    print(f"corpus {args.corpus} ({os.path.getsize(args.corpus) / 1e6:,.1f} MB), threads {args.threads}, tokenizers {names}")
    numtok.evaluate(toks, ["warm up the kernels: hello world, привет, 你好"], num_threads=args.threads)

    # 1. eval of three tokenizers vs encoding once with each
    once = {}
    for name, tok in toks.items():
        t = time.perf_counter()
        encode_lines(tok, args.corpus, args.threads)
        once[name] = time.perf_counter() - t
    t = time.perf_counter()
    numtok.evaluate(toks, args.corpus, num_threads=args.threads)
    evaluated = time.perf_counter() - t
    print(f"eval: {evaluated:.1f} s; encoding once with each: {' + '.join(f'{s:.1f}' for s in once.values())} = {sum(once.values()):.1f} s; "
          f"ratio {evaluated / sum(once.values()):.2f} (target <= 1.5); {rss()}")

    # 2-3. sweep: training and evaluations
    with tempfile.TemporaryDirectory() as d:
        with open(args.corpus, "rb") as f:
            raw = f.read()
        cut = raw.index(b"\n", max(0, len(raw) - int(args.heldout_mb * 1e6))) + 1
        train, heldout = os.path.join(d, "train.txt"), os.path.join(d, "heldout.txt")
        with open(train, "wb") as f:
            f.write(raw[:cut])
        with open(heldout, "wb") as f:
            f.write(raw[cut:])
        del raw
        t = time.perf_counter()
        single = numtok.train_bpe(train, sizes[-1], num_threads=args.threads, show_progress=False)
        single_s = time.perf_counter() - t
        print(f"train_bpe to {sizes[-1]} on {cut / 1e6:,.1f} MB: {single_s:.1f} s; {rss()}")
        t = time.perf_counter()
        one_eval = numtok.evaluate({"largest": single}, heldout, num_threads=args.threads)
        one_eval_s = time.perf_counter() - t
        print(f"evaluate at {sizes[-1]} on {os.path.getsize(heldout) / 1e6:,.1f} MB held out: {one_eval_s:.1f} s; {rss()}")
        t = time.perf_counter()
        result = numtok.sweep(train, sizes, heldout, num_threads=args.threads, show_progress=False)
        sweep_s = time.perf_counter() - t
        trained_s = result.tokenizer.training_stats["seconds"]
        assert result.tokenizer.merges == single.merges
        assert [r["tokens"] for r in result.rows if r["vocab_size"] == sizes[-1]] == [r["tokens"] for r in one_eval]
        print(f"sweep of {len(sizes)} sizes: {sweep_s:.1f} s, of which training {trained_s:.1f} s "
              f"(ratio to train_bpe {trained_s / single_s:.2f}, target <= 1.1) and evaluations {sweep_s - trained_s:.1f} s "
              f"(ratio to one evaluation {(sweep_s - trained_s) / one_eval_s:.2f}, target <= 3); {rss()}")
        for r in result.rows:
            if r["group"] == "all":
                print(f"  {r['vocab_size']:>7} {r['bytes_per_token']:.3f} bytes/token")

        # 4. weighted training
        t = time.perf_counter()
        weighted = numtok.train_bpe({train: 2}, sizes[-1], num_threads=args.threads, show_progress=False)
        weighted_s = time.perf_counter() - t
        assert weighted.merges == single.merges
        print(f"train_bpe({{train: 2}}): {weighted_s:.1f} s, ratio to train_bpe(train) {weighted_s / single_s:.2f}; {rss()}")


if __name__ == "__main__":
    main()
