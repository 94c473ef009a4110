"""Where a numtok workload spends its time, kernel by kernel and instruction by instruction.

``perf`` sees Numba's kernels as anonymous JIT code. This script runs the workload in a child
process that writes the symbol map perf reads for JIT code (``/tmp/perf-PID.map``), records
the child with ``perf record`` while it repeats the workload, and prints the top symbols. With
``--annotate NAME`` it also prints the hottest instructions of the kernel whose name contains
NAME, each with its share of that kernel's samples (a sample lands on the instruction after
the one that stalled: look just above a hot line).

    python tools/profile_kernels.py encode DIR/mixed-10M.txt --encoding cl100k_base --annotate _encode_loop
    python tools/profile_kernels.py split DIR/multi-10M.txt --encoding o200k_base --annotate _split_o200k
    python tools/profile_kernels.py train DIR/mixed-10M.txt --vocab-size 8192 --annotate _bpe_train

Kernels loaded from numtok's kernel cache carry no symbol table, so the child imports a copy
of the package without its ``__pycache__`` and compiles what it runs (a minute or two). Needs
``perf`` and ``objdump`` and the right to record another process (root, or
``kernel.perf_event_paranoid`` <= 1). It samples ``cpu-clock``, which works in VMs that have
no hardware counters.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_MANGLED_PART = re.compile(r"(\d+)")


def readable(name: str) -> str:
    """``numtok.encode._kernels._encode_loop`` from Numba's mangled
    ``_ZN6numtok6encode8_kernels12_encode_loopB4v184...`` (other names unchanged).

    >>> readable("_ZN6numtok6encode8_kernels12_encode_loopB4v184B48c8tJTIeFIjxE5ArrayIhLi1E")
    'numtok.encode._kernels._encode_loop'
    >>> readable("_ZN7cpython6numtok4warm5_spinB2v1E")
    'cpython.numtok.warm._spin'
    """
    if not name.startswith("_ZN"):
        return name
    parts, i = [], 3
    while i < len(name) and name[i].isdigit():
        m = _MANGLED_PART.match(name, i)
        n = int(m.group(1))
        parts.append(name[m.end() : m.end() + n])
        i = m.end() + n
    return ".".join(parts) or name


# ----------------------------------------------------------------------------------------------
# the child: run the workload, write the perf map, then repeat the workload until killed


def _workload(args):
    import numpy as np

    import numtok

    text = Path(args.corpus).read_bytes()[: int(args.mb * 1e6)].decode("utf-8", errors="ignore")
    if args.job == "encode":
        tok = numtok.load(args.encoding)
        return lambda: tok.encode_ordinary(text)
    if args.job == "split":
        from numtok.pretokenizers import split_bytes

        data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        docs = np.array([[0, len(data)]], dtype=np.int64)
        pattern = numtok.load(args.encoding).pattern
        return lambda: split_bytes(data, docs, pattern, num_threads=1)
    return lambda: numtok.train_bpe([text], vocab_size=args.vocab_size)


def _write_perf_map(path: str) -> int:
    """One line per compiled function of every Numba dispatcher: ``start size name``."""
    import gc

    from numba.core.registry import CPUDispatcher

    entries, seen = set(), set()
    for obj in gc.get_objects():
        if not isinstance(obj, CPUDispatcher):
            continue
        for cres in obj.overloads.values():
            lib = cres.library
            if id(lib) in seen:
                continue
            seen.add(id(lib))
            for fn in lib.get_defined_functions():
                if fn.is_declaration:
                    continue
                address = lib._codegen._engine.get_function_address(fn.name)
                if address:
                    entries.add((address, fn.name))
    ordered = sorted(entries)
    with open(path, "w") as f:
        for k, (address, name) in enumerate(ordered):
            size = ordered[k + 1][0] - address if k + 1 < len(ordered) else 1 << 16
            f.write(f"{address:x} {min(size, 1 << 20):x} {readable(name)}\n")
    return len(ordered)


def _child(args) -> None:
    run = _workload(args)
    run()  # compiles every kernel the workload uses
    n = _write_perf_map(f"/tmp/perf-{os.getpid()}.map")
    print(f"ready {n}", flush=True)
    stop = time.time() + args.seconds + 60
    while time.time() < stop:
        run()


# ----------------------------------------------------------------------------------------------
# the parent: copy the package, start the child, record it, report


def _annotate(pid: int, perf_map: str, ips: collections.Counter, name: str, share: float) -> None:
    entries = [line.split(None, 2) for line in open(perf_map)]
    hits = [(int(a, 16), int(s, 16), n.strip()) for a, s, n in entries if name in n]
    if not hits:
        print(f"no kernel named like {name!r}")
        return
    start, size, full = max(hits, key=lambda h: sum(c for ip, c in ips.items() if h[0] <= ip < h[0] + h[1]))
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(start)
        code = mem.read(size)
    with tempfile.NamedTemporaryFile(suffix=".bin") as blob:
        blob.write(code)
        blob.flush()
        dump = subprocess.run(
            ["objdump", "-b", "binary", "-m", "i386:x86-64", "-D", f"--adjust-vma={start:#x}", blob.name],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    lines = []
    for line in dump.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(.*)", line)
        if m and m.group(2).strip():  # (a long instruction's bytes continue on a line of their own)
            lines.append((int(m.group(1), 16), m.group(2).strip()))
    counts = [ips.get(address, 0) for address, _ in lines]
    total = sum(counts) or 1
    print(f"\n{full}: {total} samples; instructions with >= {100 * share:.1f} % of them, and the 8 before each")
    shown = set()
    for k, c in enumerate(counts):
        if c >= share * total:
            shown.update(range(max(0, k - 8), min(len(lines), k + 2)))
    previous = None
    for k in sorted(shown):
        if previous is not None and k != previous + 1:
            print("    ...")
        address, text = lines[k]
        print(f"  {address - start:6x} {100 * counts[k] / total:5.1f}  {text}")
        previous = k


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("job", choices=["encode", "split", "train"])
    p.add_argument("corpus", help="a UTF-8 text file")
    p.add_argument("--encoding", default="cl100k_base", help="encode: the encoding; split: its pattern (default cl100k_base)")
    p.add_argument("--vocab-size", type=int, default=8192, help="train: the vocabulary size")
    p.add_argument("--mb", type=float, default=10.0, help="use the first MB of the corpus (default 10)")
    p.add_argument("--seconds", type=float, default=12.0, help="how long to record (default 12)")
    p.add_argument("--top", type=int, default=12, help="symbols to list (default 12)")
    p.add_argument("--annotate", metavar="NAME", help="also list the hottest instructions of this kernel")
    p.add_argument("--share", type=float, default=0.01, help="--annotate: an instruction's share to be listed (default 0.01)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args)
        return
    for tool in ("perf", "objdump"):
        if shutil.which(tool) is None:
            sys.exit(f"profile_kernels: {tool} is not installed")
    import numtok

    with tempfile.TemporaryDirectory(prefix="numtok-profile-") as tmp:
        shutil.copytree(Path(numtok.__file__).parent, Path(tmp) / "numtok", ignore=shutil.ignore_patterns("__pycache__"))
        env = dict(os.environ, PYTHONPATH=tmp + os.pathsep + os.environ.get("PYTHONPATH", ""), NUMTOK_QUIET="1")
        child = subprocess.Popen([sys.executable, __file__, "--child", *(argv if argv is not None else sys.argv[1:])],
                                 stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
        try:
            line = child.stdout.readline()
            if not line.startswith("ready"):
                sys.exit(f"profile_kernels: the workload did not start (exit {child.wait()})")
            print(f"{line.split()[1]} compiled functions mapped; recording {args.seconds:g} s of pid {child.pid}", flush=True)
            data = str(Path(tmp) / "perf.data")
            record = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-p", str(child.pid), "-o", data,
                                     "--", "sleep", str(args.seconds)], capture_output=True, text=True)  # fmt: skip
            if record.returncode != 0:
                state = "still running" if child.poll() is None else f"exited with {child.returncode}"
                sys.exit(f"profile_kernels: perf record failed (exit {record.returncode}; the workload {state}):\n{record.stderr.strip()}")
            report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym", "--stdio"],
                                    capture_output=True, text=True, check=True).stdout  # fmt: skip
            rows = [r for r in report.splitlines() if r.strip() and not r.startswith("#")]
            print("\n".join(r[:140] for r in rows[: args.top]))
            if args.annotate:
                script = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True, text=True, check=True).stdout
                ips = collections.Counter(int(x, 16) for x in script.split())
                _annotate(child.pid, f"/tmp/perf-{child.pid}.map", ips, args.annotate, args.share)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
            Path(f"/tmp/perf-{child.pid}.map").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
