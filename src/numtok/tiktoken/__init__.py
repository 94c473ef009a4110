"""A drop-in for ``tiktoken`` backed by numtok: ``import numtok.tiktoken as tiktoken``.

The same functions, ``Encoding`` methods, return types (lists of int) and exceptions as
tiktoken 0.14.0, whose own test files pass against this module (``tools/tiktoken_suite.py``,
see CONTRIBUTING.md). The bundled encodings load offline from numtok's data; custom encodings
are made with :class:`Encoding` or registered as in tiktoken (``registry.ENCODING_CONSTRUCTORS``
or a ``tiktoken_ext`` plugin module).

>>> import numtok.tiktoken as tiktoken
>>> enc = tiktoken.encoding_for_model("gpt-4o")
>>> enc.name, enc.encode("hello world")
('o200k_base', [24912, 2375])
>>> tiktoken.list_encoding_names()
['gpt2', 'r50k_base', 'p50k_base', 'p50k_edit', 'cl100k_base', 'o200k_base', 'o200k_harmony']
"""

from __future__ import annotations

from .core import Encoding
from .model import encoding_for_model, encoding_name_for_model
from .registry import get_encoding, list_encoding_names

__all__ = ["Encoding", "encoding_for_model", "encoding_name_for_model", "get_encoding", "list_encoding_names"]

# The tiktoken release whose API (and test suite) this module follows; code that checks
# ``tiktoken.__version__`` sees that, not numtok's version.
__version__ = "0.14.0"
