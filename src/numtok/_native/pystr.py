"""Reading Python str objects from kernels, without the GIL.

A batch of many short texts spent most of its single-threaded time in Python: ``len()`` of
every text, then ``"".join`` of each block, whose fresh pages the allocator handed back to the
system and faulted in again block after block (on the calling thread, which the workers then
waited for). Instead the batch is held in a tuple (its item pointers are
one contiguous array, and the garbage collector stops walking a tuple of strs the first time it
sees one, where it walks a whole list of texts at every collection), and kernels read
each str where CPython keeps it: its type, length, kind (1, 2 or 4 bytes a character) and code
units, and write the UTF-8 straight from there (or copy the UTF-8 a str keeps once a C API has
asked for it: ``utf8_in_place``).

That reads CPython's object layout, which is not a public API, so nothing is assumed: the
offsets are found once per process by probing strs whose contents are known (with ``ctypes``),
then the kernels themselves must reproduce ``len`` and ``str.encode`` on a set of probe texts.
If anything does not match (another interpreter, an unexpected layout), :func:`layout` is None
and callers keep the ``len`` / ``"".join`` path. A text that is not an exact, compact str (a
subclass, a non-str) is never read past its type pointer: the kernels report it and the caller
takes the slow path, which names the offending item.

The kernels only read, and only while the caller holds the tuple, so the items can neither
change nor be freed meanwhile.
"""

from __future__ import annotations

import functools
import sys

import numpy as np
from numba import njit

from .intrinsics import address_view
from .jit import INLINE, cached_njit
from .utf8 import padded_prefix, units_to_utf8_at, utf8_bound_of_kind, worst_case_buffer

# Fields of the layout array.
_TYPE = 0  # offset of an object's type pointer (ob_type)
_STR_TYPE = 1  # address of the str type
_LENGTH = 2  # offset of a str's length in characters
_STATE = 3  # offset of the 32-bit state word of a str
_KIND_SHIFT = 4  # where the 3-bit kind (1, 2, 4) sits in the state word
_ASCII_BIT = 5
_COMPACT_BIT = 6
_ASCII_DATA = 7  # offset of the characters of a compact ASCII str
_COMPACT_DATA = 8  # ... and of any other compact str
_TUPLE_ITEMS = 9  # offset of a tuple's first item pointer
_UTF8 = 10  # offset of the pointer to the UTF-8 copy a non-ASCII compact str may keep (-1: unknown)
_UTF8_LENGTH = 11  # ... and of that copy's length in bytes


@njit(**INLINE)
def _word(address):
    return address_view(address, 1, np.int64)[0]


@njit(**INLINE)
def _str_info(obj, layout):
    """(characters, kind, is_ascii) of the exact, compact str at ``obj``; characters = -1
    for any other object."""
    if _word(obj + layout[_TYPE]) != layout[_STR_TYPE]:
        return -1, 0, False
    state = np.int64(address_view(obj + layout[_STATE], 1, np.uint32)[0])
    if (state >> layout[_COMPACT_BIT]) & 1 == 0:
        return -1, 0, False
    return _word(obj + layout[_LENGTH]), (state >> layout[_KIND_SHIFT]) & 7, (state >> layout[_ASCII_BIT]) & 1 == 1


@njit(**INLINE)
def _units_address(obj, layout, is_ascii):
    """Where the code units of the exact compact str at ``obj`` start."""
    return obj + (layout[_ASCII_DATA] if is_ascii else layout[_COMPACT_DATA])


@cached_njit(nogil=True)
def _lengths(items_address, n, layout, chars):
    """Fill ``chars`` with the length of each of the ``n`` objects whose pointers are at
    ``items_address``; return the index of the first that is not an exact compact str (its
    length is not read), or -1."""
    items = address_view(items_address, n, np.int64)
    for i in range(n):
        m, _, _ = _str_info(items[i], layout)
        if m < 0:
            return i
        chars[i] = m
    return -1


