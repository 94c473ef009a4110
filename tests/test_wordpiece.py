"""WordPiece: the course's worked examples, the kernels against the naive oracle, and
id-for-id parity with Hugging Face ``tokenizers`` on BERT."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import naive_wordpiece as naive
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numtok
from numtok.wordpiece import WordPiece, bert

REF = Path(__file__).resolve().parents[2] / "shared" / "ref"
BERT_JSON = REF / "bert_uncased_tokenizer.json"
BERT_VOCAB = REF / "bert_uncased_vocab.txt"
needs_ref = pytest.mark.skipif(not BERT_JSON.exists(), reason="shared/ref/bert_uncased_tokenizer.json not found")

# The course's WordPiece chapter (seeds/003) trains on the corpus of its BPE chapter (seeds/000).
COURSE_CORPUS = [
    "This is the Hugging Face Course.",
    "This chapter is about tokenization.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]
HUG = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def ordered(wp: WordPiece) -> list[str]:
    v = wp.vocab
    return sorted(v, key=v.get)


# ----------------------------------------------------------------------------------------------
# the course's worked examples (expected values are the course's)


def test_hug_example_merges():
    wp = numtok.train_wordpiece(HUG, 15)
    # initial vocabulary: the specials, then ["b", "h", "p", "##g", "##n", "##s", "##u"] sorted as strings
    assert ordered(wp)[:12] == SPECIALS + ["##g", "##n", "##s", "##u", "b", "h", "p"]
    # "the first merge learned is ("##g", "##s") -> ("##gs")", then ("h", "##u") -> "hu"
    assert wp.merges[0] == ("##g", "##s", "##gs")
    assert wp.merges[1] == ("h", "##u", "hu")
    # The prose says ("hu", "##g") is merged third "with 1/15"; by its own formula
    # ("hu", "##g") scores 10/225 and ("hu", "##gs") 5/75 = 1/15, so "hugs" is the third merge.
    assert wp.merges[2] == ("hu", "##gs", "hugs")
    assert ordered(wp)[12:] == ["##gs", "hu", "hugs"]


def test_hug_example_scores_by_the_formula():
    splits = {"hug": ["hu", "##g"], "pug": ["p", "##u", "##g"], "pun": ["p", "##u", "##n"],
              "bun": ["b", "##u", "##n"], "hugs": ["hu", "##gs"]}
    scores = naive.compute_pair_scores(splits, HUG)
    assert scores[("hu", "##g")] == 10 / 225
    assert scores[("hu", "##gs")] == 1 / 15
    first = {"hug": ["h", "##u", "##g"], "pug": ["p", "##u", "##g"], "pun": ["p", "##u", "##n"],
             "bun": ["b", "##u", "##n"], "hugs": ["h", "##u", "##g", "##s"]}
    scores = naive.compute_pair_scores(first, HUG)
    assert scores[("##u", "##g")] == 1 / 36 and scores[("##g", "##s")] == 1 / 20


def test_hug_example_encoding():
    wp = numtok.train_wordpiece(HUG, 15)
    # "mug" -> ["[UNK]"], "bum" -> ["[UNK]"] (not ["b", "##u", "[UNK]"]), "bugs" -> b ##u ##gs
    assert wp.tokenize("mug") == ["[UNK]"]
    assert wp.tokenize("bum") == ["[UNK]"]
    assert wp.tokenize("bugs") == ["b", "##u", "##gs"]
    assert wp.tokenize("pugs") == ["p", "##u", "##gs"]


def test_course_corpus_vocab_70():
    wp = numtok.train_wordpiece(COURSE_CORPUS, 70)
    # the course's printed vocabulary (chapter 6.7, "print(vocab)")
    assert ordered(wp) == [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "##a", "##b", "##c", "##d", "##e", "##f", "##g", "##h",
        "##i", "##k", "##l", "##m", "##n", "##o", "##p", "##r", "##s", "##t", "##u", "##v", "##w", "##y", "##z",
        ",", ".", "C", "F", "H", "T", "a", "b", "c", "g", "h", "i", "s", "t", "u", "w", "y", "ab", "##fu",
        "Fa", "Fac", "##ct", "##ful", "##full", "##fully", "Th", "ch", "##hm", "cha", "chap", "chapt",
        "##thm", "Hu", "Hug", "Hugg", "sh", "th", "is", "##thms", "##za", "##zat", "##ut",
    ]
    # "So the first merge to learn is ('a', '##b') -> 'ab'"
    assert wp.merges[0] == ("a", "##b", "ab")
    assert wp.tokenize("This is the Hugging Face course!") == [
        "Th", "##i", "##s", "is", "th", "##e", "Hugg", "##i", "##n", "##g", "Fac", "##e",
        "c", "##o", "##u", "##r", "##s", "##e", "[UNK]",
    ]


def test_course_corpus_matches_the_oracle():
    counts = naive.word_counts(COURSE_CORPUS)
    for size in (45, 46, 60, 70, 90, 500):
        vocab, merges = naive.train_wordpiece(counts, size)
        wp = numtok.train_wordpiece(COURSE_CORPUS, size)
        assert ordered(wp) == vocab and wp.merges == merges


def test_max_input_chars_per_word():
    wp = WordPiece({"[UNK]": 0, "a": 1, "##a": 2})
    assert wp.tokenize("a" * 100) == ["a"] + ["##a"] * 99
    assert wp.tokenize("a" * 101 + " a") == ["[UNK]", "a"]
    short = WordPiece({"[UNK]": 0, "a": 1, "##a": 2}, max_input_chars_per_word=2)
    assert short.tokenize("aa aaa a") == ["a", "##a", "[UNK]", "a"]


# ----------------------------------------------------------------------------------------------
# the training kernel against the naive oracle

words = st.text(alphabet="ab#é", min_size=1, max_size=7)
counts_strategy = st.dictionaries(words, st.integers(1, 6), min_size=1, max_size=12)


@given(counts=counts_strategy, extra=st.integers(0, 40), prefix=st.sampled_from(["##", "#", "", "@@"]),
       specials=st.sampled_from([("[UNK]",), ("[PAD]", "[UNK]"), ("[UNK]", "a", "##b")]))
@settings(max_examples=150, deadline=None)
def test_trainer_matches_oracle_on_counts(counts, extra, prefix, specials):
    base, _ = naive.train_wordpiece(counts, 0, specials, prefix)
    size = len(base) + extra
    vocab, merges = naive.train_wordpiece(counts, size, specials, prefix)
    wp = numtok.train_wordpiece(counts, size, special_tokens=specials, prefix=prefix)
    assert ordered(wp) == vocab
    assert wp.merges == merges


@given(st.lists(st.text(alphabet="ab c,.#\n", max_size=30), min_size=1, max_size=8),
       st.sampled_from(["bert", "whitespace"]), st.integers(0, 30))
@settings(max_examples=60, deadline=None)
def test_trainer_matches_oracle_on_text(texts, pre_tokenizer, extra):
    counts = naive.word_counts(texts, pre_tokenizer)
    if not counts:
        with pytest.raises(ValueError, match="empty corpus"):
            numtok.train_wordpiece(texts, 100, pre_tokenizer=pre_tokenizer)
        return
    base, _ = naive.train_wordpiece(counts, 0)
    vocab, merges = naive.train_wordpiece(counts, len(base) + extra)
    wp = numtok.train_wordpiece(texts, len(base) + extra, pre_tokenizer=pre_tokenizer)
    assert ordered(wp) == vocab and wp.merges == merges


# The second reads past the first 100,000 characters, which the JIT-off runs cut away (conftest).
@pytest.mark.parametrize("pre_tokenizer,lo,extra", [("bert", 0, 250), pytest.param("whitespace", 100_000, 200, marks=pytest.mark.jit_only)])
def test_trainer_matches_oracle_on_real_text(sample_text, pre_tokenizer, lo, extra):
    lines = sample_text[lo : lo + 25_000].splitlines(keepends=True)
    counts = naive.word_counts(lines, pre_tokenizer, SPECIALS)
    base, _ = naive.train_wordpiece(counts, 0)
    vocab, merges = naive.train_wordpiece(counts, len(base) + extra)
    wp = numtok.train_wordpiece(lines, len(base) + extra, pre_tokenizer=pre_tokenizer)
    assert ordered(wp) == vocab and wp.merges == merges
    sample = sample_text[lo + 25_000 : lo + 30_000]
    assert wp.tokenize(re.sub(r"\[(PAD|UNK|CLS|SEP|MASK)\]", " ", sample)) == naive.tokenize(
        re.sub(r"\[(PAD|UNK|CLS|SEP|MASK)\]", " ", sample), wp.vocab, pre_tokenizer=pre_tokenizer)


def test_word_counting_matches_hf_pre_tokenizer(sample_lines):
    from numtok.wordpiece.trainer import _words_from_source

    for pre_tokenizer in ("bert", "whitespace"):
        cps, starts, freqs = _words_from_source(sample_lines, bert.pre_tokenizer_mode(pre_tokenizer), [], False)
        text = cps.astype(np.uint32).tobytes().decode("utf-32-le")
        mine = {text[starts[i] : starts[i + 1]]: int(freqs[i]) for i in range(len(freqs))}
        expected = naive.word_counts(sample_lines, pre_tokenizer)
        assert list(mine.items()) == list(expected.items())
        cps, starts, freqs = _words_from_source(sample_lines, bert.pre_tokenizer_mode(pre_tokenizer), SPECIALS, False)
        assert int(freqs.sum()) == sum(naive.word_counts(sample_lines, pre_tokenizer, SPECIALS).values())


def test_sources_agree(tmp_path, sample_lines):
    lines = sample_lines[:300]
    (tmp_path / "a.txt").write_text("".join(lines), encoding="utf-8")
    with gzip.open(tmp_path / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write("".join(lines))
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"text": s}) + "\n" for s in lines), encoding="utf-8")
    expected = numtok.train_wordpiece(lines, 400)
    for source in (tmp_path / "a.txt", str(tmp_path / "a.txt.gz"), tmp_path / "a.jsonl", iter(lines),
                   [tmp_path / "a.txt"]):
        assert numtok.train_wordpiece(source, 400).vocab == expected.vocab


def test_special_tokens_are_cut_out_of_training_text():
    wp = numtok.train_wordpiece(["ab[SEP]cd"], 100)
    assert "##c" not in wp.vocab and "c" in wp.vocab  # "cd" is its own word
    assert wp.tokenize("ab[SEP]cd") == ["ab", "[SEP]", "cd"]


# ----------------------------------------------------------------------------------------------
# parity with Hugging Face tokenizers


@pytest.fixture(scope="module")
def hf_bert():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(BERT_JSON))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def wp_bert():
    return WordPiece.from_file(BERT_JSON)


@needs_ref
def test_bert_parity_on_real_text(hf_bert, wp_bert, sample_text, sample_lines):
    assert wp_bert.encode(sample_text).tolist() == hf_bert.encode(sample_text, add_special_tokens=False).ids
    batch = wp_bert.encode_batch(sample_lines)
    expected = hf_bert.encode_batch(sample_lines, add_special_tokens=False)
    assert [x.tolist() for x in batch] == [e.ids for e in expected]
    line = sample_lines[3]
    assert wp_bert.encode(line, add_special_tokens=True).tolist() == hf_bert.encode(line).ids


@needs_ref
def test_bert_from_vocab_equals_from_file(wp_bert, sample_text):
    wv = WordPiece.from_vocab(BERT_VOCAB, lowercase=True)
    assert wv.vocab == wp_bert.vocab
    assert np.array_equal(wv.encode(sample_text), wp_bert.encode(sample_text))
    assert wv.encode("[CLS] Hi [SEP]").tolist() == [101, 7632, 102]


@needs_ref
def test_bert_every_code_point(hf_bert, wp_bert):
    """Every code point inside a word ("axb"; in chunks: HF is slow on one huge string) and
    alone: this is what pins the Unicode tables of numtok.bert to HF's."""
    from tokenizers import normalizers, pre_tokenizers

    every = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    step = 4096
    glued = ["".join("a" + c + "b " for c in every[i : i + step]) for i in range(0, len(every), step)]
    ours = [x.tolist() for x in wp_bert.encode_batch(glued)]
    assert ours == [e.ids for e in hf_bert.encode_batch(glued, add_special_tokens=False)]
    joined = " ".join(every)
    bare = {"lowercase": False, "clean_text": False, "handle_chinese_chars": False}
    for options in ({}, {"strip_accents": False}, bare):
        ours = bert.BertNormalizer(**options).normalize_str(joined)
        assert ours == normalizers.BertNormalizer(**options).normalize_str(joined), options
    for name, hf in (("bert", pre_tokenizers.BertPreTokenizer()), ("whitespace", pre_tokenizers.WhitespaceSplit())):
        for text in glued[::7]:
            assert bert.pre_tokenize(text, name) == [w for w, _ in hf.pre_tokenize_str(text)]


