"""Batches: many texts encoded into one flat id array with offsets (``BatchEncoding``).

Texts are read where CPython keeps them (``_native.pystr``) and written to UTF-8 without the
GIL; anything that cannot be read so (another interpreter, a str subclass, a non-str, a lone
surrogate) takes a ``"".join`` per block, which repairs surrogates and names a bad item.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import AbstractSet, Literal

import numpy as np

from .._native import pystr as _pystr
from .._native.memory import out_of_memory
from .._native.threads import check_num_threads
from ..io.arrow import check_nulls, is_arrow
from .buffers import PAD, utf8_of_texts
from .engine import encode_docs, output_size
from .special import special_documents, special_sets

SpecialSet = AbstractSet[str] | Literal["all"]

# Texts are converted and encoded in blocks of this many characters (their UTF-8 stays
# cache-sized; several threads take blocks).
BLOCK_CHARS = 1 << 20
# Address space an encode takes per character, roughly (UTF-8, piece spans, an id bound per
# byte): what a MemoryError reports as needed.
BYTES_PER_CHAR = 8


class BatchEncoding:
    """The ids of a batch of texts: one flat int32 array plus int64 offsets.

    ``ids[offsets[i]:offsets[i+1]]`` are the ids of text ``i``.

    >>> import numtok
    >>> enc = numtok.load("cl100k_base")
    >>> batch = enc.encode_batch(["hello world", "", "hi"])
    >>> len(batch), batch.ids.tolist(), batch.offsets.tolist()
    (3, [15339, 1917, 6151], [0, 2, 2, 3])
    >>> batch[2].tolist()
    [6151]
    >>> batch.to_list()
    [[15339, 1917], [], [6151]]
    >>> batch.pad(0).tolist()
    [[15339, 1917], [0, 0], [6151, 0]]
    """

    __slots__ = ("ids", "offsets", "char_offsets")

    def __init__(self, ids: np.ndarray, offsets: np.ndarray, char_offsets: np.ndarray | None = None):
        self.ids = np.asarray(ids, dtype=np.int32)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        # (len(ids), 2) character offsets of each token in its own text, when asked for
        self.char_offsets = char_offsets
        if self.offsets.ndim != 1 or len(self.offsets) < 1 or self.offsets[0] != 0 or self.offsets[-1] != len(self.ids):
            raise ValueError("offsets must start at 0 and end at len(ids)")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        """The ids of text ``i`` (a view into ``ids``)."""
        n = len(self)
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"text index out of range for a batch of {n}")
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"BatchEncoding(texts={len(self)}, tokens={len(self.ids)})"

    @property
    def lengths(self) -> np.ndarray:
        """Number of ids of each text (int64)."""
        return np.diff(self.offsets)

    def to_list(self) -> list[list[int]]:
        """The ids as a list of lists of Python ints."""
        flat = self.ids.tolist()
        bounds = self.offsets.tolist()
        return [flat[bounds[i] : bounds[i + 1]] for i in range(len(self))]

    def to_arrow(self):
        """The ids as a ``pyarrow.LargeListArray`` of int32 whose buffers *are* ``offsets`` and
        ``ids`` (no copy; needs ``pip install "numtok[arrow]"``).

        >>> batch = BatchEncoding([1, 2, 3], [0, 2, 3])
        >>> arr = batch.to_arrow()
        >>> arr.to_pylist(), arr.values.buffers()[1].address == batch.ids.ctypes.data
        ([[1, 2], [3]], True)
        """
        from .arrow import batch_to_arrow

        return batch_to_arrow(self)

    def pad(self, pad_id: int, length: int | None = None, *, truncate: bool = False) -> np.ndarray:
        """A 2-D int32 array (texts x length), each row right-padded with ``pad_id``.

        ``length`` defaults to the longest text. A text longer than ``length`` raises
        ValueError unless ``truncate=True`` (then it is cut to ``length``).

        >>> BatchEncoding([1, 2, 3], [0, 2, 3]).pad(-1, length=3).tolist()
        [[1, 2, -1], [3, -1, -1]]
        """
        lengths = self.lengths
        longest = int(lengths.max()) if len(lengths) else 0
        if length is None:
            length = longest
        length = int(length)
        if length < 0:
            raise ValueError(f"length must be >= 0, got {length}")
        if longest > length and not truncate:
            row = int(np.argmax(lengths > length))
            raise ValueError(f"text {row} has {int(lengths[row])} ids, more than length={length} (pass truncate=True to cut)")
        out = np.full((len(self), length), pad_id, dtype=np.int32)
        kept = np.minimum(lengths, length)
        rows = np.repeat(np.arange(len(self)), kept)
        starts = np.repeat(self.offsets[:-1], kept)
        cols = np.arange(len(rows)) - np.repeat(np.cumsum(kept) - kept, kept)
        out[rows, cols] = self.ids[starts + cols]
        return out


def encode_batch(
    tok,
    texts: Iterable[str],
    *,
    num_threads: int | None = None,
    allowed_special: SpecialSet = frozenset(),
    disallowed_special: SpecialSet = "all",
    nulls: str = "raise",
) -> BatchEncoding:
    """:meth:`numtok.Tokenizer.encode_batch` of ``tok``: the texts are converted and encoded in
    blocks of ``BLOCK_CHARS`` characters, one block per task on ``num_threads`` threads."""
    ids, offsets = _ids_and_offsets("encode_batch", tok, texts, num_threads, allowed_special, disallowed_special, nulls, count=False)
    return BatchEncoding(ids, offsets)


def count_batch(tok, texts: Iterable[str], *, num_threads: int | None = None, nulls: str = "raise") -> np.ndarray:
    """:meth:`numtok.Tokenizer.count_tokens_batch` of ``tok``: :func:`encode_batch`'s work
    (special tokens as ordinary text) with no id written nor kept: the kernels only count, and
    the per-text counts are the differences of the ends they record."""
    _, offsets = _ids_and_offsets("count_tokens_batch", tok, texts, num_threads, frozenset(), frozenset(), nulls, count=True)
    return np.diff(offsets)


def _ids_and_offsets(caller: str, tok, texts, num_threads, allowed_special, disallowed_special, nulls: str, *, count: bool):
    """(ids or None when ``count``, offsets of each text's ids) of a batch."""
    if isinstance(texts, str):
        raise TypeError(f"{caller} takes an iterable of str, not a str")
    threads = check_num_threads(num_threads)
    check_nulls(nulls)
    allowed, disallowed = special_sets(tok, allowed_special, disallowed_special)
    if is_arrow(texts):  # Arrow strings: read in place (encode/arrow.py)
        from .arrow import arrow_ids_and_offsets

        return arrow_ids_and_offsets(tok, texts, threads=threads, allowed=allowed, disallowed=disallowed, nulls=nulls, count=count)
    texts = _pystr.as_items(texts)  # a tuple: kernels read its items while it is held
    try:
        return _encode_items(tok, texts, threads, allowed, disallowed, count)
    except MemoryError as exc:
        chars = sum(len(t) for t in texts if isinstance(t, str))
        raise out_of_memory(exc, f"encoding a batch of {len(texts):,} texts ({chars:,} characters)", BYTES_PER_CHAR * chars) from exc


def _encode_items(tok, texts: tuple, threads: int, allowed: frozenset, disallowed: frozenset, count: bool):
    # Lengths and UTF-8 straight from the str objects, without the GIL, where _pystr can
    # (exact str items, CPython); otherwise len() and "".join per block, which fail on
    # anything that is not a str (then the offending text is found).
    chars = _pystr.lengths(texts)
    direct = chars is not None
    if chars is None:
        try:
            chars = np.fromiter(map(len, texts), np.int64, len(texts))
        except TypeError:
            raise not_str_error(texts) from None
    args = (tok, texts, chars, allowed, disallowed, count)
    encode_block = encode_items if direct else join_and_encode
    # Blocks of about a million characters: their UTF-8 stays cache-sized.
    blocks = text_blocks(chars, BLOCK_CHARS)
    if len(blocks) == 1:
        ids, ends = encode_block(*args, 0, len(texts), threads)
    else:
        if threads == 1:
            results = [encode_block(*args, a, b, 1) for a, b in blocks]
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                results = list(pool.map(lambda ab: encode_block(*args, ab[0], ab[1], 1), blocks))
        sizes = np.array([output_size(*r) for r in results], dtype=np.int64)
        bases = np.cumsum(sizes) - sizes
        ids = None if count else np.concatenate([r[0] for r in results])
        ends = np.concatenate([r[1] + base for r, base in zip(results, bases.tolist())])
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    offsets[1:] = ends
    return ids, offsets


def encode_items(tok, texts, chars, allowed: frozenset, disallowed: frozenset, count: bool, a: int, b: int, threads: int):
    """(ids, end offset of each text) of ``texts[a:b]``, their UTF-8 written straight from
    the str objects without the GIL (see ``_pystr``); what that cannot read (a surrogate,
    a str subclass, a non-str) takes :func:`join_and_encode`."""
    converted = _pystr.utf8_of_items(texts, a, b, PAD)
    if converted is None:
        return join_and_encode(tok, texts, chars, allowed, disallowed, count, a, b, threads)
    return encode_texts(tok, *converted, allowed, disallowed, threads, count)


def join_and_encode(tok, texts, chars, allowed: frozenset, disallowed: frozenset, count: bool, a: int, b: int, threads: int):
    """:func:`encode_items` by way of the texts' join (needs the GIL): it names a text
    that is not a str, and lone surrogates are repaired text by text."""
    texts = list(texts[a:b])
    try:
        joined = "".join(texts)
    except TypeError:
        raise not_str_error(texts, a) from None
    return encode_texts(tok, *utf8_of_texts(joined, texts, chars[a:b]), allowed, disallowed, threads, count)


def encode_texts(tok, data: np.ndarray, lens: np.ndarray, allowed: frozenset, disallowed: frozenset, threads: int, count: bool = False):
    """(ids, end offset of each text) of texts of ``lens`` bytes, one after another in
    ``data`` (padded): ValueError if one holds a ``disallowed`` special token, ``allowed``
    ones encoded as their ids. ``count``: ids is None (only the ends are worked out)."""
    starts = np.cumsum(lens) - lens
    texts = np.ascontiguousarray(np.stack([starts, starts + lens], axis=1))
    docs, doc_special, last = special_documents(tok, data, texts, allowed, disallowed)
    ids, doc_end = encode_docs(tok, data, docs, doc_special, threads, count)
    return ids, doc_end if last is None else doc_end[last]


def not_str_error(texts: Sequence, first: int = 0) -> TypeError:
    """The TypeError naming the first item of ``texts`` (item ``first`` of the batch on) that
    is not a str (there is one)."""
    i = next(i for i, t in enumerate(texts) if not isinstance(t, str))
    return TypeError(f"texts[{first + i}] must be a str, not {type(texts[i]).__name__}")



def text_blocks(lengths: np.ndarray, chars: int) -> list[tuple[int, int]]:
    """Consecutive runs of texts (of these lengths) of about ``chars`` characters each (at
    least one text)."""
    n = len(lengths)
    if n == 0:
        return [(0, 0)]
    ends = np.cumsum(lengths)
    total = int(ends[-1])
    if total <= 2 * chars:
        return [(0, n)]
    cuts = np.searchsorted(ends, np.arange(chars, total, chars), side="left") + 1
    bounds = np.unique(np.concatenate([[0], cuts[cuts < n], [n]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))

