"""Encodings by name, as ``tiktoken.registry``: the bundled ones (offline, from numtok's data)
and any other registered the way tiktoken registers them: a ``tiktoken_ext`` plugin module
with ``ENCODING_CONSTRUCTORS``, or an entry added to :data:`ENCODING_CONSTRUCTORS` (a function
returning ``Encoding``'s keyword arguments).

>>> from numtok.tiktoken import registry
>>> registry.get_encoding("r50k_base") is registry.get_encoding("r50k_base")
True
>>> registry.get_encoding("r60k")
Traceback (most recent call last):
  ...
ValueError: Unknown encoding r60k.
Known encodings: gpt2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base, o200k_harmony
...
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import threading
from typing import Any, Callable, Sequence

from .core import Encoding

__all__ = ["ENCODINGS", "ENCODING_CONSTRUCTORS", "get_encoding", "list_encoding_names"]

_lock = threading.RLock()
ENCODINGS: dict[str, Encoding] = {}
ENCODING_CONSTRUCTORS: dict[str, Callable[[], dict[str, Any]]] | None = None

# tiktoken's own plugin: its encodings are the bundled ones here, read offline.
_OPENAI_PLUGIN = "tiktoken_ext.openai_public"
_BUNDLED_NAMES = ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony")


def _bundled_arguments(name: str) -> dict[str, Any]:
    """``Encoding``'s keyword arguments for a bundled encoding, ranks read from numtok's data."""
    from ..encode import registry as numtok_registry
    from ..pretokenizers.patterns import NAMED_PATTERNS

    spec = numtok_registry._ENCODINGS[name]
    flat, off, ranks = numtok_registry._ranks(spec.ranks)
    raw = flat.tobytes()
    o = off.tolist()
    arguments: dict[str, Any] = {
        "name": name,
        "pat_str": NAMED_PATTERNS[spec.pattern],
        "mergeable_ranks": {raw[o[i] : o[i + 1]]: r for i, r in enumerate(ranks.tolist())},
        "special_tokens": dict(spec.special_tokens),
    }
    if spec.n_vocab is not None:
        arguments["explicit_n_vocab"] = spec.n_vocab
    return arguments


def _bundled_encoding(name: str) -> Encoding:
    """A bundled encoding over ``numtok.load(name)`` (its tables come from numtok's disk cache)."""
    from ..encode import registry as numtok_registry
    from ..pretokenizers.patterns import NAMED_PATTERNS

    spec = numtok_registry._ENCODINGS[name]
    return Encoding._from_tokenizer(name, NAMED_PATTERNS[spec.pattern], dict(spec.special_tokens), numtok_registry.load(name))


_BUNDLED: dict[str, Callable[[], dict[str, Any]]] = {name: functools.partial(_bundled_arguments, name) for name in _BUNDLED_NAMES}


@functools.lru_cache
def _available_plugin_modules() -> Sequence[str]:
    """``tiktoken_ext.*`` modules installed by other packages (tiktoken's own excepted)."""
    try:
        import tiktoken_ext
    except ImportError:
        return []
    names = (name for _, name, _ in pkgutil.iter_modules(tiktoken_ext.__path__, tiktoken_ext.__name__ + "."))
    return [name for name in names if name != _OPENAI_PLUGIN]


def _find_constructors() -> None:
    global ENCODING_CONSTRUCTORS
    with _lock:
        if ENCODING_CONSTRUCTORS is not None:
            return
        constructors = dict(_BUNDLED)
        for mod_name in _available_plugin_modules():
            mod = importlib.import_module(mod_name)
            try:
                found = mod.ENCODING_CONSTRUCTORS
            except AttributeError as e:
                raise ValueError(f"tiktoken plugin {mod_name} does not define ENCODING_CONSTRUCTORS") from e
            for enc_name, constructor in found.items():
                if enc_name in constructors:
                    raise ValueError(f"Duplicate encoding name {enc_name} in tiktoken plugin {mod_name}")
                constructors[enc_name] = constructor
        ENCODING_CONSTRUCTORS = constructors


def get_encoding(encoding_name: str) -> Encoding:
    """The encoding named ``encoding_name`` (made once, then the same object); ValueError,
    listing the known names, for an unknown one."""
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    enc = ENCODINGS.get(encoding_name)
    if enc is not None:
        return enc
    with _lock:
        if encoding_name in ENCODINGS:
            return ENCODINGS[encoding_name]
        _find_constructors()
        assert ENCODING_CONSTRUCTORS is not None
        constructor = ENCODING_CONSTRUCTORS.get(encoding_name)
        if constructor is None:
            from . import __version__

            raise ValueError(
                f"Unknown encoding {encoding_name}.\n"
                f"Known encodings: {', '.join(ENCODING_CONSTRUCTORS)}\n"
                f"Plugins found: {_available_plugin_modules()}\n"
                f"tiktoken version: {__version__} (numtok.tiktoken)"
            )
        if constructor is _BUNDLED.get(encoding_name):
            enc = _bundled_encoding(encoding_name)
        else:
            enc = Encoding(**constructor())
        enc._by_name = get_encoding
        ENCODINGS[encoding_name] = enc
        return enc


def list_encoding_names() -> list[str]:
    """The names :func:`get_encoding` accepts, bundled ones first."""
    with _lock:
        _find_constructors()
        assert ENCODING_CONSTRUCTORS is not None
        return list(ENCODING_CONSTRUCTORS)
