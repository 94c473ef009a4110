"""Continued training against training from scratch, on the same corpus, one process each.

    python benchmarks/compare_continue.py CORPUS [--base o200k_base] [--merges 2000] [--repeat 3]

"scratch" learns MERGES merges from bytes (vocab 256 + MERGES) with the base's pattern;
"continue" learns MERGES merges on top of the base (vocab base.n_vocab + MERGES), its time
including loading the base (``numtok.load``: the bundled encoding's tables come from numtok's
disk cache), splitting the words into base tokens and building the 200,000-token result.
Prints the median wall time, CPU time (all threads) and peak RSS of each, and continue / scratch (the issue's target:
<= 1.5x). Both children first run a tiny training (and a tiny continued training) so the Numba
kernels come from the cache; an untimed warm-up process fills it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

WARM = """
import numtok
tiny = numtok.train_bpe(["warm up the kernels, warm up"] * 4, 300)
numtok.train_bpe(["warm up continued training, warm up"] * 4, 310, base=tiny)
"""

CHILD = {
    "scratch": """
pattern = numtok.load(BASE).pattern if BASE in numtok.list_encodings() else numtok.Tokenizer.from_file(BASE).pattern
t0, c0 = time.perf_counter(), time.process_time()
tok = numtok.train_bpe(PATH, 256 + MERGES, pattern=pattern, num_threads=THREADS)
elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
learned = len(tok.merges)
""",
    "continue": """
t0, c0 = time.perf_counter(), time.process_time()
base = numtok.load(BASE) if BASE in numtok.list_encodings() else numtok.Tokenizer.from_file(BASE)
loaded = time.perf_counter() - t0
tok = numtok.train_bpe(PATH, base.n_vocab + MERGES, base=base, num_threads=THREADS)
elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
learned = len(tok.merges) - len(base.merges)
""",
}


def run_child(name: str, path: str, base: str, merges: int, threads: int, out_json: str) -> tuple[dict, float]:
    code = (
        "import json, time\n"
        f"PATH = {path!r}; BASE = {base!r}; MERGES = {merges}; THREADS = {threads}\n"
        + WARM
        + CHILD[name]
        + f"\njson.dump({{'elapsed': elapsed, 'cpu': cpu, 'learned': learned, 'load': globals().get('loaded')}}, open({out_json!r}, 'w'))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"{name} failed (status {status})")
    with open(out_json) as f:
        return json.load(f), usage.ru_maxrss / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--base", default="o200k_base", help="a bundled encoding or a tokenizer.json (default o200k_base)")
    ap.add_argument("--merges", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="numtok-continue-")
    out = os.path.join(tmp, "out.json")
    run_child("continue", args.corpus, args.base, 10, args.threads, out)  # fill the Numba and table caches
    rows: dict[str, tuple[float, float, float]] = {}
    times: dict[str, list[float]] = {"scratch": [], "continue": []}
    cpus: dict[str, list[float]] = {"scratch": [], "continue": []}
    peaks: dict[str, list[float]] = {"scratch": [], "continue": []}
    for r in range(args.repeat):
        for name in ("scratch", "continue"):  # interleaved, so a busy spell hits both
            result, rss = run_child(name, args.corpus, args.base, args.merges, args.threads, out)
            times[name].append(result["elapsed"])
            cpus[name].append(result["cpu"])
            peaks[name].append(rss)
            extra = f" (base loaded in {result['load']:.2f} s)" if result.get("load") is not None else ""
            print(f"  {name} run {r + 1}: {result['elapsed']:.2f} s ({result['cpu']:.2f} s CPU), {rss:.0f} MB, "
                  f"{result['learned']} merges{extra}", file=sys.stderr)
    for name in times:
        rows[name] = (statistics.median(times[name]), statistics.median(cpus[name]), statistics.median(peaks[name]))
    size_mb = os.path.getsize(args.corpus) / 1e6
    print(f"\ncorpus {args.corpus} ({size_mb:.1f} MB), {args.merges} merges, base {args.base}, median of {args.repeat}\n")
    print(f"{'run':<10} {'time (s)':>9} {'CPU (s)':>8} {'peak RSS (MB)':>14}")
    for name, (t, cpu, rss) in rows.items():
        print(f"{name:<10} {t:9.2f} {cpu:8.2f} {rss:14.0f}")
    (t1, c1, m1), (t0, c0, m0) = rows["continue"], rows["scratch"]
    print(f"\ncontinue / scratch: {t1 / t0:.2f}x time (target <= 1.5x), {c1 / c0:.2f}x CPU time, {m1 / m0:.2f}x peak RSS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
