"""Token offsets, token counts, batch decoding and transformers-loadable directories, against
HF tokenizers, tiktoken and transformers."""

from __future__ import annotations

import json
import os
import unicodedata

import naive_encode
import numpy as np
import pytest
from conftest import DATA
from hypothesis import example, given
from hypothesis import strategies as st
from test_encode import CORE, SETTINGS, ids, reference

import numtok
from numtok._native.utf8 import utf8_bytes

tokenizers = pytest.importorskip("tokenizers")
GPT2_JSON = DATA.parents[2] / "shared" / "ref" / "gpt2_tokenizer.json"

# Pieces of text: any characters (lone surrogates included) and runs that stress offsets:
# multi-byte characters split across tokens, flags, combining marks, scripts without spaces.
TEXT = st.lists(
    st.one_of(
        # not code points unassigned in Python's Unicode database (14.0): HF's regex tables are
        # as old, numtok's are 17.0 (U+323B0 is a letter only to numtok, see README); no lone
        # surrogates, which HF's Python binding refuses (TypeError; numtok's handling of them is
        # checked against tiktoken in test_encode)
        st.text(st.characters(codec=None).filter(lambda c: unicodedata.category(c) not in ("Cn", "Cs")), max_size=6),
        st.sampled_from(["👋", "🇫🇷", "e\u0301", "世界", "한국어", "नमस्ते", "Привет", " ", "  ", "\n", "'s", "123"]),
    ),
    max_size=12,
).map("".join)


def _documents() -> list[str]:
    docs = [d for d in (DATA / "sample_mixed.txt").read_text(encoding="utf-8").split("\n\n") if d.strip()]
    multi = DATA / "multilingual_sample.txt"
    if multi.exists():
        docs += [d for d in multi.read_text(encoding="utf-8").split("\n\n\n") if d.strip()]
    return docs[::7][:120]


@pytest.fixture(scope="module")
def documents() -> list[str]:
    return _documents()


@pytest.fixture(scope="module")
def gpt2_pair():
    if not GPT2_JSON.exists():
        pytest.skip("shared/ref/gpt2_tokenizer.json not available")
    return numtok.Tokenizer.from_file(GPT2_JSON), tokenizers.Tokenizer.from_file(str(GPT2_JSON))


def _check_offsets(tok, text: str, got_ids: np.ndarray, offsets: np.ndarray) -> None:
    pieces = tok.decode_tokens_bytes(got_ids)
    assert offsets.shape == (len(got_ids), 2) and offsets.dtype == np.int64
    assert [tuple(o) for o in offsets.tolist()] == naive_encode.char_offsets(pieces)
    for (s, e), piece in zip(offsets.tolist(), pieces):  # the span holds all of the token's bytes
        assert piece in utf8_bytes(text[s:e])  # (lone surrogates as U+FFFD, as the encoder reads them)


def test_offsets_equal_hf_on_real_text(gpt2_pair, documents):
    mine, hf = gpt2_pair
    for doc in documents:
        got_ids, offsets = mine.encode_with_offsets(doc)
        want = hf.encode(doc, add_special_tokens=False)
        assert ids(got_ids) == want.ids
        assert [tuple(o) for o in offsets.tolist()] == want.offsets, doc[:60]


@SETTINGS
@given(TEXT)
@example("héllo 👋 世界")
@example("🇫🇷x  \u0301")
def test_offsets_equal_hf_on_generated_text(gpt2_pair, text):
    mine, hf = gpt2_pair
    got_ids, offsets = mine.encode_with_offsets(text)
    want = hf.encode(text, add_special_tokens=False)
    assert ids(got_ids) == want.ids
    assert [tuple(o) for o in offsets.tolist()] == want.offsets
    _check_offsets(mine, text, got_ids, offsets)


@pytest.mark.parametrize("name", CORE)
def test_decode_with_offsets_equals_tiktoken(name, documents):
    enc, ref = numtok.load(name), reference(name)
    for doc in documents[:40] + ["héllo 👋 世界 <|endoftext|>"]:
        tokens = ref.encode_ordinary(doc)
        text, starts = enc.decode_with_offsets(tokens)
        want_text, want_starts = ref.decode_with_offsets(tokens)
        assert text == want_text and starts.tolist() == want_starts
    with pytest.raises(UnicodeDecodeError):
        enc.decode_with_offsets(enc.encode("👋")[:1])


@pytest.mark.parametrize("name", CORE)
def test_encode_with_offsets_named_encodings(name, documents):
    enc = numtok.load(name)
    for doc in documents[:30]:
        got_ids, offsets = enc.encode_with_offsets(doc)
        assert ids(got_ids) == ids(enc.encode(doc))
        _check_offsets(enc, doc, got_ids, offsets)
    text = "a <|endoftext|> b"
    got_ids, offsets = enc.encode_with_offsets(text, allowed_special="all")
    assert text[slice(*offsets[ids(got_ids).index(enc.eot_token)])] == "<|endoftext|>"


