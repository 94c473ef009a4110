#!/usr/bin/env python
"""``encode_ordinary`` in a loop, with a perf map that names numtok's kernels.

    perf record -o /tmp/perf.data python benchmarks/profile_encode.py TEXT_FILE [--encoding E] [--seconds S]
    perf report -i /tmp/perf.data --no-children --sort sym

Numba loads kernels from its cache as object code and tells perf nothing, so a profile shows bare
addresses. This script captures the object code of every library Numba loads, reads its function
symbols (``objdump -t``: each one's section, offset and size), places them with the address of
a function the library exports, and writes ``/tmp/perf-PID.map``, which perf reads for JIT code.
Functions LLVM inlined are counted in their caller (``encode_loop``, the scanners and their
non-inlined helpers show up by name), and kernels compiled in this process are not named: run
``numtok warmup`` (or the script) once first. Needs binutils' ``objdump``; Linux only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numba.core.codegen as codegen

_loaded: list[tuple[object, bytes]] = []
_unserialize = codegen.CPUCodeLibrary._unserialize.__func__  # type: ignore[attr-defined]


def _capturing_unserialize(cls, cg, state):
    library = _unserialize(cls, cg, state)
    _, kind, data = state
    if kind == "object":
        _loaded.append((library, data[0]))
    return library


def _functions(object_code: bytes) -> list[tuple[str, int, int, str]]:
    """(section, offset, size, name) of each function symbol of an ELF object."""
    with tempfile.NamedTemporaryFile(suffix=".o", delete=False) as fh:
        fh.write(object_code)
    try:
        table = subprocess.run(["objdump", "-t", fh.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(fh.name)
    found = []
    for line in table.splitlines():
        parts = line.split()  # offset, flags..., section, size, name
        if len(parts) >= 6 and "F" in parts[1:-3]:
            found.append((parts[-3], int(parts[0], 16), int(parts[-2], 16), parts[-1]))
    return found


def write_perf_map() -> int:
    """Write ``/tmp/perf-PID.map`` for the libraries loaded so far; returns its number of lines."""
    entries = set()
    for library, object_code in _loaded:
        functions = _functions(object_code)
        base = {}
        for section, offset, _, name in functions:
            if section not in base:
                try:
                    address = library.get_pointer_to_function(name)  # type: ignore[attr-defined]
                except Exception:  # a local symbol: not exported by the engine
                    address = 0
                if address:
                    base[section] = address - offset
        entries.update((base[s] + o, size, name) for s, o, size, name in functions if s in base)
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        fh.writelines(f"{a:x} {size:x} {name}\n" for a, size, name in sorted(entries))
    return len(entries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("text", help="a UTF-8 text file, encoded whole")
    ap.add_argument("--encoding", default="cl100k_base")
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    codegen.CPUCodeLibrary._unserialize = classmethod(_capturing_unserialize)  # type: ignore[assignment]
    import numtok

    with open(args.text, encoding="utf-8") as fh:
        text = fh.read()
    enc = numtok.load(args.encoding)
    enc.encode_ordinary(text)  # loads every kernel the loop calls
    print(f"perf map: {write_perf_map()} functions", file=sys.stderr)
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        enc.encode_ordinary(text)
        calls += 1
    mb = len(text.encode("utf-8")) * calls / 1e6
    print(f"{calls} calls, {mb / (time.perf_counter() - start):.1f} MB/s")


if __name__ == "__main__":
    main()
