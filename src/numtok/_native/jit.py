"""Where numtok's compiled kernels are kept, and the decorator that keeps them there.

Every ``@njit`` kernel of numtok is compiled on first use and its machine code saved, so
that later processes load it instead of compiling (Numba's ``cache=True``, with three
differences that matter to an installed package):

* **Freshness covers every file a kernel depends on.** An entry is used only if all files
  that define jitted code, and all files those import, are byte-identical to the ones it was
  compiled from (:func:`kernel_sources`). Numba's own stamp covers one file, but numtok's
  kernels call kernels of other files, and a caller that did not change would keep a
  changed callee's old code after an upgrade.
* **A read-only install still serves.** Entries are written next to the kernel modules
  (``__pycache__``) when that is writable, else to ``$NUMTOK_JIT_CACHE``, else to
  ``$NUMBA_CACHE_DIR/numtok``, else to the user cache directory (``~/.cache/numtok/jit``);
  whatever the write location, the ``__pycache__`` entries are read too, so an image
  warmed by root (``RUN numtok warmup``) serves an unprivileged user.
* **Damage is a miss.** An unreadable or corrupt entry is compiled again and rewritten; a
  location that cannot be written is reported once and the code kept for this process.

Numba's own checks still apply on top: its version, the Python version, the CPU (code for
one CPU is never loaded on another) and the argument types. A release wheel's kernels, compiled
for a CPU level rather than a CPU, are read after these entries when this CPU has every feature
of the level (:mod:`.precompiled`).

>>> import numpy as np
>>> @cached_njit(nogil=True)
... def _twice(a):
...     return a * 2
>>> int(_twice(np.int64(21)))
42
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
import tempfile
import threading
import time

from numba import njit
from numba.core import caching, config, entrypoints
from numba.core import event as _event
from numba.core.runtime import rtsys

from . import precompiled
from .interrupt import cache_numba_unpickle
from .notices import is_quiet, set_quiet

__all__ = ["INLINE", "cached_njit", "wraps_around", "cache_locations", "describe_location", "kernel_sources", "source_digest", "set_quiet",
           "is_quiet", "precompiled_selection", "describe_kernels"]


def _import_numba_math_without_blas() -> None:
    """Import ``numba.np.arraymath`` (which Numba imports at its first compile, never on a cache
    load) with SciPy's BLAS module refused: its import-time probe for BLAS would load SciPy's
    OpenBLAS, which under an address-space limit (``ulimit -v``) can retry a failed allocation
    for ever. No numtok kernel uses BLAS; Numba's linear algebra still imports SciPy when it
    compiles a function that needs it (only np.correlate/np.convolve's inner products then go
    without BLAS)."""
    blas = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" in sys.modules or blas in sys.modules:
        return
    sys.modules[blas] = None  # type: ignore[assignment]  # None makes the import raise ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if blas in sys.modules and sys.modules[blas] is None:
            del sys.modules[blas]


cache_numba_unpickle()

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _resolve(path: str, level: int, module: str | None) -> list[str]:
    """Files of the package a relative import of ``path`` may load."""
    base = os.path.dirname(path)
    for _ in range(level - 1):
        base = os.path.dirname(base)
    target = os.path.join(base, *module.split(".")) if module else base
    return [p for p in (target + ".py", os.path.join(target, "__init__.py")) if os.path.isfile(p)]


_JITTED = re.compile(r"^\s*(@\s*(cached_njit|njit|intrinsic)\b|\w+\s*=\s*(cached_njit|njit)\()", re.M)
_RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+\(?([\w \t,]*)", re.M)


@functools.cache
def kernel_sources() -> tuple[str, ...]:
    """The package files compiled code can depend on: every file defining jitted code or
    intrinsics, and every file those import (transitively), since a kernel freezes the
    module constants it reads."""
    texts = {}
    for root, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    texts[path] = f.read()
    todo = [path for path, text in texts.items() if _JITTED.search(text)]
    seen: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for dots, module, names in _RELATIVE_IMPORT.findall(texts[path]):
            todo += _resolve(path, len(dots), module or None)
            for name in names.replace(",", " ").split():  # "from .x import y": y may be a module
                todo += _resolve(path, len(dots), f"{module}.{name}" if module else name)
    return tuple(sorted(seen))


@functools.cache
def source_digest() -> str:
    """SHA-256 of :func:`kernel_sources` (paths and contents)."""
    h = hashlib.sha256()
    for path in kernel_sources():
        h.update(os.path.relpath(path, PACKAGE_DIR).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
        h.update(b"\0")
    return h.hexdigest()


def _writable(directory: str) -> bool:
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
        return True
    except OSError:
        return False


def _user_cache_root() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "numtok", "jit")


@functools.cache
def cache_locations() -> tuple[str, str | None]:
    """``(where entries are written, why)``: ``"in-tree"`` (the package's ``__pycache__``
    folders), or a root folder holding one subfolder per package version (digest)."""
    explicit = os.environ.get("NUMTOK_JIT_CACHE") or (
        os.path.join(os.environ["NUMBA_CACHE_DIR"], "numtok") if os.environ.get("NUMBA_CACHE_DIR") else None
    )
    if explicit:
        return explicit, "NUMTOK_JIT_CACHE" if os.environ.get("NUMTOK_JIT_CACHE") else "NUMBA_CACHE_DIR"
    if _writable(os.path.join(PACKAGE_DIR, "__pycache__")):
        return "in-tree", None
    return _user_cache_root(), "the package directory is not writable"


def _write_dir(subpackage: str) -> str:
    where, _ = cache_locations()
    if where == "in-tree":
        return os.path.join(PACKAGE_DIR, subpackage, "__pycache__")
    # One folder per source digest: two installs of different versions sharing the
    # location do not overwrite each other's index files.
    return os.path.join(where, source_digest()[:16], subpackage)


def describe_location() -> str:
    """Where compiled kernels are written, for messages."""
    where, why = cache_locations()
    if where == "in-tree":
        return f"{PACKAGE_DIR}/*/__pycache__"
    return f"{os.path.join(where, source_digest()[:16])} ({why})"


class _Locator(caching._CacheLocator):
    def __init__(self, py_func, py_file):
        self._lineno = py_func.__code__.co_firstlineno
        self.subpackage = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), PACKAGE_DIR)
        self._path = _write_dir(self.subpackage)

    def ensure_cache_path(self):
        os.makedirs(self._path, exist_ok=True)

    def get_cache_path(self):
        return self._path

    def get_source_stamp(self):
        return source_digest()

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file)


class _Impl(caching.CompileResultCacheImpl):
    _locator_classes = [_Locator]


_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        print(f"numtok: {message}", file=sys.stderr, flush=True)


def _cell_key(value):
    py_func = getattr(value, "py_func", None)  # a kernel
    return (py_func.__module__, py_func.__qualname__) if py_func is not None else value


def precompiled_selection() -> precompiled.Selection:
    """Which precompiled level this process's kernels come from (a release wheel), or why none."""
    return precompiled.selection(PACKAGE_DIR, source_digest())


