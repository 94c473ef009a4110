"""The Numba pre-tokenizers split exactly like ``regex.finditer`` on the named patterns.

Reference: ``regex.finditer(NAMED_PATTERNS[name], text)`` on the text whose lone surrogates are
replaced by U+FFFD, converted to UTF-8 byte offsets.

``tests/data/sample_mixed.txt`` (~290 KB, shared with the trainer and encoder tests) was built
once from text that may be shipped: the King James Bible (public domain, Debian's bible-kjv),
CPython 3.11 sources, IDLE's NEWS.txt and the UTF-8 CJK test texts of CPython's test suite
(PSF license), slices of the project's seed documents (shared/seeds), and ~70 KB of generated
multilingual lines (French, German, Spanish, Russian, Greek, Turkish, Vietnamese, Arabic,
Hebrew, Hindi, Thai, Japanese, Chinese, Korean words; numbers, emoji, contractions in every
case, typographic apostrophes, NFD text, tabs, NBSP, ideographic spaces, CRLF, trailing
whitespace).
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit
from unicode_reference import TABLE_REGEX_VERSION, agreed, differing_code_points, regex_differences

from numtok._native import intrinsics as _intrinsics
from numtok._native.utf8 import char_to_byte_offsets, utf8_bytes
from numtok.pretokenizers import _scanners, _unicode, pretokenize, split_bytes
from numtok.pretokenizers.patterns import NAMED_PATTERNS

NAMES = ["gpt2", "r50k", "cl100k", "o200k"]
SAMPLE = Path(__file__).parent / "data" / "sample_mixed.txt"

def regex_spans(text: str, name: str) -> np.ndarray:
    """The reference: regex.finditer's pieces as UTF-8 byte spans (lone surrogates repaired)."""
    text = utf8_bytes(text).decode("utf-8")
    spans = np.array([m.span() for m in regex.finditer(NAMED_PATTERNS[name], text)], dtype=np.int64)
    return char_to_byte_offsets(text)[spans.reshape(-1, 2)]


def assert_same_split(text: str, name: str) -> None:
    got = pretokenize(text, name)
    want = regex_spans(text, name)
    if got.shape == want.shape and (got == want).all():
        return
    data = utf8_bytes(text)
    m = min(len(got), len(want))
    k = next((j for j in range(m) if (got[j] != want[j]).any()), m)
    show = lambda spans: [data[s:e].decode("utf-8", "replace") for s, e in spans[max(0, k - 2) : k + 3]]  # noqa: E731
    raise AssertionError(
        f"{name}: first difference at piece {k} in {text[:200]!r}\nnumtok: {show(got)}\nregex:  {show(want)}"
    )


# --------------------------------------------------------------------------------------------
# The class table


def test_unicode_table_matches_regex():
    """Every code point: our flags agree with regex's \\p{..} and \\s, except code points that a
    newer regex assigns and Unicode 17.0 leaves "other" (listed in a warning)."""
    found = regex_differences()
    if regex.__version__ == TABLE_REGEX_VERSION:
        assert not any(found.values()), found
    if any(found.values()):
        warnings.warn(f"regex {regex.__version__} classifies these code points unlike numtok's Unicode "
                      f"{_unicode.unicode_version()} table (numtok: 'other'): "
                      + "; ".join(f"{k}: " + ", ".join(f"U+{a:04X}..U+{b:04X}" for a, b in v) for k, v in found.items() if v))
    flags = _unicode.class_table()
    for cp in differing_code_points():
        assert flags[cp] == _unicode.BIT_O, f"U+{cp:04X} is classified differently and is not 'other' in Unicode 17"


def test_unicode_table_metadata_and_bits():
    assert _unicode.unicode_version() == "17.0.0"
    flags = _unicode.class_table()
    assert flags.dtype == np.uint8 and flags.shape == (0x110000,) and not flags.flags.writeable
    # The "other" bit is exactly "none of L, N, S"; \r and \n are whitespace.
    lns = _unicode.BIT_L | _unicode.BIT_N | _unicode.BIT_S
    assert (((flags & _unicode.BIT_O) != 0) == ((flags & lns) == 0)).all()
    assert set(np.flatnonzero(flags & _unicode.BIT_CRLF).tolist()) == {10, 13}
    assert flags[0x1C] & _unicode.BIT_O and not flags[0x1C] & _unicode.BIT_S  # str.isspace() differs
    assert flags[0x85] & _unicode.BIT_S and flags[0x3000] & _unicode.BIT_S


# --------------------------------------------------------------------------------------------
# Real text


