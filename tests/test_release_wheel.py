"""A release wheel, built and installed as a user would: ``NUMTOK_PRECOMPILE=host pip wheel``,
a fresh venv, ``pip install`` of the wheel. Every public path and the CLI compile nothing and
give exactly the JIT's ids and merges (the JIT: this test process); a spawned process compiles
nothing; a CPU without the wheel's level, or another Numba version, falls back with one line.

Slow (builds every kernel, minutes): ``python -m pytest -m slow tests/test_release_wheel.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import numtok

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"

# Runs in the venv: the public calls of every area, counting Numba compile events.
_WORKLOAD = r"""
import json, sys, tempfile, os, contextlib, io
from numba.core import event as ev
compiles = []

class Count(ev.Listener):
    def on_start(self, event):
        compiles.append(getattr(getattr(event.data.get("dispatcher"), "py_func", None), "__qualname__", "?"))
    def on_end(self, event):
        pass

ev.register("numba:compile", Count())
import numtok, pyarrow as pa
from numtok._native import jit

text = open(sys.argv[1], encoding="utf-8").read()
lines = text.splitlines(keepends=True)
out = {"level": jit.precompiled_selection().level}
for name in ("cl100k_base", "o200k_base", "r50k_base"):
    enc = numtok.load(name)
    out[name] = enc.encode(text, allowed_special="all").tolist()
    out[name + "/batch"] = enc.encode_batch(lines, num_threads=2, allowed_special="all").ids.tolist()
    out[name + "/arrow"] = enc.encode_batch(pa.array(lines), num_threads=2, allowed_special="all").ids.tolist()
    ids, offsets = enc.encode_with_offsets(lines[3])
    out[name + "/offsets"] = [ids.tolist(), offsets.tolist()]
    out[name + "/count"] = enc.count_tokens(text)
    out[name + "/decode"] = enc.decode(enc.encode_ordinary(text)) == text
tok = numtok.train_bpe(lines, 600, special_tokens=["<|endoftext|>"], show_progress=False)
out["train/merges"] = [[a.hex(), b.hex()] for a, b in tok.merges]
out["train/ids"] = tok.encode_ordinary(text).tolist()
counts = numtok.count_words(lines)
out["counts"] = numtok.train_bpe_from_counts(counts, 400, show_progress=False).encode_ordinary(text).tolist()
wp = numtok.train_wordpiece(lines, 1500, show_progress=False)
out["wordpiece"] = wp.encode(text).tolist()
out["evaluate"] = numtok.evaluate(["cl100k_base", tok], lines, num_threads=2)
out["sweep"] = numtok.sweep(lines, [300, 400], lines, show_progress=False).rows
out["weighted"] = [[a.hex(), b.hex()] for a, b in numtok.train_bpe([(lines, 2), (lines[:5], 1.5)], 400, show_progress=False).merges]
with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
    from numtok.cli import main
    main(["demo", "--quiet"])
    path = os.path.join(tmp, "t.txt")
    open(path, "w", encoding="utf-8").write(text)
    main(["encode", "-t", "cl100k_base", path, "-o", os.path.join(tmp, "ids.npy"), "--quiet"])
    main(["train", path, "--vocab-size", "500", "-o", os.path.join(tmp, "tok.json"), "--quiet"])
out["compiles"] = compiles
print(json.dumps(out))
"""

# Encodes in a worker process and counts the compiles there; each script starts its workers as
# users do: a spawned multiprocessing pool, a Dask LocalCluster.
_WORK = r"""
import json

def work(name, text):
    from numba.core import event as ev
    seen = []
    class Count(ev.Listener):
        def on_start(self, event): seen.append(1)
        def on_end(self, event): pass
    ev.register("numba:compile", Count())
    import numtok
    return numtok.load(name).encode(text).tolist(), len(seen)
"""

_SPAWNED = _WORK + r"""
if __name__ == "__main__":
    import multiprocessing as mp
    with mp.get_context("spawn").Pool(1) as pool:
        print(json.dumps(pool.apply(work, ("cl100k_base", "hello world, naïve café 東京"))))
