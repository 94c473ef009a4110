"""Cutting long pieces into parts merged on their own (encode/_segments.py), against a scan of
the vocabulary and against tiktoken.

A cut between two characters is safe when no token could span it; the kernel answers from a
Bloom filter of patterns, so it may keep a safe cut whole, but must never cut where a token
could span. The reference below asks the vocabulary directly: is there a token and a split of
it whose left part fits the text that ends with ``c`` and whose right part fits the text that
starts with ``d``?
"""

from __future__ import annotations

import collections
import functools
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_encode import SETTINGS, ids, reference

import numtok
from numtok.encode import _segments
from numtok.encode.buffers import padded

ENCODINGS = ["cl100k_base", "o200k_base"]


@functools.cache
def _splits_by_pair(name: str) -> dict[bytes, list[tuple[bytes, bytes]]]:
    """Every split (left, right) of every token, by the two bytes around the split."""
    out: dict[bytes, list[tuple[bytes, bytes]]] = collections.defaultdict(list)
    for token in reference(name)._mergeable_ranks:
        for k in range(1, len(token)):
            out[token[k - 1 : k + 1]].append((token[:k], token[k:]))
    return out


def spannable_reference(name: str, c: str, d: str) -> bool:
    """Whether some token could span the boundary between characters c and d in some text: a
    split of it whose left part fits text ending with c and whose right part text starting with d."""
    cb, db = c.encode(), d.encode()
    for left, right in _splits_by_pair(name).get(cb[-1:] + db[:1], []):
        left_fits = left.endswith(cb) or cb.endswith(left)
        right_fits = right.startswith(db) or db.startswith(right)
        if left_fits and right_fits:
            return True
    return False


@functools.cache
def _crossable():
    from numba import njit

    return njit(lambda *args: _segments.crossable(*args))  # helpers are called from kernels only


def crossable_kernel(tok, c: str, d: str) -> bool:
    core = tok._core
    data = padded(np.frombuffer((c + d).encode(), np.uint8))
    wa, wb = len(c.encode()), len(d.encode())
    sbits = int(np.log2(len(core.seg_filter)))
    return bool(_crossable()(data, 0, wa, ord(c), wa, wb, ord(d), core.seg_filter, sbits, core.char_flags))


def _chars(rng: random.Random) -> list[str]:
    han = [chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(60)] + list("的是不了人我在有他这中大来上国个到说们为")
    hangul = [chr(rng.randrange(0xAC00, 0xD7A3)) for _ in range(30)] + list("의가이은는을를에하고다")
    other = list("abc xyz.,!?、。「」ひらがなカタカナабвгдекнопрстकखगमनसéüß€") + [chr(rng.randrange(0x80, 0x800)) for _ in range(20)]
    return han + hangul + other


@pytest.mark.parametrize("name", ENCODINGS)
def test_cuts_only_where_no_token_spans(name):
    tok = numtok.load(name)
    rng = random.Random(5)
    flagged = np.flatnonzero(tok._core.char_flags)  # ending with a fragment some token starts with, or the reverse
    chars = _chars(rng) + [chr(int(cp)) for cp in rng.sample(list(flagged), 60)]
    in_tokens = []  # adjacent characters inside tokens: a cut there must never be made
    for token in reference(name)._mergeable_ranks:
        text = token.decode("utf-8", errors="ignore")
        if len(text) >= 2 and max(text) >= "\x80":
            in_tokens += zip(text, text[1:])
    pairs = [(rng.choice(chars), rng.choice(chars)) for _ in range(3000)] + rng.sample(in_tokens, 1000)
    cut = spanned = 0
    for c, d in pairs:
        spans = spannable_reference(name, c, d)
        crossable = crossable_kernel(tok, c, d)
        assert crossable or not spans, (c, d)
        cut += not crossable
        spanned += spans
    assert spanned > 1000 and cut > 1000  # both answers are common: the test says something


HAN = st.sampled_from(list("的是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可"))
HANGUL = st.integers(0xAC00, 0xD7A3).map(chr)
FRAGMENTED = st.integers(0x4E00, 0x4FFF).map(chr)  # lead byte E4: some tokens end with it after a space
SEPARATORS = st.sampled_from([" ", "，", "。", "\n", "a", "1", "é", "ж", "ー", "の"])
TEXT = st.lists(st.one_of(HAN, HAN, HAN, HANGUL, FRAGMENTED, SEPARATORS), max_size=80).map("".join)


@pytest.mark.parametrize("name", ENCODINGS)
@SETTINGS
@given(text=TEXT)
def test_pieces_cut_into_parts_encode_as_tiktoken(name, text):
    """Letter runs of Han, Hangul and characters whose lead byte ends tokens, fresh each time:
    every long piece is merged, most of them part by part."""
    enc = numtok.load(name)
    enc._clear_caches()
    assert ids(enc.encode_ordinary(text)) == reference(name).encode_ordinary(text)
