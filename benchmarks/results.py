"""Running a section of the suite and keeping what it printed, with when, on what code and on
which machine: one JSON file per section in ``benchmarks/results/`` (committed, so the page can
be written again from any mix of sections run at different times)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from importlib import metadata

from .suite import Section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, "benchmarks", "results")
LIBRARIES = ("numpy", "numba", "tiktoken", "gigatoken", "tokenizers", "pyarrow")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def commit() -> str:
    """The checked-out commit, with ``+changes`` when the tree differs from it."""
    head = _git("rev-parse", "--short=9", "HEAD") or "unknown"
    return head + ("+changes" if _git("status", "--porcelain", "--untracked-files=no") else "")


def machine() -> dict:
    """What the figures depend on: CPU model, cores, memory, huge pages, and the versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    thp = ""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            thp = f.read().strip()
    except OSError:
        pass
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "transparent_hugepage": thp,
            "python": platform.python_version(), "system": f"{platform.system()} {platform.release()}", "versions": versions}


def expand(command: str, corpus_dir: str) -> str:
    return command.replace("{DIR}", corpus_dir).replace("{PY}", shlex.quote(sys.executable))


def missing_inputs(section: Section, corpus_dir: str) -> list[str]:
    return [name for name in section.needs if not os.path.isfile(os.path.join(corpus_dir, name))]


def run(section: Section, corpus_dir: str, *, echo: bool = True) -> dict:
    """Run the section's commands in turn from the repository root (output shown as it comes
    when ``echo``) and return the record kept for it."""
    runs = []
    started = datetime.datetime.now(datetime.timezone.utc)
    at_commit = commit()  # the code the commands run (the tree may change while they do)
    for template in section.commands:
        command = expand(template, corpus_dir)
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.Popen(command, shell=True, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if echo:
                print(line, end="", flush=True)
        code = proc.wait()
        runs.append({"command": template, "exit_code": code, "seconds": round(time.perf_counter() - t0, 1),
                     "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
                     "output": "".join(lines)})
    return {"section": section.name, "started": started.strftime("%Y-%m-%d %H:%M UTC"), "commit": at_commit,
            "machine": machine(), "runs": runs}


def save(record: dict, directory: str = RESULTS) -> str:
    """Write the record atomically as ``directory/<section>.json``."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, record["section"] + ".json")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)
    return path


def load_all(directory: str = RESULTS) -> dict[str, dict]:
    records = {}
    if os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if name.endswith(".json"):
                with open(os.path.join(directory, name), encoding="utf-8") as f:
                    record = json.load(f)
                records[record["section"]] = record
    return records
