#!/usr/bin/env python
"""Pre-tokenizer throughput: numtok's Numba scanners vs ``regex.finditer``, per named pattern.

    python benchmarks/compare_pretok.py /work/corpus/mixed-100M.txt
    python benchmarks/compare_pretok.py CORPUS --patterns cl100k,o200k --repeat 7 --docs lines

numtok runs on the whole corpus (one document, or one per line with ``--docs lines``), with
num_threads=1 (the per-core figure: all on the calling thread) and with all threads; each
figure is the median of ``--repeat`` runs (the machine is shared: medians and ratios are what
to compare). regex runs on the first ``--regex-mb`` MB (default 16: it does ~7 MB/s) and
builds the same (start, end) character spans; ``--check`` also asserts that numtok's pieces on
that prefix equal regex's.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import regex

from numtok._native.utf8 import char_to_byte_offsets
from numtok.pretokenizers import split_bytes
from numtok.pretokenizers.patterns import NAMED_PATTERNS

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import corpus_bytes, line_docs, median_seconds  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--patterns", default="gpt2,r50k,cl100k,o200k")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--regex-mb", type=float, default=16.0)
    ap.add_argument("--docs", choices=["one", "lines"], default="one")
    ap.add_argument("--threads", type=int, default=None, help="threads for the 'all' column (default: all cores)")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)

    data = corpus_bytes(args.corpus)
    raw = data.tobytes()
    docs = np.array([[0, len(data)]], dtype=np.int64) if args.docs == "one" else line_docs(data)
    # The regex prefix ends on a line boundary (and so on a character boundary).
    cut = raw.rfind(b"\n", 0, int(args.regex_mb * 1e6)) + 1 or len(raw)
    prefix = raw[:cut].decode("utf-8")
    prefix_bytes = cut
    threads = args.threads or len(os.sched_getaffinity(0))

    mb = len(raw) / 1e6
    print(
        f"corpus {args.corpus}: {mb:.1f} MB, {len(docs)} document(s); regex on the first "
        f"{prefix_bytes / 1e6:.1f} MB; median of {args.repeat} runs; {threads} threads"
    )
    header = (
        f"{'pattern':8} {'pieces':>11} {'numtok 1T':>11} {f'numtok {threads}T':>11} {'regex':>9} "
        f"{'1T/regex':>9} {f'{threads}T/regex':>9}"
    )
    print(header)
    print("-" * len(header))
    for name in args.patterns.split(","):
        split_bytes(data[:1000], [[0, 1000]], name, num_threads=1)  # compile / load the cache
        t1 = median_seconds(lambda: split_bytes(data, docs, name, num_threads=1), args.repeat)
        tn = median_seconds(lambda: split_bytes(data, docs, name, num_threads=threads), args.repeat)
        pieces = len(split_bytes(data, docs, name, num_threads=1))
        compiled = regex.compile(NAMED_PATTERNS[name])
        spans = None

        def run_regex():
            nonlocal spans
            spans = [m.span() for m in compiled.finditer(prefix)]

        tr = median_seconds(run_regex, max(1, min(args.repeat, 3)))
        if args.check:
            want = char_to_byte_offsets(prefix)[np.array(spans, dtype=np.int64).reshape(-1, 2)]
            got = split_bytes(data[:prefix_bytes], [[0, prefix_bytes]], name, num_threads=1)
            assert np.array_equal(got, want), f"{name}: numtok differs from regex on the prefix"
        r1, rn, rr = mb / t1, mb / tn, prefix_bytes / 1e6 / tr
        print(
            f"{name:8} {pieces:>11,} {r1:>8.0f} MB/s {rn:>6.0f} MB/s {rr:>5.1f} MB/s "
            f"{r1 / rr:>8.0f}x {rn / rr:>8.0f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