def describe_kernels() -> str:
    """Where this process's kernels come from, for ``numtok --version`` and ``numtok info``."""
    import numba

    if jit_off():
        return f"plain Python (NUMBA_DISABLE_JIT=1; Numba {numba.__version__} compiles nothing)"
    chosen = precompiled_selection()
    if chosen.level is not None:
        return f"precompiled for {chosen.level} (Numba {numba.__version__}); any other compiled in {describe_location()}"
    return f"compiled on this machine by Numba {numba.__version__}, kept in {describe_location()} ({chosen.reason})"


class KernelCache(caching.Cache):
    """Numba's per-function cache with the locations, stamp and damage rules above, and the
    entries a release wheel carries for this CPU's level (:mod:`.precompiled`)."""

    _impl_class = _Impl  # type: ignore[assignment]  # numba types the base attribute as None

    def __init__(self, py_func):
        super().__init__(py_func)
        subpackage = self._impl.locator.subpackage
        in_tree = os.path.join(PACKAGE_DIR, subpackage, "__pycache__")
        self._read_also = []
        if os.path.abspath(in_tree) != os.path.abspath(self._cache_path):
            self._read_also.append(caching.IndexDataCacheFile(in_tree, self._impl.filename_base, source_digest()))
        chosen = precompiled_selection()
        self._precompiled = (precompiled.PrecompiledEntries(chosen, subpackage, self._impl.filename_base, source_digest())
                             if chosen.level is not None else None)

    def load_overload(self, sig, target_context):
        # Numba refreshes the whole target context before a load: hundreds of modules (its
        # lowering registries, scipy.linalg), time and memory that only compiling needs. Machine code
        # from the cache needs the runtime (NRT) symbols alone; a miss compiles, and the
        # compiler refreshes the context itself.
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            loaded = self._load_overload(sig, target_context)
        if loaded is None:
            _import_numba_math_without_blas()  # a compile follows, which refreshes the registries
        return loaded

    def _index_key(self, sig, codegen, magic=None):
        # Numba keys a closure by its cells pickled, and a kernel pickles with a uuid new in
        # every process: a kernel a factory makes (``encode._kernels._scanning_kernels``) that
        # calls another would never be found again. A kernel cell is keyed by its name; the
        # source digest already covers its code.
        cells = tuple(_cell_key(c.cell_contents) for c in self._py_func.__closure__ or ())
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (sig, magic or codegen.magic_tuple(), (code, hashlib.sha256(repr(cells).encode()).hexdigest()))

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        for cache_file in (self._cache_file, *self._read_also):
            try:
                data = cache_file.load(key)
                if data is not None:
                    return self._impl.rebuild(target_context, data)
            except Exception:  # noqa: BLE001 - a damaged or foreign entry is a miss
                continue
        if self._precompiled is not None:
            # Code for the level's CPU name and features, which this CPU has (precompiled.selection);
            # it is keyed by the codegen that built it, not by this host's.
            try:
                data = self._precompiled.load(self._index_key(sig, target_context.codegen(), self._precompiled.magic))
                if data is not None:
                    return self._impl.rebuild(target_context, data)
            except Exception:  # noqa: BLE001 - as above: the JIT compiles it
                return None
        return None

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        except OSError as exc:
            _warn_once(self._cache_path, f"cannot save compiled kernels in {self._cache_path} ({exc.strerror or exc}); "
                       "they are kept for this process only (set NUMTOK_JIT_CACHE to a writable directory)")
        except Exception:  # noqa: BLE001 - a damaged index: start it afresh
            index = os.path.join(self._cache_path, self._cache_file._index_name)
            try:
                os.unlink(index)
                super().save_overload(sig, data)
            except Exception as exc:  # noqa: BLE001
                _warn_once(self._cache_path, f"cannot save compiled kernels in {self._cache_path} ({exc})")