@cached_njit(nogil=True)
def _utf8_bound(items_address, first, last, layout):
    """Most UTF-8 bytes objects first..last-1 of the pointers at ``items_address`` can need
    (each str's kind bounds its code points), or -1 if one is not an exact compact str."""
    items = address_view(items_address, last, np.int64)
    bound = 0
    for i in range(first, last):
        one = utf8_bound_at(items[i], layout)
        if one < 0:
            return -1
        bound += one
    return bound


@njit(**INLINE)
def utf8_bound_at(obj, layout):
    """Most UTF-8 bytes the object at ``obj`` can need if it is an exact, compact str (its
    kind bounds its code points), else -1."""
    m, kind, is_ascii = _str_info(obj, layout)
    return -1 if m < 0 else utf8_bound_of_kind(m, kind, is_ascii)


@njit(**INLINE)
def utf8_at(obj, layout, out, o, no_ends):
    """Write the UTF-8 of the exact, compact str at ``obj`` (see :func:`utf8_bound_at`) into
    ``out`` from ``o``; return where it ends, or -1 at a surrogate. ``no_ends``: an empty
    int64 array (no character ends wanted)."""
    m, kind, is_ascii = _str_info(obj, layout)
    if not is_ascii and layout[_UTF8] >= 0:
        kept = _word(obj + layout[_UTF8])
        if kept != 0:  # the UTF-8 the str keeps (see utf8_in_place): copied, not written
            size = _word(obj + layout[_UTF8_LENGTH])
            source = address_view(kept, size, np.uint8)
            for i in range(size):  # a slice assignment would need Numba's allocator (overlap)
                out[o + i] = source[i]
            return o + size
    return units_to_utf8_at(_units_address(obj, layout, is_ascii), m, kind, out, o, no_ends, no_ends)


@cached_njit(nogil=True)
def _to_utf8(items_address, first, last, layout, out, lens):
    """Write the UTF-8 of the exact compact strs first..last-1 of the pointers at
    ``items_address`` one after another into ``out`` (sized by ``_utf8_bound``) and the byte
    length of each into ``lens``; return where it ends, or -1 at a surrogate."""
    items = address_view(items_address, last, np.int64)
    no_ends = np.empty(0, np.int64)
    o = np.int64(0)  # not the literal: units_to_utf8_at, called while o is typed as one, would compile for it too
    for i in range(first, last):
        end = utf8_at(items[i], layout, out, o, no_ends)
        if end < 0:
            return -1
        lens[i - first] = end - o
        o = end
    return o


@cached_njit(nogil=True)
def _shape(obj, layout):
    """(characters, most UTF-8 bytes one of them can need) of the exact compact str at
    ``obj``; characters = -1 for any other object."""
    m, kind, is_ascii = _str_info(obj, layout)
    return m, utf8_bound_of_kind(1, kind, is_ascii)


@cached_njit(nogil=True)
def _slice_to_utf8(obj, layout, first, last, out, start):
    m, kind, is_ascii = _str_info(obj, layout)
    units = _units_address(obj, layout, is_ascii) + first * kind
    no_ends = np.empty(0, np.int64)
    return units_to_utf8_at(units, last - first, kind, out, start, no_ends, no_ends)


def str_shape(text: str) -> tuple[int, int] | None:
    """(len(text), most UTF-8 bytes one of its characters can need: 1 for ASCII, up to 4),
    or None if layout() is None or ``text`` is not an exact str.

    >>> [str_shape(t) for t in ("ab", "h\xe9", "\u4e2d", "\U0001f600")]
    [(2, 1), (2, 2), (1, 3), (1, 4)]
    """
    lay = layout()
    if lay is None or type(text) is not str:
        return None
    n, width = _shape(id(text), lay)
    return (int(n), int(width)) if n >= 0 else None


