"""The kernel cache (numtok._native.jit) and warm-up (numtok.warmup, in numtok.precompile), in fresh processes started
as users start them: a cold cache compiles, a warm one loads, damage and unwritable locations
never break a call, a read-only install still serves, a changed source is never served stale,
the compile notice goes to an interactive stderr only, and after ``warmup`` nothing compiles."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import pytest
from test_encode import reference

import numtok
from numtok._native import jit

SRC = Path(numtok.__file__).resolve().parent.parent

# One small kernel, called the way the package calls it; the child reports what Numba did.
_PROBE = """
import json, numpy as np
from numtok._native import jit, utf8
value = utf8.utf8_error_offset(np.frombuffer(b"ab\\xff", np.uint8))
stats = utf8._utf8_error_offset.stats
print(json.dumps({"value": value, "hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values()),
                  "location": jit.describe_location(), "path": stats.cache_path}))
"""


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMTOK_JIT_CACHE", "NUMTOK_QUIET")}
    env["PYTHONPATH"] = str(extra.pop("pythonpath", SRC))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _probe(env: dict) -> tuple[dict, str]:
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _copy_package(root: Path) -> Path:
    site = root / "site"
    shutil.copytree(SRC / "numtok", site / "numtok", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def test_cold_compiles_then_warm_loads(tmp_path):
    site = _copy_package(tmp_path)
    env = _env(pythonpath=site, NUMTOK_JIT_CACHE=tmp_path / "cache")
    cold, _ = _probe(env)
    warm, _ = _probe(env)
    assert cold["value"] == warm["value"] == 2
    assert (cold["hits"], cold["misses"]) == (0, 1)
    assert (warm["hits"], warm["misses"]) == (1, 0)
    assert cold["path"].startswith(str(tmp_path / "cache"))
    # NUMBA_CACHE_DIR, when the user set one, holds numtok's kernels too (in a numtok folder).
    numba_env = _env(pythonpath=site, NUMBA_CACHE_DIR=tmp_path / "numba")
    assert _probe(numba_env)[0]["path"].startswith(str(tmp_path / "numba" / "numtok"))


_SPAWNED = """
import json, multiprocessing as mp, numpy as np

def work(_):
    from numtok._native import utf8
    utf8.utf8_error_offset(np.frombuffer(b"ab", np.uint8))
    stats = utf8._utf8_error_offset.stats
    return sum(stats.cache_hits.values()), sum(stats.cache_misses.values())

if __name__ == "__main__":
    work(0)  # the parent compiles
    with mp.get_context("spawn").Pool(2) as pool:
        print(json.dumps(pool.map(work, range(2))))
