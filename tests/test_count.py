"""Token counts (``count_tokens``, ``count_tokens_batch``): the encoder's counting
specialisation (``encode_spans`` writing into a ``CountSink``) against tiktoken and against numtok's own
``len(encode_ordinary(...))``, on real text in many scripts and generated text, through every
path a text can take (one kernel call, streamed blocks, cut documents, batches of blocks on
threads, Arrow)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from conftest import DATA
from hypothesis import example, given
from hypothesis import strategies as st
from test_encode import CORE, SETTINGS, copy_of, reference, sample_text
from test_multilingual import MULTILINGUAL, SEPARATOR

import numtok
from numtok._native.sink import CountSink
from numtok.encode import _kernels as _k
from numtok.encode import batch as batch_module
from numtok.encode import buffers, engine
from numtok.encode.piece_cache import NO_CACHE

EOT = "<|endoftext|>"
TEXT = st.one_of(MULTILINGUAL, st.text(max_size=40), st.sampled_from(["", EOT, f"a {EOT}b", "<|endoftext", "  \n", "👋🇫🇷"]))


@pytest.fixture(scope="module")
def documents() -> list[str]:
    """The multilingual sample's documents, the mixed sample's paragraphs, an empty text and
    texts holding special tokens (counted as ordinary text)."""
    multi = (DATA / "multilingual_sample.txt").read_bytes().decode("utf-8").removesuffix("\n").split(SEPARATOR)
    mixed = [d for d in sample_text().split("\n\n") if d][::5]
    return multi + mixed + ["", EOT, f"end {EOT} of <|fim_prefix|> text <|endofprompt|>", ""]


@pytest.fixture(scope="module")
def trained(documents) -> dict[str, numtok.Tokenizer]:
    """Tokenizers trained on the documents: merge mode with a regex (the scanner-less path),
    a named pattern (one kernel call), and characters as units with an end-of-word token."""
    return {
        "regex": numtok.train_bpe(documents, 700, pattern=r"\w+|[^\w\s]+|\s+", special_tokens=[EOT]),
        "cl100k": numtok.train_bpe(documents, 700, pattern="cl100k", special_tokens=[EOT]),
        "chars": numtok.train_bpe(documents, 2600, units="chars", alphabet="observed", end_of_word="</w>", pattern=r"\w+|[^\w\s]+|\s+"),
    }


def _lengths(tok, texts) -> list[int]:
    return [len(tok.encode_ordinary(t)) for t in texts]


@pytest.mark.parametrize("name", CORE)
def test_counts_equal_tiktoken_on_real_text(name, documents):
    enc, ref = numtok.load(name), reference(name)
    want = [len(ref.encode_ordinary(d)) for d in documents]
    assert [enc.count_tokens(d) for d in documents] == want
    for threads in (1, 2):
        counts = enc.count_tokens_batch(documents, num_threads=threads)
        assert counts.dtype == np.int64 and counts.tolist() == want
    whole = SEPARATOR.join(documents * 2)  # > one chunk: streamed
    assert len(whole) > enc._chunk_bytes and enc.count_tokens(whole) == len(ref.encode_ordinary(whole))
    assert enc.count_tokens_batch([]).tolist() == [] and enc.count_tokens_batch([""]).tolist() == [0]


def test_counts_of_trained_tokenizers(trained, documents):
    for kind, tok in trained.items():
        want = _lengths(tok, documents)
        assert [tok.count_tokens(d) for d in documents] == want, kind
        assert tok.count_tokens_batch(documents, num_threads=2).tolist() == want, kind
        whole = "\n\n".join(documents)
        assert tok.count_tokens(whole) == len(tok.encode_ordinary(whole)), kind
    assert trained["regex"].count_tokens(EOT) == len(trained["regex"].encode_ordinary(EOT)) > 1


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(texts=st.lists(TEXT, max_size=8))
@example(texts=["", EOT, "", "héllo 👋 世界"])
def test_counts_on_generated_text(name, texts):
    enc, ref = numtok.load(name), reference(name)
    want = [len(ref.encode_ordinary(t)) for t in texts]
    assert [enc.count_tokens(t) for t in texts] == want
    assert enc.count_tokens_batch(texts, num_threads=2).tolist() == want


@SETTINGS
@given(text=TEXT)
def test_counting_kernels_equal_encoding_kernels(text):
    """The counting specialisation (``encode_spans`` into a ``CountSink``) gives the encoding
    one's number of ids and document ends, for a text cut into documents followed by special
    tokens."""
    enc = numtok.load("o200k_base")
    data = buffers.padded_utf8_of(text)
    n = len(data)
    cuts = np.array(sorted({0, n // 3, n // 2, n}), dtype=np.int64)
    docs = np.ascontiguousarray(np.stack([cuts[:-1], cuts[1:]], axis=1)) if n else np.zeros((0, 2), np.int64)
    specials = np.where(np.arange(len(docs)) % 2 == 1, enc.eot_token, -1).astype(np.int64)
    ids, ends = engine.run(enc, data, docs, specials)
    none, counted = engine.run(enc, data, docs, specials, count=True)
    assert none is None and counted.tolist() == ends.tolist() and engine.output_size(none, counted) == len(ids)
    if len(docs) and specials[-1] >= 0:
        assert ids[-1] == specials[-1]  # each document's special token is counted too


def test_long_texts_counted_on_every_path(documents):
    """Streamed blocks (every str kind, a lone surrogate: the repairing path), cut documents,
    several batch blocks on threads: counts equal tiktoken's."""
    ref = reference("cl100k_base")
    tok = copy_of("cl100k_base")
    tok._chunk_bytes = 97  # streamed a block of 97 characters at a time; documents cut at ~100 bytes
    base = sample_text()[:20_000]
    texts = [
        base.encode("ascii", "ignore").decode(),
        "".join(c for c in base if ord(c) < 0x10000) + "\u4e2d",
        base + "\U0001f600",
        "\u4e2d\u6587" * 3000 + " and then some words" * 20,
        " " * 5000 + "x",
        base[:5000] + "\ud800" + base[5000:10000],
        SEPARATOR.join(documents[:40]),
    ]
    want = [len(ref.encode_ordinary(t)) for t in texts]
    assert [tok.count_tokens(t) for t in texts] == want
    assert tok.count_tokens_batch(texts, num_threads=3).tolist() == want