def slice_to_utf8(text: str, first: int, last: int, out: np.ndarray, start: int) -> int:
    """Write the UTF-8 of ``text[first:last]`` into ``out`` from ``start`` on, straight from
    the str (no slice, no bytes object), without the GIL; returns where it ends, or -1 at a
    surrogate. ``text`` must be one that :func:`str_shape` accepts; ``out`` (uint8) must hold
    ``(last - first) * width`` bytes from ``start``."""
    width = str_shape(text)[1]
    if not 0 <= first <= last <= len(text) or start < 0 or start + (last - first) * width > len(out):
        raise IndexError(f"characters {first}:{last} of {len(text)} at byte {start} of {len(out)}")
    if out.dtype != np.uint8 or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be a writable C-contiguous uint8 array")
    return int(_slice_to_utf8(id(text), layout(), first, last, out, start))


def utf8_in_place(text: str) -> np.ndarray | None:
    """The UTF-8 bytes ``text`` already holds, as a uint8 array over them (no copy), or None.

    An ASCII str's characters are its UTF-8; a non-ASCII str keeps a UTF-8 copy once a C API
    has asked for it (``PyUnicode_AsUTF8AndSize``: the Rust bindings of tiktoken and
    gigatoken do, on every call), until the str dies. The array is valid only while ``text``
    lives and must never be written; it has no padding after it (a kernel that reads past its
    data's end must stop short of it).

    >>> text = "".join(["ab", "c"])  # kept alive while its bytes are read
    >>> bytes(utf8_in_place(text)) if layout() is not None else b"abc"
    b'abc'
    """
    lay = layout()
    return None if lay is None else _utf8_in_place(text, lay)


def _utf8_in_place(text: str, lay: np.ndarray) -> np.ndarray | None:
    if type(text) is not str:
        return None
    import ctypes

    address = id(text)
    state = ctypes.c_uint32.from_address(address + int(lay[_STATE])).value
    if (state >> int(lay[_COMPACT_BIT])) & 1 == 0:
        return None
    if (state >> int(lay[_ASCII_BIT])) & 1:
        start, size = address + int(lay[_ASCII_DATA]), len(text)
    elif lay[_UTF8] >= 0:
        start = ctypes.c_size_t.from_address(address + int(lay[_UTF8])).value
        size = ctypes.c_ssize_t.from_address(address + int(lay[_UTF8_LENGTH])).value
        if start == 0:
            return None
    else:
        return None
    if size == 0:
        return None
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(start))


def as_items(texts) -> tuple:
    """The texts (any iterable) as a tuple: what the functions below read. (A NumPy object
    array would do too, but ``np.fromiter`` goes through the iterator protocol per text, where
    ``tuple`` of a list copies its references in C.)"""
    return tuple(texts)


def lengths(items: tuple) -> np.ndarray | None:
    """``len`` of every item of an :func:`as_items` tuple, or None if layout() is None or an
    item is not an exact str (the caller then finds out which, and why, the slow way)."""
    lay = layout()
    if lay is None:
        return None
    chars = np.empty(len(items), np.int64)
    if _lengths(id(items) + lay[_TUPLE_ITEMS], len(items), lay, chars) >= 0:
        return None
    return chars


