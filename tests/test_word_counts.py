"""Mergeable word counts: count_words, WordCounts (+, ==, pickle, save/load), train_bpe_from_counts,
and the line-aligned file ranges the Dask layer counts in parallel."""

from __future__ import annotations

import gzip
import json
import os
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from naive_bpe import pretokenize_naive
from naive_word_counts import gather_naive, merge_naive

import numtok
from numtok.io.file_ranges import byte_ranges, iter_range_chunks
from numtok.io.sources import iter_chunks
from numtok.pretokenizers.patterns import NAMED_PATTERNS
from numtok.train.word_counts import WordCounts
from numtok.train.words import gather_words


def table(counts: dict[bytes, int], **kw) -> WordCounts:
    words = list(counts)
    offsets = np.cumsum([0] + [len(w) for w in words])
    return WordCounts(np.frombuffer(b"".join(words), dtype=np.uint8), offsets, np.array(list(counts.values()), dtype=np.int64), **kw)


def as_dict(wc: WordCounts) -> dict[bytes, int]:
    return dict(wc.items())


def same_tokenizer(a, b) -> None:
    assert a.merges == b.merges
    assert a.vocab == b.vocab
    assert a.special_tokens == b.special_tokens


# -- counting ------------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", list(NAMED_PATTERNS))
def test_count_words_matches_the_naive_pretokenizer(sample_lines, pattern):
    wc = numtok.count_words(sample_lines, pattern=pattern)
    expected = pretokenize_naive(sample_lines, NAMED_PATTERNS[pattern])
    assert list(wc.items()) == list(expected.items())  # first-seen order too
    assert wc.total == sum(expected.values()) and len(wc) == len(expected)
    assert wc.corpus_bytes == sum(len(s.encode()) for s in sample_lines)


def test_two_counting_threads_give_first_seen_order(sample_lines):
    one = numtok.count_words(sample_lines * 3, num_threads=1)
    two = numtok.count_words(sample_lines * 3, num_threads=2)
    assert list(one.items()) == list(two.items())


def test_shards_sum_to_the_whole(sample_lines):
    cuts = [0, 700, 701, 3000, len(sample_lines)]
    shards = [numtok.count_words(sample_lines[a:b], special_tokens=["<|endoftext|>"]) for a, b in zip(cuts, cuts[1:])]
    whole = numtok.count_words(sample_lines, special_tokens=["<|endoftext|>"])
    total = sum(shards)
    assert list(total.items()) == list(whole.items())
    assert total.corpus_bytes == whole.corpus_bytes


def test_gather_kernel_matches_naive():
    rng = np.random.default_rng(0)
    words = [bytes(rng.integers(0, 256, rng.integers(1, 20)).astype(np.uint8)) for _ in range(300)]
    bounds = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    counts = rng.integers(1, 2**62, 300)
    store = np.frombuffer(b"".join(words), dtype=np.uint8)
    for order in (np.arange(300), rng.permutation(300), rng.permutation(300)[:50], np.zeros(0, dtype=np.int64)):
        packed, offsets, gathered = gather_words(store, bounds, counts, order)
        expected_packed, expected_offsets, expected_counts = gather_naive(words, counts.tolist(), order)
        assert packed.tobytes() == expected_packed
        assert offsets.tolist() == expected_offsets
        assert gathered.tolist() == expected_counts


# -- merging against a Counter -----------------------------------------------------------------

words_st = st.binary(min_size=1, max_size=12)
counts_st = st.one_of(st.integers(1, 5), st.integers(2**31 - 3, 2**31 + 3), st.integers(2**40, 2**60))
tables_st = st.dictionaries(words_st, counts_st, max_size=40)


@st.composite
def near_tables(draw):
    """Tables whose words often differ in a single byte (or only in length) from each other's."""
    base = draw(st.lists(st.binary(min_size=1, max_size=20), min_size=1, max_size=10))
    words = []
    for w in base:
        words.append(w)
        i = draw(st.integers(0, len(w) - 1))
        words.append(w[:i] + bytes([(w[i] + draw(st.integers(1, 255))) % 256]) + w[i + 1:])
        words.append(w + b"\0")
    return [{w: draw(counts_st) for w in draw(st.lists(st.sampled_from(words), unique=True))} for _ in range(3)]


@given(tables_st, tables_st, tables_st)
def test_merge_matches_counter(a, b, c):
    ta, tb, tc = table(a), table(b), table(c)
    assert as_dict(ta + tb) == merge_naive(a, b)
    assert list((ta + tb).items()) == list(merge_naive(a, b).items())  # a's words, then b's new ones
    assert list(((ta + tb) + tc).items()) == list((ta + (tb + tc)).items())  # associative, order too
    assert ta + tb == tb + ta  # commutative as a mapping
    assert (ta + tb).total == sum(a.values()) + sum(b.values())