@pytest.mark.parametrize("name", NAMES)
def test_sample_text_matches_regex(name):
    text = SAMPLE.read_bytes().decode("utf-8")
    assert 200_000 < len(text.encode()) < 400_000
    assert_same_split(text, name)


@pytest.mark.parametrize("name", NAMES)
def test_sample_lines_as_documents(name):
    """Each line a document: split_bytes equals pretokenize document by document."""
    text = SAMPLE.read_bytes().decode("utf-8")[:60_000]
    data = np.frombuffer(utf8_bytes(text), dtype=np.uint8)
    ends = np.flatnonzero(data == 0x0A) + 1
    starts = np.r_[0, ends[:-1]]
    docs = np.stack([starts, ends], axis=1)
    want = np.concatenate([pretokenize(data[s:e].tobytes().decode(), name) + s for s, e in docs.tolist()])
    got = split_bytes(data, docs, name, num_threads=1)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------------------------
# Explicit cases

EDGE_CASES = [
    "",
    " ",
    "\n",
    "a",
    "Hello world",
    "Hello  world",
    "Hello   world  ",
    "Hello world \n",
    "word   ",
    "   word",
    "\t\tword",
    " \tword",
    "\u00a0word \u3000word\u2009x",
    "a\n\nb",
    "a \n \n b",
    "a\r\n\r\nb\r\n",
    "x\n  \n\t y",
    "line\n    indented\n\n\tdone\n",
    "  \n  ",
    "a  \n",
    "trailing spaces   ",
    "ends with newline\n",
    "ends with spaces and newline  \n",
    "ends with newline then spaces\n  ",
    "\r\r\n\n\r",
    "x\x0b\x0c\x85\u2028\u2029y",
    "x\x1c\x1d\x1e\x1fy",  # not \s for regex (str.isspace() says they are)
    "it's I'm you're we've he'll she'd don't",
    "IT'S I'M YOU'RE WE'VE HE'LL SHE'D DON'T",
    "It'S i'M yOu'Re We'vE he'Ll She'D",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D",
    "'sup 'llama 'x ''s '",
    "x'ſ x'ſt 'ſ Kelvin'K",
    "it’s don’t O’Neil ’s",
    " 's !'s ('s) \"'s\"",
    "rock'n'roll y'all",
    "1 12 123 1234 12345 123456 1234567",
    "a1b22c333d4444",
    "x=12345.678,9",
    "٣٤٥٦ ١٢٣٤٥ Ⅻ½²",
    "e\u0301 cafe\u0301 A\u0301BC \u0301ABC x\u0301\u0302y",
    "\u0301\u0301 \u0301a",
    "ǅemal ǈ ǋ Ǆ ǆ",
    "ʰʷ ˈfoʊ ᵃb aʰ Aʰ ʰA",
    "中文ABC 中文abc ABC中文 abc中文 中文",
    "日本語テキスト、カタカナ。ひらがな!",
    "HelloWorld HTMLParser getHTTPResponseCode iOS macOS",
    "ÀÉÎ àéî ÀéÎ Straße STRASSE",
    "😀😀 a😀b 👍🏽 👨‍👩‍👧 🇫🇷",
    "a/b//c\n/d /\n/ x\r\n/",
    "!!\n\n?? \r\n",
    "path/to/file.txt https://example.com/a?b=c&d=e",
    "def f(x):\n    return x  # comment\n",
    "\ud800 \udfff a\ud83db \ud83d\ude00",
    "\ufffd\ufffd x\ufffd",
    "$$ $1 $a ¥100 €",
    # letter runs that start with a non-ASCII letter, after a space or not (the scanners' first test)
    " Привет мир ПРИВЕТ приВет ПРИвет Привет's ПРИВЕТ'S мир'll",
    "한국어는 세계에서 한국어abc abc한국어 한국어ABC 한국어's",
    "नमस्ते दुनिया नमस्ते's  क्षत्रिय",
    "Σίσυφος ΣΊΣΥΦΟΣ σΊσυφος Éclair ÉCLAIR éCLAIR",
    "ǈubljana ǅemal's ʰA ªb",
    " 中文ABC  中文abc\t中文 \n中文",
    # runs of marks and punctuation that start with a non-ASCII character (no letter after)
    "नमस्ते। दुनिया\u0903\n\u0903/ x\u093e\u093f\r\n\u094d",
    "。\n「中文」、\r\n ，x …— \u0301\u0301 \u093e/\n/ №§©1 ©\u0301a",
    # o200k: runs of characters that are both U and W (Lo, Lm, M), then what follows them
    "中文ʰa 中文ǅx 한국어\u0301ABC नमस्ते'S 中文ªb 中文٣ 中文\u3000中 ि'll 中文ΣΊ 中文σ",
    # o200k: a capital before a small letter (A1 measured from there), and what may follow it
    "«Привет» Жa Жж'S ЖжЖ Жǅ Жʰж ЖʰЖж Ж\u0301ж Ж\u0301Жж Жж\u0301 Ǆǆ ΣίΣ Ж",
    # cl100k: Indic text by the state table (letters, signs, single spaces), and where it leaves
    "क्षत्रिय  नमस्ते।\nदुनिया\u0903 \u093e\u093fक ख1 क१२ कa ख. ग, \u0964\u0964\r\nघ \u094d\u094d  ङ\tच"
    " 中文，क 한국 ก\u0e31\u0e48ก ༀ\u0f71 \u0900\u08ff\u0fff\u1000 क\u3000ख कé \u094d\u0301क क",
    # ASCII pieces more than a window (64 bytes) after the last ASCII one, non-ASCII text near
    "한국어 텍스트는 세계에서 가장 많이 쓰입니다. 그리고 다른 문장, 숫자 123 또는 (괄호) 'x' 's 등등.\n"
    "中文文本很长很长很长很长很长很长很长很长很长很长，然后。Then English text follows, it's here.\r\n"
    "Русский текст довольно длинный здесь, ещё немного. 42 The end/ \n  ",
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases(name, text):
    assert_same_split(text, name)


def test_edge_cases_spot_checks():
    """A few splits written out, so the semantics are visible (all also checked vs regex)."""

    def pieces(text, name):
        data = utf8_bytes(text)
        return [data[s:e].decode() for s, e in pretokenize(text, name)]

    assert pieces("Hello   world  ", "gpt2") == ["Hello", "  ", " world", "  "]
    assert pieces("a \n \n b", "cl100k") == ["a", " \n \n", " b"]
    assert pieces("ab  \n  ", "cl100k") == ["ab", "  \n  "]  # \s++$ first
    assert pieces("ab  \n  ", "o200k") == ["ab", "  \n", "  "]  # no \s++$ in o200k
    assert pieces("HE'LL it'S x'ſ it’s", "cl100k") == ["HE", "'LL", " it", "'S", " x", "'ſ", " it", "’s"]
    assert pieces("HE'LL it’s", "gpt2") == ["HE", "'", "LL", " it", "’", "s"]
    assert pieces("中文ABC \u0301ABC", "o200k") == ["中文", "ABC", " \u0301", "ABC"]
    assert pieces("12345", "cl100k") == ["123", "45"]
    assert pieces("x\n/ a", "o200k") == ["x", "\n", "/", " a"]


# --------------------------------------------------------------------------------------------
# Hypothesis

# Characters from every category (surrogates included: pretokenize repairs them first), less
# the code points whose class is listed as differing from regex.
any_char = agreed(st.characters(codec=None, categories=None, exclude_categories=()))
TRICKY_PIECES = [
    " ", " ", " ", "  ", "\n", "\n", "\r", "\r\n", "\t", "\u00a0", "\u3000", "\x0b", "\x1c",
    "'", "'", "s", "S", "t", "LL", "ll", "re", "VE", "m", "D", "ſ", "’s", "’",
    "a", "word", "Word", "WORD", "é", "e\u0301", "\u0301", "\u0903", "ǅ", "ʰ", "ª", "中", "文字", "ア",
    "Пр", "ИВ", "ет", "한국", "नम", "स्", "Σί", "ΣΥ",
    "1", "23", "4567", "٣", "½", "Ⅻ",
    "/", "!", ".", "(", "-", "$", "。", "」", "\u093e", "😀", "👍🏽", "\u200d", "\ufffd", "\ud800",
]
tricky_text = st.lists(st.sampled_from(TRICKY_PIECES), max_size=40).map("".join)
# Indic letters and signs among spaces and what ends cl100k's table run (Devanagari, Tamil,
# Thai, Tibetan; digits, danda, CJK, a 2-byte mark, newlines)
INDIC_PIECES = [
    "क", "न", "स", "\u093e", "\u093f", "\u094d", "\u0901", "\u0903", "\u0964", "\u0966", "क्ष", "ि",
    "த", "\u0bcd", "ก", "\u0e31", "ༀ", "\u0f71", "\u0900", "\u0fff", " ", " ", " ", "  ",
    "\n", "\r\n", "a", ".", "1", "中", "，", "é", "\u0301", "\u3000", "'s",
]
indic_text = st.lists(st.sampled_from(INDIC_PIECES), max_size=80).map("".join)
mixed_text = st.lists(st.one_of(st.sampled_from(TRICKY_PIECES), any_char), max_size=40).map("".join)

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=st.text(alphabet=any_char, max_size=60))
def test_any_characters_match_regex(name, text):
    assert_same_split(text, name)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=tricky_text)
