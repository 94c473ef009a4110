#!/usr/bin/env python
"""Arrow pipelines: numtok on Arrow strings vs on a list of str, vs HF tokenizers, in one run.

    python benchmarks/compare_arrow.py /work/corpus/mixed-100M.txt
    python benchmarks/compare_arrow.py CORPUS --encodings cl100k_base --repeat 5 --parts encode,rss
    python benchmarks/compare_arrow.py CORPUS --parts datasets,train --train-vocab 8000

Parts (figures are MB/s of UTF-8 text, medians of ``--repeat`` runs that take turns, so that a
ratio is taken under the same machine load; the machine is shared):

* ``encode``: the corpus split into documents on blank lines (as ``compare_encode.py`` does) as
  one ``pa.large_string()`` array: ``encode_ordinary_batch(arrow)`` vs the same call on the
  documents as a list of str (already built), vs ``to_pylist()`` then the list call (what a user
  of a list API pays), vs HF tokenizers' ``encode_batch_fast`` from the same tokenizer.json on
  all cores (on the first ``--hf-mb`` MB of documents: it is slow; MB/s compared; timed after
  numtok's turns, as its threads spin on after a call). ``--threads`` threads for numtok. The
  Arrow ids are checked equal to the list ids.
* ``rss``: peak RSS of the Arrow path in a fresh process: the array is built from the file's
  bytes (no Python str per document), then one encode is run after a small warm-up; the peak
  over the RSS before it, less the output (ids + offsets), is the overhead. Run twice: the first
  call also grows the tokenizer's piece caches (up to 40 MiB per thread, kept for later calls).
* ``datasets``: ``Dataset.with_format("arrow").map`` appending ``encode_batch(t["text"]).to_arrow()``
  (median of ``--repeat``) vs the same map with ``PreTrainedTokenizerFast(tokenizer_file=...)`` on
  the python format (once: it takes minutes), both ``batched=True`` with the default batch size,
  over the corpus's documents (an in-memory dataset).
* ``train``: ``train_bpe`` on the corpus as ``.txt`` vs the same lines as rows of a ``.parquet``
  file (one row group per ~64 MB); the merges are checked equal.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def take_turns(fns: dict, repeat: int) -> dict[str, float]:
    """Median wall seconds of each function, the functions called in turn ``repeat`` times."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def documents(text: str) -> list[str]:
    return [d + "\n\n" for d in text.split("\n\n") if d]


def hf_json(encoding: str, workdir: str) -> str:
    import numtok

    path = os.path.join(workdir, f"{encoding}.json")
    if not os.path.exists(path):
        numtok.load(encoding).save(path)
    return path


