"""Arrow string arrays read in place: text slabs of one UTF-8 buffer plus document ranges.

An Arrow ``string`` / ``large_string`` array already is numtok's text layout: one data buffer of
UTF-8 and an offsets buffer (32- or 64-bit). :func:`text_slabs` views those buffers with NumPy
(no copy of the text, no Python object per document): a slab's ``bounds`` are the array's
offsets made relative to where its first text starts, so slices (a non-zero array offset) read
the same buffers. A ``string_view`` array (text spread over several buffers and inlined in the
views; Polars hands these over) and a dictionary of strings are first cast to ``large_string``
by Arrow, which copies the text once.

Readers that load 8 bytes at a time need ``readable_after`` bytes that may be read past the
end of each slab. Arrow only promises a buffer's ``size`` bytes (pyarrow's own are padded, but
nothing says so through the C data interface), so the documents that end within
``readable_after`` bytes of the data buffer's end (usually just the last one) go to a second,
small slab: a copy with zero padding. Everything before them is read in place.

pyarrow is optional (``pip install "numtok[arrow]"``): it is imported on the first Arrow input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

EXTRA_HINT = 'Arrow input needs pyarrow: pip install "numtok[arrow]"'
NULL_POLICIES = ("raise", "empty")


def require_pyarrow() -> Any:
    """The ``pyarrow`` module, or ImportError naming the extra that installs it."""
    try:
        import pyarrow
    except ImportError:
        raise ImportError(EXTRA_HINT) from None
    return pyarrow


def is_arrow(obj: Any) -> bool:
    """Whether ``obj`` speaks the Arrow PyCapsule protocol (pyarrow arrays, chunked arrays and
    tables, Polars Series, DuckDB results, nanoarrow), without importing pyarrow."""
    kind = type(obj)
    return hasattr(kind, "__arrow_c_array__") or hasattr(kind, "__arrow_c_stream__")


def is_parquet_path(path: Any) -> bool:
    return isinstance(path, (str, os.PathLike)) and os.fspath(path).lower().endswith((".parquet", ".parq"))


@dataclass
class TextSlab:
    """Texts ``first, first + 1, ...`` of an Arrow input: text ``i`` is the bytes
    ``data[bounds[i]:bounds[i + 1]]``, or empty where ``empty[i]`` (a null read as empty).

    ``data`` is uint8 and read-only, usually a view of Arrow memory that ``owner`` keeps alive;
    ``bounds`` is int64 (a view of the Arrow offsets when they already are int64 from 0). No
    (m, 2) array per text is made unless asked for (:meth:`docs`): for 640k texts that is 10 MB.
    """

    data: np.ndarray
    bounds: np.ndarray  # int64, one more than the texts
    empty: np.ndarray | None  # bool per text, or None
    first: int
    owner: Any

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def docs(self, a: int = 0, b: int | None = None) -> np.ndarray:
        """The [start, end) byte ranges of texts ``a:b`` in ``data``, int64 (m, 2)."""
        b = len(self) if b is None else b
        docs = np.empty((b - a, 2), dtype=np.int64)
        docs[:, 0] = self.bounds[a:b]
        docs[:, 1] = self.bounds[a + 1 : b + 1]
        if self.empty is not None:
            null = self.empty[a:b]
            docs[null, 1] = docs[null, 0]
        return docs


def string_arrays(obj: Any) -> list:
    """The pyarrow ``string`` / ``large_string`` arrays (chunks, in order) of an Arrow input.

    Accepts a pyarrow Array or ChunkedArray, a one-column Table or RecordBatch, or any object with
    ``__arrow_c_array__`` / ``__arrow_c_stream__``. Raises TypeError for a type that is not text.
    """
    pa = require_pyarrow()
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        obj = _only_column(obj.column_names, obj.columns)
    elif not isinstance(obj, (pa.Array, pa.ChunkedArray)):
        if hasattr(type(obj), "__arrow_c_stream__"):
            obj = pa.chunked_array(obj)
        elif hasattr(type(obj), "__arrow_c_array__"):
            obj = pa.array(obj)
        else:
            raise TypeError(f"expected an Arrow array of strings, not {type(obj).__name__}")
    chunks = list(obj.chunks) if isinstance(obj, pa.ChunkedArray) else [obj]
    return [_as_string(pa, chunk) for chunk in chunks]


def _only_column(names: list[str], columns: list) -> Any:
    if len(columns) != 1:
        raise ValueError(f"expected one column of text, got {len(columns)} (columns: {', '.join(names) or 'none'}); pass the column, e.g. table['text']")
    return columns[0]


def _as_string(pa, chunk):
    kind = chunk.type
    if pa.types.is_struct(kind):  # a stream of record batches (DuckDB): its one column
        names = [kind.field(i).name for i in range(kind.num_fields)]
        return _as_string(pa, _only_column(names, chunk.flatten()))
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return chunk
    if pa.types.is_string_view(kind) or (pa.types.is_dictionary(kind) and _is_text(pa, kind.value_type)):
        return chunk.cast(pa.large_string())  # one copy: the text is not in one buffer
    hint = " (binary data is not text: cast it to pa.string(), which checks the UTF-8)" if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) else ""
    raise TypeError(f"expected an Arrow array of strings (string, large_string or string_view), got {kind}{hint}")


def _is_text(pa, kind) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def check_nulls(nulls: str) -> str:
    if nulls not in NULL_POLICIES:
        raise ValueError(f"nulls must be 'raise' or 'empty', not {nulls!r}")
    return nulls


def text_slabs(arrays: list, *, nulls: str = "raise", readable_after: int = 0, first: int = 0, null_hint: str = "") -> Iterator[TextSlab]:
    """The texts of ``arrays`` (from :func:`string_arrays`) as TextSlabs, in order, the first
    numbered ``first``.

    ``nulls="raise"``: a null raises ValueError naming its index (over all chunks), followed by
    ``null_hint``; ``"empty"``: a null is an empty text.
    """
    for arr in arrays:
        n = len(arr)
        if n:
            data, bounds = _buffers(arr)
            empty = None
            if arr.null_count:
                empty = _null_mask(arr)
                if nulls == "raise":
                    raise ValueError(f"text {first + int(np.argmax(empty))} is null{null_hint}")
            yield from _padded_slabs(data, bounds, empty, first, arr, readable_after)
        first += n


def _buffers(arr) -> tuple[np.ndarray, np.ndarray]:
    """(the data buffer from the first text's start, int64 offsets relative to it) of a string
    or large_string array, offsets checked (a foreign producer's could be anything)."""
    pa = require_pyarrow()
    _, offsets_buffer, data_buffer = arr.buffers()[:3]
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    n = len(arr)
    offsets = np.frombuffer(offsets_buffer, dtype=width, count=arr.offset + n + 1)[arr.offset :] if offsets_buffer is not None else None
    size = data_buffer.size if data_buffer is not None else 0
    if offsets is None or len(offsets) != n + 1:
        raise ValueError(f"malformed Arrow string array: {n} strings but no room for their offsets")
    base = int(offsets[0])
    if base < 0 or int(offsets[-1]) > size or not _ascending(offsets):
        raise ValueError(f"malformed Arrow string array: offsets out of order or past the {size}-byte data buffer")
    data = np.frombuffer(data_buffer if size else b"", dtype=np.uint8)[base:]
    bounds = offsets if width is np.int64 and base == 0 else offsets.astype(np.int64) - base
    return data, bounds


def _ascending(offsets: np.ndarray, block: int = 1 << 20) -> bool:
    """Whether the offsets never decrease (checked a block at a time: no array as long as
    the offsets is made)."""
    for start in range(0, len(offsets) - 1, block):
        part = offsets[start : start + block + 1]
        if len(part) > 1 and bool((part[1:] < part[:-1]).any()):
            return False
    return True


def _null_mask(arr) -> np.ndarray:
    validity = arr.buffers()[0]
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + len(arr)] == 0


def _padded_slabs(data: np.ndarray, bounds: np.ndarray, empty, first: int, owner, readable_after: int) -> Iterator[TextSlab]:
    """The texts read in place, then (if any) those ending within ``readable_after`` bytes of
    the buffer's end, from a zero-padded copy."""
    n = len(bounds) - 1
    tail = int(np.searchsorted(bounds[1:], len(data) - readable_after, side="right")) if readable_after else n
    if tail:
        head_empty = empty[:tail] if empty is not None else None
        yield TextSlab(data[: int(bounds[tail])], bounds[: tail + 1], head_empty, first, owner)
    if tail < n:
        lo, hi = int(bounds[tail]), int(bounds[-1])
        copy = np.zeros(hi - lo + readable_after, dtype=np.uint8)
        copy[: hi - lo] = data[lo:hi]
        copy.flags.writeable = False  # the same array type as a view of Arrow memory
        yield TextSlab(copy[: hi - lo], bounds[tail:] - lo, empty[tail:] if empty is not None else None, first + tail, None)
