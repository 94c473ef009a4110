#!/usr/bin/env python
"""Where numtok's first run spends its time: Numba compilation per kernel, cold and warm.

    python benchmarks/compile_times.py                      # every scenario, top 15 kernels each
    python benchmarks/compile_times.py --scenarios demo --top 40
    python benchmarks/compile_times.py --scenarios load_encode,train --repeat 3

Each scenario runs in a fresh interpreter twice, on a fresh copy of the package (no compiled
kernels beside it) with NUMTOK_JIT_CACHE, NUMBA_CACHE_DIR and NUMTOK_CACHE_DIR in a new
temporary directory: ``cold`` first (what a new install, container, CI job or cluster worker
pays), then ``warm`` with the cache the cold run left (every later run). Cold runs record Numba's compile events; the table gives, per jitted
function, how many signatures were compiled and the seconds spent in it *exclusively* (a
kernel's time without the functions it compiled on the way), split into type inference, the
other Numba passes (inlining, rewrites, lowering to LLVM IR) and LLVM (optimisation and machine
code, measured as the time holding Numba's LLVM lock). Figures are medians over ``--repeat``
fresh processes; the machine is shared, so read them next to its load average (printed), and
compare the cold run's CPU seconds (user + sys), which another process's load moves less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SCENARIOS = {
    "import": "import numtok",
    "load_encode": "import numtok; numtok.load('cl100k_base').encode('hello world')",
    "encode_long": "import numtok; e = numtok.load('o200k_base'); e.encode_ordinary('naïve café 東京 ' * 20000)",
    "batch": "import numtok; e = numtok.load('o200k_base'); e.encode_batch(['hello world', 'naïve café 東京'] * 50)",
    "train": (
        "import numtok; from numtok.encode.registry import DATA_DIR; import os\n"
        "text = open(os.path.join(DATA_DIR, 'pride_and_prejudice.txt'), encoding='utf-8').read()\n"
        "numtok.train_bpe(text.splitlines(keepends=True), 1000)"
    ),
    "demo": (
        "import contextlib, io; from numtok.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['demo', '--quiet'])"
    ),
    "warmup": "import numtok; numtok.warmup(quiet=True)",
}

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from numba.core import event as ev

class Recorder(ev.Listener):
    def __init__(self):
        self.events = []
    def on_start(self, event):
        self.events.append((time.perf_counter(), 1, event.kind, _name(event)))
    def on_end(self, event):
        self.events.append((time.perf_counter(), 0, event.kind, _name(event)))

def _name(event):
    data = event.data or {}
    if event.kind == "numba:compile":
        d = data["dispatcher"]
        return f"{d.py_func.__module__}.{d.py_func.__qualname__}"
    if event.kind == "numba:run_pass":
        return data["name"].split(" [")[0]
    return ""

rec = Recorder()
for kind in ("numba:compile", "numba:run_pass", "numba:llvm_lock"):
    ev.register(kind, rec)
exec(compile(sys.argv[1], "<scenario>", "exec"))
total = time.perf_counter() - t0

# exclusive time per (function, category): walk the nested events with a stack
TYPING = {"nopython_type_inference", "partial_type_inference", "NopythonTypeInference"}
stats, stack, sigs = {}, [], {}
last = None
def charge(until):
    if not stack or last is None:
        return
    fn = next((n for k, n in reversed(stack) if k == "numba:compile"), None)
    kind, name = stack[-1]
    cat = "llvm" if kind == "numba:llvm_lock" else "typing" if name in TYPING else "passes"
    if fn is not None:
        s = stats.setdefault(fn, {"typing": 0.0, "passes": 0.0, "llvm": 0.0})
        s[cat] += until - last
for t, start, kind, name in rec.events:
    charge(t)
    last = t
    if start:
        stack.append((kind, name))
        if kind == "numba:compile":
            sigs[name] = sigs.get(name, 0) + 1
    else:
        stack.pop()
print(json.dumps({"total": total, "stats": stats, "sigs": sigs}))
"""


def fresh_install(root: str) -> str:
    """A copy of the numtok package this script imports, without compiled kernels, under
    ``root``; returns the directory to put on PYTHONPATH."""
    import numtok

    site = os.path.join(root, "site")
    shutil.copytree(os.path.dirname(numtok.__file__), os.path.join(site, "numtok"), ignore=shutil.ignore_patterns("__pycache__"))
    return site


def run(code: str, cache_dir: str) -> dict:
    site = os.path.join(cache_dir, "site")
    env = dict(os.environ, NUMTOK_JIT_CACHE=os.path.join(cache_dir, "jit"), NUMBA_CACHE_DIR=os.path.join(cache_dir, "jit"),
               NUMTOK_CACHE_DIR=os.path.join(cache_dir, "tables"), PYTHONPATH=os.pathsep.join([site, os.environ.get("PYTHONPATH", "")]))
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", _CHILD, code], env=env, capture_output=True, text=True)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        sys.exit(f"scenario failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall"] = wall
    result["cpu"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated: " + ", ".join(SCENARIOS))
    ap.add_argument("--repeat", type=int, default=1, help="fresh cold/warm process pairs per scenario")
    ap.add_argument("--top", type=int, default=15, help="kernels listed per scenario")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    for name in args.scenarios.split(","):
        colds, warms, runs, cpus = [], [], [], []
        for _ in range(args.repeat):
            cache = tempfile.mkdtemp(prefix="numtok-cold-cache-")
            fresh_install(cache)
            try:
                runs.append(run(SCENARIOS[name], cache))
                warms.append(run(SCENARIOS[name], cache)["wall"])
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            colds.append(runs[-1]["wall"])
            cpus.append(runs[-1]["cpu"])
        first = runs[0]
        per_fn = sorted(first["stats"].items(), key=lambda kv: -sum(kv[1].values()))
        cats = {c: sum(s[c] for s in first["stats"].values()) for c in ("typing", "passes", "llvm")}
        print(f"\n== {name}: cold {statistics.median(colds):.2f} s ({statistics.median(cpus):.2f} CPU s), warm {statistics.median(warms):.2f} s "
              f"(whole process, median of {args.repeat}); compiled {sum(first['sigs'].values())} signatures of "
              f"{len(first['sigs'])} functions; typing {cats['typing']:.1f} s, passes {cats['passes']:.1f} s, "
              f"LLVM {cats['llvm']:.1f} s")
        print(f"  {'seconds':>7} {'typing':>6} {'passes':>6} {'llvm':>6} {'sigs':>4}  function")
        for fn, s in per_fn[: args.top]:
            print(f"  {sum(s.values()):7.2f} {s['typing']:6.2f} {s['passes']:6.2f} {s['llvm']:6.2f} "
                  f"{first['sigs'].get(fn, 0):4d}  {fn.removeprefix('numtok.')}")


if __name__ == "__main__":
    main()