"""

_DASK = _WORK + r"""
if __name__ == "__main__":
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        print(json.dumps(client.submit(work, "o200k_base", "hello world, naïve café 東京").result()))
"""


def _jit_results(text: str) -> dict:
    """The same workload's results from this process (the JIT)."""
    lines = text.splitlines(keepends=True)
    out = {}
    for name in ("cl100k_base", "o200k_base", "r50k_base"):
        enc = numtok.load(name)
        out[name] = enc.encode(text, allowed_special="all").tolist()
        out[name + "/batch"] = enc.encode_batch(lines, num_threads=2, allowed_special="all").ids.tolist()
        out[name + "/arrow"] = out[name + "/batch"]
        ids, offsets = enc.encode_with_offsets(lines[3])
        out[name + "/offsets"] = [ids.tolist(), offsets.tolist()]
        out[name + "/count"] = enc.count_tokens(text)
        out[name + "/decode"] = True
    tok = numtok.train_bpe(lines, 600, special_tokens=["<|endoftext|>"], show_progress=False)
    out["train/merges"] = [[a.hex(), b.hex()] for a, b in tok.merges]
    out["train/ids"] = tok.encode_ordinary(text).tolist()
    out["counts"] = numtok.train_bpe_from_counts(numtok.count_words(lines), 400, show_progress=False).encode_ordinary(text).tolist()
    out["wordpiece"] = numtok.train_wordpiece(lines, 1500, show_progress=False).encode(text).tolist()
    out["evaluate"] = numtok.evaluate(["cl100k_base", tok], lines, num_threads=2)
    out["sweep"] = numtok.sweep(lines, [300, 400], lines, show_progress=False).rows
    weighted = numtok.train_bpe([(lines, 2), (lines[:5], 1.5)], 400, show_progress=False)
    out["weighted"] = [[a.hex(), b.hex()] for a, b in weighted.merges]
    return json.loads(json.dumps(out))  # as the workload's results come back


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with a ``host`` release wheel of this checkout installed."""
    root = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, NUMTOK_PRECOMPILE="host", PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", str(ROOT), "-w", str(root / "dist")],
                   env=env, check=True, capture_output=True)
    (wheel,) = (root / "dist").glob("numtok-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.startswith("numtok/_precompiled/host/") for n in names)
    assert "numtok/_precompiled/manifest.json" in names
    import llvmlite
    import numba

    assert f"Requires-Dist: numba=={numba.__version__}" in metadata
    assert f"Requires-Dist: llvmlite=={llvmlite.__version__}" in metadata
    assert "-linux_x86_64.whl" in wheel.name or "-linux_" in wheel.name
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel), "pyarrow", "dask[distributed]"],
                   env={k: v for k, v in env.items() if k != "NUMTOK_PRECOMPILE"}, check=True, capture_output=True)
    return venv


def _python(venv: Path, args: list[str], **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "NUMTOK_", "PYTHON"))}
    clean.update(env)
    return subprocess.run([str(venv / "bin" / "python"), *args], env=clean, capture_output=True, text=True, cwd="/")


def _sample() -> str:
    text = (DATA / "multilingual_sample.txt").read_text(encoding="utf-8")[:20000]
    return text + (DATA / "sample_mixed.txt").read_text(encoding="utf-8")[:20000] + "<|endoftext|>"


def test_wheel_compiles_nothing_and_matches_the_jit(venv, tmp_path):
    text_path = tmp_path / "text.txt"
    text_path.write_text(_sample(), encoding="utf-8")
    script = tmp_path / "workload.py"
    script.write_text(_WORKLOAD)
    run = _python(venv, [str(script), str(text_path)])
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result.pop("level") == "host"
    assert result.pop("compiles") == []
    assert "numtok:" not in run.stderr
    expected = _jit_results(text_path.read_text(encoding="utf-8"))
    for key, value in expected.items():
        assert result[key] == value, key


def test_spawned_process_and_dask_worker_compile_nothing(venv, tmp_path):
    text = "hello world, naïve café 東京"
    for name, source, encoding in (("spawned", _SPAWNED, "cl100k_base"), ("dask_worker", _DASK, "o200k_base")):
        script = tmp_path / f"{name}.py"
        script.write_text(source)
        run = _python(venv, [str(script)])
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout.strip().splitlines()[-1])
        ids, compiles = result
        assert compiles == 0, name
        assert ids == numtok.load(encoding).encode(text).tolist(), name


_SMALL = "import numtok, json; print(json.dumps(numtok.load('cl100k_base').encode('hello world').tolist()))"


def test_cpu_without_the_level_falls_back(venv):
    # The host level needs every feature of this CPU; a process allowed fewer runs none of it.
    run = _python(venv, ["-c", _SMALL], NUMBA_CPU_FEATURES="+sse,+sse2,+sse4.2,+avx,+avx2",
                  NUMTOK_JIT_CACHE=str(venv / "jit"))
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [15339, 1917]
    assert run.stderr.count("numtok:") == 1 and "lacks features of every precompiled level" in run.stderr


def test_other_numba_version_falls_back(venv, tmp_path):
    site = Path(_python(venv, ["-c", "import numtok, os; print(os.path.dirname(numtok.__file__))"]).stdout.strip())
    manifest_path = site / "_precompiled" / "manifest.json"
    saved = manifest_path.read_text()
    manifest = json.loads(saved)
    manifest["numba"] = "0.58.0"
    manifest_path.write_text(json.dumps(manifest))
    try:
        run = _python(venv, ["-c", _SMALL], NUMTOK_JIT_CACHE=str(tmp_path / "jit"))
    finally:
        manifest_path.write_text(saved)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == [15339, 1917]
    assert "built for Numba 0.58.0" in run.stderr and run.stderr.count("numtok:") == 1


def test_source_install_has_no_precompiled_kernels(tmp_path):
    """Without NUMTOK_PRECOMPILE the wheel is pure Python, as ``pip install .`` builds it."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", str(ROOT), "-w", str(tmp_path)],
                   env={k: v for k, v in os.environ.items() if k != "NUMTOK_PRECOMPILE"}, check=True, capture_output=True)
    (wheel,) = tmp_path.glob("numtok-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        assert not [n for n in z.namelist() if "_precompiled" in n]
    shutil.rmtree(tmp_path)
