"""docs/performance.md, written from the kept results of the suite's sections (``results.py``):
each section's table is what its commands printed, under the date, commit and machine of the
run. Nothing on the page is typed by hand; edit ``suite.py`` (what is measured) or this file
(the page's frame) instead."""

from __future__ import annotations

import json
import os

from .results import REPO, load_all
from .suite import SECTIONS

PAGE = os.path.join(REPO, "docs", "performance.md")

HEAD = """\
# numtok performance

<!-- Written by `python -m benchmarks page` from benchmarks/results/: do not edit by hand. -->

The current figures, one section per area. Each is what the commands shown printed, with the
date, the commit and the machine of the run (machines are listed below). Run a section again with
`python -m benchmarks run SECTION --corpus-dir DIR` and write this page with
`python -m benchmarks page`; `python -m benchmarks list` lists the sections. Targets are tracked in
the issues; why the engine is shaped the way it is, in [design.md](design.md).

**Corpora.** `mixed-10M.txt`, `mixed-100M.txt` and `mixed-1G.txt` (English prose, man pages and
code, ≈ 1 % non-ASCII bytes; `../shared/corpus/build-corpus DIR`) and `multi-10M.txt`,
`multi-100M.txt` (Japanese, Chinese, Korean, Russian, Hindi and 10 % English;
`benchmarks/corpus/build-multilingual DIR`, see
[benchmarks/corpus/README.md](../benchmarks/corpus/README.md)). `--by-script` splits a multi file
into script groups: CJK, Korean, Cyrillic, Devanagari, Latin and mixed.

**Reading the figures.** The machine is shared and noisy: it moves whole-process figures by up to
1.5× between runs. Compare figures only within one run, which times every library on the same
text; the load average before and after each command is shown. "commit+changes" means the run
had changes not yet committed.
"""

HOW = """\
## How to measure

- Never compare figures from different runs: take the medians and ratios one `compare_*.py` run
  prints (each runs numtok and the other libraries on the same text, in turn).
- For a kernel change, compare old and new code in one process on the same text, calls
  alternating, median of pair ratios (`benchmarks/ab_scripts.py` per script group,
  `benchmarks/ab_offsets.py` for offsets).
- numtok keeps piece caches across calls: the scripts report the first pass (cold) apart from the
  median of later ones.
- The encoder figures assume transparent huge pages (`madvise` or `always`).
- The scripts load numtok's kernels before any timer starts; `compile_times.py`, the `timeraw_`
  asv benchmarks or an empty `NUMTOK_JIT_CACHE` time compilation.
- `asv run --python=same --quick` runs the asv suites (`benchmarks/bench_*.py`) against the
  current environment; they read `NUMTOK_BENCH_CORPUS` / `NUMTOK_BENCH_MULTI_CORPUS`, or generate
  a deterministic corpus. Their `peakmem_` benchmarks measure encoding's peak RSS.
- Peak RSS is per process (`ru_maxrss`): the loaded Numba runtime alone is about 150 MB.
"""


def _machines(records: dict[str, dict]) -> list[str]:
    seen: list[str] = []
    for record in records.values():
        key = json.dumps(record["machine"], sort_keys=True)
        if key not in seen:
            seen.append(key)
    return seen


def _machine_table(keys: list[str]) -> str:
    rows = ["| machine | CPU | cores | memory | huge pages | Python | libraries |", "|---|---|---|---|---|---|---|"]
    for i, key in enumerate(keys):
        m = json.loads(key)
        libs = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
        rows.append(f"| M{i + 1} | {m['cpu']} | {m['cores']} | {m['memory']} | {m['transparent_hugepage']} | "
                    f"{m['python']} ({m['system']}) | {libs} |")
    return "\n".join(rows)


def _clean(output: str) -> str:
    """The printed text without progress bars' carriage-return redraws."""
    lines = [line.rsplit("\r", 1)[-1] for line in output.splitlines()]
    return "\n".join(lines).strip("\n")


def render(records: dict[str, dict]) -> str:
    keys = _machines(records)
    parts = [HEAD, "## Machines\n\n" + (_machine_table(keys) if keys else "No section has been run yet.") + "\n"]
    for section in SECTIONS:
        parts.append(f"## {section.title}\n\n{section.about}\n")
        record = records.get(section.name)
        if record is None:
            parts.append(f"Not measured on the current suite yet: `python -m benchmarks run {section.name} --corpus-dir DIR`.\n")
            continue
        label = f"M{keys.index(json.dumps(record['machine'], sort_keys=True)) + 1}"
        parts.append(f"Measured {record['started']}, commit {record['commit']}, machine {label} "
                     f"(`python -m benchmarks run {section.name}`).\n")
        for run in record["runs"]:
            status = "" if run["exit_code"] == 0 else f", **exit code {run['exit_code']}**"
            command = run["command"].replace("{PY}", "python").replace("{DIR}", "DIR")
            parts.append(f"```sh\n{command}\n```\n\n{run['seconds']:.0f} s, load {run['load_before']:.1f} → "
                         f"{run['load_after']:.1f}{status}:\n\n```text\n{_clean(run['output'])}\n```\n")
    parts.append(HOW)
    return "\n".join(parts)


def write(path: str = PAGE, directory: str | None = None) -> str:
    text = render(load_all(directory) if directory else load_all())
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return path