def test_tricky_pieces_match_regex(name, text):
    assert_same_split(text, name)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=mixed_text)
def test_mixed_pieces_match_regex(name, text):
    assert_same_split(text, name)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=indic_text)
def test_indic_text_matches_regex(name, text):
    assert_same_split(text, name)


@settings(max_examples=600, deadline=None)
@given(text=st.one_of(tricky_text, mixed_text, st.text(alphabet=any_char)))
def test_gpt2_and_r50k_regexes_split_identically(text):
    """Why one scanner serves both: the two regexes themselves agree (see _scanners' docs)."""
    text = utf8_bytes(text).decode()
    gpt2 = [m.span() for m in regex.finditer(NAMED_PATTERNS["gpt2"], text)]
    r50k = [m.span() for m in regex.finditer(NAMED_PATTERNS["r50k"], text)]
    assert gpt2 == r50k


# --------------------------------------------------------------------------------------------
# split_bytes: documents, threads, robustness


@njit
def _class_masks(data, p, wide):
    return _intrinsics.ascii_class_masks64(data, p) if wide else _intrinsics.ascii_class_masks32(data, p)


def test_ascii_class_masks_match_a_byte_by_byte_reference():
    """The window masks the scanners start from: bit k of each mask classifies byte p + k."""
    rng = np.random.default_rng(7)
    data = np.concatenate([np.arange(256, dtype=np.uint8), rng.integers(0, 256, 4000).astype(np.uint8)])
    classes = [
        lambda b: (b >= 0x61) & (b <= 0x7A),
        lambda b: (b >= 0x41) & (b <= 0x5A),
        lambda b: (b >= 0x30) & (b <= 0x39),
        lambda b: ((b >= 0x09) & (b <= 0x0D)) | (b == 0x20),
        lambda b: b >= 0x80,
        lambda b: (b == 0x0A) | (b == 0x0D),
        lambda b: b == 0x20,
        lambda b: b == 0x2F,
        lambda b: b == 0x27,
    ]
    for width in (32, 64):
        for p in list(range(0, 256, 7)) + list(range(256, len(data) - width, 97)):
            got = _class_masks(data, p, width == 64)
            window = data[p : p + width]
            for mask, cls in zip(got, classes):
                want = sum(1 << k for k in np.flatnonzero(cls(window)).tolist())
                assert int(mask) == want, (width, p)


