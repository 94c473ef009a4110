"""Weighted training sources (numtok/train/weights.py): ``train_bpe({src: w})``, ``WordCounts * w``
and ``numtok train --weight``. An integer weight equals training on the source repeated."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numtok
from numtok import cli
from numtok.train.weights import scale_counts


def same_tokenizer(a, b) -> None:
    assert a.merges == b.merges
    assert a.vocab == b.vocab
    assert a.special_tokens == b.special_tokens


@pytest.fixture(scope="module")
def files(tmp_path_factory, sample_text):
    d = tmp_path_factory.mktemp("weighted")
    raw = sample_text.encode("utf-8")
    half = raw.index(b"\n", len(raw) // 2) + 1
    (d / "a.txt").write_bytes(raw[:half])
    (d / "b.txt").write_bytes(raw[half:])
    return str(d / "a.txt"), str(d / "b.txt")


@pytest.mark.parametrize("tie_break", ["hf", "first-seen"])
def test_integer_weights_equal_repeated_sources(files, tie_break):
    a, b = files
    options = dict(tie_break=tie_break, special_tokens=["<|endoftext|>"], show_progress=False)
    as_dict = numtok.train_bpe({a: 3, b: 1.0}, 900, **options)
    as_pairs = numtok.train_bpe([(a, 3.0), (b, 1)], 900, **options)
    repeated = numtok.train_bpe([a, a, a, b], 900, **options)
    same_tokenizer(as_dict, repeated)
    same_tokenizer(as_pairs, repeated)


def test_weighted_iterables_and_word_counts(sample_lines):
    lines = sample_lines[:400]
    repeated = numtok.train_bpe(lines * 2 + lines[:50], 600, show_progress=False)
    same_tokenizer(numtok.train_bpe({tuple(lines): 2, tuple(lines[:50]): 1}, 600, show_progress=False), repeated)
    counts = numtok.count_words(lines) * 2 + numtok.count_words(lines[:50])
    same_tokenizer(numtok.train_bpe_from_counts(counts, 600), repeated)
    once = numtok.count_words(lines)
    assert once * 3 == once + once + once
    assert (3 * once).corpus_bytes == 3 * once.corpus_bytes


def test_fractional_weights_round_halves_up():
    counts = np.array([0, 1, 2, 3, 5, 7, 2**40 + 1], dtype=np.int64)
    for w in (0.5, 1.5, 0.25, 2.75, 1e-3):
        assert scale_counts(counts, w).tolist() == [math.floor(c * w + 0.5) for c in counts.tolist()]
    assert scale_counts(counts, 4).tolist() == [c * 4 for c in counts.tolist()]
    wc = numtok.count_words(["aa bb aa"]) * 0.5
    assert dict(wc.items()) == {b"aa": 1, b" bb": 1, b" aa": 1}


def test_fractional_weight_trains_on_rounded_counts(sample_lines):
    lines = sample_lines[:300]
    expected = numtok.train_bpe_from_counts(numtok.count_words(lines) * 1.5 + numtok.count_words(lines[:40]), 500)
    same_tokenizer(numtok.train_bpe({tuple(lines): 1.5, tuple(lines[:40]): 1}, 500, show_progress=False), expected)


@pytest.mark.parametrize("weight", [0, -1, float("nan"), float("inf"), True, "2"])
def test_bad_weights(files, weight):
    with pytest.raises((ValueError, TypeError), match="weight"):
        numtok.train_bpe({files[0]: weight}, 300, show_progress=False)
    with pytest.raises((ValueError, TypeError), match="weight"):
        numtok.count_words(["a b"]) * weight


def test_huge_weighted_count_is_refused():
    with pytest.raises(ValueError, match="int64"):
        scale_counts(np.array([2**62]), 3)


def test_cli_weight(files, tmp_path, capsys):
    a, b = files
    out = tmp_path / "w.json"
    assert cli.main(["train", "-q", b, "--weight", f"{a}=2", "--vocab-size", "700", "-o", str(out)]) == 0
    same_tokenizer(numtok.Tokenizer.from_file(out), numtok.train_bpe([b, a, a], 700, show_progress=False))
    for bad, words in [(f"{a}=0", "above 0"), (f"{a}=nan", "above 0"), (f"{a}=x", "not a number"), ("=2", "PATH=W")]:
        assert cli.main(["train", "-q", "--weight", bad, "--vocab-size", "700", "-o", str(tmp_path / "x.json")]) == 2
        assert words in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    assert cli.main(["train", "-q", "--vocab-size", "700", "-o", str(tmp_path / "x.json")]) == 2
    assert "no input" in capsys.readouterr().err
