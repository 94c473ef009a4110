"""Batch texts read straight from the str objects (``numtok._native.pystr``): the kernels must agree
with ``len`` and ``str.encode`` on every kind of str, refuse everything else, and the batch
encoder must give the same ids whichever way a block was read."""

from __future__ import annotations

import ctypes
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import numtok
from numtok._native import pystr as _pystr
from numtok.encode import batch as batch_module

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text over all of Unicode, each widened to one of CPython's kinds (1, 2 or 4 bytes a character).
TEXTS = st.lists(
    st.builds(lambda t, w: t + w, st.text(max_size=60), st.sampled_from(["", "\xe9", "\u20ac", "\U0001f600"])),
    max_size=20,
)


class StrSubclass(str):
    pass


def test_layout_is_found_on_cpython():
    """Where the GIL-free reading should work it does (a silent fallback would hide a bug)."""
    if sys.implementation.name != "cpython":
        pytest.skip("CPython only")
    assert _pystr.layout() is not None



def test_layout_is_found_after_shared_strs_cached_their_utf8():
    """Other code may make CPython cache the UTF-8 of a shared str such as "\xe9" (getsizeof then
    counts it); the probe must not depend on that."""
    if sys.implementation.name != "cpython":
        pytest.skip("CPython only")
    import ctypes

    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8
    as_utf8.restype, as_utf8.argtypes = ctypes.c_char_p, [ctypes.py_object]
    for shared in ("\xe9", "", "a"):
        as_utf8(shared)
    _pystr.layout.cache_clear()
    assert _pystr.layout() is not None

@SETTINGS
@given(TEXTS, st.data())
@example(["a\ud800", "\udc00b", "é😀"], None)  # lone surrogates, also split across texts
def test_lengths_and_utf8_equal_python(texts, data):
    items = _pystr.as_items(texts)
    assert _pystr.lengths(items).tolist() == [len(t) for t in texts]
    first = data.draw(st.integers(0, len(texts))) if data else 0
    last = data.draw(st.integers(first, len(texts))) if data else len(texts)
    converted = _pystr.utf8_of_items(items, first, last, 8)
    part = texts[first:last]
    if any(0xD800 <= ord(c) <= 0xDFFF for t in part for c in t):
        assert converted is None  # the caller repairs surrogates
        return
    utf8, lens = converted
    assert utf8.tobytes() == "".join(part).encode("utf-8")
    assert lens.tolist() == [len(t.encode("utf-8")) for t in part]
    assert ctypes.string_at(utf8.ctypes.data + len(utf8), 8) == bytes(8)  # the padding


def keep_utf8(text: str) -> str:
    """``text`` after CPython was asked for its UTF-8, which it then keeps in the str (a lone
    surrogate has none)."""
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.restype, as_utf8.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.POINTER(ctypes.c_ssize_t)]
    try:
        as_utf8(text, None)
    except UnicodeEncodeError:
        pass
    return text


@SETTINGS
@given(TEXTS, st.data())
def test_kept_utf8_is_read_in_place_and_copied(texts, data):
    """The UTF-8 a str keeps (after ``PyUnicode_AsUTF8AndSize``) is what ``utf8_in_place``
    returns and what a batch's block copies; an ASCII str's characters are its UTF-8; a
    non-ASCII str that keeps none, a subclass and a non-str give None."""
    texts = [(t + "!")[:-1] for t in texts]  # fresh strs (but for one character): none keeps a UTF-8 yet
    kept = [data.draw(st.booleans()) for _ in texts]
    for t, k in zip(texts, kept):
        if k:
            keep_utf8(t)
        in_place = _pystr.utf8_in_place(t)
        if t and (t.isascii() or (k and not any(0xD800 <= ord(c) <= 0xDFFF for c in t))):
            assert in_place is not None and in_place.tobytes() == t.encode()
        elif len(t) > 1:  # (one Latin-1 character is a shared str, which may keep one)
            assert in_place is None
    if not any(0xD800 <= ord(c) <= 0xDFFF for t in texts for c in t):
        utf8, lens = _pystr.utf8_of_items(_pystr.as_items(texts), 0, len(texts), 8)
        assert utf8.tobytes() == "".join(texts).encode()
        assert lens.tolist() == [len(t.encode()) for t in texts]
    for odd in (StrSubclass("\u4e2d sub"), b"bytes", 5):
        assert _pystr.utf8_in_place(keep_utf8(odd) if isinstance(odd, str) else odd) is None


