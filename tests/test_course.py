"""The reference documents' BPE worked examples (shared/seeds 000, 002, 004), to the letter.

Expected values below are the documents' printed outputs, not ours.
"""

from __future__ import annotations

from hf_reference import to_byte_level
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

import numtok

COURSE_000 = [
    "This is the Hugging Face Course.",
    "This chapter is about tokenization.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]
COURSE_002 = [
    "This is a sample corpus.",
    "This corpus will be used to show how subword tokenization works.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]

MERGES_000 = [("Ġ", "t"), ("i", "s"), ("e", "r"), ("Ġ", "a"), ("Ġt", "o"), ("e", "n"), ("T", "h"), ("Th", "is"),
              ("o", "u"), ("s", "e"), ("Ġto", "k"), ("Ġtok", "en"), ("n", "d"), ("Ġ", "is"), ("Ġt", "h"),
              ("Ġth", "e"), ("i", "n"), ("Ġa", "b"), ("Ġtoken", "i")]
VOCAB_000 = ["<|endoftext|>", ",", ".", "C", "F", "H", "T", "a", "b", "c", "d", "e", "f", "g", "h", "i", "k", "l", "m",
             "n", "o", "p", "r", "s", "t", "u", "v", "w", "y", "z", "Ġ", "Ġt", "is", "er", "Ġa", "Ġto", "en", "Th",
             "This", "ou", "se", "Ġtok", "Ġtoken", "nd", "Ġis", "Ġth", "Ġthe", "in", "Ġab", "Ġtokeni"]
MERGES_002 = [("Ġ", "t"), ("Ġ", "s"), ("Ġ", "a"), ("o", "r"), ("Ġt", "o"), ("i", "s"), ("h", "o"), ("ho", "w"),
              ("e", "n"), ("e", "r"), ("T", "h"), ("Th", "is"), ("u", "s"), ("Ġ", "w"), ("l", "l"), ("Ġto", "k"),
              ("Ġtok", "en"), ("n", "d"), ("l", "e"), ("Ġ", "c"), ("Ġc", "or")]


def course_tokenizer(corpus):
    return numtok.train_bpe(corpus, 50, pattern="gpt2", special_tokens=["<|endoftext|>"], alphabet="observed",
                            tie_break="first-seen")


def pieces(tok, text):
    return [to_byte_level(b) for b in tok.decode_tokens_bytes(tok.encode(text))]


def test_course_000_merges_vocab_and_tokenization():
    tok = course_tokenizer(COURSE_000)
    assert [(to_byte_level(a), to_byte_level(b)) for a, b in tok.merges] == MERGES_000
    by_id = sorted(tok.vocab.items(), key=lambda kv: kv[1])
    assert [b.decode() if i == 0 else to_byte_level(b) for b, i in by_id] == VOCAB_000
    assert pieces(tok, "This is not a token.") == ["This", "Ġis", "Ġ", "n", "o", "t", "Ġa", "Ġtoken", "."]


def test_course_002_merges_and_tokenization():
    tok = course_tokenizer(COURSE_002)
    assert [(to_byte_level(a), to_byte_level(b)) for a, b in tok.merges] == MERGES_002
    assert pieces(tok, "This is not a token.") == ["This", "Ġ", "is", "Ġ", "n", "o", "t", "Ġa", "Ġtoken", "."]


def test_course_unk_example():
    tok = numtok.train_bpe_from_counts({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, 11, units="chars",
                                       alphabet="observed", unk_token="[UNK]", tie_break="first-seen")
    assert tok.merges == [(b"u", b"g"), (b"u", b"n"), (b"h", b"ug")]
    assert len(tok.vocab) == 11
    assert tok.decode_tokens_bytes(tok.encode("bug")) == [b"b", b"ug"]
    assert tok.decode_tokens_bytes(tok.encode("mug")) == [b"[UNK]", b"ug"]
    assert tok.decode_tokens_bytes(tok.encode("thug")) == [b"[UNK]", b"hug"]


def test_sennrich_end_of_word():
    tok = numtok.train_bpe_from_counts({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 21, units="chars",
                                       alphabet="observed", end_of_word="</w>", tie_break="first-seen")
    assert [(a.decode(), b.decode()) for a, b in tok.merges] == [
        ("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w"), ("n", "e"), ("ne", "w"),
        ("new", "est</w>"), ("low", "</w>"), ("w", "i")]
    assert len(tok.vocab) == 21


def test_char_level_with_unk_matches_hf(sample_lines):
    """units="chars" + tie_break="hf" is HF's character-level BpeTrainer, and unknown characters
    encode to the unk token like HF's BPE(unk_token=...)."""
    lines = sample_lines[:400]
    pattern = r"\w+|[^\w\s]+|\s+"  # covers every character: HF keeps unmatched gaps, finditer drops them
    hf = Tokenizer(models.BPE(unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    hf.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=500, special_tokens=["[UNK]"], show_progress=False))
    tok = numtok.train_bpe(lines, 500, pattern=pattern, units="chars", alphabet="observed", unk_token="[UNK]")
    import json

    model = json.loads(hf.to_str())["model"]
    hf_merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    assert [(a.decode(), b.decode()) for a, b in tok.merges] == hf_merges
    assert {b.decode(): i for b, i in tok.vocab.items()} == model["vocab"]
    for text in ["the unknown ∮ character ☃ here", lines[3], "zzz"]:
        assert tok.encode(text).tolist() == hf.encode(text).ids