def part_encode(args, docs, arr, n_bytes, workdir) -> None:
    import numtok

    print(f"\n## encode: {len(docs):,} documents, {n_bytes / 1e6:.1f} MB, numtok on {args.threads} threads, "
          f"HF on all cores (on the first {args.hf_mb} MB of documents)")
    print(f"{'encoding':<12} {'arrow':>8} {'list':>8} {'pylist+list':>12} {'hf fast':>8}   arrow/list  arrow/(pylist+list)  arrow/hf")
    for encoding in args.encodings:
        enc = numtok.load(encoding)
        a = enc.encode_ordinary_batch(arr, num_threads=args.threads)
        b = enc.encode_ordinary_batch(docs, num_threads=args.threads)
        assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets), "arrow ids differ from list ids"
        del a, b
        fns = {
            "arrow": lambda: enc.encode_ordinary_batch(arr, num_threads=args.threads),
            "list": lambda: enc.encode_ordinary_batch(docs, num_threads=args.threads),
            "pylist": lambda: enc.encode_ordinary_batch(arr.to_pylist(), num_threads=args.threads),
        }
        hf_docs = docs
        if not args.no_hf:
            import tokenizers

            os.environ["TOKENIZERS_PARALLELISM"] = "true"
            hf = tokenizers.Tokenizer.from_file(hf_json(encoding, workdir))
            ends = np.cumsum([len(d.encode("utf-8")) for d in docs])
            hf_docs = docs[: int(np.searchsorted(ends, args.hf_mb * 1e6)) + 1]
            hf_bytes = int(ends[len(hf_docs) - 1])
        t = take_turns(fns, args.repeat)
        if not args.no_hf:  # after numtok's turns: rayon's threads keep spinning a while after a call
            t.update(take_turns({"hf": lambda: hf.encode_batch_fast(hf_docs, add_special_tokens=False)}, max(1, args.repeat // 2)))
        mbs = {k: n_bytes / 1e6 / v for k, v in t.items()}
        if "hf" in t:  # HF runs on the first --hf-mb MB only: its times scaled to the whole corpus
            t["hf"] *= n_bytes / hf_bytes
            mbs["hf"] = n_bytes / 1e6 / t["hf"]
        hf_mbs = mbs.get("hf", float("nan"))
        print(f"{encoding:<12} {mbs['arrow']:8.1f} {mbs['list']:8.1f} {mbs['pylist']:12.1f} {hf_mbs:8.1f}"
              f"   {t['list'] / t['arrow']:9.2f}x  {t['pylist'] / t['arrow']:18.2f}x  {t.get('hf', float('nan')) / t['arrow']:7.1f}x")


def _arrow_from_file(path: str):
    """The file's documents (each ends after a run of 2+ newlines) as a large_string array
    built from its bytes: no Python str per document."""
    import pyarrow as pa

    data = np.fromfile(path, dtype=np.uint8)
    nl = data == 10
    run_end = np.flatnonzero(nl[1:-1] & nl[:-2] & ~nl[2:]) + 2  # position after a "\n\n+" run
    offsets = np.concatenate([[0], run_end, [len(data)]]).astype(np.int64)
    return pa.Array.from_buffers(pa.large_string(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def rss_child(path: str, encoding: str, threads: int) -> None:
    """Runs in a fresh process: prints the RSS figures of two Arrow encodes as JSON."""
    import numtok

    arr = _arrow_from_file(path)
    enc = numtok.load(encoding)
    enc.encode_ordinary_batch(arr[:2000], num_threads=threads)  # kernels loaded, tables built
    input_bytes = sum(b.size for b in arr.buffers() if b is not None)
    runs = []
    for _ in range(2):
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the peak RSS (VmHWM) to the current RSS
        before = _status_kb("VmRSS") * 1024
        batch = enc.encode_ordinary_batch(arr, num_threads=threads)
        peak = _status_kb("VmHWM") * 1024
        output = batch.ids.nbytes + batch.offsets.nbytes
        runs.append({"before": before, "peak": peak, "output": output})
        del batch
    print(json.dumps({"input": input_bytes, "documents": len(arr), "runs": runs}))


def part_rss(args) -> None:
    print(f"\n## peak RSS of encode_ordinary_batch(arrow), fresh process, {args.threads} threads")
    print(f"{'encoding':<12} {'run':<6} {'input MB':>9} {'output MB':>10} {'peak-before MB':>15} {'overhead MB':>12} {'overhead / (in+out)':>20}")
    for encoding in args.encodings:
        out = subprocess.run([sys.executable, __file__, args.corpus, "--rss-child", encoding, "--threads", str(args.threads)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        for name, run in zip(("first", "second"), r["runs"]):
            delta = run["peak"] - run["before"]
            extra = delta - run["output"]
            print(f"{encoding:<12} {name:<6} {r['input'] / 1e6:9.1f} {run['output'] / 1e6:10.1f} {delta / 1e6:15.1f} {extra / 1e6:12.1f}"
                  f" {extra / (r['input'] + run['output']):19.1%}")


def part_datasets(args, docs, n_bytes, workdir) -> None:
    import datasets
    from transformers import PreTrainedTokenizerFast

    import numtok

    datasets.disable_progress_bars()
    ds = datasets.Dataset.from_dict({"text": docs})
    print(f"\n## datasets.map over {len(ds):,} documents, {n_bytes / 1e6:.1f} MB (batched=True, default batch size)")
    print(f"{'encoding':<12} {'numtok arrow MB/s':>18} {'PreTrainedTokenizerFast MB/s':>29} {'ratio':>7}")
    for encoding in args.encodings:
        enc = numtok.load(encoding)
        hf = PreTrainedTokenizerFast(tokenizer_file=hf_json(encoding, workdir))
        arrow_ds = ds.with_format("arrow")

        def numtok_map():
            return arrow_ds.map(lambda t: t.append_column("input_ids", enc.encode_ordinary_batch(t["text"]).to_arrow()), batched=True)

        def hf_map():
            return ds.map(lambda t: {"input_ids": hf(t["text"])["input_ids"]}, batched=True)

        numtok_map()  # warm: kernels loaded
        times = []
        for i in range(args.repeat):
            t0 = time.perf_counter()
            a = numtok_map()
            times.append(time.perf_counter() - t0)
            if i == args.repeat // 2:  # HF once (it takes minutes), between numtok's runs
                t0 = time.perf_counter()
                b = hf_map()
                hf_seconds = time.perf_counter() - t0
                assert a.with_format(None)[:200]["input_ids"] == b[:200]["input_ids"], "ids differ"
                del b
            del a
        t = {"numtok": statistics.median(times), "hf": hf_seconds}
        print(f"{encoding:<12} {n_bytes / 1e6 / t['numtok']:18.1f} {n_bytes / 1e6 / t['hf']:29.1f} {t['hf'] / t['numtok']:6.1f}x")


def _txt_lines(text: str) -> list[str]:
    """The sequences train_bpe reads from a .txt file: each line with its "\\n" (only "\\n" ends
    a line, unlike str.splitlines)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    return lines


def part_train(args, workdir) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import numtok

    parquet = os.path.join(workdir, "corpus.parquet")
    with open(args.corpus, "rb") as f:
        lines = _txt_lines(f.read().decode("utf-8"))
    table = pa.table({"text": pa.array(lines, pa.large_string())})
    del lines
    pq.write_table(table, parquet, row_group_size=max(1, len(table) * (64 << 20) // max(1, os.path.getsize(args.corpus))))
    del table
    print(f"\n## train_bpe, vocab {args.train_vocab}, pattern {args.train_pattern}: .txt vs .parquet of the same lines")
    results = {}

    def run(source):
        tok = numtok.train_bpe(source, args.train_vocab, pattern=args.train_pattern, num_threads=args.threads)
        results[source] = tok.merges

    numtok.train_bpe(["warm up the kernels, warm up"] * 4, 300)
    t = take_turns({"txt": lambda: run(args.corpus), "parquet": lambda: run(parquet)}, max(1, args.repeat // 2))
    assert results[args.corpus] == results[parquet], "merges differ"
    size = os.path.getsize(args.corpus) / 1e6
    print(f".txt {t['txt']:.1f} s ({size / t['txt']:.1f} MB/s)   .parquet {t['parquet']:.1f} s ({size / t['parquet']:.1f} MB/s)"
          f"   parquet/txt time {t['parquet'] / t['txt']:.3f}   (parquet file {os.path.getsize(parquet) / 1e6:.1f} MB, merges equal)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--encodings", default="cl100k_base,o200k_base")
    ap.add_argument("--parts", default="encode,rss,datasets,train")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-hf", action="store_true", help="leave HF tokenizers out of the encode part")
    ap.add_argument("--hf-mb", type=float, default=10, help="HF tokenizers encodes the first MB of documents only (it is slow)")
    ap.add_argument("--train-vocab", type=int, default=8000)
    ap.add_argument("--train-pattern", default="gpt2")
    ap.add_argument("--rss-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_child:
        rss_child(args.corpus, args.rss_child, args.threads)
        return 0
    import pyarrow as pa

    args.encodings = args.encodings.split(",")
    parts = args.parts.split(",")
    print(f"corpus {args.corpus}, {time.strftime('%Y-%m-%d')}, pyarrow {pa.__version__}, {os.cpu_count()} cores")
    workdir = tempfile.mkdtemp(prefix="numtok-arrow-bench-")
    docs = arr = None
    n_bytes = 0
    if "encode" in parts or "datasets" in parts:
        with open(args.corpus, encoding="utf-8") as f:
            docs = documents(f.read())
        arr = pa.array(docs, pa.large_string())
        n_bytes = arr.buffers()[2].size
    if "encode" in parts:
        part_encode(args, docs, arr, n_bytes, workdir)
    if "rss" in parts:
        part_rss(args)
    if "datasets" in parts:
        part_datasets(args, docs, n_bytes, workdir)
    if "train" in parts:
        part_train(args, workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
