#!/usr/bin/env python
"""Where numtok's single-thread encoding time goes, per script group: str -> UTF-8, the
pre-tokenizer and the encode loop, each timed alone on the same text, and the encode loop per
kind of piece.

    python benchmarks/encode_stages.py /work/corpus/multi-100M.txt --by-script
    python benchmarks/encode_stages.py /work/corpus/mixed-10M.txt --encoding o200k_base --kinds

Each stage runs as ``encode_ordinary`` runs it on a long text: UTF-8 written from slices of
2^18 characters into one reused buffer, the pre-tokenizer over the 256 KiB groups the encoder
cuts, and the encode loop (``encode_spans``) over their pieces with the tokenizer's own piece
cache after ``--warm`` passes of ``encode_ordinary``. Figures are MB/s of UTF-8 input, thread
CPU time, median of ``--repeat``; "total" is ``encode_ordinary`` itself, which scans and encodes
8,192 pieces at a time (``_kernels.encode_docs_range``): its loop reads spans and text still in L2,
where the "encode" stage reads a whole 256 KiB group's from further away.

``--kinds`` also times the encode loop on each kind of piece alone (pieces of the first 4 MB,
sorted by what the encoder does with them once its cache is warm): one-token pieces of up to 8
bytes, one-token pieces of 9+ bytes, short-cache pieces (up to 15 bytes, 2-4 ids), long ones
(16-64 bytes, or more than 4 ids) and arena ones (65+ bytes). Mixed together the kinds cost
more than their weighted sum: the branches between them mispredict.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import numtok
from numtok._native import pystr
from numtok.encode import _kernels
from numtok.encode.buffers import padded_utf8_of

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.script_groups import group_texts  # noqa: E402

KINDS = ("<=8 bytes, one token", "9+ bytes, one token", "short, 2-4 ids", "long", "arena")
_BLOCK = 1 << 18


def _median_cpu(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    return statistics.median(times)


def encode_loop(tok, data, docs, spans, out, cache):
    status, k, *_ = _kernels.encode_spans(
        data, spans, docs, np.full(len(docs), -1, np.int64), np.empty(len(docs), np.int64), 0, 0, out, 0, tok._core, cache, tok._heap_min,
    )  # fmt: skip
    assert status == _kernels.ST_DONE
    return k


def stages(tok, text: str, repeat: int, warm: int, kinds: bool) -> dict:
    """MB/s of each stage (and per kind of piece, ns a piece) on ``text``."""
    for _ in range(warm):
        tok.encode_ordinary(text)
    data = padded_utf8_of(text)
    nb = len(data)
    buf = np.empty(4 * _BLOCK + 64, np.uint8)
    t_utf8 = _median_cpu(lambda: [pystr.slice_to_utf8(text, a, min(a + _BLOCK, len(text)), buf, 0) for a in range(0, len(text), _BLOCK)], repeat)
    groups, _ = _kernels.cut_documents(data, np.array([[0, nb]], np.int64), tok._chunk_bytes)
    groups = [groups[i : i + 1] for i in range(len(groups))]

    def scan_groups():
        for g in groups:  # each group's spans dropped before the next is cut, as the encoder does:
            tok._split(data, g)  # all kept alive, every run would fault in fresh pages (2x the time)

    t_scan = _median_cpu(scan_groups, repeat)
    spans = [np.ascontiguousarray(tok._split(data, g)) for g in groups]
    n_pieces = sum(len(s) for s in spans)
    out = np.empty(nb + 64, np.int32)
    cache = tok._piece_caches.take(nb)
    try:
        n_ids = sum(encode_loop(tok, data, g, s, out, cache) for g, s in zip(groups, spans))
        t_enc = _median_cpu(lambda: [encode_loop(tok, data, g, s, out, cache) for g, s in zip(groups, spans)], repeat)
        kind_ns = _kind_costs(tok, data, np.concatenate(spans), out, cache, repeat) if kinds else {}
    finally:
        tok._piece_caches.give(cache)
    t_all = _median_cpu(lambda: tok.encode_ordinary(text), repeat)
    return {
        "MB": nb / 1e6, "utf8": nb / t_utf8 / 1e6, "scan": nb / t_scan / 1e6, "encode": nb / t_enc / 1e6,
        "total": nb / t_all / 1e6, "ns_piece": t_enc / n_pieces * 1e9, "pieces_kb": n_pieces / nb * 1e3,
        "ids_piece": n_ids / n_pieces, "kinds": kind_ns,
    }  # fmt: skip


def _kind_costs(tok, data, spans, out, cache, repeat: int) -> dict:
    spans = spans[spans[:, 1] <= 4_000_000]
    raw = data[: int(spans[-1, 1]) if len(spans) else 0].tobytes()
    n_ids: dict[bytes, int] = {}
    kind = np.empty(len(spans), np.int8)
    for r, (a, b) in enumerate(spans.tolist()):
        piece = raw[a:b]
        k = n_ids.get(piece)
        if k is None:
            k = n_ids[piece] = len(tok.encode_ordinary(piece.decode("utf-8", "replace")))
        length = b - a
        kind[r] = (0 if length <= 8 else 1) if k == 1 else 2 if (length <= 15 and k <= 4) else 3 if length <= 64 else 4
    docs = np.array([[0, len(data)]], np.int64)
    costs = {}
    for q, name in enumerate(KINDS):
        part = np.ascontiguousarray(spans[kind == q])
        if len(part):
            t = _median_cpu(lambda: encode_loop(tok, data, docs, part, out, cache), repeat)
            costs[name] = (len(part) / len(spans), t / len(part) * 1e9)
    return costs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus")
    p.add_argument("--encoding", default="cl100k_base")
    p.add_argument("--by-script", action="store_true", help="one row per script group (documents split on blank lines)")
    p.add_argument("--kinds", action="store_true", help="also the encode loop per kind of piece")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warm", type=int, default=3, help="encode_ordinary passes before timing (the piece cache fills)")
    args = p.parse_args(argv)
    with open(args.corpus, encoding="utf-8") as f:
        text = f.read()
    if args.by_script:
        parts = group_texts(text)
    else:
        parts = {"all": text}
    print(f"{args.corpus}, {args.encoding}: MB/s of UTF-8, one thread, thread CPU time, median of {args.repeat}")
    print(f"{'group':11s} {'MB':>6s} {'utf8':>7s} {'scan':>7s} {'encode':>7s} {'total':>7s} {'ns/piece':>9s} {'pieces/KB':>10s} {'ids/piece':>10s}")
    for group, part in parts.items():
        tok = numtok.load(args.encoding)
        tok._clear_caches()
        r = stages(tok, part, args.repeat, args.warm, args.kinds)
        speeds = " ".join(f"{r[key]:7.0f}" for key in ("utf8", "scan", "encode", "total"))
        print(f"{group:11s} {r['MB']:6.1f} {speeds} {r['ns_piece']:9.1f} {r['pieces_kb']:10.0f} {r['ids_piece']:10.2f}", flush=True)
        for name, (share, ns) in r["kinds"].items():
            print(f"    {name:22s} {share:6.1%} of pieces {ns:7.1f} ns a piece")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
