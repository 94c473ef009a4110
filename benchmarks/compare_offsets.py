#!/usr/bin/env python
"""Offsets and token counts: numtok's encode_with_offsets and count_tokens_batch against its own
encode_ordinary / encode_batch, and HF tokenizers' encode with offsets, on the same text in one
run (MB/s of UTF-8 input, medians).

    python benchmarks/compare_offsets.py /work/corpus/mixed-100M.txt --max-mb 10 --repeat 5
    python benchmarks/compare_offsets.py /work/corpus/multi-10M.txt --max-mb 10 --repeat 5

HF tokenizers runs from the tokenizer.json numtok writes for the encoding (ids checked equal
on the first documents); its offsets are HF's ``Encoding.offsets``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numtok  # noqa: E402
from benchmarks.common import median_seconds, timings, warm_piece_caches  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--encoding", default="o200k_base")
    ap.add_argument("--max-mb", type=float, default=20.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    with open(args.corpus, encoding="utf-8") as f:
        text = f.read(int(args.max_mb * 1e6))
    docs = [d for d in text.split("\n\n") if d]
    mb = len(text.encode("utf-8")) / 1e6
    enc = numtok.load(args.encoding)
    enc.encode_with_offsets(text[:100_000])
    enc.count_tokens_batch(docs[:1000])
    warm_piece_caches(enc, lambda: enc.encode_ordinary(text))
    print(f"{args.corpus}: {mb:.1f} MB, {len(docs)} documents, {args.encoding}, median of {args.repeat}")

    # numtok's contenders in rounds, one call each per round: a ratio is the median of the
    # rounds' ratios, so a change in the machine's load hits both of its sides alike.
    contenders = {
        "numtok encode_ordinary (1 text, 1 thread)": lambda: enc.encode_ordinary(text),
        "numtok encode_with_offsets (1 text, 1 thread)": lambda: enc.encode_with_offsets(text),
        f"numtok encode_ordinary_batch ({args.threads} threads)": lambda: enc.encode_ordinary_batch(docs, num_threads=args.threads),
        f"numtok count_tokens_batch ({args.threads} threads)": lambda: enc.count_tokens_batch(docs, num_threads=args.threads),
    }
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.repeat):
        for name, fn in contenders.items():
            times[name] += timings(fn, 1)
    rows = {name: statistics.median(ts) for name, ts in times.items()}

    def ratio(slow: str, fast: str) -> float:
        return statistics.median(a / b for a, b in zip(times[slow], times[fast]))

    try:
        import tokenizers
    except ImportError:
        tokenizers = None
    if tokenizers is not None:
        path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
        enc.save(path)
        hf = tokenizers.Tokenizer.from_file(path)
        for d in docs[:200]:
            assert hf.encode(d, add_special_tokens=False).ids == enc.encode_ordinary(d).tolist()
        rows["HF encode with offsets (1 text, 1 thread)"] = median_seconds(
            lambda: hf.encode(text, add_special_tokens=False).offsets, max(1, args.repeat // 2))
        rows["HF encode_batch with offsets (all cores)"] = median_seconds(
            lambda: [e.offsets for e in hf.encode_batch(docs, add_special_tokens=False)], max(1, args.repeat // 2))
    print(f"  (load average {os.getloadavg()[0]:.2f})")
    for name, seconds in rows.items():
        print(f"  {name:48s} {mb / seconds:9.1f} MB/s")
    base, off = "numtok encode_ordinary (1 text, 1 thread)", "numtok encode_with_offsets (1 text, 1 thread)"
    print(f"  encode_with_offsets / encode_ordinary throughput: {ratio(base, off):.2f}x (target >= 0.7x)")
    batch, count = f"numtok encode_ordinary_batch ({args.threads} threads)", f"numtok count_tokens_batch ({args.threads} threads)"
    print(f"  count_tokens_batch / encode_ordinary_batch throughput: {ratio(batch, count):.2f}x (target >= 1.2x; "
          "benchmarks/compare_count.py has more)")  # fmt: skip
    if tokenizers is not None:
        print(f"  encode_with_offsets / HF encode with offsets: {rows['HF encode with offsets (1 text, 1 thread)'] / rows[off]:.1f}x (target >= 20x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
