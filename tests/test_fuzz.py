"""Differential fuzzing: numtok against tiktoken (r50k, cl100k, o200k), HF ``tokenizers`` (a
numtok-trained tokenizer.json, the BERT WordPiece file) and the ``regex`` module (pre-tokenizer
spans), on generated text: every Unicode category, whitespace and digit runs, contractions,
lone surrogates, long pieces.

Each test runs twice: unmarked, with the active profile (the default keeps the suite fast),
and marked ``fuzz`` for long runs::

    python -m pytest tests/test_fuzz.py -m fuzz --hypothesis-profile=thorough

The campaign (``test_campaign``) compares many strings per example: hypothesis draws a seed,
a fast generator of the same kinds of text makes a batch from it, and each batch goes through
``encode``, ``encode_ordinary``, ``decode``, ``encode_batch`` from a list and from Arrow arrays
(string, large_string, sliced, chunked) against tiktoken, and ``encode_with_offsets`` against
HF ``tokenizers`` loading the encoding's saved tokenizer.json. A million strings per encoding::

    python -m pytest tests/test_fuzz.py -m fuzz -k campaign --hypothesis-profile=million

Each example is a batch of strings; the run's count of strings per encoding is printed at the
end of the session. A failure names the encoding and the text, which hypothesis has shrunk to a
minimal one, as a line of Python that shows the difference.
"""

from __future__ import annotations

import base64
import collections
import functools
import random
import sys
import tempfile
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import regex
from conftest import FUZZ_COUNTS
from hypothesis import HealthCheck, given, settings
from hypothesis import settings as active_settings
from hypothesis import strategies as st
from unicode_reference import agreed

import numtok
from numtok.encode import registry
from numtok.pretokenizers.patterns import NAMED_PATTERNS

tiktoken = pytest.importorskip("tiktoken")
tokenizers = pytest.importorskip("tokenizers")

DATA = Path(__file__).parent / "data"
BERT_JSON = Path(__file__).resolve().parents[2] / "shared" / "ref" / "bert_uncased_tokenizer.json"
CORE = ["r50k_base", "cl100k_base", "o200k_base"]
BATCH_FORMS = ["list", "string", "large_string", "sliced", "chunked"]
RUNS = [pytest.param("quick", id="quick"), pytest.param("fuzz", id="fuzz", marks=pytest.mark.fuzz)]
FIXTURES_OK = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                                            HealthCheck.data_too_large])

# -- text ---------------------------------------------------------------------------------------

# Code points assigned after Unicode 14 (Python 3.11's unicodedata, hypothesis' tables) are
# letters to the regex module but not to tiktoken's Rust regex: excluded from library
# comparisons (Cn), kept for the pre-tokenizer (same tables as regex).
ASSIGNED = st.characters(exclude_categories=["Cn"])  # lone surrogates (Cs) included
# For the comparison with regex: every code point but those a newer regex classifies otherwise
# than numtok's Unicode 17.0 table (see unicode_reference).
AGREED = agreed(st.characters(exclude_categories=[]))
WHITESPACE = st.text(st.sampled_from(" \t\n\r\x0b\x0c\x85\u00a0\u1680\u2000\u2028\u2029\u202f\u3000"), min_size=1, max_size=40)
DIGITS = st.text(st.sampled_from("0123456789٠١٢٣٤५६߀๑²½"), min_size=1, max_size=24)
CONTRACTIONS = st.sampled_from(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ll", "’s", "n't", "'", "''"])
WORDS = st.sampled_from(["Hello", "WORLD", "naïve", "e\u0301", "中文", "日本語", "한국어", "Привет", "ǅ", "ß", "İ", "😀",
                         "👩‍👩‍👧", "🏳️‍🌈", "x_y", "a-b", "...", "—", "<|endoftext|>", "<|fim_prefix|>", "\u200d", "\ufeff"])  # fmt: skip


def long_piece(chars):
    return st.builds(lambda c, n: c * n, st.text(chars, min_size=1, max_size=3), st.integers(20, 1500))


def texts(chars) -> st.SearchStrategy[str]:
    part = st.one_of(st.text(chars, max_size=12), WHITESPACE, DIGITS, CONTRACTIONS, WORDS, long_piece(chars))
    return st.lists(part, max_size=12).map("".join)


def batches(chars) -> st.SearchStrategy[list[str]]:
    return st.lists(texts(chars), min_size=1, max_size=24)


def no_surrogates(text: str) -> str:
    """Lone surrogates as U+FFFD, as tiktoken and numtok repair them."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# -- references ---------------------------------------------------------------------------------


@functools.cache
def tiktoken_reference(name: str):
    """tiktoken's Encoding for ``name``, from the rank file numtok ships (sha256-checked)."""
    spec = registry._ENCODINGS[name]
    content = registry.rank_file_content(spec.ranks)
    ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in content.splitlines() if line)}
    return tiktoken.Encoding(name=f"ref_{name}", pat_str=NAMED_PATTERNS[spec.pattern], mergeable_ranks=ranks,
                             special_tokens=spec.special_tokens, explicit_n_vocab=spec.n_vocab)


