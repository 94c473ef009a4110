#!/usr/bin/env python
"""numtok.tiktoken (the drop-in) vs tiktoken, both returning lists, on one corpus file.

    python benchmarks/compare_tiktoken_dropin.py /work/corpus/mixed-100M.txt
    python benchmarks/compare_tiktoken_dropin.py src/numtok/data/pride_and_prejudice.txt --encodings cl100k_base,o200k_base

Rows (MB/s of UTF-8 input, median of ``--repeat`` runs; drop-in / tiktoken ratio):

* ``encode_ordinary``: the whole file as one str, one call.
* ``encode_ordinary_batch``: the file split on blank lines, one call, ``num_threads`` as given
  (default 8, tiktoken's default; the drop-in uses at most the cores there are).

Both are *cold*: every run uses a new Encoding object of each library (the drop-in's over a new
numtok Tokenizer from the table cache, so its piece caches are empty) and a new copy of the str
(no UTF-8 kept in it), made before the clock starts; freeing the result is off the clock. The
``arrays`` column is the drop-in's numtok call without the lists (``Tokenizer.encode_ordinary``,
``encode_batch``): ``list share`` is the part of the drop-in's time the lists take.

* ``short``: µs per call on texts of about 11 B, 90 B and 1 KB cut from the file, warm (the
  same text again and again), for ``encode_ordinary`` and ``encode`` (which looks for special
  tokens).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path


def dropin_encoding(name: str, fresh: bool):
    """The drop-in's Encoding; ``fresh``: a new one over a new numtok Tokenizer (empty caches)."""
    import numtok.tiktoken as dropin
    from numtok.encode import registry
    from numtok.pretokenizers.patterns import NAMED_PATTERNS

    if not fresh:
        return dropin.get_encoding(name)
    spec = registry._ENCODINGS[name]
    tok = registry._build(name, spec)
    return dropin.Encoding._from_tokenizer(name, NAMED_PATTERNS[spec.pattern], dict(spec.special_tokens), tok)


def tiktoken_encoding(name: str):
    """A new tiktoken Encoding, offline: tiktoken's own constructor with numtok's copy of the ranks."""
    import tiktoken

    from numtok.tiktoken import registry

    return tiktoken.Encoding(**registry._bundled_arguments(name))


def cold_median(make, call, text, repeat: int) -> float:
    """Median seconds of ``call(make(), copy_of_text)``, object and copy made off the clock."""
    times = []
    for _ in range(repeat):
        enc = make()
        copy = [(t + " ")[:-1] for t in text] if isinstance(text, list) else (text + " ")[:-1]
        gc.collect()
        t0 = time.perf_counter()
        out = call(enc, copy)
        times.append(time.perf_counter() - t0)
        del out, copy, enc
    return statistics.median(times)


def per_call_us(fn, text: str, seconds: float = 0.3) -> float:
    fn(text)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(100):
            fn(text)
        n += 100
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n // 5 or 1):
            fn(text)
        runs.append((time.perf_counter() - t0) / (n // 5 or 1))
    return statistics.median(runs) * 1e6


def short_texts(text: str) -> dict[str, str]:
    out = {}
    for size in (11, 90, 1024):
        start = len(text) // 3
        while start < len(text) and not text[start].isspace():
            start += 1
        out[f"{size} B"] = text[start : start + size]  # ~size bytes (ASCII text; more for others)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--encodings", default="cl100k_base")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--num-threads", type=int, default=8, help="num_threads of the batch calls (tiktoken's default: 8)")
    ap.add_argument("--mb", type=float, default=0, help="read only the first MB of the corpus (0: all)")
    args = ap.parse_args()

    raw = args.corpus.read_bytes()
    if args.mb:
        raw = raw[: int(args.mb * 1e6)]
    text = raw.decode("utf-8", errors="replace")
    mb = len(text.encode("utf-8")) / 1e6
    docs = [d for d in text.split("\n\n") if d]
    print(f"{args.corpus}: {mb:.1f} MB, {len(docs):,} documents; median of {args.repeat} cold runs; num_threads={args.num_threads}")
    for name in args.encodings.split(","):
        ours, theirs = dropin_encoding(name, False), tiktoken_encoding(name)
        check = text[: 1 << 20]
        assert ours.encode_ordinary(check) == theirs.encode_ordinary(check), "the drop-in's ids differ from tiktoken's"
        threads = args.num_threads
        rows = {
            "encode_ordinary": (
                lambda e, t: e.encode_ordinary(t), lambda e, t: e._tok.encode_ordinary(t), text,
            ),
            "encode_ordinary_batch": (
                lambda e, t: e.encode_ordinary_batch(t, num_threads=threads),
                lambda e, t: e._tok.encode_batch(t, num_threads=min(threads, 64), disallowed_special=frozenset()),
                docs,
            ),
        }  # fmt: skip
        print(f"\n{name}            drop-in MB/s   arrays MB/s   list share   tiktoken MB/s   drop-in / tiktoken")
        for row, (call, array_call, data) in rows.items():
            t_ours = cold_median(lambda: dropin_encoding(name, True), call, data, args.repeat)
            t_arrays = cold_median(lambda: dropin_encoding(name, True), array_call, data, args.repeat)
            t_theirs = cold_median(lambda: tiktoken_encoding(name), call, data, args.repeat)
            share = max(0.0, 1 - t_arrays / t_ours)
            print(f"  {row:22s} {mb / t_ours:10.1f} {mb / t_arrays:13.1f} {share:11.0%} {mb / t_theirs:15.1f} {t_theirs / t_ours:14.2f}x")
        print("  short calls, warm, us per call (drop-in / tiktoken; below 1 the drop-in is faster):")
        for label, short in short_texts(text).items():
            cells = []
            for method in ("encode_ordinary", "encode"):
                a = per_call_us(getattr(ours, method), short)
                b = per_call_us(getattr(theirs, method), short)
                cells.append(f"{method} {a:6.2f} / {b:6.2f} ({a / b:.2f})")
            print(f"    {label:6s} " + "   ".join(cells))


if __name__ == "__main__":
    main()