# Numba runs every installed ``numba_extensions`` entry point the first time anything is compiled
# or loaded: awkward's imports awkward and pyarrow, all of it before a first encode. numtok's
# kernels use no extension, so a thread compiling or loading one of them does not run those
# entry points; the first compile of any other code in the process runs them.
_loading = threading.local()


def _defer_numba_extensions() -> None:
    original = entrypoints.init_all
    if getattr(original, "numtok_defers", False):
        return

    def init_all():
        if not getattr(_loading, "depth", 0):
            original()

    init_all.numtok_defers = True  # type: ignore[attr-defined]
    entrypoints.init_all = init_all


def _without_extensions(compile_):
    @functools.wraps(compile_)
    def compile(sig):
        _loading.depth = getattr(_loading, "depth", 0) + 1
        try:
            return compile_(sig)
        except (MemoryError, SystemError) as exc:  # CPython's and LLVM's failed allocations
            limit = address_space_limit()
            if limit is None:
                raise
            name = getattr(getattr(compile_, "__self__", None), "__name__", "a kernel")
            raise MemoryError(f"out of memory while compiling numtok's {name} under an address-space limit of {limit >> 20:,} MiB "
                              "(ulimit -v): raise the limit, or run `numtok warmup` once without it (compiled kernels are kept)") from exc
        finally:
            _loading.depth -= 1

    return compile


def address_space_limit() -> int | None:
    """This process's address-space limit (RLIMIT_AS, ``ulimit -v``) in bytes, or None."""
    try:
        import resource
    except ImportError:  # pragma: no cover (Windows)
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else soft


_defer_numba_extensions()