"""


def test_spawned_workers_load_what_the_parent_compiled(tmp_path):
    script = tmp_path / "spawned.py"
    script.write_text(_SPAWNED)
    env = _env(pythonpath=_copy_package(tmp_path), NUMTOK_JIT_CACHE=tmp_path / "cache")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[1, 0], [1, 0]]


def test_damaged_entries_are_compiled_again_and_rewritten(tmp_path):
    env = _env(pythonpath=_copy_package(tmp_path), NUMTOK_JIT_CACHE=tmp_path / "cache")
    _probe(env)
    files = [p for p in (tmp_path / "cache").rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert files
    for damage in (b"", b"garbage", b"\x80\x04\x95 not a pickle"):
        for path in files:
            path.write_bytes(damage)
        result, err = _probe(env)
        assert result["value"] == 2 and result["misses"] == 1, err
        assert "Traceback" not in err
        again, _ = _probe(env)  # the compile rewrote the entry
        assert (again["hits"], again["misses"]) == (1, 0)


def test_entries_of_another_numba_version_are_not_used(tmp_path):
    import pickle

    env = _env(pythonpath=_copy_package(tmp_path), NUMTOK_JIT_CACHE=tmp_path / "cache")
    _probe(env)
    for index in (tmp_path / "cache").rglob("*.nbi"):
        with open(index, "rb") as f:
            pickle.load(f)  # Numba's version, then the entries
            rest = f.read()
        index.write_bytes(pickle.dumps("0.1.0") + rest)
    result, _ = _probe(env)
    assert (result["hits"], result["misses"]) == (0, 1)
    assert _probe(env)[0]["hits"] == 1


def test_unwritable_location_warns_once_and_still_works(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result, err = _probe(_env(pythonpath=_copy_package(tmp_path), NUMTOK_JIT_CACHE=blocker / "cache"))
    assert result["value"] == 2
    assert err.count("numtok: cannot save compiled kernels") == 1, err


@contextlib.contextmanager
def _read_only(directory: Path):
    """``directory`` made read-only as an installation can be: a read-only bind mount (root),
    else plain permissions (another user)."""
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", str(directory)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(directory)], check=True)
        return
    mounted = subprocess.run(["mount", "--bind", str(directory), str(directory)], capture_output=True).returncode == 0
    if mounted and subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], capture_output=True).returncode != 0:
        subprocess.run(["umount", str(directory)], check=True)
        mounted = False
    if not mounted:
        pytest.skip("cannot make a read-only directory here (no bind mounts)")
    try:
        yield
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def test_read_only_install_is_read_and_user_cache_written(tmp_path):
    """An image warmed at build time (package directory writable then) serves a run where it
    is read-only; kernels compiled then go to the user cache directory."""
    site = _copy_package(tmp_path)
    warm, _ = _probe(_env(pythonpath=site))
    assert warm["location"].startswith(str(site / "numtok"))
    home = tmp_path / "home"
    with _read_only(site):
        result, err = _probe(_env(pythonpath=site, XDG_CACHE_HOME=home))
    assert result["value"] == 2 and (result["hits"], result["misses"]) == (1, 0), err
    assert result["location"].startswith(str(home / "numtok" / "jit")), result
    assert "not writable" in result["location"]
    assert "cannot save" not in err


def test_changed_source_is_never_served_stale(tmp_path):
    site = _copy_package(tmp_path)
    env = _env(pythonpath=site)
    _probe(env)
    assert _probe(env)[0]["hits"] == 1
    # A change in policy code that no kernel file imports: nothing recompiles.
    with open(site / "numtok" / "encode" / "engine.py", "a") as f:
        f.write("\n# changed\n")
    assert _probe(env)[0]["hits"] == 1
    # A change in another kernel file than the kernel's (kernels call kernels across files).
    with open(site / "numtok" / "encode" / "_kernels.py", "a") as f:
        f.write("\n# changed\n")
    result, _ = _probe(env)
    assert (result["hits"], result["misses"]) == (0, 1)


_NOTICE = """
import numba
import numpy as np
from numtok._native import jit, utf8
jit.NOTICE_AFTER_SECONDS = 0.01
utf8.utf8_error_offset(np.frombuffer(b"ab", np.uint8))
print("done")
"""


def _run_with_tty_stderr(env) -> tuple[str, str]:
    """stdout (a pipe) and stderr (a terminal) of a child compiling one kernel."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", _NOTICE], env=env, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out = proc.stdout.read()
    proc.wait()
    os.close(master)
    return out, err.decode()


# A Numba extension installed beside numtok (an entry point, as awkward registers one) that
# records when Numba runs it.
_EXTENSION_PROBE = """
import json, sys, numba, numpy as np
from numtok._native import utf8
value = utf8.utf8_error_offset(np.frombuffer(b"ab\\xff", np.uint8))
after_numtok = "probe_extension" in sys.modules
twice = numba.njit(lambda x: 2 * x)(21)
print(json.dumps({"value": value, "after_numtok": after_numtok, "after_other": sys.modules["probe_extension"].RAN, "twice": twice}))
"""


def test_numba_extensions_wait_for_code_that_is_not_numtok(tmp_path):
    site = tmp_path / "ext"
    (site / "probe_extension-1.0.dist-info").mkdir(parents=True)
    (site / "probe_extension-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: probe-extension\nVersion: 1.0\n")
    (site / "probe_extension-1.0.dist-info" / "entry_points.txt").write_text("[numba_extensions]\ninit = probe_extension:init\n")
    (site / "probe_extension.py").write_text("RAN = False\n\ndef init():\n    global RAN\n    RAN = True\n")
    env = _env(pythonpath=f"{SRC}{os.pathsep}{site}")
    out = subprocess.run([sys.executable, "-c", _EXTENSION_PROBE], env=env, capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"value": 2, "after_numtok": False, "after_other": True, "twice": 42}


