"""Non-Latin scripts: identical ids to tiktoken on CJK, Hangul, Cyrillic and Devanagari text.

tests/data/multilingual_sample.txt holds 119 documents (separated by two blank lines) taken from
benchmarks/corpus/build-multilingual's corpus: Japanese, Chinese, Korean, Russian, Hindi and English
help pages, and pages that mix them (tests/data/README.md says where they come from).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA
from hypothesis import given
from hypothesis import strategies as st
from test_encode import CORE, SETTINGS, ids, reference

import numtok

SEPARATOR = "\n\n\n"  # the sample's documents hold no run of three newlines


@pytest.fixture(scope="module")
def documents() -> list[str]:
    text = (DATA / "multilingual_sample.txt").read_bytes().decode("utf-8")
    return text.removesuffix("\n").split(SEPARATOR)


def test_sample_covers_every_script(documents):
    text = "".join(documents)
    for lo, hi, script in [(0x3040, 0x30FF, "kana"), (0x4E00, 0x9FFF, "Han"), (0xAC00, 0xD7A3, "Hangul"),
                           (0x0400, 0x04FF, "Cyrillic"), (0x0900, 0x097F, "Devanagari")]:  # fmt: skip
        assert sum(lo <= ord(c) <= hi for c in text) > 1000, script
    assert len(documents) > 100


@pytest.mark.parametrize("name", CORE)
def test_sample_identical_to_tiktoken(name, documents):
    enc, ref = numtok.load(name), reference(name)
    expected = [ref.encode_ordinary(d) for d in documents]
    for doc, want in zip(documents, expected):
        assert ids(enc.encode_ordinary(doc)) == want, doc[:80]
    whole = SEPARATOR.join(documents)
    assert ids(enc.encode_ordinary(whole)) == ref.encode_ordinary(whole)
    assert enc.encode_batch(documents, num_threads=2).to_list() == expected
    assert enc.encode_ordinary_batch(documents, num_threads=1).to_list() == expected


def _chars(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.characters(min_codepoint=lo, max_codepoint=hi, exclude_categories=["Cn", "Cs"])


def _word(alphabet: st.SearchStrategy[str], max_size: int = 8) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=1, max_size=max_size)


HAN = st.one_of(_chars(0x4E00, 0x9FFF), _chars(0x3400, 0x4DBF), _chars(0x20000, 0x2A6DF), _chars(0xF900, 0xFAFF))
KANA = _chars(0x3040, 0x30FF)
CJK_PUNCT = st.one_of(_chars(0x3000, 0x303F), _chars(0xFF01, 0xFF65))  # 、。「」 and fullwidth forms
HANGUL = _chars(0xAC00, 0xD7A3)
JAMO = st.tuples(_chars(0x1100, 0x1112), _chars(0x1161, 0x1175), st.just("") | _chars(0x11A8, 0x11C2)).map("".join)
COMPAT_JAMO = _chars(0x3131, 0x318E)
CONSONANT = _chars(0x0915, 0x0939)
SIGN = st.sampled_from(["", "\u093e", "\u093f", "\u0940", "\u0941", "\u0947", "\u0948", "\u094b", "\u094c", "\u0902", "\u0901", "\u0903", "\u093c"])
SYLLABLE = st.tuples(CONSONANT, SIGN, st.just("") | st.just("\u094d") | st.sampled_from(["\u094d\u0937", "\u094d\u0930"])).map("".join)
DEVANAGARI = st.one_of(st.lists(SYLLABLE, min_size=1, max_size=5).map("".join), _word(_chars(0x0900, 0x097F)))
CYRILLIC = st.one_of(_word(_chars(0x0400, 0x04FF)), _word(_chars(0x0410, 0x044F)).map(lambda w: w[:1] + "\u0301" + w[1:]))
COMBINING = st.tuples(_word(st.sampled_from("aeoAEOxzяЖकあ한")), _word(_chars(0x0300, 0x036F), 3)).map("".join)
OTHER = st.sampled_from([" ", "  ", "\n", "\n\n", "\t", "\u3000", "\u00a0", " \n ", "1", "42", "2026", "3.14", "１２３", ".", ",",
                         "!", "?", ":", ";", "(", ")", '"', "'", "'s", "«", "»", "—", "-", "/", "%", "।", "॥", "the", " and", "don't",
                         "LibreOffice", " GIMP"])  # fmt: skip
PIECE = st.one_of(_word(HAN), _word(HAN), _word(KANA), CJK_PUNCT, _word(HANGUL), _word(HANGUL), st.lists(JAMO, min_size=1, max_size=4).map("".join),
                  _word(COMPAT_JAMO, 4), DEVANAGARI, DEVANAGARI, CYRILLIC, CYRILLIC, COMBINING, OTHER, OTHER, OTHER)  # fmt: skip
MULTILINGUAL = st.lists(PIECE, max_size=40).map("".join)


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(text=MULTILINGUAL)
def test_multilingual_text_identical_to_tiktoken(name, text):
    enc, ref = numtok.load(name), reference(name)
    want = ref.encode_ordinary(text)
    assert ids(enc.encode_ordinary(text)) == want
    half = len(text) // 2
    parts = [text[:half], text[half:], text]
    assert enc.encode_batch(parts, num_threads=1).to_list() == [ref.encode_ordinary(p) for p in parts]


def _script_texts(documents) -> dict[str, str]:
    """The sample's documents joined by the script most of their letters are in."""
    ranges = {"han": (0x4E00, 0x9FFF), "hangul": (0xAC00, 0xD7A3), "cyrillic": (0x0400, 0x04FF), "devanagari": (0x0900, 0x097F)}
    texts: dict[str, list[str]] = {s: [] for s in ranges}
    for doc in documents:
        counts = {s: sum(lo <= ord(c) <= hi for c in doc) for s, (lo, hi) in ranges.items()}
        best = max(counts, key=counts.__getitem__)
        if counts[best] > len(doc) // 4:
            texts[best].append(doc)
    return {s: SEPARATOR.join(d) for s, d in texts.items() if d}