@functools.cache
def trained_pair():
    """A numtok-trained tokenizer and HF's load of the tokenizer.json it saved."""
    lines = (DATA / "sample_mixed.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    tok = numtok.train_bpe(lines, 2000, pattern="gpt2", special_tokens=["<|endoftext|>"])
    with tempfile.TemporaryDirectory() as d:
        tok.save(Path(d) / "tokenizer.json")
        return tok, tokenizers.Tokenizer.from_file(str(Path(d) / "tokenizer.json"))


@functools.cache
def bert_pair():
    hf = tokenizers.Tokenizer.from_file(str(BERT_JSON))
    hf.no_truncation()
    hf.no_padding()
    return numtok.WordPiece.from_file(BERT_JSON), hf


def counted(key: str, batch: list[str]) -> None:
    FUZZ_COUNTS[key] = FUZZ_COUNTS.get(key, 0) + len(batch)


def batch_form(batch: list[str], form: str):
    """``batch`` as ``encode_batch`` input of one form: a list, or an Arrow string array
    (lone surrogates as U+FFFD: Arrow holds UTF-8) plain, large, sliced out of a longer array,
    or chunked."""
    if form == "list":
        return batch
    pa = pytest.importorskip("pyarrow")
    fixed = [no_surrogates(t) for t in batch]
    if form == "string":
        return pa.array(fixed, pa.string())
    if form == "large_string":
        return pa.array(fixed, pa.large_string())
    if form == "sliced":
        return pa.array(["before", *fixed, "after"], pa.string()).slice(1, len(fixed))
    cuts = sorted({0, len(fixed) // 3, (2 * len(fixed)) // 3, len(fixed)})
    return pa.chunked_array([pa.array(fixed[a:b], pa.string()) for a, b in zip(cuts, cuts[1:])], pa.string())


@functools.cache
def hf_of(name: str):
    """HF ``tokenizers`` loading the tokenizer.json numtok saves for the encoding ``name``."""
    with tempfile.TemporaryDirectory() as d:
        numtok.load(name).save(Path(d) / "tokenizer.json")
        return tokenizers.Tokenizer.from_file(str(Path(d) / "tokenizer.json"))


# -- tiktoken -----------------------------------------------------------------------------------


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("name", CORE)
@FIXTURES_OK
@given(batch=batches(ASSIGNED))
def test_tiktoken(run, name, batch):
    enc, ref = numtok.load(name), tiktoken_reference(name)
    counted(name, batch)
    expected = [ref.encode_ordinary(t) for t in batch]
    for text, want in zip(batch, expected):
        got = enc.encode_ordinary(text).tolist()
        assert got == want, f"numtok.load({name!r}).encode_ordinary({text!r}) != tiktoken's"
        got = enc.encode(text, allowed_special="all").tolist()
        assert got == ref.encode(text, allowed_special="all"), f"numtok.load({name!r}).encode({text!r}, allowed_special='all') != tiktoken's"
        assert enc.decode_bytes(want) == ref.decode_bytes(want) == no_surrogates(text).encode(), f"decode of {text!r} ({name})"
        assert enc.decode(want) == ref.decode(want), f"numtok.load({name!r}).decode(...) of {text!r}"
    for form in BATCH_FORMS:
        got_batch = enc.encode_ordinary_batch(batch_form(batch, form), num_threads=2).to_list()
        assert got_batch == expected, f"numtok.load({name!r}).encode_ordinary_batch({batch!r}) ({form}) != tiktoken's"


# -- the pre-tokenizers -------------------------------------------------------------------------


@functools.cache
def compiled(pattern: str):
    return regex.compile(NAMED_PATTERNS[pattern])


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("pattern", list(NAMED_PATTERNS))
@FIXTURES_OK
@given(batch=batches(AGREED))
def test_pretokenizer_spans(run, pattern, batch):
    counted(f"spans:{pattern}", batch)
    for text in batch:
        fixed = no_surrogates(text)
        want, pos, at = [], 0, 0
        for m in compiled(pattern).finditer(fixed):  # char offsets -> UTF-8 byte offsets
            start = pos + len(fixed[at : m.start()].encode())
            end = start + len(m.group().encode())
            want.append([start, end])
            pos, at = end, m.end()
        assert numtok.pretokenize(text, pattern).tolist() == want, f"numtok.pretokenize({text!r}, {pattern!r}) != regex"


# -- HF tokenizers ------------------------------------------------------------------------------


@pytest.mark.parametrize("run", RUNS)
@FIXTURES_OK
@given(batch=batches(ASSIGNED))
def test_trained_tokenizer_json_in_hf(run, batch):
    tok, hf = trained_pair()
    batch = [no_surrogates(t) for t in batch]  # HF's Python API takes no lone surrogates
    counted("hf-trained-bpe", batch)
    expected = [e.ids for e in hf.encode_batch(batch, add_special_tokens=False)]
    for text, want in zip(batch, expected):
        assert tok.encode(text, allowed_special="all").tolist() == want, f"trained.encode({text!r}, allowed_special='all') != HF"
        assert tok.decode(want) == hf.decode(want, skip_special_tokens=False), f"trained.decode of {text!r}"
    got = tok.encode_batch(batch, allowed_special="all", num_threads=2).to_list()
    assert got == expected, f"trained.encode_batch({batch!r}) != HF"


@pytest.mark.skipif(not BERT_JSON.exists(), reason="shared/ref/bert_uncased_tokenizer.json not found")
@pytest.mark.parametrize("run", RUNS)
@FIXTURES_OK
@given(batch=batches(ASSIGNED))
def test_wordpiece_in_hf(run, batch):
    wp, hf = bert_pair()
    batch = [no_surrogates(t) for t in batch]
    counted("hf-bert-wordpiece", batch)
    expected = [e.ids for e in hf.encode_batch(batch, add_special_tokens=False)]
    for text, want in zip(batch, expected):
        assert wp.encode(text).tolist() == want, f"WordPiece.from_file(bert).encode({text!r}) != HF"
        for skip in (False, True):
            assert wp.decode(want, skip_special_tokens=skip) == hf.decode(want, skip_special_tokens=skip), f"WordPiece decode of {text!r}"
    assert [x.tolist() for x in wp.encode_batch(batch)] == expected, f"WordPiece.encode_batch({batch!r}) != HF"


# -- the campaign: many strings per example --------------------------------------------------------


@functools.cache
def code_points_by_category() -> list[list[int]]:
    """Every code point assigned in Python's Unicode database (lone surrogates included), by
    general category: the generator picks a category, then a code point of it."""
    by: dict[str, list[int]] = {}
    for cp in range(sys.maxunicode + 1):
        cat = unicodedata.category(chr(cp))
        if cat != "Cn":
            by.setdefault(cat, []).append(cp)
    return [by[c] for c in sorted(by)]


class TextGenerator:
    """Random text of the kinds the hypothesis strategies above draw (characters of every
    category, whitespace and digit runs, contractions, words, special tokens, long pieces),
    some thousand times faster than drawing it with hypothesis."""

    WHITESPACE = " \t\n\r\x0b\x0c\x85\u00a0\u1680\u2000\u2028\u2029\u202f\u3000"
    DIGITS = "0123456789٠١٢٣٤५६߀๑²½"

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.categories = code_points_by_category()
        self.words = WORDS.elements
        self.contractions = CONTRACTIONS.elements

    def char(self) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.45:
            return chr(rng.randrange(0x20, 0x7F))
        if r < 0.6:
            return chr(rng.randrange(0x80, 0x800))
        cat = rng.choice(self.categories)
        return chr(rng.choice(cat))

    def chars(self, n: int) -> str:
        return "".join(self.char() for _ in range(n))

    def part(self) -> str:
        rng = self.rng
        kind = rng.random()
        if kind < 0.4:
            return self.chars(rng.randrange(13))
        if kind < 0.55:
            return "".join(rng.choice(self.WHITESPACE) for _ in range(rng.randrange(1, 41)))
        if kind < 0.65:
            return "".join(rng.choice(self.DIGITS) for _ in range(rng.randrange(1, 25)))
        if kind < 0.77:
            return rng.choice(self.contractions)
        if kind < 0.99:
            return rng.choice(self.words)
        return self.chars(rng.randrange(1, 4)) * rng.randrange(20, 601)

    def text(self) -> str:
        return "".join(self.part() for _ in range(self.rng.randrange(13)))


def campaign_batch_size() -> int:
    """Strings per example: 256 in a long run (the ``million`` and ``thorough`` profiles), 16
    otherwise (the default suite's twin stays quick)."""
    return 256 if active_settings.default.max_examples >= 1000 else 16


def check_tiktoken_batch(name: str, batch: list[str]) -> None:
    enc, ref = numtok.load(name), tiktoken_reference(name)
    expected = [ref.encode_ordinary(t) for t in batch]
    for text, want in zip(batch, expected):
        assert enc.encode_ordinary(text).tolist() == want, f"numtok.load({name!r}).encode_ordinary({text!r}) != tiktoken's"
        got = enc.encode(text, allowed_special="all").tolist()
        assert got == ref.encode(text, allowed_special="all"), f"numtok.load({name!r}).encode({text!r}, allowed_special='all') != tiktoken's"
        assert enc.decode(want) == no_surrogates(text), f"numtok.load({name!r}).decode(encode({text!r})) != the text"
    # The list form on two threads, and one Arrow form a batch, in turn.
    _ROTATION[name] += 1
    for form, threads in (("list", 2), (BATCH_FORMS[1 + _ROTATION[name] % (len(BATCH_FORMS) - 1)], 1)):
        got_batch = enc.encode_ordinary_batch(batch_form(batch, form), num_threads=threads).to_list()
        if got_batch != expected:
            bad = next(i for i, (g, w) in enumerate(zip(got_batch, expected)) if g != w)
            raise AssertionError(f"numtok.load({name!r}).encode_ordinary_batch(...) ({form}) != tiktoken's for {batch[bad]!r}")
        counted(f"{name}:batch-{form}", batch)


_ROTATION: collections.Counter = collections.Counter()


def check_offsets_batch(name: str, batch: list[str]) -> None:
    enc, hf = numtok.load(name), hf_of(name)
    fixed = [no_surrogates(t) for t in batch]  # HF's Python API takes no lone surrogates
    expected = hf.encode_batch(fixed, add_special_tokens=False)
    want_ids = [np.array(e.ids, dtype=np.int64) for e in expected]
    want_offsets = [np.array(e.offsets, dtype=np.int64).reshape(-1, 2) for e in expected]
    got = enc.encode_batch(fixed, allowed_special="all", offsets=True, num_threads=2)
    for i, text in enumerate(fixed):
        ids, offsets = enc.encode_with_offsets(text, allowed_special="all")
        assert np.array_equal(ids, want_ids[i]), f"numtok.load({name!r}).encode_with_offsets({text!r}) ids != HF's"
        assert np.array_equal(offsets, want_offsets[i]), f"numtok.load({name!r}).encode_with_offsets({text!r}) offsets != HF's"
        a, b = got.offsets[i], got.offsets[i + 1]
        assert np.array_equal(got.ids[a:b], ids) and np.array_equal(got.char_offsets[a:b], offsets), f"encode_batch(offsets=True) of {text!r}"


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("name", CORE)
@FIXTURES_OK
@given(seed=st.integers(0, 2**64 - 1))
def test_campaign(run, name, seed):
    gen = TextGenerator(seed)
    batch = [gen.text() for _ in range(campaign_batch_size())]
    check_tiktoken_batch(name, batch)
    counted(name, batch)
    check_offsets_batch(name, batch)
    counted(f"{name}:offsets", batch)