def one_buffer(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 of ``texts`` in one buffer, and each text's (start, end) in it."""
    blobs = [utf8_bytes(t) for t in texts]
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    ends = np.cumsum([len(b) for b in blobs], dtype=np.int64)
    docs = np.stack([ends - [len(b) for b in blobs], ends], axis=1) if blobs else np.zeros((0, 2), np.int64)
    return data, docs


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(texts=st.lists(mixed_text, max_size=12))
def test_split_bytes_documents(name, texts):
    """Documents are split independently: no piece crosses a boundary (also empty documents)."""
    data, docs = one_buffer(texts)
    want = [pretokenize(t, name) + s for t, s in zip(texts, docs[:, 0].tolist())]
    want = np.concatenate(want) if want else np.zeros((0, 2), np.int64)
    np.testing.assert_array_equal(split_bytes(data, docs, name, num_threads=1), want)
    np.testing.assert_array_equal(split_bytes(data.tobytes(), docs.astype(np.int32), name, num_threads=1), want)


# The kernels classify ASCII text 64 bytes at a time with bit masks (the fast path) and hand
# a piece that reaches a non-ASCII byte, the window's end or its document's end to the general
# path. Texts under 64 bytes never use the masks, so these are long, mostly ASCII (runs longer
# than a window included), and also cut into documents that share one buffer.
ASCII_PIECES = [
    "the", " cat", "Dog", "ABC", "aBc", "camelCase", "X", " ", "  ", "    ", "\n", "\r\n", "\t",
    "\r", " \n", "\n  ", "x\n", ".\n", "3\n", ".\n\n", "\n.", "\n.x", ".x", "..x", " .x",
    ".", ",", "!!", "(", ")", "/", "//", "\n/", ".\n/", "'s", "'LL", "'", "1", "12", "123",
    "1234", "45678", " 3", "3x", "x3", ".3", "3.", "\x00", "\x7f", "\x1f",
    "x" * 70, "Y" * 70, " " * 70, "\n" * 70, "-" * 70, "9" * 70,
]
long_text = st.lists(
    st.one_of(st.sampled_from(ASCII_PIECES), st.sampled_from(ASCII_PIECES), st.sampled_from(TRICKY_PIECES)),
    min_size=20,
    max_size=250,
).map("".join)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=long_text, cuts=st.lists(st.integers(0, 4000), max_size=8))
def test_long_texts_and_documents_match_regex(name, text, cuts):
    assert_same_split(text, name)
    assert_documents_split_as_regex(utf8_bytes(text).decode(), cuts, name)