def utf8_of_items(items: tuple, first: int, last: int, pad: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(UTF-8 of ``items[first:last]`` concatenated, as a uint8 array followed by ``pad`` zero
    bytes outside it, byte length of each text), written without the GIL; None if layout() is
    None, an item is not an exact str or holds a surrogate, or the buffer for the worst case
    cannot be had (the caller's ``str.encode`` path needs only the real size and repairs
    surrogates)."""
    if not 0 <= first <= last <= len(items):  # the kernels read pointers unchecked
        raise IndexError(f"items {first}:{last} of {len(items)}")
    lay = layout()
    return None if lay is None else _utf8_of_items(items, first, last, pad, lay)


def _utf8_of_items(items: tuple, first: int, last: int, pad: int, lay: np.ndarray):
    address = id(items) + lay[_TUPLE_ITEMS]
    bound = _utf8_bound(address, first, last, lay)
    if bound < 0:
        return None
    out = worst_case_buffer(bound, pad)
    if out is None:
        return None
    lens = np.empty(last - first, np.int64)
    end = _to_utf8(address, first, last, lay, out, lens)
    return None if end < 0 else (padded_prefix(out, end, pad), lens)


@functools.lru_cache(maxsize=1)
def layout() -> np.ndarray | None:
    """The offsets the kernels read, probed on this interpreter, or None if they cannot be
    trusted (then nothing here is used)."""
    if sys.implementation.name != "cpython" or sys.byteorder != "little":
        return None
    try:
        lay = _probe()
        return lay if lay is not None and _kernels_agree(lay) else None
    except Exception:  # pragma: no cover - any surprise means: do not use this
        return None


def _probe() -> np.ndarray | None:
    import ctypes

    def word(address: int) -> int:
        return ctypes.c_int64.from_address(address).value

    def u32(address: int) -> int:
        return ctypes.c_uint32.from_address(address).value

    # Built at run time (not literals) so that none is interned or shared with other code.
    samples = ["".join(["ascii text"] * 7), "".join(["caf\xe9"] * 9), "".join(["\u0100\u4e2d"] * 11), "".join(["\U0001f600x"] * 13)]
    kinds = (1, 1, 2, 4)
    ascii = (1, 0, 0, 0)
    codecs = ("latin-1", "latin-1", "utf-16-le", "utf-32-le")

    type_off = next((o for o in range(0, 64, 8) if all(word(id(s) + o) == id(str) for s in samples)), None)
    if type_off is None:
        return None
    len_off = next((o for o in range(type_off + 8, 96, 8) if all(word(id(s) + o) == len(s) for s in samples)), None)
    if len_off is None:
        return None
    # Header sizes from fresh strs: a shared one ("" or "\xe9") may carry a cached UTF-8 copy,
    # which getsizeof counts too.
    fresh_ascii, fresh_latin1 = "".join(["ab", "c"]), "".join(["ab", "\xe9"])
    ascii_data = sys.getsizeof(fresh_ascii) - len(fresh_ascii) - 1  # header + the terminating NUL
    compact_data = sys.getsizeof(fresh_latin1) - len(fresh_latin1) - 1
    for s, kind, codec in zip(samples, kinds, codecs):
        start = ascii_data if s.isascii() else compact_data
        if ctypes.string_at(id(s) + start, kind * len(s)) != s.encode(codec):
            return None

    # The state word: a 3-bit field equal to the kind, an ascii bit, and a compact bit that is
    # set for these and clear for a str subclass's instance (stored apart from its header).
    class _Sub(str):
        pass

    subs = [_Sub(samples[0]), _Sub(samples[2])]
    for state_off in range(len_off + 8, len_off + 32, 4):
        states = [u32(id(s) + state_off) for s in samples]
        sub_states = [u32(id(s) + state_off) for s in subs]
        shift = next((b for b in range(30) if all((st >> b) & 7 == k for st, k in zip(states, kinds))), None)
        if shift is None:
            continue
        ascii_bit = next((b for b in range(32) if all((st >> b) & 1 == a for st, a in zip(states, ascii))), None)
        compact_bit = next(
            (b for b in range(32) if all((st >> b) & 1 for st in states) and not any((st >> b) & 1 for st in sub_states) and not shift <= b < shift + 3),
            None,
        )
        if ascii_bit is None or compact_bit is None:
            return None
        break
    else:
        return None

    # In the order of the field numbers above.
    tup = tuple(samples)
    tuple_items = next((o for o in range(type_off + 16, 64, 8) if word(id(tup) + o) == id(samples[0]) and word(id(tup) + o + 8) == id(samples[1])), None)
    if tuple_items is None:
        return None
    utf8_off, utf8_len_off = _probe_utf8_copy(word, len_off + 8, compact_data)
    fields = (type_off, id(str), len_off, state_off, shift, ascii_bit, compact_bit, ascii_data, compact_data, tuple_items, utf8_off, utf8_len_off)
    return np.array(fields, np.int64)


def _as_utf8():
    """CPython's ``PyUnicode_AsUTF8AndSize`` (which makes a str keep its UTF-8), for probing."""
    import ctypes

    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.restype = ctypes.c_void_p
    as_utf8.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_ssize_t)]
    return as_utf8