INTERESTING = (
    list("aZé\u0301\u0323\u0345İıΣσςßẞﬁÅÅ\u212b\u0130\u1e9e")  # accents, combining marks, case oddities
    + list("你好世界\u3400\U00020000\uf900\u3002\uff01")  # CJK ideographs and CJK punctuation
    + list("\x00\x01\t\n\r\x0b\x0c\x1c\x1f\x7f\x85\x9f\xa0\xad\u200b\u200d\u2028\ufeff\ufffd\U000e0001\ue000")
    + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡§«¶·»¿‐–—‘’“”„†‥…‰‹›※⁂、。〈〉「」")  # punctuation
    + list("$+<=>^`|~¢£¥©®°±×÷€™←∀√∞")  # symbols
    + list("٠١۱१๑\u0660\u06f0ᛮ½²")  # digits and numbers
    + list("한국어हिन्दीالعربيةעבריתไทย")  # scripts with marks
    + list("😀👍🏽\u200d♂\ufe0f")
)
text_strategy = st.lists(
    st.one_of(
        st.sampled_from(INTERESTING),
        st.characters(exclude_categories=("Cs",)),  # every code point HF can receive
        st.sampled_from(["[SEP]", "[UNK]", "[cls]", " ", "  ", "a" * 101]),
    ),
    max_size=60,
).map("".join)


