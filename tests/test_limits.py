"""Limits a pipeline meets: sizes taken from the corpus, never from a request; one rule for
``num_threads``; counts past int64; memory it cannot get; batches that run for hours."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hf_reference import hf_train, numtok_as_hf

import numtok

DATA = Path(__file__).parent / "data"
SRC = Path(numtok.__file__).resolve().parents[1]

# -- vocab_size sizes nothing -------------------------------------------------------------------


@pytest.mark.parametrize("vocab_size", [10**6, 10**12, 2**62])
def test_huge_vocab_size_trains_until_no_pair_is_left_like_hf(vocab_size):
    texts = ["hello world", "hello there, wonderful world"]
    tok = numtok.train_bpe(texts, vocab_size)
    # HF stops when no pair is left (asked for 10**6; it allocates by vocab_size and aborts the
    # process at 10**12); numtok must stop there too, with the same merges and ids.
    assert numtok_as_hf(tok) == hf_train(texts, 10**6)
    assert tok.n_vocab < 400


def test_vocab_size_past_int64_is_still_a_request_not_a_size(sample_lines):
    tok = numtok.train_bpe(sample_lines[:50], 2**70)
    assert tok.merges == numtok.train_bpe(sample_lines[:50], 10**9).merges
    counts = {"abcabc": 3, "bca": 2}
    assert numtok.train_bpe_from_counts(counts, 2**70).merges == numtok.train_bpe_from_counts(counts, 300).merges


# -- num_threads: one rule everywhere -----------------------------------------------------------


def _every_num_threads():
    enc = numtok.load("r50k_base")
    data = np.frombuffer(b"hello world", dtype=np.uint8)
    docs = np.array([[0, len(data)]])
    return {
        "train_bpe": lambda n: numtok.train_bpe(["hello world"], 300, num_threads=n),
        "train_bpe_from_counts": lambda n: numtok.train_bpe_from_counts({"ab": 2}, 300, num_threads=n),
        "encode_batch": lambda n: enc.encode_batch(["hello world"], num_threads=n),
        "encode_ordinary_batch": lambda n: enc.encode_ordinary_batch(["hello world"], num_threads=n),
        "split_bytes": lambda n: numtok.split_bytes(data, docs, "gpt2", num_threads=n),
        "split_bytes(regex)": lambda n: numtok.split_bytes(data, docs, r"\w+|\s+", num_threads=n),
    }


@pytest.mark.parametrize("api", list(_every_num_threads()))
def test_every_num_threads_follows_one_rule(api):
    call = _every_num_threads()[api]
    for bad in (0, -1, np.int64(0)):
        with pytest.raises(ValueError, match=r"num_threads must be an int >= 1 or None, got -?\d"):
            call(bad)
    for bad in (1.5, "2", True):
        with pytest.raises(TypeError, match=r"num_threads must be an int >= 1 or None, not (float|str|bool)"):
            call(bad)
    first = call(None)
    for good in (1, 2, np.int32(3)):
        again = call(good)
        if hasattr(first, "merges"):
            assert again.merges == first.merges
        else:
            assert np.array_equal(np.asarray(getattr(again, "ids", again)), np.asarray(getattr(first, "ids", first)))


# -- counts past int64 --------------------------------------------------------------------------


def test_count_past_int64_names_the_word_and_the_limit():
    with pytest.raises(ValueError, match=r"count of b'ab' is 1180591620717411303424, past the int64 limit .*2\*\*63 - 1"):
        numtok.train_bpe_from_counts({"ab": 2**70}, 300)
    with pytest.raises(ValueError, match=r"count of b'x' is 9223372036854775808"):
        numtok.train_bpe_from_counts({"ab": 1, "x": 2**63}, 300)
    # Each fits, but a pair's count would not: b"ab" occurs 2**62 * 3 times.
    with pytest.raises(ValueError, match="int64 limit of pair counts"):
        numtok.train_bpe_from_counts({"ab": 2**62, "abab": 2**62}, 300)
    top = 2**63 // 2 - 1  # one pair (two symbols) per word: the count itself is the total
    assert numtok.train_bpe_from_counts({"ab": top}, 300).merges == [(b"a", b"b")]