def assert_documents_split_as_regex(text: str, cuts: list[int], name: str) -> None:
    """``text`` cut at ``cuts`` into documents of one buffer: each split as regex splits it."""
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    parts = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    data, docs = one_buffer(parts)
    want = [regex_spans(p, name) + s for p, s in zip(parts, docs[:, 0].tolist())]
    want = np.concatenate(want) if want else np.zeros((0, 2), np.int64)
    np.testing.assert_array_equal(split_bytes(data, docs, name, num_threads=1), want)


# The cl100k and o200k masks take CJK, kana and Hangul letters as letters (``intrinsics.letter3_leads64``)
# and CJK and general punctuation as "other" (``intrinsics.punct3_leads64``): long texts of them
# among ASCII pieces, with the characters of the same blocks the masks must leave to the general
# path (voicing marks, U+4DC0, U+D780 on, Hangul compatibility jamo, ideographic space, line
# separators, full-width digits and letters, marks) and cut 3-byte sequences.
LETTER3_PIECES = [
    "한국어", "한", " 한국", "\uac00", "\ud77f", "\ud780", "\ud7a3", "\ud7b0", "\uabff",
    "中文", "文字", "\u4e00", "\u9fff", "\u4dbf", "\u4dc0", "\u3400", "ㄱ",
    "ア", "あいう", "ー", "・", "゛", "\u3099", "\u309a", "゠", "\u3040", "\u3041", "\u3096", "\u3097", "\u30ff",
    "。", "、", "，", "「", "」", "〆", "\u3000", "〇", "々", "\u302a", "\u3005", "\u3020",
    "…", "“", "”", "—", "‐", "\u2027", "\u2028", "\u2029", "\u202f", "\u205e", "\u205f", "\u2070",
    "（", "）", "：", "！", "？", "【", "】", "〜", "～", "／", "＇", "\uff10", "\uff21", "\uff41", "\uff66", "｡", "･",
    "，中文", "。\n", "」，", " ，", "\n「",
    # letter runs that reach past a window's end, and what may end them there
    "ドキュメントを新規作成します", "文文文文文文文文文文文", "Привет", "ǅ", "\u0301",
]
letter3_text = st.lists(
    st.one_of(st.sampled_from(LETTER3_PIECES), st.sampled_from(LETTER3_PIECES), st.sampled_from(ASCII_PIECES), st.sampled_from(TRICKY_PIECES)),
    min_size=20,
    max_size=300,
).map("".join)
CUT_LETTERS3 = [b"\xe3\x81", b"\xed\xa0\x80", b"\xea\xb0", b"\xe4", b"\x80\x80"]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=letter3_text, cuts=st.lists(st.integers(0, 4000), max_size=6))
def test_cjk_kana_and_hangul_texts_match_regex(name, text, cuts):
    assert_same_split(text, name)
    assert_documents_split_as_regex(text, cuts, name)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(st.sampled_from(LETTER3_PIECES), st.sampled_from(ASCII_PIECES), st.sampled_from(CUT_LETTERS3)), min_size=20, max_size=250))
def test_cut_cjk_sequences_split_as_python_decodes_them(name, parts):
    raw = b"".join(p if isinstance(p, bytes) else utf8_bytes(p) for p in parts)
    text = raw.decode("utf-8", "surrogateescape")
    data = np.frombuffer(raw, dtype=np.uint8)
    got = split_bytes(data, np.array([[0, len(data)]], dtype=np.int64), name, num_threads=1)
    spans = np.array([m.span() for m in regex.finditer(NAMED_PATTERNS[name], text)], dtype=np.int64).reshape(-1, 2)
    offsets = np.cumsum([0] + [len(c.encode("utf-8", "surrogateescape")) for c in text])
    np.testing.assert_array_equal(got, offsets[spans])