def test_batches_of_many_blocks(documents, monkeypatch):
    monkeypatch.setattr(batch_module, "BLOCK_CHARS", 500)  # dozens of blocks, on threads
    enc = numtok.load("o200k_base")
    texts = documents + ["x\ud800y", ""] + documents[:5]  # a surrogate: that block's join path
    want = [len(enc.encode_ordinary(t)) for t in texts]
    for threads in (1, 3):
        assert enc.count_tokens_batch(texts, num_threads=threads).tolist() == want


def test_arrow_counts(documents):
    pa = pytest.importorskip("pyarrow")
    enc = numtok.load("cl100k_base")
    want = _lengths(enc, documents)
    assert enc.count_tokens_batch(pa.array(documents), num_threads=2).tolist() == want
    chunked = pa.chunked_array([pa.array(documents[:50], pa.large_string()), pa.array(documents[50:], pa.large_string())])
    assert enc.count_tokens_batch(chunked).tolist() == want
    assert enc.count_tokens_batch(pa.array(["hi there", None, ""]), nulls="empty").tolist() == [2, 0, 0]
    with pytest.raises(ValueError, match="null"):
        enc.count_tokens_batch(pa.array(["a", None]))


def test_count_errors_name_the_problem():
    enc = numtok.load("cl100k_base")
    with pytest.raises(TypeError, match="text must be a str, not bytes"):
        enc.count_tokens(b"abc")
    with pytest.raises(TypeError, match="count_tokens_batch takes an iterable of str, not a str"):
        enc.count_tokens_batch("abc")
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str, not int"):
        enc.count_tokens_batch(["a", 1])
    partial = numtok.Tokenizer({b"a": 0, b"b": 1, b"ab": 2}, merges=[(b"a", b"b")], pattern="gpt2")
    with pytest.raises(ValueError, match=r"no token for byte 0x63 of character 'c' \(at byte 2\)"):
        partial.count_tokens("abc")
    with pytest.raises(ValueError, match=r"no token for byte 0x63"):
        partial.count_tokens_batch(["ab", "abc"])


def test_count_sink_keeps_nothing():
    """``encode_spans`` given a ``CountSink`` counts as it encodes (its writes are nothing); its
    type is not the encoder's usual output's, so Numba compiles a specialisation for it and
    leaves the encoding one alone."""
    enc = numtok.load("o200k_base")
    text = sample_text()[:3000]
    data = buffers.padded_utf8_of(text)
    docs = np.array([[0, len(data)]], dtype=np.int64)
    spans = enc._split(data, docs)
    ids = enc.encode_ordinary(text)
    for room in (len(data) + 1, len(ids) // 2):  # too little room: ST_FULL, as for an array
        doc_end = np.empty(1, np.int64)
        status, k, j, d, _ = _k.encode_spans(
            data, spans, docs, np.full(1, -1, np.int64), doc_end, 0, 0, CountSink(room), 0, enc._core, NO_CACHE, enc._heap_min,
        )  # fmt: skip
        if room > len(ids):
            assert (status, k, j, d, int(doc_end[0])) == (_k.ST_DONE, len(ids), len(spans), 1, len(ids))
        else:
            assert status == _k.ST_FULL and k <= room and j < len(spans)
    assert numba.typeof(CountSink(3)) != numba.typeof(np.zeros(3, np.int32))
    assert len(CountSink(10)[4:]) == 6 and len(CountSink(10)[20:]) == 0
    with pytest.raises(TypeError, match="slice"):
        CountSink(10)[2:5]