@given(near_tables())
def test_merge_of_words_one_byte_apart(tables):
    a, b, c = tables
    merged = table(a) + table(b) + table(c)
    assert list(merged.items()) == list(merge_naive(a, b, c).items())


def test_counts_beyond_32_bits_stay_exact():
    big = 2**31 + 7
    wc = table({b"hello": big, b"world": 3}) + table({b"hello": big, b"hellp": 2**62})
    assert as_dict(wc) == {b"hello": 2 * big, b"world": 3, b"hellp": 2**62}
    assert wc.counts.dtype == np.int64


def test_equality_sees_counts_and_words():
    a = table({b"ab": 2, b"cd": 1})
    assert a == table({b"cd": 1, b"ab": 2})
    assert a != table({b"ab": 1, b"cd": 2})
    assert a != table({b"ab": 2, b"ce": 1})
    assert a != table({b"ab": 2, b"cd": 1}, pattern="cl100k")
    assert table({}) == table({}) and table({}) + a == a == a + table({})


# -- pickling, files -----------------------------------------------------------------------------


def test_pickle_is_the_arrays(sample_lines):
    wc = numtok.count_words(sample_lines, pattern="cl100k", special_tokens=["<s>"])
    blob = pickle.dumps(wc, protocol=5)
    assert len(blob) <= 1.2 * (wc.words.nbytes + wc.counts.nbytes)  # lengths, not offsets: a byte a word
    back = pickle.loads(blob)
    assert list(back.items()) == list(wc.items())
    assert (back.pattern, back.special_tokens, back.corpus_bytes) == ("cl100k", ("<s>",), wc.corpus_bytes)


def test_save_and_load(tmp_path, sample_lines):
    wc = numtok.count_words(sample_lines, pattern="o200k", special_tokens=["<a>", "<b>"])
    path = tmp_path / "counts.npz"
    wc.save(path)
    back = numtok.WordCounts.load(path)
    assert list(back.items()) == list(wc.items())
    assert (back.pattern, back.special_tokens, back.corpus_bytes) == (wc.pattern, wc.special_tokens, wc.corpus_bytes)
    assert os.listdir(tmp_path) == ["counts.npz"]
    assert os.path.getsize(path) <= 1.2 * (wc.words.nbytes + wc.counts.nbytes) + 4096


def test_long_words_pickle_and_save(tmp_path):
    wc = table({b"x" * 70_000: 2**40, b"y": 1, b"z" * 300: 5})
    assert list(pickle.loads(pickle.dumps(wc)).items()) == list(wc.items())
    wc.save(tmp_path / "w.npz")
    assert list(numtok.WordCounts.load(tmp_path / "w.npz").items()) == list(wc.items())


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a WordCounts file"):
        numtok.WordCounts.load(bad)
    np.savez(tmp_path / "y.npz", words=np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="not a WordCounts file"):
        numtok.WordCounts.load(tmp_path / "y.npz")
    with pytest.raises(FileNotFoundError):
        numtok.WordCounts.load(tmp_path / "missing.npz")


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    wc = table({b"a": 1})

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError, match="disk full"):
        wc.save(tmp_path / "c.npz")
    assert os.listdir(tmp_path) == []


# -- training from counts == training on the text ------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(pattern="cl100k", min_frequency=3),
        dict(pattern="o200k", special_tokens=["<|endoftext|>", "<pad>"]),
        dict(pattern="r50k", tie_break="first-seen", max_token_length=6),
        dict(pattern=r"\S+|\s+", unk_token="<unk>", special_tokens=["<s>"], alphabet="observed"),
        dict(units="chars", alphabet="observed", end_of_word="</w>", min_frequency=2),
    ],
)
def test_train_from_summed_shards_equals_train_bpe(sample_lines, options):
    lines = [s.replace("the ", "the <s> ", 1) for s in sample_lines]
    counting = {k: options[k] for k in ("pattern",) if k in options}
    specials = list(options.get("special_tokens", [])) + ([options["unk_token"]] if "unk_token" in options else [])
    shards = [numtok.count_words(lines[a:b], special_tokens=specials, **counting)
              for a, b in [(0, 2500), (2500, 2501), (2501, len(lines))]]
    total = shards[0] + shards[1] + shards[2]
    expected = numtok.train_bpe(lines, 1500, **options)
    same_tokenizer(numtok.train_bpe_from_counts(total, 1500, **options), expected)


