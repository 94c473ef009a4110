"""Kernels a release wheel carries compiled: which level this process uses, and reading them.

A wheel built with ``NUMTOK_PRECOMPILE=<levels>`` holds ``numtok/_precompiled/``: per level, the
kernel cache entries ``numtok warmup`` wrote while Numba compiled for that level's CPU name and
features, and ``manifest.json``: the Numba, llvmlite and Python versions and the kernel source
digest they were built from, each level's codegen key (Numba's ``magic_tuple``) and the SHA-256
of every file. :func:`selection` checks all of it once per process and picks the best level
this CPU runs (:mod:`.levels`); :class:`PrecompiledEntries` serves one kernel's entries of that
level, each file checked against its digest before it is read. Anything that does not fit (other
versions, no level for this CPU, a damaged manifest or file) leaves the kernel to the JIT, with
one line on stderr that says why.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import sys
from dataclasses import dataclass, field

from .levels import best_level, usable_features
from .notices import notify

__all__ = ["MANIFEST_NAME", "Selection", "selection", "PrecompiledEntries", "write_precompiled"]

MANIFEST_NAME = "manifest.json"
FORMAT = 1


@dataclass(frozen=True)
class Selection:
    """What this process uses: ``level`` (None: the JIT) and why."""

    level: str | None
    reason: str
    root: str = ""
    magic: tuple = ()
    digests: dict = field(default_factory=dict)


def write_precompiled(out_dir: str, compiled: dict[str, tuple[str, list]], source_digest: str) -> dict:
    """Lay out kernel cache entries as a wheel's ``_precompiled`` folder and write its manifest.

    ``compiled`` maps a level to ``(folder, magic)``: the kernel cache folder its compile wrote
    (the one for ``source_digest``) and the codegen key Numba compiled it with.
    """
    import llvmlite
    import numba

    levels = {}
    for level, (source, magic) in compiled.items():
        files = {}
        for root, _, names in os.walk(source):
            for name in sorted(names):
                if name.endswith((".nbi", ".nbc")):
                    rel = os.path.relpath(os.path.join(root, name), source)
                    target = os.path.join(out_dir, level, rel)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(os.path.join(root, name), "rb") as f:
                        data = f.read()
                    with open(target, "wb") as f:
                        f.write(data)
                    files[rel.replace(os.sep, "/")] = hashlib.sha256(data).hexdigest()
        if not files:
            raise RuntimeError(f"no compiled kernels of {level} in {source}")
        levels[level] = {"magic": list(magic), "files": files}
    manifest = {
        "format": FORMAT,
        "numba": numba.__version__,
        "llvmlite": llvmlite.__version__,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "source_digest": source_digest,
        "levels": levels,
    }
    with open(os.path.join(out_dir, MANIFEST_NAME), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    return manifest


def _check(manifest: dict, source_digest: str) -> str | None:
    import llvmlite
    import numba

    if manifest.get("format") != FORMAT:
        return f"are of another format ({manifest.get('format')!r})"
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for what, built, here in (("Numba", manifest.get("numba"), numba.__version__),
                              ("llvmlite", manifest.get("llvmlite"), llvmlite.__version__),
                              ("Python", manifest.get("python"), python)):
        if built != here:
            return f"were built for {what} {built}, and this is {what} {here}"
    if manifest.get("source_digest") != source_digest:
        return "were built from other kernel sources than this installation's"
    return None


@functools.cache
def selection(package_dir: str, source_digest: str) -> Selection:
    """The precompiled level this process uses, checked once per process."""
    root = os.path.join(package_dir, "_precompiled")
    path = os.path.join(root, MANIFEST_NAME)
    if not os.path.exists(path):
        return Selection(None, "no precompiled kernels (a source install: the JIT compiles them)")
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
        targets = {level: (entry["magic"][1], entry["magic"][2]) for level, entry in manifest["levels"].items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        reason = f"the precompiled kernels' manifest {path} cannot be read ({exc})"
        notify(f"{reason}; compiling kernels for this machine instead")
        return Selection(None, reason)
    mismatch = _check(manifest, source_digest)
    if mismatch:
        reason = f"the precompiled kernels {mismatch}"
        notify(f"{reason}; compiling kernels for this machine instead")
        return Selection(None, reason)
    usable = usable_features()
    level = best_level(targets, usable)
    if level is None:
        reason = f"this CPU lacks features of every precompiled level ({', '.join(sorted(targets))})"
        notify(f"{reason}; compiling kernels for this machine instead")
        return Selection(None, reason)
    entry = manifest["levels"][level]
    return Selection(level, f"precompiled for {level} (Numba {manifest['numba']})", os.path.join(root, level),
                     tuple(entry["magic"]), dict(entry["files"]))


class PrecompiledEntries:
    """One kernel's entries of the selected level: Numba's index file (``.nbi``) and data files
    (``.nbc``) as its cache writes them, each checked against the manifest's SHA-256."""

    def __init__(self, chosen: Selection, subpackage: str, filename_base: str, source_stamp: str):
        self._chosen = chosen
        self._dir = "" if subpackage == "." else subpackage
        self._base = filename_base
        self._stamp = source_stamp
        self._index: dict | None = None

    @property
    def magic(self) -> tuple:
        return self._chosen.magic

    def _read(self, name: str) -> bytes | None:
        rel = os.path.join(self._dir, name) if self._dir else name
        expected = self._chosen.digests.get(rel.replace(os.sep, "/"))
        if expected is None:
            return None
        path = os.path.join(self._chosen.root, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        if hashlib.sha256(data).hexdigest() != expected:
            notify(f"precompiled kernel file {path} is damaged; compiling its kernels for this machine instead")
            return None
        return data

    def _overloads(self) -> dict:
        if self._index is None:
            import numba

            self._index = {}
            data = self._read(f"{self._base}.nbi")
            if data is not None:
                stream = memoryview(data)
                version, rest = _unpickle_prefix(stream)
                if version == numba.__version__:
                    stamp, overloads = pickle.loads(rest)
                    if stamp == self._stamp:
                        self._index = overloads
        return self._index

    def load(self, key):
        """The cache entry (Numba's pickled compile result) for ``key``, or None."""
        name = self._overloads().get(key)
        if name is None:
            return None
        data = self._read(name)
        return None if data is None else pickle.loads(data)


def _unpickle_prefix(data: memoryview):
    """The first pickle of ``data`` and the bytes after it (Numba's index: version, then the rest)."""
    import io

    stream = io.BytesIO(data)
    first = pickle.load(stream)
    return first, data[stream.tell():]
