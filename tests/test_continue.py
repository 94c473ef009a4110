"""Continued training (``train_bpe(..., base=...)``): the base is kept, training on top of it is
training from scratch continued, and the result encodes as its definition says, in numtok and
through HF tokenizers after ``save``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA
from hypothesis import given
from hypothesis import strategies as st
from naive_bpe import apply_merge, continue_naive, encode_continued_naive, pretokenize_naive
from unicode_reference import agreed

import numtok
from numtok.pretokenizers.patterns import NAMED_PATTERNS, resolve_pattern
from numtok.train import _kernels as train_kernels


@pytest.fixture(scope="module")
def multilingual_lines() -> list[str]:
    return (DATA / "multilingual_sample.txt").read_text(encoding="utf-8").splitlines(keepends=True)


def assert_same_tokenizer(a, b):
    assert a.merges == b.merges
    assert a.vocab == b.vocab
    assert a.special_tokens == b.special_tokens
    assert resolve_pattern(a.pattern) == resolve_pattern(b.pattern)


def real_text(sample_lines, multilingual_lines) -> str:
    return "".join(sample_lines[:1500] + multilingual_lines[:400])


# -- continuing N merges to M equals training M -----------------------------------------------------


@pytest.mark.parametrize("tie_break", ["hf", "first-seen"])
@pytest.mark.parametrize("pattern", ["gpt2", "o200k"])
def test_continuing_equals_training_from_scratch_on_real_text(sample_lines, multilingual_lines, tie_break, pattern):
    lines = sample_lines[:2500] + multilingual_lines
    kw = dict(pattern=pattern, tie_break=tie_break, special_tokens=["<|endoftext|>"])
    full = numtok.train_bpe(lines, 1500, **kw)
    part = numtok.train_bpe(lines, 600, **kw)
    more = numtok.train_bpe(lines, 1500, base=part, tie_break=tie_break)
    assert more.merges[: len(part.merges)] == part.merges
    assert_same_tokenizer(more, full)
    text = real_text(sample_lines, multilingual_lines)
    assert np.array_equal(more.encode_ordinary(text), full.encode_ordinary(text))


@st.composite
def corpora(draw):
    alphabet = draw(st.sampled_from(["ab", "aab", "abc", "xyz ", "ab \n", "aé日 ", "\u00e9\u0301a", "abcd"]))
    words = st.text(alphabet=alphabet, min_size=0, max_size=30)
    return draw(st.lists(words, min_size=1, max_size=25))


@given(corpora(), st.integers(257, 300), st.integers(0, 40), st.sampled_from(["hf", "first-seen"]),
       st.sampled_from([None, 3]), st.sampled_from([r"\S+|\s+", "gpt2"]))
def test_continuing_equals_training_from_scratch_on_generated_text(sequences, n, extra, tie_break, max_len, pattern):
    if not any(sequences):
        return
    kw = dict(tie_break=tie_break, max_token_length=max_len)
    part = numtok.train_bpe(sequences, n, pattern=pattern, **kw)
    full = numtok.train_bpe(sequences, n + extra, pattern=pattern, **kw)
    if len(part.vocab) < n:  # training stopped early: nothing left to continue with
        return
    more = numtok.train_bpe(sequences, n + extra, base=part, **kw) if extra else part
    assert_same_tokenizer(more, full)
    # The naive reference agrees: the base's merges applied in order, then greedy merges.
    counts = pretokenize_naive(sequences, NAMED_PATTERNS.get(pattern, pattern))
    merges, vocab = continue_naive(counts, part.vocab, part.merges, n + extra, **kw)
    assert more.merges == part.merges + merges
    assert more.vocab == vocab


def test_empty_corpus_gives_the_base(sample_lines):
    part = numtok.train_bpe(sample_lines[:500], 400, special_tokens=["<s>"])
    for empty in ([], [""], ["", ""]):
        assert_same_tokenizer(numtok.train_bpe(empty, 900, base=part), part)
    r50k = numtok.load("r50k_base")
    same = numtok.train_bpe([], r50k.n_vocab + 10, base="r50k_base")
    assert_same_tokenizer(same, r50k)
    text = "".join(sample_lines[:400])
    assert np.array_equal(same.encode_ordinary(text), r50k.encode_ordinary(text))


# -- the merge list applied in order (a base whose ids are re-used) -------------------------------


@given(st.lists(st.text(alphabet="abc", min_size=1, max_size=12), min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=12))
def test_replay_kernel_applies_merges_in_order(words, pair_picks):
    # Merges over a growing vocabulary; some make a token that already exists (a re-used id).
    vocab = {b"a": 0, b"b": 1, b"c": 2}
    tokens = [b"a", b"b", b"c"]
    merges = []
    for i, j in pair_picks:
        a, b = tokens[i % len(tokens)], tokens[j % len(tokens)]
        merges.append((a, b))
        if a + b not in vocab:
            vocab[a + b] = len(tokens)
            tokens.append(a + b)
    encoded = [w.encode() for w in words]
    sym = np.array([vocab[bytes([x])] for w in encoded for x in w], dtype=np.int32)
    lens = np.array([len(w) for w in encoded], dtype=np.int64)
    starts = np.cumsum(lens) - lens
    ids = [np.array([vocab[x] for x in column], dtype=np.int64) for column in zip(*merges)] if merges else [np.zeros(0, np.int64)] * 2
    results = np.array([vocab[a + b] for a, b in merges], dtype=np.int64)
    train_kernels._replay_merges(sym, starts, lens, ids[0], ids[1], results)
    for w, s, n in zip(encoded, starts.tolist(), lens.tolist()):
        symbols = [bytes([x]) for x in w]
        for a, b in merges:
            apply_merge(symbols, a, b)
        assert [tokens[i] for i in sym[s : s + n].tolist()] == symbols


@given(st.lists(st.text(alphabet="abcd ", min_size=1, max_size=12), min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=8),
       st.sampled_from(["hf", "first-seen"]))
def test_base_with_re_used_ids_is_applied_in_order(sequences, pair_picks, tie_break):
    # "abc" is made twice, by (ab, c) and later by (a, bc): in order, "abcd" ends as [abc, d]
    # ((abc, d) came before "abc" could exist there), while merging by priority would go on to
    # "abcd". The words start as the list applied in order: what training made.
    vocab = {bytes([b]): b for b in range(256)}
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c"), (b"abc", b"d"), (b"a", b"bc")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tokens = [b"a", b"b", b"c", b"d", b" "] + list(vocab)[256:]
    for i, j in pair_picks:
        a, b = tokens[i % len(tokens)], tokens[j % len(tokens)]
        if (a, b) not in merges:
            merges.append((a, b))
            if a + b not in vocab:
                vocab[a + b] = len(vocab)
                tokens.append(a + b)
    base = numtok.Tokenizer(vocab, merges=merges, pattern=r"\S+|\s+")
    tok = numtok.train_bpe(sequences, base.n_vocab + 15, base=base, tie_break=tie_break)
    counts = pretokenize_naive(sequences, r"\S+|\s+")
    new, expected_vocab = continue_naive(counts, vocab, merges, base.n_vocab + 15, tie_break=tie_break)
    assert tok.merges == merges + new
    assert tok.vocab == expected_vocab


def test_in_order_differs_from_priority_on_re_used_ids():
    vocab = {bytes([b]): b for b in range(256)}
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c"), (b"abc", b"d"), (b"a", b"bc")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    base = numtok.Tokenizer(vocab, merges=merges, pattern=r"\S+|\s+")
    assert base.encode("abcd").tolist() == [vocab[b"abcd"]]  # priority: (abc, d) after (a, bc)
    tok = numtok.train_bpe(["abcd"] * 3, base.n_vocab + 1, base=base)
    assert tok.merges[-1] == (b"abc", b"d")  # in order, the word was [abc, d]


# -- bundled (rank-mode) bases ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_bundled_base_encodes_as_ranks_then_new_merges(sample_lines, multilingual_lines, name, tmp_path):
    enc = numtok.load(name)
    lines = sample_lines[:1200] + multilingual_lines[:300]
    tok = numtok.train_bpe(lines, enc.n_vocab + 150, base=name)
    assert tok.n_vocab == enc.n_vocab + 150
    assert tok.special_tokens == enc.special_tokens
    new = tok.merges[len(enc.merges):]
    assert len(new) > 0 and tok.merges[: len(enc.merges)] == enc.merges
    base_vocab = {t: i for t, i in enc.vocab.items() if t.decode("utf-8", "replace") not in enc.special_tokens}
    vocab = tok.vocab
    assert all(vocab[t] == i for t, i in base_vocab.items())
    assert sorted(i for t, i in vocab.items() if t not in base_vocab and t.decode("utf-8", "replace") not in enc.special_tokens) == \
        list(range(enc.n_vocab, tok.n_vocab))
    # The new merges are those the naive trainer learns on the words split by the ranks.
    counts = pretokenize_naive(lines, NAMED_PATTERNS[enc.pattern])
    merges, _ = continue_naive(counts, base_vocab, None, tok.n_vocab, rank_mode=True, n_vocab=enc.n_vocab)
    assert new == merges
    # Encoding: the ranks, then the new merges; on text it learned from and on other text.
    text = "".join(sample_lines[1200:1500] + multilingual_lines[300:400] + lines[:100])
    expected = encode_continued_naive(text, NAMED_PATTERNS[enc.pattern], base_vocab, new, vocab)
    assert tok.encode_ordinary(text).tolist() == expected
    # Saved and read back (numtok and HF tokenizers), and pickled.
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    back = numtok.Tokenizer.from_file(path)
    assert back.encode_ordinary(text).tolist() == expected
    from tokenizers import Tokenizer as HFTokenizer

    assert HFTokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids == expected
    import pickle

    assert pickle.loads(pickle.dumps(tok)).encode_ordinary(text).tolist() == expected


# The reference splits with the installed regex, whose Unicode tables may be newer than numtok's.
AGREED = agreed(st.characters(codec="utf-8", exclude_categories=("Cs",)))


@given(st.text(alphabet=AGREED, max_size=60))
def test_bundled_base_encodes_generated_text_as_reference(text):
    tok, enc, new = _r50k_continued()
    base_vocab = {t: i for t, i in enc.vocab.items() if t != b"<|endoftext|>"}
    expected = encode_continued_naive(text, NAMED_PATTERNS["r50k"], base_vocab, new, tok.vocab)
    assert tok.encode_ordinary(text).tolist() == expected


_CACHE: dict = {}


def _r50k_continued():
    if not _CACHE:
        lines = (DATA / "sample_mixed.txt").read_text(encoding="utf-8").splitlines(keepends=True)
        enc = numtok.load("r50k_base")
        tok = numtok.train_bpe(lines[:1500], enc.n_vocab + 200, base=enc)
        _CACHE["tok"] = (tok, enc, tok.merges[len(enc.merges):])
    return _CACHE["tok"]


# -- what a base may be -----------------------------------------------------------------------------


def test_every_kind_of_base_gives_the_same_result(sample_lines, multilingual_lines, tmp_path):
    lines = sample_lines[:1500]
    part = numtok.train_bpe(lines, 500, pattern="cl100k", special_tokens=["<|endoftext|>"])
    expected = numtok.train_bpe(multilingual_lines, 900, base=part)
    part.save(tmp_path / "tokenizer.json")
    part.save_tiktoken(tmp_path / "part.tiktoken")
    from tokenizers import Tokenizer as HFTokenizer

    hf = HFTokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for base in (tmp_path / "tokenizer.json", str(tmp_path / "tokenizer.json"), str(tmp_path),
                 numtok.Tokenizer.from_file(tmp_path / "tokenizer.json"), hf):
        assert_same_tokenizer(numtok.train_bpe(multilingual_lines, 900, base=base), expected)
    # A rank file (and a tiktoken.Encoding) of the same tokens: tiktoken's rule splits the words
    # as the merges do on this text, so the new merges agree.
    import tiktoken

    mergeable = {t: i for t, i in part.vocab.items() if t != b"<|endoftext|>"}
    tt = tiktoken.Encoding("part", pat_str=NAMED_PATTERNS["cl100k"], mergeable_ranks=mergeable,
                           special_tokens={"<|endoftext|>": 0})
    for base in (str(tmp_path / "part.tiktoken"), tt):
        got = numtok.train_bpe(multilingual_lines, 900, base=base)
        assert got.merges[len(part.merges):] == expected.merges[len(part.merges):]
        assert got.vocab == expected.vocab


def test_continued_tokenizer_encodes_like_hf_after_save(sample_lines, multilingual_lines, tmp_path):
    from tokenizers import Tokenizer as HFTokenizer

    part = numtok.train_bpe(sample_lines, 700, pattern="o200k", special_tokens=["<|endoftext|>"])
    tok = numtok.train_bpe(multilingual_lines, 1600, base=part, special_tokens=["<pad>"])
    tok.save(tmp_path / "t.json")
    text = real_text(sample_lines, multilingual_lines) + "<pad> and <|endoftext|>"
    hf = HFTokenizer.from_file(str(tmp_path / "t.json"))
    ids = tok.encode(text, allowed_special="all").tolist()
    assert hf.encode(text, add_special_tokens=False).ids == ids
    assert numtok.Tokenizer.from_file(tmp_path / "t.json").encode(text, allowed_special="all").tolist() == ids


def test_from_counts_and_cli(sample_lines, multilingual_lines, tmp_path):
    from numtok import cli

    part = numtok.train_bpe(sample_lines, 600, special_tokens=["<|endoftext|>"])
    part.save(tmp_path / "base.json")
    expected = numtok.train_bpe(multilingual_lines, 1000, base=part)
    counts = numtok.count_words(multilingual_lines)
    assert_same_tokenizer(numtok.train_bpe_from_counts(counts, 1000, base=part), expected)
    as_dict = dict((w, c) for w, c in counts.items())
    assert_same_tokenizer(numtok.train_bpe_from_counts(as_dict, 1000, base=part), expected)
    corpus = tmp_path / "new.txt"
    corpus.write_text("".join(multilingual_lines), encoding="utf-8")
    assert cli.main(["train", "-q", str(corpus), "--vocab-size", "1000", "--base", str(tmp_path / "base.json"),
                     "-o", str(tmp_path / "out.json")]) == 0
    assert_same_tokenizer(numtok.Tokenizer.from_file(tmp_path / "out.json"), expected)
    assert cli.main(["train", "-q", str(corpus), "--vocab-size", "50300", "--base", "r50k_base",
                     "-o", str(tmp_path / "r50k.json")]) == 0
    assert numtok.Tokenizer.from_file(tmp_path / "r50k.json").n_vocab == 50300


# -- special tokens ---------------------------------------------------------------------------------


def test_special_tokens_are_kept_and_new_ones_added(sample_lines, multilingual_lines):
    part = numtok.train_bpe(sample_lines, 500, special_tokens=["<|endoftext|>", "<pad>"])
    tok = numtok.train_bpe(multilingual_lines, 800, base=part, special_tokens=["<pad>", "<mask>", "<sep>"])
    assert tok.special_tokens == {"<|endoftext|>": 0, "<pad>": 1, "<mask>": 500, "<sep>": 501}
    assert tok.n_vocab == 800 and len(tok.merges) == len(part.merges) + 298
    assert tok.merges[: len(part.merges)] == part.merges
    text = "a<mask>b<|endoftext|>"
    assert tok.encode(text, allowed_special="all").tolist() == [tok.vocab[b"a"], 500, tok.vocab[b"b"], 0]
    # Their text is cut out of the corpus: no new merge spells them.
    marked = ["x<mask>y<mask>z " * 20] * 10
    tok = numtok.train_bpe(marked, 520, base=part, special_tokens=["<mask>"])
    assert not any(b"mask" in a + b or b"<" in a + b for a, b in tok.merges[len(part.merges):])


def test_special_token_that_is_an_ordinary_token_is_refused(sample_lines):
    part = numtok.train_bpe(sample_lines[:300], 400)
    word = next(t for t in part.vocab if len(t) > 2 and t.isascii() and t.strip())
    with pytest.raises(ValueError, match=f"special token {word.decode()!r} is already an ordinary token of the base tokenizer"):
        numtok.train_bpe(["abc"], 500, base=part, special_tokens=[word.decode()])


# -- bad input --------------------------------------------------------------------------------------


def test_pattern_must_be_the_base_pattern(sample_lines):
    part = numtok.train_bpe(sample_lines[:300], 400, pattern="cl100k")
    with pytest.raises(ValueError, match="pattern 'gpt2' is not the base tokenizer's pattern 'cl100k'"):
        numtok.train_bpe(["abc"], 500, base=part, pattern="gpt2")
    with pytest.raises(ValueError, match="pattern 'gpt2' is not the base tokenizer's pattern 'o200k'"):
        numtok.train_bpe(["abc"], 300_000, base="o200k_base", pattern="gpt2")
    tok = numtok.train_bpe(sample_lines[:300], 500, base=part, pattern=NAMED_PATTERNS["cl100k"])  # the same regex
    assert tok.pattern == "cl100k"
    assert numtok.train_bpe(sample_lines[:300], 500, base=part).pattern == "cl100k"


def test_vocab_size_must_exceed_the_base(sample_lines):
    part = numtok.train_bpe(sample_lines[:300], 400)
    for size in (400, 300):
        with pytest.raises(ValueError, match="not above the base tokenizer's size 400"):
            numtok.train_bpe(["abc"], size, base=part)
    with pytest.raises(ValueError, match="not above the base tokenizer's size 50257"):
        numtok.train_bpe(["abc"], 50257, base="r50k_base")
    with pytest.raises(ValueError, match="minimum is 402"):
        numtok.train_bpe(["abc"], 401, base=part, special_tokens=["<a>", "<b>"])


def test_unsupported_bases_and_options(sample_lines, tmp_path):
    with pytest.raises(TypeError, match="not a builtins.dict"):
        numtok.train_bpe(["abc"], 500, base={b"a": 0})
    wp = numtok.train_wordpiece(sample_lines[:200], 300)
    with pytest.raises(TypeError, match="WordPiece"):
        numtok.train_bpe(["abc"], 500, base=wp)
    with pytest.raises(FileNotFoundError, match="neither a file, a directory, nor a bundled encoding"):
        numtok.train_bpe(["abc"], 500, base="o300k_base")
    part = numtok.train_bpe(sample_lines[:300], 400)
    for option in (dict(alphabet="observed"), dict(units="chars", alphabet="observed"), dict(end_of_word="</w>")):
        with pytest.raises(ValueError, match="cannot be set with a base"):
            numtok.train_bpe(["abc"], 500, base=part, **option)
    chars = numtok.train_bpe(["low lower"], 30, units="chars", alphabet="observed", end_of_word="</w>")
    with pytest.raises(ValueError, match="byte-level base tokenizer; this one has units='chars', end_of_word='</w>'"):
        numtok.train_bpe(["abc"], 500, base=chars)
    observed = numtok.train_bpe(["abc abc"], 10, alphabet="observed")
    with pytest.raises(ValueError, match="no token for the byte 0x78"):
        numtok.train_bpe(["xyz"], 20, base=observed)
    counts = numtok.count_words(["abc <m> abc"])
    with pytest.raises(ValueError, match="count with the new special tokens cut out"):
        numtok.train_bpe_from_counts(counts, 500, base=part, special_tokens=["<m>"])
    (tmp_path / "bad.json").write_text(json.dumps({"model": {"type": "Unigram"}}))
    with pytest.raises(ValueError, match="unsupported model type"):
        numtok.train_bpe(["abc"], 500, base=tmp_path / "bad.json")
