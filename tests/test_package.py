"""The package surface: lazy exports stay the documented objects, import stays cheap."""

import importlib
import pkgutil
import subprocess
import sys

import numtok


def test_exports_survive_importing_every_module():
    for info in pkgutil.iter_modules(numtok.__path__):
        if info.name != "__main__":
            importlib.import_module(f"numtok.{info.name}")
    assert callable(numtok.pretokenize) and numtok.pretokenize.__module__ == "numtok.pretokenizers"
    for name in numtok.__all__:
        assert getattr(numtok, name) is not None
    assert isinstance(numtok.Tokenizer, type)


def test_import_is_lazy():
    code = "import sys, numtok; print('numba' in sys.modules, 'regex' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
