"""numtok's build backend: setuptools, plus compiled kernels in a release wheel.

``pip install .``, ``pip wheel .`` and ``python -m build`` go straight to setuptools: a pure
Python wheel whose kernels compile on first use. With ``NUMTOK_PRECOMPILE=<levels>`` set (a comma
list of ``x86-64-v2``, ``x86-64-v3``, ``x86-64-v4`` or ``host``), the wheel setuptools built is
unpacked, ``python -m numtok.precompile`` compiles every kernel for each level from exactly
those files, and the wheel is written again with them under ``numtok/_precompiled``: tagged for
this Python and platform (the code is CPython's and x86-64's) and requiring the very Numba and
llvmlite that compiled it (a cache entry of another Numba version is never loaded).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 - every hook this module does not change

_LEVELS_VARIABLE = "NUMTOK_PRECOMPILE"
# What compiling the kernels needs in pip's isolated build environment: the runtime dependencies,
# and pyarrow, whose arrays reach kernels of their own.
_COMPILE_REQUIRES = ["numpy>=1.24", "numba>=0.59,<0.69", "regex>=2023.0", "pyarrow>=18"]


def _levels() -> str:
    return os.environ.get(_LEVELS_VARIABLE, "").strip()


if _levels():
    # Metadata prepared apart from the wheel would not pin the Numba that compiled the kernels:
    # without this hook, pip reads the built wheel's.
    del prepare_metadata_for_build_wheel  # noqa: F821 - from setuptools.build_meta


def get_requires_for_build_wheel(config_settings=None):
    requires = _setuptools.get_requires_for_build_wheel(config_settings)
    return requires + _COMPILE_REQUIRES if _levels() else requires


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    if not _levels():
        return name
    path = os.path.join(wheel_directory, name)
    new_name = _add_precompiled(path, _levels())
    if new_name != name:
        os.unlink(path)
    return new_name


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _tag() -> str:
    python = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    return f"{python}-{python}-{re.sub(r'[-.]', '_', sysconfig.get_platform())}"


def _pin(metadata: str, manifest: dict) -> str:
    """METADATA requiring the Numba and llvmlite the kernels were compiled with."""
    lines = [line for line in metadata.split("\n") if not re.match(r"Requires-Dist: (numba|llvmlite)\b", line)]
    at = next(i for i, line in enumerate(lines) if line.startswith("Requires-Dist:"))
    pins = [f"Requires-Dist: numba=={manifest['numba']}", f"Requires-Dist: llvmlite=={manifest['llvmlite']}"]
    return "\n".join(lines[:at] + pins + lines[at:])


def _add_precompiled(path: str, levels: str) -> str:
    with zipfile.ZipFile(path) as wheel:
        members = {info.filename: wheel.read(info) for info in wheel.infolist()}
    dist_info = next(n.split("/")[0] for n in members if n.endswith(".dist-info/WHEEL"))
    with tempfile.TemporaryDirectory(prefix="numtok-wheel-") as tmp:
        unpacked = os.path.join(tmp, "site")
        for member, data in members.items():
            target = os.path.join(unpacked, member)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(data)
        out = os.path.join(tmp, "precompiled")
        env = dict(os.environ, PYTHONPATH=unpacked, PYTHONDONTWRITEBYTECODE="1")
        subprocess.run([sys.executable, "-m", "numtok.precompile", "--levels", levels, "--out", out],
                       env=env, cwd=tmp, check=True)
        with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        for root, _, names in os.walk(out):
            for name in names:
                full = os.path.join(root, name)
                with open(full, "rb") as f:
                    members["numtok/_precompiled/" + os.path.relpath(full, out).replace(os.sep, "/")] = f.read()
    members[f"{dist_info}/METADATA"] = _pin(members[f"{dist_info}/METADATA"].decode(), manifest).encode()
    wheel_text = members[f"{dist_info}/WHEEL"].decode()
    wheel_text = re.sub(r"Root-Is-Purelib: \w+", "Root-Is-Purelib: false", wheel_text)
    wheel_text = re.sub(r"(?m)^Tag: .*\n?", "", wheel_text).rstrip("\n") + f"\nTag: {_tag()}\n"
    members[f"{dist_info}/WHEEL"] = wheel_text.encode()
    record_name = f"{dist_info}/RECORD"
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    for member, data in members.items():
        if member != record_name:
            writer.writerow([member, _record_hash(data), len(data)])
    writer.writerow([record_name, "", ""])
    members[record_name] = rows.getvalue().encode()
    distribution, version = os.path.basename(path).split("-")[:2]
    new_name = f"{distribution}-{version}-{_tag()}.whl"
    new_path = os.path.join(os.path.dirname(path), new_name)
    partial = new_path + ".part"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as wheel:
        for member in sorted(members, key=lambda m: (m.startswith(dist_info), m)):  # dist-info last
            wheel.writestr(member, members[member])
    os.replace(partial, new_path)
    return new_name