def test_pattern_and_specials_default_to_the_counted_ones(sample_lines):
    wc = numtok.count_words(sample_lines, pattern="cl100k", special_tokens=["<b>", "<a>"])
    tok = numtok.train_bpe_from_counts(wc, 700)
    same_tokenizer(tok, numtok.train_bpe(sample_lines, 700, pattern="cl100k", special_tokens=["<b>", "<a>"]))
    assert tok.pattern == "cl100k"


def test_from_files(tmp_path, sample_text):
    raw = sample_text.encode()
    (tmp_path / "a.txt").write_bytes(raw[:100_000])
    with gzip.open(tmp_path / "b.jsonl.gz", "wt", encoding="utf-8") as f:
        for p in sample_text[100_000:].split("\n\n"):
            f.write(json.dumps({"body": p}) + "\n")
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.jsonl.gz")]
    total = numtok.count_words(files[0]) + numtok.count_words(files[1], field="body")
    same_tokenizer(numtok.train_bpe_from_counts(total, 1000), numtok.train_bpe(files, 1000, field="body"))


# -- bad input -----------------------------------------------------------------------------------


def test_mixing_patterns_or_specials_is_refused():
    with pytest.raises(ValueError, match="different patterns"):
        table({b"a": 1}) + table({b"a": 1}, pattern="cl100k")
    with pytest.raises(ValueError, match="different special tokens"):
        table({b"a": 1}, special_tokens=["<s>"]) + table({b"a": 1})
    assert table({b"a": 1}, pattern="gpt2") + table({b"a": 1}, pattern=NAMED_PATTERNS["gpt2"]) == table({b"a": 2})
    with pytest.raises(TypeError):
        table({b"a": 1}) + {b"a": 1}


def test_training_options_must_match_the_counting(sample_lines):
    wc = numtok.count_words(sample_lines[:200], pattern="cl100k", special_tokens=["<s>"])
    with pytest.raises(ValueError, match="split with pattern 'cl100k', not 'gpt2'"):
        numtok.train_bpe_from_counts(wc, 600, pattern="gpt2")
    with pytest.raises(ValueError, match="special tokens"):
        numtok.train_bpe_from_counts(wc, 600, special_tokens=["<s>", "<pad>"])
    with pytest.raises(ValueError, match="unk_token included"):
        numtok.train_bpe_from_counts(wc, 600, unk_token="<unk>")
    same_tokenizer(numtok.train_bpe_from_counts(numtok.count_words(sample_lines[:200], special_tokens=["<unk>"]), 600, unk_token="<unk>"),
                   numtok.train_bpe(sample_lines[:200], 600, unk_token="<unk>"))


def test_bad_arrays_are_refused():
    with pytest.raises(ValueError, match="offsets"):
        WordCounts(np.zeros(3, np.uint8), np.array([0, 3]), np.array([1, 2]))
    with pytest.raises(ValueError, match="non-empty"):
        WordCounts(np.zeros(3, np.uint8), np.array([0, 0, 3]), np.array([1, 2]))
    with pytest.raises(ValueError, match="unknown pattern"):
        table({b"a": 1}, pattern="gtp2")
    with pytest.raises(ValueError, match="empty"):
        numtok.train_bpe_from_counts(table({}), 300)


# -- file ranges ---------------------------------------------------------------------------------


def sequences(chunks) -> list[bytes]:
    return [bytes(c.data[s:e]) for c in chunks for s, e in c.docs]


@pytest.mark.parametrize("suffix", [".txt", ".jsonl"])
@pytest.mark.parametrize("range_bytes", [97, 1000, 33_333, 10**9])
def test_ranges_read_the_whole_file_once(tmp_path, sample_text, suffix, range_bytes):
    path = str(tmp_path / ("c" + suffix))
    text = sample_text[:60_000] + "\n\nno newline at the end <s> x"
    if suffix == ".jsonl":
        text = "".join(json.dumps({"text": line}) + "\n" for line in text.split("\n"))
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    whole = sequences(iter_chunks(path, special_tokens=["<s>"]))
    ranges = byte_ranges(os.path.getsize(path), range_bytes)
    ranges[-1] = (ranges[-1][0], None)
    parts = [seq for a, b in ranges for seq in sequences(iter_range_chunks(path, a, b, chunk_bytes=4096, special_tokens=["<s>"]))]
    assert parts == whole


def test_range_errors_name_file_line_and_offset(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a"}\n' * 50 + "oops\n")
    with pytest.raises(ValueError, match=r"c.jsonl: line 51 is not a JSON object"):
        list(iter_range_chunks(str(path), 300, None))
    txt = tmp_path / "c.txt"
    txt.write_bytes(b"abc\n" * 100 + b"\xff\n")
    with pytest.raises(ValueError, match=r"c.txt: not valid UTF-8 at byte offset 400"):
        list(iter_range_chunks(str(txt), 200, None))
