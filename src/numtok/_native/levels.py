"""The CPU levels a release wheel's kernels are compiled for, and which of them this CPU runs.

A level is a CPU name LLVM knows and the features its code may use. The x86-64 micro-
architecture levels (``x86-64-v2``, ``-v3``, ``-v4``) are the portable ones: code compiled for
one runs on every CPU that has its features. ``host`` is the building machine's own CPU, for
an image or a cluster whose machines are all alike.

A process may run code of a level only if every feature the level's code was compiled with is
one it may use (:func:`usable_features`); running code for a feature the CPU lacks is an
illegal instruction, a crash, so the choice is made on features, never on names.

>>> sorted(LEVELS)
['x86-64-v2', 'x86-64-v3', 'x86-64-v4']
>>> name, features = level_target("x86-64-v3")
>>> name, "+avx2" in features.split(","), "+avx512f" in features.split(",")
('x86-64-v3', True, False)
>>> best_level({"x86-64-v2": level_target("x86-64-v2"), "x86-64-v3": level_target("x86-64-v3")},
...            required_features(level_target("x86-64-v2")[1]))
'x86-64-v2'
"""

from __future__ import annotations

import os
import re

__all__ = ["LEVELS", "level_target", "required_features", "usable_features", "best_level"]

# Every x86-64 CPU has these; each level adds its own (the psABI's list, in LLVM's names).
_BASELINE = ("cmov", "cx8", "fxsr", "mmx", "sse", "sse2")
_V2 = ("cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3")
_V3 = _V2 + ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_V4 = _V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
LEVELS: dict[str, tuple[str, ...]] = {"x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4}


def level_target(level: str) -> tuple[str, str]:
    """``(cpu_name, features)`` to compile ``level`` with, as ``NUMBA_CPU_NAME`` and
    ``NUMBA_CPU_FEATURES`` take them; ``host`` is this machine's CPU. A level may add LLVM
    features after ``+``: ``x86-64-v4+avx512vbmi2`` is v4 with the byte compress the UTF-8
    conversion uses where a CPU has it (Ice Lake, Zen 4 and later).

    >>> level_target("x86-64-v4+avx512vbmi2")[1].endswith(",+avx512vl,+avx512vbmi2")
    True
    """
    if level == "host":
        from llvmlite import binding

        return binding.get_host_cpu_name(), _host_feature_string()
    name, *extra = level.split("+")
    if name not in LEVELS or not all(re.fullmatch(r"[a-z0-9_.\-]+", f) for f in extra):
        raise ValueError(f"unknown CPU level {level!r}; the levels are {', '.join(LEVELS)} (each may add LLVM "
                         "features, as x86-64-v4+avx512vbmi2) and 'host'")
    return name, ",".join(f"+{f}" for f in _BASELINE + LEVELS[name] + tuple(extra))


def required_features(features: str) -> frozenset[str]:
    """The features a ``"+a,-b,..."`` string lets code use."""
    return frozenset(f[1:] for f in features.split(",") if f.startswith("+"))


def _host_feature_string() -> str:
    from numba.core import codegen

    return codegen.get_host_cpu_features()  # LLVM's view, less AVX where NUMBA_ENABLE_AVX=0


def usable_features() -> frozenset[str]:
    """The features this process's kernels may use: those of ``NUMBA_CPU_FEATURES`` when it is
    set (the JIT compiles for exactly those, so precompiled code must not use more), else what
    LLVM finds on this CPU and its operating system enables."""
    explicit = os.environ.get("NUMBA_CPU_FEATURES")
    if explicit is not None:
        return required_features(explicit)
    if (os.environ.get("NUMBA_CPU_NAME") or "").lower() == "generic":
        return frozenset()
    try:
        return required_features(_host_feature_string())
    except Exception:  # noqa: BLE001 - no features known: no level is chosen
        return frozenset()


def best_level(targets: dict[str, tuple[str, str]], usable: frozenset[str]) -> str | None:
    """Of ``{level: (cpu_name, features)}``, the level using the most features this CPU has
    all of, or None."""
    fits = [(len(required_features(features)), level) for level, (_, features) in targets.items()
            if required_features(features) <= usable]
    return max(fits)[1] if fits else None