@njit
def _letter3_leads(data, p):
    return _intrinsics.letter3_leads64(data, p)


def _lane_bits_of_three_byte_characters(leads):
    """Each 3-byte code point (and surrogate form) at lane 0 and at lane 61 of a 64-byte
    window: the code points, and whether ``leads`` set the character's lane bit (the same at
    both lanes, and no other bit). A lead at lane 62 or 63, whose continuation bytes fall past
    the 64, must set none."""
    cps = np.arange(0x800, 0x10000)
    raw = np.stack([0xE0 | (cps >> 12), 0x80 | ((cps >> 6) & 0x3F), 0x80 | (cps & 0x3F)], axis=1).astype(np.uint8)
    buf = np.zeros(64 + 8, np.uint8)
    got = np.zeros(len(cps), bool)
    for k in range(len(cps)):
        buf[:3] = raw[k]
        buf[61:64] = raw[k]
        m = int(leads(buf, 0))
        got[k] = m & 1
        assert m & ~((1 << 61) | 1) == 0
        assert (m >> 61) & 1 == got[k]
    for c in raw[got]:  # each character whose bit is set, cut by the window's end
        for lane in (62, 63):
            buf[:] = 0
            buf[lane : lane + 3] = c
            assert int(leads(buf, 0)) >> 62 == 0
    return cps, got


def test_letter3_leads_are_letters_upper_and_lower_to_every_pattern():
    """Set only for a letter that is both o200k "upper" and "lower" (Lo, Lm)."""
    flags = _unicode.class_table()
    cps, got = _lane_bits_of_three_byte_characters(_letter3_leads)
    want = ((flags[cps] & _scanners._L) != 0) & ((flags[cps] & _scanners._UW) == _scanners._UW)
    want &= (cps < 0xD800) | (cps > 0xDFFF)
    assert (got & ~want).sum() == 0, [hex(c) for c in cps[got & ~want][:10]]
    assert got.sum() > 38000  # CJK, kana and Hangul letters: most of them


@njit
def _punct3_leads(data, p):
    return _intrinsics.punct3_leads64(data, p)


def test_punct3_leads_are_other_to_every_pattern():
    """Set only for a character that is "other" and nothing else (no letter, digit, space or
    mark)."""
    flags = _unicode.class_table()
    cps, got = _lane_bits_of_three_byte_characters(_punct3_leads)
    want = (flags[cps] == _scanners._O) & ((cps < 0xD800) | (cps > 0xDFFF))
    assert (got & ~want).sum() == 0, [hex(c) for c in cps[got & ~want][:10]]
    assert got.sum() == 139  # the ranges the docstring lists


# Bytes that are no UTF-8 wherever they stand (0xC0, 0xC1, 0xF5-0xFF) or a continuation byte
# with no lead byte before it: the scanners read each as one "other" character.
NOT_UTF8 = [b"\x80", b"\xa0", b"\xbf", b"\xc0", b"\xc1", b"\xf5", b"\xff"]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(st.sampled_from(ASCII_PIECES), st.sampled_from(TRICKY_PIECES), st.sampled_from(NOT_UTF8)), min_size=20, max_size=250))
def test_bytes_that_are_not_utf8_split_like_an_ascii_other_character(name, parts):
    """In long, mostly ASCII text, where pieces are cut from the window's masks and a byte that
    is not ASCII sends a piece to the general path, each byte that is no UTF-8 splits exactly
    as "#" (an ASCII "other") would in its place: both paths agree on them."""
    raw = b"".join(p if isinstance(p, bytes) else utf8_bytes(p) for p in parts)
    as_other = b"".join(b"#" * len(p) if isinstance(p, bytes) else utf8_bytes(p) for p in parts)
    data = np.frombuffer(raw, dtype=np.uint8)
    got = split_bytes(data, np.array([[0, len(data)]], dtype=np.int64), name, num_threads=1)
    np.testing.assert_array_equal(got, regex_spans(as_other.decode("utf-8"), name))


def test_split_bytes_subranges_and_order():
    data = np.frombuffer(b"hello world. foo  bar\n", dtype=np.uint8)
    docs = np.array([[13, 22], [0, 5], [5, 5], [6, 12]])
    got = split_bytes(data, docs, "cl100k", num_threads=1)
    assert [data[s:e].tobytes() for s, e in got] == [b"foo", b" ", b" bar", b"\n", b"hello", b"world", b"."]


@pytest.fixture
def small_parallel_threshold(monkeypatch):
    monkeypatch.setattr(_scanners, "_PARALLEL_MIN_BYTES", 1)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("threads", [2, 3, 7])
