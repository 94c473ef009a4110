"""Vocabulary-size sweeps: a prefix of a long run equals training to that size (merges and ids),
``numtok.sweep``'s rows equal ``numtok.evaluate`` of each prefix, ``numtok sweep`` and bad sizes."""

from __future__ import annotations

import csv

import pytest
from conftest import DATA, JIT_OFF

import numtok
from numtok import cli
from numtok.train.prefix import smallest_prefix, vocab_prefix


def same_tokenizer(a, b) -> None:
    assert a.merges == b.merges
    assert a.vocab == b.vocab
    assert a.special_tokens == b.special_tokens
    assert a.pattern == b.pattern


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, sample_text) -> dict:
    d = tmp_path_factory.mktemp("sweep")
    raw = sample_text.encode("utf-8")
    (d / "train.txt").write_bytes(raw)
    multi = (DATA / "multilingual_sample.txt").read_bytes()
    (d / "heldout.txt").write_bytes(multi[: multi.index(b"\n", len(multi) // (8 if JIT_OFF else 2)) + 1])
    return {"train": str(d / "train.txt"), "heldout": str(d / "heldout.txt")}


@pytest.mark.parametrize(
    "options",
    [dict(), dict(pattern="cl100k", special_tokens=["<|endoftext|>", "<pad>"], tie_break="first-seen", max_token_length=6)],
)
def test_prefix_equals_training_to_that_size(corpus, options):
    top = 1500 if not JIT_OFF else 400
    big = numtok.train_bpe(corpus["train"], top, **options)
    for k in (258 + len(options.get("special_tokens", ())), 300, 777, top - 1, top):
        if k <= top:
            same_tokenizer(vocab_prefix(big, k), numtok.train_bpe(corpus["train"], k, **options))


def test_every_prefix_of_a_small_run():
    text = ["ab c", "a bc", "abc abc abc", "a b c ab bc", "cab cab"] * 5
    options = dict(pattern=r"\S+|\s+", alphabet="observed")
    big = numtok.train_bpe(text, 300, **options)
    for k in range(smallest_prefix(big), big.n_vocab + 1):
        same_tokenizer(vocab_prefix(big, k), numtok.train_bpe(text, k, **options))


def test_prefix_bad_sizes(corpus):
    big = numtok.train_bpe(corpus["train"], 400)
    for k in (255, 401):
        with pytest.raises(ValueError, match="outside the sizes"):
            vocab_prefix(big, k)


def test_sweep_rows_equal_evaluate_of_each_prefix(corpus):
    sizes = [300, 600, 1000] if not JIT_OFF else [300, 350]
    result = numtok.sweep(corpus["train"], sizes, corpus["heldout"], special_tokens=["<|endoftext|>"])
    assert result.sizes == sizes
    for k in sizes:
        tok = result.tokenizer_of(k)
        same_tokenizer(tok, numtok.train_bpe(corpus["train"], k, special_tokens=["<|endoftext|>"]))
        mine = [r for r in result.rows if r["vocab_size"] == k]
        theirs = numtok.evaluate({f"bpe-{k}": tok}, corpus["heldout"])
        assert mine == theirs


def test_sweep_by_field_and_weighted(corpus, tmp_path):
    import json

    held = tmp_path / "h.jsonl"
    with open(held, "w", encoding="utf-8") as f:
        for i, line in enumerate(open(corpus["heldout"], encoding="utf-8")):
            f.write(json.dumps({"text": line, "lang": "ab"[i % 2]}) + "\n")
    result = numtok.sweep({corpus["train"]: 2}, [300, 500], str(held), group_by="lang")
    same_tokenizer(result.tokenizer, numtok.train_bpe([corpus["train"]] * 2, 500))
    assert [r for r in result.rows if r["vocab_size"] == 300] == numtok.evaluate({"bpe-300": result.tokenizer_of(300)}, str(held),
                                                                                    group_by="lang")


@pytest.mark.parametrize(
    "sizes, options, words",
    [([200, 300], {}, "below 256"), ([300, 257], dict(special_tokens=["<s>", "</s>"]), "below 258"),
     ([300, 600], dict(train_size=500), "above the training size"), ([], {}, "one or more")],
)
def test_sweep_bad_sizes_fail_before_training(corpus, sizes, options, words):
    with pytest.raises(ValueError, match=words):
        numtok.sweep("/no/such/file.txt", sizes, corpus["heldout"], **options)


def test_sweep_past_the_pairs_left():
    with pytest.raises(ValueError, match="training stopped"):
        numtok.sweep(["ab ab"], [257, 300], ["ab"])


def test_cli_sweep(corpus, tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "-q", corpus["train"], "--vocab-sizes", "300,500", "--eval", corpus["heldout"], "-o", str(out), "--save-tokenizers"]
    assert cli.main(argv) == 0
    assert "bpe-500" in capsys.readouterr().out
    with open(out / "report.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {"tokenizer", "vocab_size", "group", "bytes", "tokens", "bytes_per_token"} <= set(rows[0])
    assert sorted({int(r["vocab_size"]) for r in rows}) == [300, 500]
    for k in (300, 500):
        same_tokenizer(numtok.Tokenizer.from_file(out / f"tokenizer-{k}.json"), numtok.train_bpe(corpus["train"], k))
    assert (out / "report.png").exists()
    bad = tmp_path / "bad"
    for sizes, words in [("100,300", "below 256"), ("300,x", "integers")]:
        assert cli.main(["sweep", "-q", corpus["train"], "--vocab-sizes", sizes, "--eval", corpus["heldout"], "-o", str(bad)]) == 2
        assert words in capsys.readouterr().err
    assert cli.main(["sweep", "-q", corpus["train"], "--vocab-sizes", "300", "--eval", corpus["heldout"], "--save-tokenizers"]) == 2
    assert "-o DIR" in capsys.readouterr().err
    assert not bad.exists()