@needs_ref
@given(text=text_strategy)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_bert_parity_hypothesis(hf_bert, wp_bert, text):
    assert wp_bert.encode(text).tolist() == hf_bert.encode(text, add_special_tokens=False).ids


@needs_ref
@given(ids=st.lists(st.integers(0, 30521), max_size=40), skip=st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_bert_decode_parity(hf_bert, wp_bert, ids, skip):
    assert wp_bert.decode(ids, skip_special_tokens=skip) == hf_bert.decode(ids, skip_special_tokens=skip)


@needs_ref
def test_bert_decode_real_text(hf_bert, wp_bert, sample_lines):
    for line in sample_lines[:400]:
        ids = hf_bert.encode(line).ids
        assert wp_bert.decode(ids) == hf_bert.decode(ids, skip_special_tokens=False)
        assert wp_bert.decode(ids, skip_special_tokens=True) == hf_bert.decode(ids)


def test_trained_tokenizer_json_loads_in_hf(tmp_path, sample_text, sample_lines):
    from tokenizers import Tokenizer

    for pre_tokenizer in ("bert", "whitespace"):
        wp = numtok.train_wordpiece(sample_lines[:2000], 1500, pre_tokenizer=pre_tokenizer)
        wp.save(tmp_path / "tok.json")
        hf = Tokenizer.from_file(str(tmp_path / "tok.json"))
        text = sample_text[-40_000:]
        ids = wp.encode(text)
        assert ids.tolist() == hf.encode(text, add_special_tokens=False).ids
        assert wp.encode(text, add_special_tokens=True).tolist() == hf.encode(text).ids
        assert wp.decode(ids[:300]) == hf.decode(ids[:300].tolist(), skip_special_tokens=False)
        again = WordPiece.from_file(tmp_path / "tok.json")
        assert again.vocab == wp.vocab and np.array_equal(again.encode(text), ids)


def test_trained_encoding_matches_oracle(sample_text):
    wp = numtok.train_wordpiece(COURSE_CORPUS * 3 + [sample_text[:20_000]], 900)
    text = sample_text[20_000:40_000]
    assert wp.tokenize(text) == naive.tokenize(text, wp.vocab)


@given(text=text_strategy)
@settings(max_examples=100, deadline=None)
def test_hf_wordpiece_model_parity_on_trained_vocab(text):
    from tokenizers import Tokenizer, models, pre_tokenizers

    wp = _small_trained()
    hf = Tokenizer(models.WordPiece(wp.vocab, unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.add_special_tokens(SPECIALS)
    assert wp.encode(text).tolist() == hf.encode(text, add_special_tokens=False).ids


_SMALL = []


def _small_trained() -> WordPiece:
    if not _SMALL:
        text = "".join(INTERESTING) * 3 + " ".join(COURSE_CORPUS) + " aaa ab abab ba"
        _SMALL.append(numtok.train_wordpiece([text], 600))
    return _SMALL[0]


# ----------------------------------------------------------------------------------------------
# API details


def test_encode_batch_equals_encode(sample_lines):
    wp = _small_trained()
    texts = sample_lines[:200] + ["", "[SEP]", "a[UNK]b", "  "]
    assert [x.tolist() for x in wp.encode_batch(texts)] == [wp.encode(t).tolist() for t in texts]


def test_added_tokens_and_surrogates():
    wp = WordPiece({"[UNK]": 0, "[CLS]": 1, "<x>": 2, "a": 3}, special_tokens=["[CLS]"], added_tokens=["<x>"])
    ids = wp.encode("a<x>a[CLS]")
    assert ids.tolist() == [3, 2, 3, 1]
    assert wp.decode(ids, skip_special_tokens=True) == "a <x> a"
    # a lone surrogate (HF cannot even receive one) is read as U+FFFD
    assert wp.encode("a\ud800a").tolist() == wp.encode("a\ufffda").tolist() == [0]


def test_pickle_round_trip():
    import pickle

    wp = _small_trained()
    again = pickle.loads(pickle.dumps(wp))
    text = " ".join(COURSE_CORPUS) + " [SEP] Ünï"
    assert again.vocab == wp.vocab and again.encode(text).tolist() == wp.encode(text).tolist()


def test_encode_returns_int32_and_empty():
    wp = _small_trained()
    ids = wp.encode("Hugging Face")
    assert ids.dtype == np.int32 and ids.ndim == 1
    assert wp.encode("").tolist() == [] and wp.tokenize(" \n") == []
    assert wp.encode_batch([]) == [] and [x.tolist() for x in wp.encode_batch(["", ""])] == [[], []]


def test_decode_round_trip_on_known_words():
    wp = numtok.train_wordpiece(COURSE_CORPUS, 70)
    assert wp.decode(wp.encode("This is the Hugging Face course.")) == "This is the Hugging Face course."


# ----------------------------------------------------------------------------------------------
# bad input


def test_vocab_size_too_small_names_the_minimum():
    with pytest.raises(ValueError, match=r"minimum is 12"):
        numtok.train_wordpiece(HUG, 11)
    assert len(numtok.train_wordpiece(HUG, 12).vocab) == 12


def test_training_stops_when_no_pair_is_left():
    wp = numtok.train_wordpiece({"ab": 1}, 1000)
    assert ordered(wp)[-1] == "ab" and len(wp.vocab) == len(SPECIALS) + 3


@pytest.mark.parametrize("source", [{}, [], [""], [" \n\t "], {"": 3}])
def test_empty_corpus(source):
    with pytest.raises(ValueError, match="empty corpus"):
        numtok.train_wordpiece(source, 100)


def test_unknown_pre_tokenizer_lists_known_ones():
    with pytest.raises(ValueError, match=r"unknown pre_tokenizer 'gpt2'.*'bert', 'whitespace'"):
        numtok.train_wordpiece(HUG, 100, pre_tokenizer="gpt2")


def test_bad_training_arguments():
    with pytest.raises(ValueError, match="count of 'a' must be >= 1"):
        numtok.train_wordpiece({"a": 0}, 100)
    with pytest.raises(TypeError, match="count of 'a' must be an int"):
        numtok.train_wordpiece({"a": 1.5}, 100)
    with pytest.raises(TypeError):
        numtok.train_wordpiece(42, 100)
    with pytest.raises(ValueError, match="unk_token"):
        numtok.train_wordpiece(HUG, 100, special_tokens=["[PAD]"])
    with pytest.raises(ValueError, match="vocab_size"):
        numtok.train_wordpiece(HUG, 0)


def test_decode_bad_id_names_it():
    wp = numtok.train_wordpiece(HUG, 15)
    for bad in (15, -1, 10**9):
        with pytest.raises(ValueError, match=rf"id {bad} is not in the vocabulary"):
            wp.decode([1, bad])
    with pytest.raises(TypeError):
        wp.decode(["a"])


def test_non_str_text_is_a_type_error():
    wp = numtok.train_wordpiece(HUG, 15)
    for call in (wp.encode, wp.tokenize, bert.BertNormalizer().normalize_str, bert.pre_tokenize):
        with pytest.raises(TypeError, match="must be str"):
            call(b"bytes")
    with pytest.raises(TypeError, match="must be str"):
        wp.encode_batch(["ok", None])


def test_unsupported_file_lists_everything(tmp_path):
    doc = {
        "added_tokens": [{"id": 0, "content": "<s>", "lstrip": True, "rstrip": False, "single_word": False,
                          "normalized": False, "special": True}],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "ByteLevel"},
        "post_processor": {"type": "RobertaProcessing"},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {"<s>": 0}, "merges": []},
    }
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError) as info:
        WordPiece.from_file(tmp_path / "t.json")
    message = str(info.value)
    for part in ("model type 'BPE'", "normalizer 'Lowercase'", "pre_tokenizer 'ByteLevel'", "lstrip=true",
                 "post_processor 'RobertaProcessing'", "decoder"):
        assert part in message


def test_constructor_checks():
    with pytest.raises(ValueError, match="unk_token"):
        WordPiece({"a": 0})
    with pytest.raises(ValueError, match="share an id"):
        WordPiece({"[UNK]": 0, "a": 0})
    with pytest.raises(ValueError, match="special token"):
        WordPiece({"[UNK]": 0}, special_tokens=["[CLS]"])