def test_threads_give_the_same_pieces(name, threads, small_parallel_threshold):
    text = SAMPLE.read_bytes().decode("utf-8")
    data = np.frombuffer(utf8_bytes(text), dtype=np.uint8)
    one_doc = np.array([[0, len(data)]])
    want = split_bytes(data, one_doc, name, num_threads=1)
    # One big document, cut where every pattern ends a piece.
    np.testing.assert_array_equal(split_bytes(data, one_doc, name, num_threads=threads), want)
    # Many documents of very different sizes.
    cuts = np.unique(np.r_[0, np.flatnonzero(data == 0x0A)[::37] + 1, len(data)])
    docs = np.stack([cuts[:-1], cuts[1:]], axis=1)
    want = split_bytes(data, docs, name, num_threads=1)
    np.testing.assert_array_equal(split_bytes(data, docs, name, num_threads=threads), want)


def test_cut_points_are_piece_boundaries():
    text = SAMPLE.read_bytes().decode("utf-8")
    data = np.frombuffer(utf8_bytes(text), dtype=np.uint8)
    cuts = _scanners._cut_points(data, 0, len(data), 997, 4096)
    assert len(cuts) > 100
    for name in NAMES:
        starts = set(pretokenize(text, name)[:, 0].tolist())
        assert set(cuts.tolist()) <= starts


@pytest.mark.jit_only
def test_two_python_threads_at_once():
    """The kernels release the GIL; two callers with num_threads=1 get their own results."""
    text = SAMPLE.read_bytes().decode("utf-8")
    data = np.frombuffer(utf8_bytes(text), dtype=np.uint8)
    docs = np.array([[0, len(data)]])
    want = {name: split_bytes(data, docs, name, num_threads=1) for name in ("gpt2", "o200k")}
    results, errors = {}, []

    def work(name):
        try:
            for _ in range(3):
                results[name] = split_bytes(data, docs, name, num_threads=1)
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(name,)) for name in want]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for name in want:
        np.testing.assert_array_equal(results[name], want[name])
    for kernel in (_scanners._split_gpt2, _scanners._split_cl100k, _scanners._split_o200k):
        assert kernel.targetoptions["nogil"]


def test_output_growth_on_tiny_pieces():
    """Text with ~1 byte a piece overflows the first output estimate; the kernel resumes."""
    text = "a!" * 5000 + "\n" + "1 " * 4000
    for name in NAMES:
        assert_same_split(text, name)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None)
@given(raw=st.binary(max_size=64))
def test_invalid_utf8_never_fails(name, raw):
    """Bytes that are not UTF-8 still give pieces that tile each document."""
    data = np.frombuffer(raw + b"ok \xe4\xb8", dtype=np.uint8)
    mid = len(raw) // 2
    docs = np.array([[0, mid], [mid, len(data) - 2], [len(data) - 2, len(data)]])
    got = split_bytes(data, docs, name, num_threads=1)
    for s, e in docs.tolist():
        mine = got[(got[:, 0] >= s) & (got[:, 1] <= e)]
        assert mine[:, 0].tolist() == [s] + mine[:-1, 1].tolist() if len(mine) else s == e
        assert (len(mine) == 0 and s == e) or mine[-1, 1] == e
    assert len(got) == sum(((got[:, 0] >= s) & (got[:, 1] <= e)).sum() for s, e in docs.tolist())


def regex_spans_of_bytes(raw: bytes, name: str) -> np.ndarray:
    """The reference for bytes that may not be UTF-8: regex on Python's decoding of them with
    each byte outside a valid character escaped to a lone surrogate (one "other" character,
    one byte), as byte spans."""
    text = raw.decode("utf-8", "surrogateescape")
    widths = [1 if 0xDC80 <= ord(ch) <= 0xDCFF else len(ch.encode("utf-8")) for ch in text]
    offsets = np.concatenate([[0], np.cumsum(widths, dtype=np.int64)])
    spans = np.array([m.span() for m in regex.finditer(NAMED_PATTERNS[name], text)], dtype=np.int64)
    return offsets[spans.reshape(-1, 2)]


# Sequences Python's decoder refuses although their bytes have the shape of a character:
# overlong forms (of a space, a letter, a digit), UTF-16 surrogates, code points past U+10FFFF;
# and their valid neighbours at each boundary.
ILL_FORMED = [b"\xe0\x80\xa0", b"\xe0\x81\x81", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
              b"\xf0\x80\x80\xa0", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xc1\xa1", b"\xe0\x80", b"\xf0\x90\x80"]
WELL_FORMED = ["\u0800", "\ud7ff", "\ue000",
               "\U00010000", "\U0010ffff", "\u0939\u093f", "\ud55c", "\u4e2d", "\u00e9", "\u0416"]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(st.binary(max_size=6), st.sampled_from(ILL_FORMED), st.sampled_from(WELL_FORMED),
                                st.sampled_from(ASCII_PIECES), st.sampled_from(TRICKY_PIECES)), max_size=120))