@pytest.mark.parametrize("name", CORE)
def test_short_nonascii_pieces_look_in_the_token_table_where_enough_are_tokens(name, documents):
    """The encoder's sample (``mostly_tokens``) against the share of the same pieces that are
    single tokens: it says yes from 40 % found in their home slot and may only miss tokens not
    there, so it must agree where the share is far from that; ASCII-only text has no such piece."""
    from numba import njit

    from numtok.encode import _kernels
    from numtok.encode.buffers import padded
    from numtok.pretokenizers import split_bytes

    mostly_tokens = njit(lambda data, spans, j, tab, m: _kernels.mostly_tokens(data, spans, j, tab, m))  # a helper of kernels
    enc = numtok.load(name)
    seen = 0
    for script, text in [*_script_texts(documents).items(), ("ascii", "plain English text, " * 400)]:
        raw = text.encode("utf-8")
        data = padded(raw)
        spans = split_bytes(data, np.array([[0, len(raw)]], np.int64), enc.pattern)
        picked = [raw[a:b] for a, b in spans[: _kernels._SAMPLE_SPANS].tolist() if b - a <= 8 and max(raw[a:b]) >= 0x80]
        picked = picked[: _kernels._SAMPLE_PIECES]
        share = sum(len(enc.encode_ordinary(p.decode("utf-8"))) == 1 for p in picked) / max(len(picked), 1)
        got = bool(mostly_tokens(data, spans, 0, enc._whole_tab, enc._max_whole_len))
        if not picked:
            assert not got, script
        elif share >= 0.8 or share <= 0.35:
            seen += 1
            assert got == (share >= 0.8), (script, share)
    assert seen >= 2
