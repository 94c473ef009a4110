"""Precompiled kernels (numtok._native.precompiled, as a release wheel carries them), in fresh
processes: entries compiled for an x86-64 level are loaded, not compiled, on a CPU that has the
level's features; a CPU without them, another Numba version, other kernel sources, a damaged
manifest or entry all fall back to the JIT with one line on stderr and the same result.

One small kernel stands for all of them here; tests/test_release_wheel.py (slow) builds a whole
wheel and installs it in a fresh venv."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_jit_cache import _copy_package, _env

from numtok._native import levels
from numtok._native.precompiled import MANIFEST_NAME, write_precompiled

_PROBE = """
import json, numpy as np
from numtok._native import jit, utf8
from numba.core.registry import cpu_target
value = utf8.utf8_error_offset(np.frombuffer(b"ab\\xff", np.uint8))
stats = utf8._utf8_error_offset.stats
print(json.dumps({"value": value, "hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values()),
                  "level": jit.precompiled_selection().level, "digest": jit.source_digest(),
                  "magic": list(cpu_target.target_context.codegen().magic_tuple())}))
"""

LEVEL = "x86-64-v2"


def _run(env: dict) -> tuple[dict, str]:
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A package copy whose ``_precompiled`` holds the probe kernel compiled for x86-64-v2."""
    if not levels.required_features(levels.level_target(LEVEL)[1]) <= levels.usable_features():
        pytest.skip(f"this CPU cannot run {LEVEL} code")
    root = tmp_path_factory.mktemp("precompiled")
    site = _copy_package(root)
    cpu, features = levels.level_target(LEVEL)
    compiled, _ = _run(_env(pythonpath=site, NUMTOK_JIT_CACHE=root / "build", NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES=features))
    assert compiled["magic"][1:] == [cpu, features] and compiled["misses"] == 1
    folder = root / "build" / compiled["digest"][:16]
    write_precompiled(str(site / "numtok" / "_precompiled"), {LEVEL: (str(folder), compiled["magic"])}, compiled["digest"])
    return site


def _fresh(site: Path, tmp_path: Path, **extra) -> dict:
    env = _env(pythonpath=site, NUMTOK_JIT_CACHE=tmp_path / "runtime")
    env.pop("NUMBA_CPU_FEATURES", None)
    env.pop("NUMBA_CPU_NAME", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _copy(built: Path, tmp_path: Path) -> Path:
    import shutil

    site = tmp_path / "site"
    shutil.copytree(built, site)
    return site


def test_level_entries_load_without_compiling(built, tmp_path):
    result, err = _run(_fresh(built, tmp_path))
    assert result["value"] == 2
    assert result["level"] == LEVEL
    assert (result["hits"], result["misses"]) == (1, 0), err
    assert result["magic"][1] != LEVEL  # this process's own codegen is the host's: the entry was for the level
    assert err == ""
    assert not list((tmp_path / "runtime").rglob("*.nbc"))  # nothing compiled, nothing written


def test_cpu_without_the_level_falls_back_with_one_line(built, tmp_path):
    # The JIT compiles for NUMBA_CPU_FEATURES when set: precompiled code must not use more.
    result, err = _run(_fresh(built, tmp_path, NUMBA_CPU_FEATURES="+sse,+sse2,+cx16"))
    assert result["value"] == 2 and result["level"] is None
    assert (result["hits"], result["misses"]) == (0, 1)
    assert err.count("numtok:") == 1 and "lacks features of every precompiled level (x86-64-v2)" in err
    quiet, err = _run(_fresh(built, tmp_path, NUMBA_CPU_FEATURES="+sse,+sse2", NUMTOK_QUIET=1))
    assert err == "" and quiet["value"] == 2


def _manifest(site: Path) -> Path:
    return site / "numtok" / "_precompiled" / MANIFEST_NAME


@pytest.mark.parametrize("field, value, said", [
    ("numba", "0.1.0", "built for Numba 0.1.0"),
    ("python", "2.7", "built for Python 2.7"),
    ("source_digest", "0" * 64, "other kernel sources"),
    ("format", 99, "another format"),
])
def test_other_versions_fall_back(built, tmp_path, field, value, said):
    site = _copy(built, tmp_path)
    manifest = json.loads(_manifest(site).read_text())
    manifest[field] = value
    _manifest(site).write_text(json.dumps(manifest))
    result, err = _run(_fresh(site, tmp_path))
    assert result["value"] == 2 and result["level"] is None and result["misses"] == 1
    assert err.count("numtok:") == 1 and said in err, err


def test_changed_kernel_source_falls_back(built, tmp_path):
    site = _copy(built, tmp_path)
    with open(site / "numtok" / "_native" / "utf8.py", "a") as f:
        f.write("\n# changed\n")
    result, err = _run(_fresh(site, tmp_path))
    assert result["level"] is None and result["misses"] == 1 and "other kernel sources" in err


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete", "manifest"])
def test_damaged_files_fall_back_never_crash(built, tmp_path, damage):
    site = _copy(built, tmp_path)
    entries = sorted((site / "numtok" / "_precompiled" / LEVEL).rglob("*.nbc"))
    assert entries
    for path in entries:
        data = path.read_bytes()
        if damage == "truncate":
            path.write_bytes(data[: len(data) // 2])
        elif damage == "flip":  # same length, one byte of the machine code changed
            middle = len(data) // 2
            path.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:])
        elif damage == "delete":
            path.unlink()
    if damage == "manifest":
        _manifest(site).write_text('{"format": 1, "levels": {')
    result, err = _run(_fresh(site, tmp_path))
    assert result["value"] == 2 and result["misses"] == 1
    assert "Traceback" not in err
    assert err.count("numtok:") == 1
    assert ("cannot be read" if damage == "manifest" else "is damaged") in err


def test_best_level_is_chosen_by_features():
    targets = {name: levels.level_target(name) for name in levels.LEVELS}
    v3 = levels.required_features(targets["x86-64-v3"][1])
    assert levels.best_level(targets, v3) == "x86-64-v3"
    assert levels.best_level(targets, v3 | {"avx512f"}) == "x86-64-v3"  # v4 needs all five
    assert levels.best_level(targets, v3 - {"fma"}) == "x86-64-v2"
    assert levels.best_level(targets, frozenset({"sse", "sse2"})) is None
    targets["x86-64-v4+avx512vbmi2"] = levels.level_target("x86-64-v4+avx512vbmi2")
    v4 = levels.required_features(targets["x86-64-v4"][1])
    assert levels.best_level(targets, v4 | {"avx512vbmi2"}) == "x86-64-v4+avx512vbmi2"
    assert levels.best_level(targets, v4 | {"avx512vbmi"}) == "x86-64-v4"
    for bad in ("x86-64-v5", "x86-64-v4+", "x86-64-v4+avx 2"):
        with pytest.raises(ValueError, match="unknown CPU level"):
            levels.level_target(bad)
