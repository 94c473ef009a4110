"""Short calls (``encode/short_calls.py``, ``encode/_short_kernels.py``): a short text of a named
pattern encoded by one kernel entered with two ints, against tiktoken on real text in many
scripts and on generated text, and against numtok's general path for what tiktoken has no
counterpart of (merge mode, units, end-of-word, unknown token); the texts it hands to the
general path (str subclasses, lone surrogates, text past its buffer, bytes with no token),
threads, and its piece cache going back to the tokenizer."""

from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest
from conftest import DATA
from hypothesis import example, given
from hypothesis import strategies as st
from test_encode import CORE, SETTINGS, copy_of, ids, reference, sample_text
from test_multilingual import MULTILINGUAL, SEPARATOR

import numtok
from numtok.encode import short_calls
from numtok.encode.buffers import SHORT_BYTES
from numtok.encode.piece_cache import CHECK_BYTES, PieceCaches
from numtok.encode.short_calls import NoShortCalls, ShortCalls


def general(enc: numtok.Tokenizer) -> numtok.Tokenizer:
    """A copy of ``enc`` with no short-call path: everything through the general one."""
    other = copy_of(enc.name) if enc.name in CORE else enc
    other._short = NoShortCalls()
    return other


def short_texts() -> list[str]:
    """Short slices of the multilingual sample's documents and the mixed sample, of 0 to
    ~2,000 characters, cut anywhere (mid-word, mid-line)."""
    docs = (DATA / "multilingual_sample.txt").read_bytes().decode("utf-8").removesuffix("\n").split(SEPARATOR)
    docs.append(sample_text()[:50_000])
    rng = np.random.default_rng(7)
    out = ["", " ", "\n", "hello world", " " * 1000, "a" * 3000, "\u4e2d" * 1365]  # long pieces: bigger work arrays
    for doc in docs:
        for size in (1, 11, 90, 1000, 2000):
            for _ in range(3):
                start = int(rng.integers(0, max(1, len(doc) - size)))
                out.append(doc[start : start + size])
    return out


@pytest.mark.parametrize("name", CORE)
def test_short_texts_match_tiktoken(name):
    enc = numtok.load(name)
    ref = reference(name)
    texts = short_texts()
    for text in texts:
        want = ref.encode_ordinary(text)
        assert ids(enc.encode_ordinary(text)) == want, text[:40]
        assert enc.count_tokens(text) == len(want)
        assert ids(enc.encode(text)) == ref.encode(text)
    assert isinstance(enc._short, ShortCalls)  # the path these went through


@given(text=st.one_of(MULTILINGUAL, st.text(max_size=60), st.text(st.characters(codec="utf-8"), max_size=300)))
@example(text="\u00e9" * (SHORT_BYTES // 2 - 8))
@example(text="x" * (SHORT_BYTES - 16))
@example(text="x" * (SHORT_BYTES - 15))
@SETTINGS
def test_generated_short_texts_match_tiktoken(text):
    for name in CORE:
        want = reference(name).encode_ordinary(text)
        assert ids(numtok.load(name).encode_ordinary(text)) == want
        assert numtok.load(name).count_tokens(text) == len(want)


def test_texts_the_kernel_does_not_take():
    """A str subclass, a lone surrogate, a text past the buffer go to the general path, with
    the same ids; a non-str raises the general path's TypeError."""
    enc = numtok.load("cl100k_base")
    ref = reference("cl100k_base")

    class Sub(str):
        pass

    slow = general(enc)
    for text in (Sub("hello world"), "a\ud800b", "x" * (SHORT_BYTES + 1), "\U0001f600" * (SHORT_BYTES // 4)):
        assert ids(enc.encode_ordinary(text)) == ids(slow.encode_ordinary(text))
        if "\ud800" not in text:
            assert ids(enc.encode_ordinary(text)) == ref.encode_ordinary(text)
    with pytest.raises(TypeError, match="text must be a str, not bytes"):
        enc.encode_ordinary(b"hello")
    with pytest.raises(TypeError, match="text must be a str, not NoneType"):
        enc.count_tokens(None)


@pytest.fixture(scope="module")
def trained() -> dict[str, numtok.Tokenizer]:
    """Tokenizers of a named pattern that tiktoken has no counterpart of: merge mode, with an
    unknown token, characters as units with an end-of-word marker."""
    docs = (DATA / "multilingual_sample.txt").read_bytes().decode("utf-8").split(SEPARATOR)
    return {
        "merges": numtok.train_bpe(docs, 900, pattern="cl100k"),
        "chars": numtok.train_bpe(docs, 2600, units="chars", alphabet="observed", end_of_word="</w>", pattern="o200k"),
    }


@pytest.mark.parametrize("kind", ["merges", "chars"])
def test_trained_tokenizers_match_the_general_path(trained, kind):
    enc = trained[kind]
    slow = numtok.Tokenizer.__new__(numtok.Tokenizer)
    slow.__dict__.update(enc.__dict__)
    slow._short = NoShortCalls()
    for text in short_texts()[::3]:
        assert ids(enc.encode_ordinary(text)) == ids(slow.encode_ordinary(text)), text[:40]
    assert isinstance(enc._short, ShortCalls)


def test_a_byte_with_no_token_raises_as_the_general_path_does():
    enc = numtok.Tokenizer({b"a": 0, b"b": 1, b"ab": 2, b" ": 3}, pattern="gpt2")
    assert enc.encode_ordinary("ab ba").tolist() == [2, 3, 1, 0]
    with pytest.raises(ValueError) as got:
        enc.encode_ordinary("abc")
    slow = numtok.Tokenizer({b"a": 0, b"b": 1, b"ab": 2, b" ": 3}, pattern="gpt2")
    slow._short = NoShortCalls()
    with pytest.raises(ValueError) as want:
        slow.encode_ordinary("abc")
    assert str(got.value) == str(want.value)


def test_threads_each_have_a_context():
    enc = numtok.load("o200k_base")
    ref = reference("o200k_base")
    texts = short_texts()
    expected = [ref.encode_ordinary(t) for t in texts]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            assert list(pool.map(lambda t: ids(enc.encode_ordinary(t)), texts)) == expected


def test_the_piece_cache_goes_back_to_the_tokenizer():
    """After ``CHECK_BYTES`` of short text, the thread's cache goes back to the tokenizer's
    free list (which grows a crowded one) and another comes in; ids stay exact."""
    enc = copy_of("cl100k_base")
    ref = reference("cl100k_base")
    enc._piece_caches = PieceCaches()
    text = sample_text()
    lines = [line for line in text.splitlines() if 0 < len(line.encode()) <= 1000]
    done = 0
    for line in lines * 2:
        assert ids(enc.encode_ordinary(line)) == ref.encode_ordinary(line)
        done += len(line.encode())
        if done > CHECK_BYTES + 1000:
            break
    assert done > CHECK_BYTES
    assert enc._piece_caches.bytes_seen >= CHECK_BYTES  # given back and taken again, with the bytes it saw


def test_tuning_knobs_make_the_path_anew():
    enc = copy_of("cl100k_base")
    enc.encode_ordinary("hello")
    first = enc._short
    enc._heap_min = 2
    assert not isinstance(enc._short, ShortCalls)
    text = "The quick brown fox jumps over the lazy dog " * 3
    assert ids(enc.encode_ordinary(text)) == reference("cl100k_base").encode_ordinary(text)
    assert isinstance(enc._short, ShortCalls) and enc._short is not first
    enc._clear_caches()
    assert isinstance(enc._short, short_calls.Unbuilt)
