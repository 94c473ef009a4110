#!/usr/bin/env python
"""Run tiktoken's own test files against ``numtok.tiktoken``.

Fetches tiktoken's source distribution at the pinned version with pip, checks its sha256,
extracts only its ``tests/`` into a temporary directory and runs them with pytest, ``tiktoken``
resolved to ``numtok.tiktoken`` (a ``tiktoken`` package on ``PYTHONPATH`` that replaces itself
with the drop-in in ``sys.modules``, so subprocesses the tests start see it too). tiktoken's
code is never copied into numtok's repository.

    python tools/tiktoken_suite.py                       # download, run, print pytest's report
    python tools/tiktoken_suite.py --sdist tiktoken-0.14.0.tar.gz -- -x -q   # a local sdist; pytest options after --

Needs pytest and hypothesis (numtok's ``test`` extra) and, without ``--sdist``, access to the
package index. ``TIKTOKEN_MAX_EXAMPLES`` (tiktoken's, default 100) sets the hypothesis examples.
Every test of the suite applies: none needs the network here, since the bundled encodings are
read offline. The exit status is pytest's.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "0.14.0"
SDIST_SHA256 = "231dec90efcdccf1b565a1416107736f1e09b1a08fe736ef9d6363e626d03874"

# Replaces itself (and the submodules tiktoken's tests import) by numtok's drop-in.
SHIM = '''\
import sys

import numtok.tiktoken as _dropin
from numtok.tiktoken import core, load, model, registry

for _name, _module in {"core": core, "load": load, "model": model, "registry": registry}.items():
    sys.modules["tiktoken." + _name] = _module
sys.modules["tiktoken"] = _dropin
'''

# Fails the run at once if the tests would import the real tiktoken.
CONFTEST = '''\
import tiktoken


def pytest_report_header(config):
    return f"tiktoken resolves to {tiktoken.__name__} ({tiktoken.__file__})"


def pytest_configure(config):
    if tiktoken.__name__ != "numtok.tiktoken" or tiktoken.Encoding.__module__ != "numtok.tiktoken.core":
        raise RuntimeError(f"tiktoken resolves to {tiktoken.__file__}, not numtok.tiktoken")
'''


def fetch_sdist(directory: Path) -> Path:
    """``pip download`` tiktoken's sdist at VERSION into ``directory``."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", f"tiktoken=={VERSION}", "-d", str(directory)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return directory / f"tiktoken-{VERSION}.tar.gz"


def prepare(sdist: Path, work: Path) -> Path:
    """Extract the sdist's tests under ``work/suite`` and write the shim; returns the suite dir."""
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise SystemExit(f"{sdist}: sha256 {digest} is not tiktoken {VERSION}'s sdist ({SDIST_SHA256})")
    suite = work / "suite"
    prefix = f"tiktoken-{VERSION}/tests/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
        for m in members:
            target = suite / "tests" / m.name[len(prefix) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(m)
            assert source is not None
            target.write_bytes(source.read())
    if not members:
        raise SystemExit(f"{sdist} holds no {prefix}")
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "pytest.ini").write_text("[pytest]\n")  # the suite's own rootdir: no numtok pytest options
    shim = work / "shim" / "tiktoken"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(SHIM)
    return suite


def run(sdist: Path | None, pytest_args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="tiktoken-suite-") as tmp:
        work = Path(tmp)
        if sdist is None:
            (work / "dist").mkdir()
            sdist = fetch_sdist(work / "dist")
        suite = prepare(sdist, work)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(work / "shim"), env.get("PYTHONPATH", "")) if p)
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "tests", *pytest_args]
        return subprocess.run(command, cwd=suite, env=env).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sdist", type=Path, help=f"a local tiktoken-{VERSION}.tar.gz instead of downloading it")
    parser.add_argument("pytest_args", nargs="*", help="options for pytest (after --)")
    args = parser.parse_args(argv)
    return run(args.sdist, args.pytest_args)


if __name__ == "__main__":
    sys.exit(main())