def _probe_utf8_copy(word, first: int, stop: int) -> tuple[int, int]:
    """(offset of the UTF-8 copy's pointer, of its length) in a non-ASCII compact str, or
    (-1, -1): the word that is 0 in fresh strs and becomes the pointer
    ``PyUnicode_AsUTF8AndSize`` returns, and the one that becomes the size it reports."""
    import ctypes

    as_utf8 = _as_utf8()
    samples = ["".join(["caf\xe9"] * n) for n in (3, 5)] + ["".join(["\u0100\u4e2d"] * n) for n in (4, 7)] + ["".join(["\U0001f600x"] * 5)]
    offsets = range(first, stop, 8)
    before = [[word(id(s) + o) for o in offsets] for s in samples]
    found: set[tuple[int, int]] = set()
    for s, old in zip(samples, before):
        size = ctypes.c_ssize_t()
        pointer = as_utf8(s, ctypes.byref(size))
        if not pointer or ctypes.string_at(pointer, size.value) != s.encode():
            return -1, -1
        ptr_offs = [o for o, w in zip(offsets, old) if w == 0 and word(id(s) + o) == pointer]
        len_offs = [o for o, w in zip(offsets, old) if w == 0 and word(id(s) + o) == size.value]
        if len(ptr_offs) != 1 or len(len_offs) != 1:
            return -1, -1
        found.add((ptr_offs[0], len_offs[0]))
    return found.pop() if len(found) == 1 else (-1, -1)


def _kernels_agree(lay: np.ndarray) -> bool:
    """Whether the kernels reproduce len() and UTF-8 on texts of every kind and on objects
    they must refuse."""
    texts = ["", "a", "hello world " * 5, "\xe9t\xe9", "\u4e2d\u6587 " * 9, "\U0001f600 ok", "x" * 40 + "\u0101", str(12345)]
    texts += [t * 3 for t in texts]
    kept = "".join(["\u4e2d\xe9 ok "] * 5)  # with a kept UTF-8 copy, which is read instead
    if lay[_UTF8] >= 0:
        _as_utf8()(kept, None)
        in_place = _utf8_in_place(kept, lay)
        if in_place is None or in_place.tobytes() != kept.encode():
            return False
    texts.append(kept)
    items = as_items(texts)
    chars = np.empty(len(items), np.int64)
    if _lengths(id(items) + lay[_TUPLE_ITEMS], len(items), lay, chars) != -1 or chars.tolist() != [len(t) for t in texts]:
        return False
    converted = _utf8_of_items(items, 0, len(items), 8, lay)
    if converted is None or converted[0].tobytes() != "".join(texts).encode():
        return False
    if converted[1].tolist() != [len(t.encode()) for t in texts]:
        return False

    class _Sub(str):
        pass

    for refused in (["ok", 5], ["ok", b"bytes"], ["ok", _Sub("sub")]):
        items = as_items(refused)
        if _lengths(id(items) + lay[_TUPLE_ITEMS], len(items), lay, np.empty(len(items), np.int64)) != 1:
            return False
        if _utf8_of_items(items, 0, len(items), 8, lay) is not None:
            return False
    return _utf8_of_items(as_items(["a\ud800"]), 0, 1, 8, lay) is None
