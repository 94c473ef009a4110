"""The package surface: lazy exports stay the documented objects, import stays cheap."""

import doctest
import importlib
import pkgutil
import subprocess
import sys
import types

import numtok


def _every_module():
    for info in pkgutil.walk_packages(numtok.__path__, "numtok."):
        if not info.name.endswith("__main__"):
            yield importlib.import_module(info.name)


def test_exports_survive_importing_every_module():
    assert len(list(_every_module())) > 20
    assert callable(numtok.pretokenize) and numtok.pretokenize.__module__ == "numtok.pretokenizers"
    for name in numtok.__all__:  # a module named like an export would replace it once imported
        assert getattr(numtok, name) is not None and not isinstance(getattr(numtok, name), types.ModuleType), name
    assert isinstance(numtok.Tokenizer, type)


def test_import_is_lazy():
    code = "import sys, numtok; print(*(m in sys.modules for m in ('numba', 'regex', 'dask', 'distributed', 'pyarrow', 'matplotlib')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False"] * 6


def test_evaluation_imports_matplotlib_only_to_plot():
    """numtok.evaluate, numtok.sweep and numtok eval without a plot never import matplotlib."""
    code = ("import sys, numtok\n"
            "numtok.evaluate('gpt2', ['hello world'])\n"
            "numtok.sweep(['hello world'] * 3, [258], ['hello'])\n"
            "from numtok import cli\n"
            "assert cli.main(['eval', '-q', '-t', 'gpt2', sys.argv[1], '--no-plot']) == 0\n"
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, __file__], capture_output=True, text=True, check=True).stdout.split()
    assert out[-1] == "False"


def test_word_counts_and_the_dask_module_import_without_dask():
    """``numtok.WordCounts`` needs no dask; ``import numtok.dask`` imports it only when used."""
    code = "import sys, numtok, numtok.dask; numtok.WordCounts; print('dask' in sys.modules, 'distributed' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_optional_extras_are_imported_only_when_used():
    """Encoding and training from strs never load numtok's Arrow modules; without pyarrow, an
    Arrow call names the extra to install and everything else works."""
    code = (
        "import sys, numtok\n"
        "enc = numtok.load('gpt2')\n"
        "assert enc.encode_batch(['hello world']).to_list() == [[31373, 995]]\n"
        "numtok.train_bpe(['hello world'] * 3, 300)\n"
        # (numba's extension hooks may load other packages' pyarrow glue, e.g. awkward's)
        "assert not {'numtok.encode.arrow', 'numtok.io.parquet', 'datasets'} & set(sys.modules)\n"
        "sys.modules['pyarrow'] = None  # as if it were not installed\n"
        "class Foreign:\n"
        "    def __arrow_c_stream__(self, requested_schema=None): ...\n"
        "for call in (lambda: enc.encode_batch(Foreign()), lambda: enc.encode_batch(['x']).to_arrow(),\n"
        "             lambda: numtok.train_bpe('corpus.parquet', 300)):\n"
        "    try:\n"
        "        call()\n"
        "    except ImportError as exc:\n"
        "        assert 'pip install \"numtok[arrow]\"' in str(exc), exc\n"
        "    else:\n"
        "        raise AssertionError('no ImportError')\n"
        "print('ok')\n"
    )
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "corpus.parquet"), "wb").close()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_docstring_examples_of_every_module():
    """Every ``>>>`` example in the package runs and prints what its docstring says."""
    attempted = 0
    for module in _every_module():
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
        attempted += result.attempted
    assert attempted > 30


# Stages from the bottom up: a module may import its own stage and the stages below it.
_STAGE_RANK = {
    "_native": 0, "progress": 0, "pretokenizers": 1, "io": 2, "encode": 3, "train": 4, "wordpiece": 5, "demo": 6, "evaluation": 6,
    "cli": 7, "dask": 7, "precompile": 7, "tiktoken": 7,
}  # fmt: skip


def _relative_imports(path):
    """(level, module, names) of every relative import in a file, those inside functions too;
    not those under ``if TYPE_CHECKING:`` (read by type checkers only, they run no code)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")
                   for n in ast.walk(block)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and id(node) not in typing_only:
            yield node.level, node.module or "", [a.name for a in node.names]


def test_stages_import_only_downwards_and_kernels_import_no_policy():
    from pathlib import Path

    root = Path(numtok.__file__).parent
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[0] in ("__init__", "__main__"):
            continue
        package = parts[:-1]
        for level, module, names in _relative_imports(path):
            base = list(package[: len(package) - (level - 1)]) if level > 1 else list(package)
            targets = [base + module.split(".")] if module else [base + [n] for n in names]
            for target in targets:
                if not target or target[0].startswith("__"):
                    continue  # "from . import __version__"
                stage, own = target[0], parts[0]
                assert _STAGE_RANK[stage] <= _STAGE_RANK[own], f"{path.relative_to(root)} imports {'.'.join(target)}"
                if path.name.startswith("_") and not path.name.startswith("__") and stage == own and len(target) > 1:
                    # a kernel module reads only other private modules of its stage
                    assert target[-1].startswith("_") or stage == "_native", f"{path.relative_to(root)} imports {'.'.join(target)}"


def test_no_private_name_is_imported_from_another_module():
    """A name with one leading underscore belongs to its module: another module that needs it
    gets a public name (import-linter checks circles and stages; this checks reach-ins). Private
    modules (``_kernels``, ``_heap``, ...) are not names: importing them is the stage rule's
    business."""
    from pathlib import Path

    root = Path(numtok.__file__).parent
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__") for p in root.rglob("*.py")}
    reach_ins = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
        for level, module, names in _relative_imports(path):
            base = list(package[: len(package) - (level - 1)])
            source = ".".join(base + ([module] if module else []))
            for name in names:
                private = name.startswith("_") and not name.startswith("__")
                if private and f"{source}.{name}" not in modules:
                    reach_ins.append(f"{path.relative_to(root)} imports {name} from {source}")
    assert reach_ins == []


def test_type_checkers_see_every_lazy_export():
    """The ``if TYPE_CHECKING:`` imports of numtok/__init__.py name exactly the lazy exports,
    each from the module ``__getattr__`` imports it from."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(numtok.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    seen = {a.name: node.module for node in block.body if isinstance(node, ast.ImportFrom) for a in node.names}
    assert seen == numtok._EXPORTS
