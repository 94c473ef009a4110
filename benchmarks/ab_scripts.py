#!/usr/bin/env python
"""Old code against new in one process, per script group: the pre-tokenizer (``split_bytes``)
and ``encode_ordinary`` of each version on the same text, calls alternating, thread CPU time;
with ``--batch``, ``encode_ordinary_batch`` of the group's documents (one thread); with
``--train N``, ``train_bpe`` of the group's text to N tokens (one counting thread; process CPU
time, as the merge loop runs on a thread of its own).

    mkdir -p /tmp/ab && git archive OLD_COMMIT src/numtok | tar -x -C /tmp/ab
    mv /tmp/ab/src/numtok /tmp/ab/numtok_old
    PYTHONPATH=src python benchmarks/ab_scripts.py /tmp/ab /work/corpus/multi-10M.txt --pattern cl100k

Whole-process figures on a shared machine move by up to 1.8x between runs; two versions timed
in turns in one process see the same load, so their ratio holds to a few percent. Each row
gives both versions' median MB/s and the median of the rounds' new/old ratios (> 1: new is
faster). Spans and ids are checked equal first. The old package must be a copy named
``numtok_old`` (its imports are relative) in the directory given first; its kernels compile on
its first run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numtok  # noqa: E402
from benchmarks.common import warm_piece_caches  # noqa: E402
from benchmarks.script_groups import GROUPS, group_texts  # noqa: E402
from numtok.pretokenizers import split_bytes  # noqa: E402

ENCODINGS = {"gpt2": "gpt2", "r50k": "r50k_base", "cl100k": "cl100k_base", "o200k": "o200k_base"}


def alternate(old, new, rounds: int, clock=time.thread_time) -> tuple[float, float, float]:
    """(old's median seconds, new's, median of old/new per round), the order swapped each round."""
    t_old, t_new = [], []
    for r in range(rounds):
        for which in (0, 1) if r % 2 == 0 else (1, 0):
            t0 = clock()
            (old, new)[which]()
            (t_old, t_new)[which].append(clock() - t0)
    return statistics.median(t_old), statistics.median(t_new), statistics.median(a / b for a, b in zip(t_old, t_new))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old_parent", help="directory holding the old package as numtok_old")
    ap.add_argument("corpus", help="multilingual text (multi-10M.txt of benchmarks/corpus/build-multilingual)")
    ap.add_argument("--pattern", default="cl100k", choices=sorted(ENCODINGS))
    ap.add_argument("--groups", default=",".join(GROUPS), help="comma-separated script groups")
    ap.add_argument("--max-mb", type=float, default=4.0, help="bytes of each group's text timed")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--no-encode", action="store_true", help="time the pre-tokenizer only")
    ap.add_argument("--batch", action="store_true", help="also encode_ordinary_batch of the documents, one thread")
    ap.add_argument("--train", type=int, default=0, metavar="N", help="also train_bpe to N tokens")
    args = ap.parse_args()
    sys.path.insert(0, args.old_parent)
    import numtok_old
    from numtok_old.pretokenizers import split_bytes as split_bytes_old

    with open(args.corpus, encoding="utf-8") as f:
        groups = group_texts(f.read())
    encoding = ENCODINGS[args.pattern]
    old_enc, new_enc = numtok_old.load(encoding), numtok.load(encoding)
    print(f"{args.corpus}, {args.pattern}: new/old, {args.rounds} alternating rounds, thread CPU time, "
          f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    head = f"{'group':12s} {'MB':>5s}   {'scan old':>8s} {'new':>7s} {'new/old':>7s}   {'encode old':>10s} {'new':>7s} {'new/old':>7s}"
    if args.batch:
        head += f"   {'batch old':>9s} {'new':>7s} {'new/old':>7s}"
    if args.train:
        head += f"   {'train old s':>11s} {'new':>7s} {'new/old':>7s}"
    print(head)
    for g in args.groups.split(","):
        if g not in groups:
            continue
        raw = groups[g].encode("utf-8")[: int(args.max_mb * 1e6)]
        text = raw.decode("utf-8", "ignore")
        data = np.frombuffer(raw, np.uint8)
        docs = np.array([[0, len(data)]], np.int64)
        if not np.array_equal(split_bytes_old(data, docs, args.pattern, num_threads=1), split_bytes(data, docs, args.pattern, num_threads=1)):
            raise SystemExit(f"{g}: the two versions' spans differ")
        so, sn, sr = alternate(
            lambda: split_bytes_old(data, docs, args.pattern, num_threads=1), lambda: split_bytes(data, docs, args.pattern, num_threads=1), args.rounds
        )
        row = f"{g:12s} {len(raw) / 1e6:5.1f}   {len(raw) / so / 1e6:8.1f} {len(raw) / sn / 1e6:7.1f} {sr:7.3f}"
        if not args.no_encode:
            if not np.array_equal(old_enc.encode_ordinary(text), new_enc.encode_ordinary(text)):
                raise SystemExit(f"{g}: the two versions' ids differ")
            for enc in (old_enc, new_enc):
                warm_piece_caches(enc, lambda enc=enc: enc.encode_ordinary(text))
            eo, en, er = alternate(lambda: old_enc.encode_ordinary(text), lambda: new_enc.encode_ordinary(text), args.rounds)
            row += f"   {len(raw) / eo / 1e6:10.1f} {len(raw) / en / 1e6:7.1f} {er:7.3f}"
        if args.batch:
            docs_list = [d for d in text.split("\n\n") if d]
            if not np.array_equal(old_enc.encode_ordinary_batch(docs_list, num_threads=1).ids,
                                  new_enc.encode_ordinary_batch(docs_list, num_threads=1).ids):
                raise SystemExit(f"{g}: the two versions' batch ids differ")
            bo, bn, br = alternate(lambda: old_enc.encode_ordinary_batch(docs_list, num_threads=1),
                                   lambda: new_enc.encode_ordinary_batch(docs_list, num_threads=1), args.rounds)
            row += f"   {len(raw) / bo / 1e6:9.1f} {len(raw) / bn / 1e6:7.1f} {br:7.3f}"
        if args.train:
            lines = text.splitlines()
            if numtok_old.train_bpe(lines, args.train, num_threads=1).merges != numtok.train_bpe(lines, args.train, num_threads=1).merges:
                raise SystemExit(f"{g}: the two versions' merges differ")
            to, tn, tr = alternate(lambda: numtok_old.train_bpe(lines, args.train, num_threads=1),
                                   lambda: numtok.train_bpe(lines, args.train, num_threads=1), args.rounds, time.process_time)
            row += f"   {to:11.2f} {tn:7.2f} {tr:7.3f}"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
