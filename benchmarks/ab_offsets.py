#!/usr/bin/env python
"""Old code against new in one process: ``encode_with_offsets`` / ``encode_ordinary``
throughput of each (CPU time, interleaved rounds, median of the rounds' ratios).

    mkdir -p /tmp/ab && git archive OLD_COMMIT src/numtok | tar -x -C /tmp/ab
    mv /tmp/ab/src/numtok /tmp/ab/numtok_old
    PYTHONPATH=src python benchmarks/ab_offsets.py /tmp/ab /work/corpus/mixed-100M.txt --rounds 15

The old package must be a copy named ``numtok_old`` (its imports are relative) in the directory
given first. Both tokenizers' piece caches are warmed to full size before timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numtok  # noqa: E402
from benchmarks.common import warm_piece_caches  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old_parent", help="directory holding the old package as numtok_old")
    ap.add_argument("corpus")
    ap.add_argument("--encoding", default="o200k_base")
    ap.add_argument("--max-mb", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    sys.path.insert(0, args.old_parent)
    import numtok_old

    with open(args.corpus, encoding="utf-8") as f:
        text = f.read(int(args.max_mb * 1e6))
    encs = {"old": numtok_old.load(args.encoding), "new": numtok.load(args.encoding)}
    for enc in encs.values():
        enc.encode_with_offsets(text[:1000])
        warm_piece_caches(enc, lambda enc=enc: enc.encode_ordinary(text))
    seconds: dict[tuple[str, str], list[float]] = {(v, f): [] for v in encs for f in ("plain", "offsets")}
    for r in range(args.rounds):
        for version in ("old", "new") if r % 2 else ("new", "old"):
            enc = encs[version]
            calls = [("plain", enc.encode_ordinary), ("offsets", enc.encode_with_offsets)]
            for name, fn in calls if r % 2 else calls[::-1]:
                t0 = time.process_time()
                fn(text)
                seconds[(version, name)].append(time.process_time() - t0)
    mb = len(text.encode("utf-8")) / 1e6
    print(f"{args.corpus}: {mb:.1f} MB, {args.encoding}, {args.rounds} rounds, load average {os.getloadavg()[0]:.2f}")
    for v in encs:
        plain, offsets = seconds[(v, "plain")], seconds[(v, "offsets")]
        ratio = statistics.median(a / b for a, b in zip(plain, offsets))
        print(f"  {v}: encode_ordinary {mb / statistics.median(plain):6.1f} MB/s, encode_with_offsets "
              f"{mb / statistics.median(offsets):6.1f} MB/s (CPU time); encode_with_offsets / encode_ordinary {ratio:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