# Loading cached kernels leaves Numba's compiler registries (numba.np.arraymath imports
# scipy.linalg) unloaded; a user's own jitted code compiled afterwards still gets all of them.
_LOAD_ONLY_PROBE = """
import json, sys, numba, numpy as np
import numtok
ids = numtok.load("cl100k_base").encode_ordinary("héllo wörld 你好")
loaded = "numba.np.arraymath" in sys.modules
dot = numba.njit(lambda a: np.dot(a, a) + np.sort(a)[0])(np.arange(4.0)) if "scipy" in sys.argv else numba.njit(lambda a: np.sort(a)[0])(np.arange(4.0))
again = numtok.load("cl100k_base").encode_ordinary("héllo wörld 你好")
print(json.dumps({"ids": list(map(int, ids)), "again": list(map(int, again)), "registries_loaded": loaded, "dot": float(dot)}))
"""


def test_loading_cached_kernels_leaves_the_compiler_registries_to_compiles():
    expected = numtok.load("cl100k_base").encode_ordinary("héllo wörld 你好")  # kernels cached in this process's location
    with_scipy = importlib.util.find_spec("scipy") is not None
    out = subprocess.run([sys.executable, "-c", _LOAD_ONLY_PROBE, "scipy" if with_scipy else "-"], env=_env(), capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["ids"] == got["again"] == list(map(int, expected))
    if tuple(map(int, numba.__version__.split(".")[:2])) >= (0, 68):
        # Older Numba imports the registries itself when it loads a cached kernel (seen with 0.59).
        assert got["registries_loaded"] is False
    assert got["dot"] == (14.0 if with_scipy else 0.0)


def test_compile_notice_on_interactive_stderr_only(tmp_path):
    site = _copy_package(tmp_path)
    out, err = _run_with_tty_stderr(_env(pythonpath=site, NUMTOK_JIT_CACHE=tmp_path / "a"))
    assert out.strip() == "done"
    assert err.count("numtok: compiling kernels for this machine") == 1, err
    assert str(tmp_path / "a") in err
    out, err = _run_with_tty_stderr(_env(pythonpath=site, NUMTOK_JIT_CACHE=tmp_path / "b", NUMTOK_QUIET=1))
    assert "compiling" not in err
    # Not a terminal (a pipeline): nothing.
    piped = subprocess.run([sys.executable, "-c", _NOTICE], env=_env(pythonpath=site, NUMTOK_JIT_CACHE=tmp_path / "c"), capture_output=True, text=True)
    assert piped.returncode == 0 and "compiling" not in piped.stderr + piped.stdout


def test_warmup_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown warmup job.*'nope'"):
        numtok.warmup(jobs=("nope",))
    with pytest.raises(ValueError, match="processes must be a positive int"):
        numtok.warmup(processes=0)


_AFTER_WARMUP = """
import json, sys
import numtok
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, e):
        f = e.data["dispatcher"].py_func
        if f.__module__.startswith("numtok"):
            compiled.append(f.__module__ + "." + f.__qualname__)
    def on_end(self, e):
        pass
event.register("numba:compile", Listener())
from numtok.precompile import JOBS
for name in sys.argv[1:]:
    JOBS[name].run()
print(json.dumps(compiled))
"""


def _compiled_by(jobs: list[str], env: dict) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _AFTER_WARMUP, *jobs], env=env, capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_after_warmup_the_wordpiece_area_compiles_nothing():
    # The default location (the checkout's __pycache__, warm when other tests ran): cheap.
    env = _env()
    done = subprocess.run([sys.executable, "-m", "numtok.cli", "warmup", "--jobs", "wordpiece", "--processes", "1"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == subprocess.run([sys.executable, "-c", "from numtok._native import jit; print(jit.describe_location())"],
                                                 env=env, capture_output=True, text=True).stdout.strip()
    assert "wordpiece done" in done.stderr
    assert _compiled_by(["wordpiece"], env) == []


_FIRST_ENCODE = """
import json
import numtok
from numba.core import event
compiled = []
modules = set()
class Listener(event.Listener):
    def on_start(self, e):
        compiled.append(e.data["dispatcher"].py_func.__qualname__)
        modules.add(e.data["dispatcher"].py_func.__module__)
    def on_end(self, e):
        pass
event.register("numba:compile", Listener())
enc = numtok.load("r50k_base")
ids = enc.encode("hello world, naïve café")  # a short call's kernel
ids_long = enc.encode("hello world, naïve café " * 300)  # past the short calls: one kernel call
print(json.dumps({"ids": ids.tolist(), "long": ids_long.tolist(), "compiled": compiled, "modules": sorted(modules)}))
"""


def test_a_first_encode_compiles_only_its_patterns_scanner_and_a_second_process_loads_it(tmp_path):
    """Each named pattern's scan-and-encode kernels call only its scanner (10-22 s of
    compiling each), and are found again by the next process although a factory made them:
    Numba's own cache key of a closure that holds a kernel changed with every process. No
    kernel on the way formats a string (an array slice assigned in a kernel compiles Numba's
    str machinery for its shape error: 37 more functions)."""
    env = _env(pythonpath=_copy_package(tmp_path), NUMTOK_JIT_CACHE=tmp_path / "cache")
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", _FIRST_ENCODE], env=env, capture_output=True, text=True, cwd="/")
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["ids"] == warm["ids"] == reference("r50k_base").encode("hello world, naïve café")
    assert cold["long"] == warm["long"] == reference("r50k_base").encode("hello world, naïve café " * 300)
    assert {"_split_gpt2", "encode_short_gpt2", "encode_text_gpt2", "encode_docs_range_gpt2"} <= set(cold["compiled"])
    others = {"_split_cl100k", "_split_o200k", "encode_short_cl100k", "encode_text_cl100k", "encode_docs_range_o200k"}
    assert not others & set(cold["compiled"])
    assert "numba.cpython.unicode" not in cold["modules"]
    assert warm["compiled"] == []


@pytest.mark.slow
def test_after_a_full_warmup_nothing_compiles_and_every_kernel_is_cached(tmp_path):
    env = _env(pythonpath=_copy_package(tmp_path), NUMTOK_JIT_CACHE=tmp_path / "cache")
    done = subprocess.run([sys.executable, "-m", "numtok.cli", "warmup"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    from numtok.precompile import JOBS

    assert _compiled_by(list(JOBS), env) == []
    # Every cached kernel of the package has an index entry: warmup reached it.
    listing = subprocess.run([sys.executable, "-c", _LIST_KERNELS], env=env, capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr
    missing = [name for name, has_entry in json.loads(listing.stdout) if not has_entry]
    assert missing == [], f"kernels no warmup job reaches: {missing}"


_LIST_KERNELS = """
import importlib, json, os, pkgutil
import numtok
from numtok._native.jit import KernelCache
found = []
for info in pkgutil.walk_packages(numtok.__path__, "numtok."):
    if info.name.endswith("__main__"):
        continue
    try:
        module = importlib.import_module(info.name)
    except ImportError:  # an optional extra (dask, pyarrow) that is not installed
        continue
    for value in vars(module).values():
        for kernel in value if isinstance(value, tuple) else (value,):  # one kernel per scanner
            cache = getattr(kernel, "_cache", None)
            if isinstance(cache, KernelCache) and kernel.py_func.__module__ == info.name:
                index = os.path.join(cache.cache_path, cache._cache_file._index_name)
                found.append((info.name + "." + kernel.py_func.__qualname__, os.path.exists(index)))
print(json.dumps(sorted(set(found))))
"""


def test_stamp_covers_kernel_files_and_what_they_import_only():
    files = {os.path.relpath(p, jit.PACKAGE_DIR) for p in jit.kernel_sources()}
    # kernel modules, and modules they import that hold no kernels (constants, Numba types)
    assert {"encode/_kernels.py", "pretokenizers/_scanners.py", "pretokenizers/_unicode.py", "_native/sink.py",
            "_native/hugepages.py", "train/_heap.py", "wordpiece/_kernels.py"} <= files
    # policy on top that kernels never import: editing it recompiles nothing
    assert not {"cli/__init__.py", "cli/commands.py", "precompile.py", "dask.py", "wordpiece/model.py", "encode/engine.py", "encode/piece_cache.py",
                "encode/tokenizer.py", "train/trainer.py", "train/word_counts.py"} & files
    assert int(jit.source_digest(), 16) and len(jit.source_digest()) == 64
