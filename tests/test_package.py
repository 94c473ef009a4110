"""The package surface: lazy exports stay the documented objects, import stays cheap."""

import doctest
import importlib
import pkgutil
import subprocess
import sys

import numtok


def _every_module():
    for info in pkgutil.walk_packages(numtok.__path__, "numtok."):
        if not info.name.endswith("__main__"):
            yield importlib.import_module(info.name)


def test_exports_survive_importing_every_module():
    assert len(list(_every_module())) > 20
    assert callable(numtok.pretokenize) and numtok.pretokenize.__module__ == "numtok.pretokenizers"
    for name in numtok.__all__:
        assert getattr(numtok, name) is not None
    assert isinstance(numtok.Tokenizer, type)


def test_import_is_lazy():
    code = "import sys, numtok; print(*(m in sys.modules for m in ('numba', 'regex', 'dask', 'distributed', 'pyarrow')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False"] * 5


def test_word_counts_and_the_dask_module_import_without_dask():
    """``numtok.WordCounts`` needs no dask; ``import numtok.dask`` imports it only when used."""
    code = "import sys, numtok, numtok.dask; numtok.WordCounts; print('dask' in sys.modules, 'distributed' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_docstring_examples_of_every_module():
    """Every ``>>>`` example in the package runs and prints what its docstring says."""
    attempted = 0
    for module in _every_module():
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
        attempted += result.attempted
    assert attempted > 30