# Options of a helper that only kernels call (``@njit(**INLINE)``). LLVM inlines it into each
# caller (``forceinline``), so it runs as if written there; Numba types and lowers it once per
# signature, where ``inline="always"`` inlines its IR and types it again at every call site
# (nested inline helpers were most of the encoder's compile time). No reference counting:
# a helper only reads and writes its callers' arrays (none allocates or returns one), and
# with it every call increfs and decrefs each array argument. No Python or C entry point: its
# wrappers would compile for nothing, and a call from Python crashes (tests call one through
# an ``njit`` lambda).
# Literal arguments (``0``, a module's int constant) compile a specialisation per value:
# pass ``np.int64(0)`` or a variable.
INLINE = {"forceinline": True, "_nrt": False, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def jit_off() -> bool:
    """Whether kernels run as plain Python (``NUMBA_DISABLE_JIT=1``)."""
    return bool(config.DISABLE_JIT)  # type: ignore[attr-defined]  # set when Numba's config is read


def wraps_around(fn):
    """Mark a kernel helper whose unsigned arithmetic overflows on purpose (a multiplicative
    hash): compiled, it is ``fn`` itself; with the JIT off it runs with NumPy's overflow
    warnings silenced, so that a warning elsewhere still means an unintended overflow."""
    if not jit_off():
        return fn
    import numpy as np

    @functools.wraps(fn)
    def wrapping(*args):
        with np.errstate(over="ignore"):
            return fn(*args)

    return wrapping


def cached_njit(*args, **options):
    """``numba.njit`` whose compiled code is kept by :class:`KernelCache`; used as
    ``@cached_njit``, ``@cached_njit(nogil=True, ...)`` or with one explicit signature,
    ``@cached_njit(sig, nogil=True)`` (compiled or loaded when the module is imported; calls
    with other argument types convert to it instead of compiling another specialisation)."""
    options.pop("cache", None)
    signature = args[0] if args and not callable(args[0]) else None

    def wrap(fn):
        if jit_off():  # plain Python, as numba.njit gives: a kernel can be stepped through and covered
            return fn
        dispatcher = njit(**options)(fn)
        dispatcher._compilation_chain_init_hook = lambda: None  # Numba's runs the entry points
        dispatcher.compile = _without_extensions(dispatcher.compile)
        try:
            dispatcher._cache = KernelCache(fn)  # what Dispatcher.enable_caching does, with our cache
        except Exception:  # noqa: BLE001 - a Numba whose cache internals differ: its own cache
            dispatcher.enable_caching()
        if signature is not None:  # what njit(sig) does, after the cache is in place
            dispatcher.compile(signature)
            dispatcher.disable_compile()
        return dispatcher

    if args and callable(args[0]):
        return wrap(args[0])
    return wrap


# ---------------------------------------------------------------------------------------------
# A word on stderr when a call compiles for longer than a moment, so that an interactive
# user knows why the first call waits. Never on stdout, never when quiet.

NOTICE_AFTER_SECONDS = 1.0
_noticed = False


def _interactive() -> bool:
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):
        return False
    return "ipykernel" in sys.modules


class _CompileNotice(_event.Listener):
    def __init__(self):
        self._local = threading.local()

    def on_start(self, event):
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0 and not _noticed and not is_quiet() and _is_numtok(event):
            self._local.timer = timer = threading.Timer(NOTICE_AFTER_SECONDS, _notice, (time.perf_counter(),))
            timer.daemon = True
            timer.start()

    def on_end(self, event):
        self._local.depth -= 1
        if self._local.depth == 0:
            timer = getattr(self._local, "timer", None)
            if timer is not None:
                timer.cancel()
                self._local.timer = None


def _is_numtok(event) -> bool:
    dispatcher = (event.data or {}).get("dispatcher")
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module == "numtok" or module.startswith("numtok.")


def _notice(started: float) -> None:
    global _noticed
    if _noticed or is_quiet() or not _interactive():
        return
    _noticed = True
    print(f"numtok: compiling kernels for this machine, once (up to a minute or two the first time; "
          f"saved in {describe_location()}). 'numtok warmup' compiles all of them ahead.", file=sys.stderr, flush=True)


_event.register("numba:compile", _CompileNotice())