def test_bytes_split_as_python_decodes_them(name, parts):
    """Any bytes split as regex splits Python's ``surrogateescape`` decoding of them: a
    sequence UTF-8 does not allow is one "other" character a byte, even where its bytes look
    like a character (an overlong space is no space), in short texts and in long ones (the
    masks' path)."""
    raw = b"".join(p if isinstance(p, bytes) else utf8_bytes(p) for p in parts)
    data = np.frombuffer(raw, dtype=np.uint8)
    got = split_bytes(data, np.array([[0, len(data)]], dtype=np.int64), name, num_threads=1)
    np.testing.assert_array_equal(got.reshape(-1, 2), regex_spans_of_bytes(raw, name))


def test_input_validation():
    data = np.frombuffer(b"hello", dtype=np.uint8)
    with pytest.raises(ValueError, match="1-D uint8"):
        split_bytes(data.astype(np.int64), [[0, 5]], "gpt2")
    with pytest.raises(TypeError):
        split_bytes("hello", [[0, 5]], "gpt2")
    with pytest.raises(ValueError, match="shape"):
        split_bytes(data, [0, 5], "gpt2")
    with pytest.raises(ValueError, match="inside data"):
        split_bytes(data, [[0, 6]], "gpt2")
    with pytest.raises(ValueError, match="inside data"):
        split_bytes(data, [[3, 2]], "gpt2")
    with pytest.raises(TypeError):
        split_bytes(data, [[0.0, 5.0]], "gpt2")
    with pytest.raises(ValueError, match="num_threads"):
        split_bytes(data, [[0, 5]], "gpt2", num_threads=0)
    with pytest.raises(TypeError):
        pretokenize(b"hello", "gpt2")
    assert split_bytes(data, np.zeros((0, 2), np.int64), "gpt2").shape == (0, 2)
    assert pretokenize("", "o200k").shape == (0, 2)
    assert pretokenize("x", "o200k").dtype == np.int64


def test_pattern_aliases_use_the_scanners():
    text = "It's 2024, isn't it?"
    for name in NAMES:
        want = pretokenize(text, name)
        np.testing.assert_array_equal(pretokenize(text, NAMED_PATTERNS[name]), want)
    np.testing.assert_array_equal(pretokenize(text, "cl100k_base"), pretokenize(text, "cl100k"))


# --------------------------------------------------------------------------------------------
# tiktoken, where its pieces can be observed

REF_DIR = Path(__file__).resolve().parents[2] / "shared" / "ref"


@pytest.mark.parametrize("name,encoding", [("r50k", "r50k_base"), ("cl100k", "cl100k_base"), ("o200k", "o200k_base")])
def test_tiktoken_splits_the_same(name, encoding):
    """tiktoken never merges across our pieces, and with each of our pieces a token of its
    own it encodes the text as exactly those pieces (its Rust regex runs the same pattern)."""
    tiktoken = pytest.importorskip("tiktoken")
    text = SAMPLE.read_bytes().decode("utf-8")[:80_000]
    data = utf8_bytes(text)
    pieces = [data[s:e] for s, e in pretokenize(text, name)]
    ranks = {bytes([b]): b for b in range(256)}
    for p in pieces:
        ranks.setdefault(p, len(ranks))
    enc = tiktoken.Encoding(f"numtok-{name}", pat_str=NAMED_PATTERNS[name], mergeable_ranks=ranks, special_tokens={})
    assert [enc.decode_single_token_bytes(t) for t in enc.encode_ordinary(text)] == pieces

    path = REF_DIR / f"{encoding}.tiktoken"
    if path.exists():  # the real vocabulary: token boundaries refine our piece boundaries
        from tiktoken.load import load_tiktoken_bpe

        ranks = load_tiktoken_bpe(str(path))
        real = tiktoken.Encoding(encoding, pat_str=NAMED_PATTERNS[name], mergeable_ranks=ranks, special_tokens={})
        ends = np.cumsum([len(real.decode_single_token_bytes(t)) for t in real.encode_ordinary(text)])
        assert set(pretokenize(text, name)[:, 1].tolist()) <= set(ends.tolist())
