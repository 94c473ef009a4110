#!/usr/bin/env python
"""Run-time speed of a release wheel's precompiled levels against kernels the JIT compiled for
this CPU, on the same text, in fresh processes taken in turn.

    NUMTOK_PRECOMPILE=x86-64-v2,x86-64-v3,x86-64-v4,x86-64-v4+avx512vbmi2 pip wheel --no-deps . -w dist
    python -m venv /tmp/v && /tmp/v/bin/pip install dist/numtok-*.whl
    numtok warmup                      # the host JIT's kernels, for this checkout
    python benchmarks/compare_levels.py --venv /tmp/v /work/corpus/mixed-100M.txt /work/corpus/multi-100M.txt

``host JIT`` runs this checkout's package (``src/``) with its kernel cache warm; each level runs
the venv's wheel with ``NUMBA_CPU_FEATURES`` set to that level's features, which makes the wheel
choose that level (and would make the JIT compile for it: a run that compiles anything is
reported). Per file: ``cold`` is the first ``encode_ordinary`` of the text in a fresh process
(fresh tokenizer, text never seen), ``warm`` the median of three more calls on the same text;
with ``--train``, ``train_bpe`` to ``--vocab-size`` on the first file. Prints medians over
``--repeat`` rounds and each level's ratio to the host JIT (above 1: faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import json, sys, time
from numba.core import event as ev
compiles = []
class Count(ev.Listener):
    def on_start(self, event): compiles.append(1)
    def on_end(self, event): pass
ev.register("numba:compile", Count())
import numtok
from numtok._native import jit
spec = json.loads(sys.argv[1])
out = {"kernels": jit.describe_kernels().split(";")[0].split(",")[0]}
for path in spec["files"]:
    text = open(path, encoding="utf-8", errors="surrogateescape").read()
    for name in spec["encodings"]:
        enc = numtok.load(name)
        enc.encode_ordinary("warm the kernels up on a short text, not on the measured one")
        t = time.perf_counter(); enc.encode_ordinary(text); cold = time.perf_counter() - t
        warm = []
        for _ in range(3):
            t = time.perf_counter(); enc.encode_ordinary(text); warm.append(time.perf_counter() - t)
        out[f"{path}|{name}|cold"] = cold
        out[f"{path}|{name}|warm"] = sorted(warm)[1]
if spec["train"]:
    t = time.perf_counter(); numtok.train_bpe(spec["files"][0], spec["vocab_size"], show_progress=False); out["train"] = time.perf_counter() - t
out["compiles"] = len(compiles)
print(json.dumps(out))
"""


def _level_features(python: str, level: str) -> str:
    code = f"from numtok._native.levels import level_target; print(level_target({level!r})[1])"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--venv", required=True, help="a venv with a release wheel installed")
    parser.add_argument("--levels", default="x86-64-v4+avx512vbmi2,x86-64-v4,x86-64-v3,x86-64-v2")
    parser.add_argument("--encodings", default="cl100k_base,o200k_base")
    parser.add_argument("--train", action="store_true", help="also time train_bpe on the first file")
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    venv_python = os.path.join(args.venv, "bin", "python")
    spec = json.dumps({"files": args.files, "encodings": args.encodings.split(","), "train": args.train,
                       "vocab_size": args.vocab_size})
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_CPU", "PYTHONPATH"))}
    configs = {"host JIT": (sys.executable, dict(base, PYTHONPATH=os.path.join(ROOT, "src")))}
    for level in args.levels.split(","):
        configs[level] = (venv_python, dict(base, NUMBA_CPU_FEATURES=_level_features(venv_python, level)))
    runs: dict[str, list[dict]] = {name: [] for name in configs}
    for round_ in range(args.repeat):
        for name, (python, env) in configs.items():
            out = subprocess.run([python, "-c", _CHILD, spec], env=env, capture_output=True, text=True, cwd="/")
            if out.returncode != 0:
                sys.exit(f"{name} failed:\n{out.stderr}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            runs[name].append(result)
            print(f"round {round_ + 1} {name}: {result['kernels']}, {result['compiles']} compile(s)", file=sys.stderr, flush=True)
    keys = [k for k in runs["host JIT"][0] if k not in ("kernels", "compiles")]
    sizes = {path: os.path.getsize(path) for path in args.files}
    print(f"median of {args.repeat} rounds; MB/s (train: s); ratio = level speed / host JIT speed")
    header = ["measure"] + list(configs)
    print(" | ".join(header))
    for key in keys:
        medians = {name: statistics.median(r[key] for r in rs) for name, rs in runs.items()}
        if key == "train":
            cells = [f"{medians[n]:.2f} s" + ("" if n == "host JIT" else f" ({medians['host JIT'] / medians[n]:.3f}x)") for n in configs]
        else:
            path, name, mode = key.split("|")
            mb = sizes[path] / 1e6
            cells = [f"{mb / medians[n]:.1f}" + ("" if n == "host JIT" else f" ({medians['host JIT'] / medians[n]:.3f}x)") for n in configs]
            key = f"{os.path.basename(path)} {name} {mode}"
        print(" | ".join([key] + cells))


if __name__ == "__main__":
    main()