def test_offsets_with_lone_surrogates_index_the_str():
    enc = numtok.load("cl100k_base")
    text = "ab\ud800cd\udc00 é"
    got_ids, offsets = enc.encode_with_offsets(text)
    assert ids(got_ids) == reference("cl100k_base").encode_ordinary(text)  # U+FFFD, as tiktoken
    assert offsets[-1, 1] == len(text)
    spans = [text[s:e] for s, e in offsets.tolist()]
    assert any("\ud800" in span for span in spans) and any("\udc00" in span for span in spans)


def test_batch_offsets_align_with_ids(documents):
    enc = numtok.load("o200k_base")
    batch = enc.encode_batch(documents, num_threads=2, offsets=True)
    assert batch.char_offsets.shape == (len(batch.ids), 2)
    for i, doc in enumerate(documents):
        got_ids, offsets = enc.encode_with_offsets(doc)
        assert ids(batch[i]) == ids(got_ids)
        assert batch.char_offsets[batch.offsets[i] : batch.offsets[i + 1]].tolist() == offsets.tolist()
    assert enc.encode_batch(documents[:3]).char_offsets is None


@pytest.mark.parametrize("name", CORE)
def test_count_tokens(name, documents):
    enc, ref = numtok.load(name), reference(name)
    for doc in documents[:30]:
        assert enc.count_tokens(doc) == len(ref.encode_ordinary(doc))
    counts = enc.count_tokens_batch(documents, num_threads=2)
    assert counts.dtype == np.int64 and counts.tolist() == [len(ref.encode_ordinary(d)) for d in documents]


@SETTINGS
@given(st.lists(TEXT, max_size=8))
def test_count_tokens_on_generated_text(texts):
    enc = numtok.load("cl100k_base")
    assert enc.count_tokens_batch(texts).tolist() == [len(enc.encode_ordinary(t)) for t in texts]
    assert [enc.count_tokens(t) for t in texts] == [len(reference("cl100k_base").encode_ordinary(t)) for t in texts]


def test_decode_batch(documents):
    enc = numtok.load("cl100k_base")
    batch = enc.encode_batch(documents)
    assert enc.decode_batch(batch) == documents
    assert enc.decode_batch([batch[i] for i in range(len(batch))], num_threads=2) == documents
    assert enc.decode_batch([[15339, 1917], [], np.array([6151])]) == ["hello world", "", "hi"]
    assert enc.decode_batch([]) == []
    with pytest.raises(ValueError, match="invalid token id"):
        enc.decode_batch([[1, 2], [10**7]])
    with pytest.raises(ValueError, match="num_threads"):
        enc.decode_batch([[1]], num_threads=0)
    with pytest.raises(TypeError):
        enc.decode_batch("hello")


def test_save_pretrained_loads_in_transformers(documents, tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    trained = numtok.train_bpe(documents, 600, special_tokens=["<|endoftext|>", "<pad>"])
    (tmp_path / "model.safetensors").write_bytes(b"not ours")
    (tmp_path / "tokenizer_config.json").write_text("{}")
    trained.save_pretrained(tmp_path, pad_token="<pad>", bos_token="<|endoftext|>")
    assert (tmp_path / "model.safetensors").read_bytes() == b"not ours"
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert (auto.eos_token, auto.bos_token, auto.pad_token) == ("<|endoftext|>", "<|endoftext|>", "<pad>")
    assert auto.pad_token_id == trained.special_tokens["<pad>"]
    for doc in documents[:40]:
        assert auto(doc)["input_ids"] == ids(trained.encode_ordinary(doc))
    back = numtok.Tokenizer.from_file(tmp_path)
    assert back.vocab == trained.vocab and back.merges == trained.merges
    assert json.loads((tmp_path / "special_tokens_map.json").read_text())["pad_token"] == "<pad>"
    assert sorted(p for p in os.listdir(tmp_path) if not p.startswith(".")) == [
        "model.safetensors", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]


def test_save_pretrained_named_encoding_and_bad_roles(tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = numtok.load("cl100k_base")
    enc.save_pretrained(tmp_path)
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    text = "Hello world! héllo 👋 世界 <|endoftext|>"
    assert auto(text)["input_ids"] == ids(enc.encode(text, allowed_special="all"))
    assert auto.eos_token_id == enc.eot_token
    with pytest.raises(ValueError, match="pad_token='<pad>' is not a special token"):
        enc.save_pretrained(tmp_path, pad_token="<pad>")
    trained = numtok.train_bpe(["hello world"], 300)
    trained.save_pretrained(tmp_path / "plain")  # no <|endoftext|>: no eos
    assert "eos_token" not in json.loads((tmp_path / "plain" / "tokenizer_config.json").read_text())


def test_offsets_need_tokens_that_spell_the_text():
    tok = numtok.train_bpe(["abc abd abc"], 12, units="chars", alphabet="observed", unk_token="<unk>", special_tokens=["<unk>"])
    text = "abc abd"
    got_ids, offsets = tok.encode_with_offsets(text)
    _check_offsets(tok, text, got_ids, offsets)
    assert tok.encode_batch([text, ""], offsets=True).char_offsets.tolist() == offsets.tolist()
    with pytest.raises(ValueError, match="unk_token"):
        tok.encode_with_offsets("abz")
    with pytest.raises(ValueError, match="unk_token"):
        tok.encode_batch(["abc", "abz"], offsets=True)