@pytest.mark.parametrize("odd", [5, None, b"bytes", StrSubclass("sub"), ["a"]])
def test_anything_but_an_exact_str_is_refused(odd):
    items = _pystr.as_items(["ok", odd, "ok"])
    assert _pystr.lengths(items) is None
    assert _pystr.utf8_of_items(items, 0, 3, 8) is None
    assert _pystr.utf8_of_items(items, 2, 3, 8) is not None  # the others are still read


def test_batch_ids_do_not_depend_on_how_blocks_were_read(monkeypatch):
    """Direct reading, its fallbacks (a surrogate or a subclass in a block, a special token
    that straddles two texts), and the join path all give the single-text ids."""
    enc = numtok.load("cl100k_base")
    texts = ["hello world", "caf\xe9 \u4e2d\u6587 \U0001f600", "", "x" * 300, "a\ud800b", "<|endo", "ftext|> ok"]
    texts = texts * 40 + [StrSubclass("a subclass, read by the slow path")]
    singles = [enc.encode(t).tolist() for t in texts]
    monkeypatch.setattr(batch_module, "BLOCK_CHARS", 500)  # many blocks, some without a fallback
    for threads in (1, 2):
        assert enc.encode_batch(texts, num_threads=threads).to_list() == singles
        assert enc.encode_batch(texts[:-1], num_threads=threads).to_list() == singles[:-1]
        assert enc.encode_batch(iter(texts[:-1]), num_threads=threads).to_list() == singles[:-1]
    monkeypatch.setattr(_pystr, "lengths", lambda items: None)  # as where layout() is None
    assert enc.encode_batch(tuple(texts), num_threads=2).to_list() == singles


def test_batch_special_tokens_found_in_directly_read_blocks(monkeypatch):
    enc = numtok.load("cl100k_base")
    monkeypatch.setattr(batch_module, "BLOCK_CHARS", 50)
    texts = ["plain text " * 3] * 20 + ["x <|endoftext|> y"] + ["more plain text"] * 20
    with pytest.raises(ValueError, match="<\\|endoftext\\|>"):
        enc.encode_batch(texts, num_threads=2)
    batch = enc.encode_batch(texts, num_threads=2, allowed_special="all")
    assert batch.to_list() == [enc.encode(t, allowed_special="all").tolist() for t in texts]
    assert 100257 in batch[20].tolist()


def test_refused_buffer_falls_back_to_the_join(monkeypatch):
    """The buffer is reserved for the worst case (4 bytes a character for a 4-byte str); where
    the OS refuses that much address space, the batch takes the join path (real size)."""
    enc = numtok.load("cl100k_base")
    texts = ["caf\xe9 \U0001f600 text"] * 50
    expected = [enc.encode_ordinary(t).tolist() for t in texts]
    monkeypatch.setattr(_pystr, "_utf8_bound", lambda *args: 1 << 62)
    assert _pystr.utf8_of_items(_pystr.as_items(texts), 0, 50, 8) is None
    for threads in (1, 2):
        assert enc.encode_ordinary_batch(texts, num_threads=threads).to_list() == expected


def test_item_range_is_checked():
    items = _pystr.as_items(["a", "b"])
    with pytest.raises(IndexError):
        _pystr.utf8_of_items(items, 1, 3, 8)


def test_batch_reads_a_private_copy():
    """The texts are copied into a tuple the kernels read; changing the caller's list
    afterwards (or meanwhile, from another thread) cannot reach them."""
    texts = ["some text"] * 10
    items = _pystr.as_items(texts)
    texts[:] = [None] * 10
    assert _pystr.utf8_of_items(items, 0, 10, 8)[0].tobytes() == b"some text" * 10
    assert isinstance(items, tuple)
