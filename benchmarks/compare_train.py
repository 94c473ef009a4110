"""Train numtok and the anchor libraries on the same file, one process each, and compare.

    python benchmarks/compare_train.py CORPUS [--vocab-size 32768] [--repeat 3] [--only numtok,hf]

Prints the median wall time of the training call, the peak RSS of the process, and each
library's ratio to numtok (>1 means numtok is faster / smaller); with --check, also whether
numtok's merges equal HF's. numtok runs after one untimed warm-up process, so its Numba
kernels come from the cache, and each numtok child loads them (a tiny training) before the
timer starts: the fixed cold-start cost is measured on its own by benchmarks/bench_train.py
(timeraw_) and reported in the README.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# Prepended to every child: the corpus's lines, for the libraries that train from an iterator.
LINES = """
def lines():
    with open(PATH, encoding="utf-8") as f:
        yield from f
"""

CHILD = {
    "numtok": """
import numtok
numtok.train_bpe(["load the compiled kernels: warm up"], 260)  # Numba cache load, not training
t0 = time.perf_counter()
tok = numtok.train_bpe(PATH, VOCAB, num_threads=THREADS)
elapsed = time.perf_counter() - t0
merges = [[a.hex(), b.hex()] for a, b in tok.merges]
""",
    "hf": """
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tr = trainers.BpeTrainer(vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
t0 = time.perf_counter()
tok.train([PATH], tr)
elapsed = time.perf_counter() - t0
table = {}
printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
others = [b for b in range(256) if b not in set(printable)]
inv = {chr(b): b for b in printable} | {chr(0x100 + i): b for i, b in enumerate(others)}
m = json.loads(tok.to_str())["model"]["merges"]
merges = [[bytes(inv[c] for c in a).hex(), bytes(inv[c] for c in b).hex()] for a, b in (x if isinstance(x, list) else x.split(" ") for x in m)]
""",
    "gigatoken": """
import gigatoken
t0 = time.perf_counter()
result = gigatoken.train_bpe(gigatoken.TextFileSource([PATH]), VOCAB, [], tie_breaking="huggingface")
elapsed = time.perf_counter() - t0
merges = None
""",
    "rustbpe": """
import rustbpe
tok = rustbpe.Tokenizer()
t0 = time.perf_counter()
tok.train_from_iterator(lines(), VOCAB, pattern=GPT2)
elapsed = time.perf_counter() - t0
merges = None
""",
    "bpeasy": """
import bpeasy
t0 = time.perf_counter()
vocab = bpeasy.train_bpe(lines(), GPT2, 128, VOCAB)
elapsed = time.perf_counter() - t0
merges = None
""",
}


def run_child(name: str, path: str, vocab: int, threads: int, out_json: str) -> tuple[float, float]:
    code = (
        "import json, time\n"
        f"PATH = {path!r}; VOCAB = {vocab}; THREADS = {threads}; GPT2 = {GPT2!r}\n"
        + LINES
        + CHILD[name]
        + f"\njson.dump({{'elapsed': elapsed, 'merges': merges}}, open({out_json!r}, 'w'))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{name} failed (status {status})")
    with open(out_json) as f:
        elapsed = json.load(f)["elapsed"]
    return elapsed, usage.ru_maxrss / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--vocab-size", type=int, default=32768)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default="numtok,hf,gigatoken,rustbpe,bpeasy")
    ap.add_argument("--check", action="store_true", help="also compare numtok's merges with HF's")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    tmp = tempfile.mkdtemp(prefix="numtok-compare-")
    if "numtok" in names:
        run_child("numtok", args.corpus, 300, args.threads, os.path.join(tmp, "warm.json"))  # fill the Numba cache
    rows = {}
    for name in names:
        times, peaks = [], []
        for r in range(args.repeat):
            try:
                t, rss = run_child(name, args.corpus, args.vocab_size, args.threads, os.path.join(tmp, f"{name}.json"))
            except Exception as exc:  # a library that is not installed or fails
                print(f"{name}: skipped ({exc})", file=sys.stderr)
                break
            times.append(t)
            peaks.append(rss)
            print(f"  {name} run {r + 1}: {t:.2f} s, {rss:.0f} MB", file=sys.stderr)
        if times:
            rows[name] = (statistics.median(times), statistics.median(peaks))
    size_mb = os.path.getsize(args.corpus) / 1e6
    print(f"\ncorpus {args.corpus} ({size_mb:.1f} MB), vocab {args.vocab_size}, median of {args.repeat}\n")
    print(f"{'library':<10} {'time (s)':>9} {'peak RSS (MB)':>14} {'time / numtok':>14} {'RSS / numtok':>13}")
    base = rows.get("numtok")
    for name, (t, rss) in rows.items():
        rt = f"{t / base[0]:.2f}x" if base else "-"
        rm = f"{rss / base[1]:.2f}x" if base else "-"
        print(f"{name:<10} {t:9.2f} {rss:14.0f} {rt:>14} {rm:>13}")
    if args.check and "numtok" in rows and "hf" in rows:
        ours = json.load(open(os.path.join(tmp, "numtok.json")))["merges"]
        theirs = json.load(open(os.path.join(tmp, "hf.json")))["merges"]
        print(f"\nmerges identical to HF: {ours == theirs} ({len(ours)} vs {len(theirs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
