"""The Tokenizer: identical ids to tiktoken, kernels checked against tests/naive_encode.py.

Reference tiktoken encodings are built offline from numtok's own shipped rank files (whose
sha256 equals the official one), so no test needs the network or the benchmark corpora.
"""

from __future__ import annotations

import base64
import concurrent.futures
import ctypes
import functools
import gzip
import multiprocessing
import os
import pickle
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from llvmlite import binding as llvm_binding
from naive_encode import NaiveBPE, derive_merges, piece_cache_arena, piece_cache_arena_head, piece_cache_long_set, piece_cache_short_set

import numtok
from numtok._native import pystr as _pystr
from numtok.encode import batch as batch_module
from numtok.encode import buffers, engine, plain, registry, streaming
from numtok.encode.batch import BatchEncoding
from numtok.encode.piece_cache import PieceCaches
from numtok.encode.short_calls import NoShortCalls
from numtok.encode.special import NO_SPECIAL, block_needles
from numtok.encode.tokenizer import Tokenizer
from numtok.io.tiktoken_file import read_tiktoken_ranks
from numtok.pretokenizers.patterns import NAMED_PATTERNS

tiktoken = pytest.importorskip("tiktoken")

DATA = Path(__file__).parent / "data"
ENCODINGS = ["gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base"]
CORE = ["r50k_base", "cl100k_base", "o200k_base"]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sample_text() -> str:
    path = DATA / "sample_mixed.txt"
    if path.exists():
        return path.read_text(encoding="utf-8")
    seeds = sorted(DATA.glob("seed_*.txt"))
    assert seeds, "tests/data has no sample text"
    return "\n\n".join(p.read_text(encoding="utf-8") for p in seeds)


@functools.cache
def reference(name: str) -> tiktoken.Encoding:
    """tiktoken's Encoding for ``name``, built from the rank file numtok ships."""
    spec = registry._ENCODINGS[name]
    content = registry.rank_file_content(spec.ranks)
    ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in content.splitlines() if line)}
    return tiktoken.Encoding(
        name=f"ref_{name}",
        pat_str=NAMED_PATTERNS[spec.pattern],
        mergeable_ranks=ranks,
        special_tokens=spec.special_tokens,
        explicit_n_vocab=spec.n_vocab,
    )


@functools.cache
def naive_for(name: str) -> NaiveBPE:
    spec = registry._ENCODINGS[name]
    return NaiveBPE(reference(name)._mergeable_ranks, pattern=spec.pattern, special_tokens=spec.special_tokens)


def ids(a) -> list[int]:
    return np.asarray(a).tolist()


# ----------------------------------------------------------------------------------------------
# the shipped encodings


def test_patterns_are_tiktokens(monkeypatch):
    import tiktoken_ext.openai_public as openai_public

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {})
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", lambda *args, **kwargs: {}, raising=False)
    for name, spec in registry._ENCODINGS.items():
        theirs = getattr(openai_public, name)()
        assert NAMED_PATTERNS[spec.pattern] == theirs["pat_str"], name
        assert spec.special_tokens == theirs["special_tokens"], name
        last = {i: t for t, i in theirs["special_tokens"].items()}  # what each id decodes to
        assert {i: t for t, i in spec.special_tokens.items()} == last, name


def test_list_and_load():
    assert set(ENCODINGS) <= set(numtok.list_encodings())
    enc = numtok.load("cl100k_base")
    assert enc is numtok.load("cl100k_base")  # cached
    assert enc.name == "cl100k_base" and enc.pattern == "cl100k"
    assert enc.n_vocab == 100277 and enc.eot_token == 100257
    assert enc.special_tokens["<|endofprompt|>"] == 100276
    assert numtok.load("gpt2").n_vocab == 50257
    assert numtok.load("p50k_base").n_vocab == 50281
    assert numtok.load("o200k_base").n_vocab == reference("o200k_base").n_vocab


def test_unknown_encoding_lists_known_names():
    with pytest.raises(ValueError, match="cl100k_base.*o200k_base"):
        numtok.load("cl100k")


@pytest.mark.parametrize("name", ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"])
def test_shipped_rank_files_match_official_sha256(name):
    import hashlib

    content = registry.rank_file_content(name)
    assert hashlib.sha256(content).hexdigest() == registry._RANK_FILES[name].sha256


def test_corrupt_package_data_is_detected(tmp_path, monkeypatch):
    good = gzip.decompress((registry.DATA_DIR / "r50k_base.tiktoken.gz").read_bytes())
    (tmp_path / "r50k_base.tiktoken.gz").write_bytes(gzip.compress(good.replace(b"IQ== 0", b"Ig== 0", 1)))
    monkeypatch.setattr(registry, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match="sha256"):
        registry.rank_file_content("r50k_base")


def test_table_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMTOK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(registry, "_LOADED", {})
    built = numtok.load("r50k_base")
    files = list(tmp_path.glob("r50k_base-*.npz"))
    assert len(files) == 1
    text = sample_text()[:50_000]
    expected = ids(built.encode_ordinary(text))
    for damage in [None, b"garbage", files[0].read_bytes()[:1000]]:
        if damage is not None:
            files[0].write_bytes(damage)
        monkeypatch.setattr(registry, "_LOADED", {})
        again = numtok.load("r50k_base")
        assert again is not built and ids(again.encode_ordinary(text)) == expected
        assert again.vocab == built.vocab and again.n_vocab == built.n_vocab
    monkeypatch.setenv("NUMTOK_CACHE_DIR", "")
    monkeypatch.setattr(registry, "_LOADED", {})
    files[0].unlink()
    numtok.load("r50k_base")
    assert not list(tmp_path.glob("*.npz"))


@pytest.mark.parametrize("name", ENCODINGS)
def test_sample_text_identical_to_tiktoken(name):
    text = sample_text()
    ref = reference(name)
    enc = numtok.load(name)
    got = enc.encode_ordinary(text)
    assert got.dtype == np.int32
    assert ids(got) == ref.encode_ordinary(text)
    assert enc.decode(got) == text
    lines = text.splitlines(keepends=True)
    batch = enc.encode_ordinary_batch(lines, num_threads=2)
    assert batch.to_list() == ref.encode_ordinary_batch(lines)
    batch = enc.encode_batch(lines, num_threads=2, allowed_special="all")
    assert batch.to_list() == ref.encode_batch(lines, allowed_special="all")


@pytest.mark.parametrize("name", CORE)
def test_vocab_merges_and_counts(name):
    enc = numtok.load(name)
    ref = reference(name)
    vocab = enc.vocab
    assert len(vocab) == len(ref._mergeable_ranks) + len(ref._special_tokens)
    for s, i in ref._special_tokens.items():
        assert vocab[s.encode()] == i
    assert all(vocab[t] == r for t, r in ref._mergeable_ranks.items())
    assert enc.n_vocab == ref.n_vocab and enc.eot_token == ref.eot_token
    assert enc.special_tokens == ref._special_tokens


def test_eot_token_raises_where_tiktoken_raises():
    ranks = {bytes([b]): b for b in range(256)}
    ref = tiktoken.Encoding("bytes", pat_str=NAMED_PATTERNS["gpt2"], mergeable_ranks=ranks, special_tokens={"<|pad|>": 256})
    tok = Tokenizer(ranks, pattern="gpt2", special_tokens={"<|pad|>": 256})
    with pytest.raises(KeyError):
        _ = ref.eot_token
    with pytest.raises(KeyError, match=r"'<\|endoftext\|>' is not a special token .* \(its special tokens: <\|pad\|>\)"):
        _ = tok.eot_token
    assert numtok.load("gpt2").eot_token == reference("gpt2").eot_token == 50256


def test_gpt2_merges_are_gpt2s():
    merges = numtok.load("gpt2").merges
    # the first lines of GPT-2's merges.txt ("Ġ t", "Ġ a", "h e", "i n", "r e", "o n")
    assert merges[:6] == [(b" ", b"t"), (b" ", b"a"), (b"h", b"e"), (b"i", b"n"), (b"r", b"e"), (b"o", b"n")]
    assert len(merges) == 50000  # GPT-2 has 50,000 merges: every multi-byte token
    ranks = reference("gpt2")._mergeable_ranks
    assert all(ranks[a + b] > max(ranks[a], ranks[b]) for a, b in merges)


def test_derived_merges_match_naive():
    ranks = reference("gpt2")._mergeable_ranks
    small = {t: r for t, r in ranks.items() if r < 2000}
    tok = Tokenizer(small, pattern="r50k")
    assert tok.merges == derive_merges(small)


def test_merge_mode_from_derived_merges_equals_rank_mode():
    enc = numtok.load("gpt2")
    vocab = {t: i for t, i in enc.vocab.items() if i != enc.eot_token}
    hf = Tokenizer(vocab, merges=enc.merges, pattern="gpt2", special_tokens=enc.special_tokens)
    text = sample_text()[:60_000]
    assert ids(hf.encode_ordinary(text)) == ids(enc.encode_ordinary(text))


# ----------------------------------------------------------------------------------------------
# hypothesis: tiktoken equality over all of Unicode


WORDS = st.sampled_from(["'s", "'S", "'ll", "'VE", "don't", " ", "  ", "\t", "\n", "\r\n", " \n ", "123", "4567890",
                         "١٢٣", "😀", "👩‍👩‍👧", "🏳️‍🌈", "é", "e\u0301", "中文", "日本語", "ǅ", "ß", "İ", "\u00a0",
                         "\u3000", "<|endoftext|>", "<|fim_prefix|>", "Hello", "WORLD", "x_y", "a-b", "...", "—"])  # fmt: skip
# Every code point that Unicode 14 (Python 3.11's unicodedata) assigns, plus lone surrogates.
# Code points assigned later (~4,700, e.g. U+088F, U+323B0) are letters to numtok's
# pre-tokenizer (the regex module's Unicode tables) but not to tiktoken's Rust regex: the only
# known divergence, outside this encoder (an exhaustive per-code-point check found no other).
ANY_CHAR = st.characters(exclude_categories=["Cn"])
MIXED = st.lists(st.one_of(WORDS, st.text(ANY_CHAR, max_size=6)), max_size=30).map("".join)


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(text=st.text(ANY_CHAR, max_size=200))
def test_any_unicode_identical_to_tiktoken(name, text):
    enc, ref = numtok.load(name), reference(name)
    assert ids(enc.encode_ordinary(text)) == ref.encode_ordinary(text)
    assert ids(enc.encode(text, disallowed_special=())) == ref.encode(text, disallowed_special=())


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(text=MIXED)
def test_tricky_text_identical_to_tiktoken(name, text):
    enc, ref = numtok.load(name), reference(name)
    assert ids(enc.encode_ordinary(text)) == ref.encode_ordinary(text)
    assert ids(enc.encode(text, allowed_special="all")) == ref.encode(text, allowed_special="all")


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(text=st.lists(st.sampled_from([" ", "\t", "\n", "\r", "\u00a0", "\u3000", "x", "1"]), max_size=60).map("".join))
def test_whitespace_runs_identical_to_tiktoken(name, text):
    enc, ref = numtok.load(name), reference(name)
    assert ids(enc.encode_ordinary(text)) == ref.encode_ordinary(text)


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(text=st.text(st.characters(exclude_categories=["Cs"]), max_size=200))
def test_roundtrip(name, text):
    enc = numtok.load(name)
    assert enc.decode(enc.encode_ordinary(text)) == text
    assert enc.decode_bytes(enc.encode(text, allowed_special="all")) == text.encode()


@pytest.mark.parametrize("name", CORE)
def test_piece_cache_hits_equal_fresh_merges(name):
    # Pieces of every cache class (<= 15 bytes, 16-64 bytes, longer), each seen many times.
    rng = random.Random(name)
    pieces = [" " * n for n in range(1, 80, 3)] + ["x" * n for n in range(1, 80, 5)]
    pieces += ["".join(rng.choice("qzjxkvw") for _ in range(n)) for n in range(2, 70, 4)]
    # CJK and Hangul runs: pieces of 5-15 bytes with more than 4 ids, and up to 21 ids.
    letters = "的是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之過家學" "한국어문장입니다"
    pieces += ["".join(rng.choice(letters) for _ in range(n)) for n in range(2, 30, 3)]
    text = "\n".join(rng.choice(pieces) + rng.choice(["", " ", "\t", "1"]) for _ in range(3000))
    enc, ref = numtok.load(name), reference(name)
    expected = ref.encode_ordinary(text)
    assert ids(enc.encode_ordinary(text)) == expected  # fills the cache
    assert ids(enc.encode_ordinary(text)) == expected  # answered from it
    assert ids(heap_only(name).encode_ordinary(text)) == expected


@pytest.mark.parametrize("name", CORE)
def test_pair_filter_passes_every_pair(name):
    # A Bloom filter: every pair of the pair table must pass (no false negatives), and it must
    # stop most pairs that are not in it.
    from numba import njit

    from numtok.encode import _kernels as _k

    enc = numtok.load(name)
    pfilter = enc._pair_filter
    fbits = int(len(pfilter)).bit_length() - 1
    tab = enc._pair_tab[enc._pair_tab != np.uint64(2**64 - 1)]
    left = (tab >> np.uint64(_k.ID_BITS + _k.PRI_BITS)).astype(np.int64)
    right = ((tab >> np.uint64(_k.PRI_BITS)) & np.uint64((1 << _k.ID_BITS) - 1)).astype(np.int64)

    def passes(lefts, rights):
        # _filter_spot, written out with NumPy
        h = ((lefts.astype(np.uint64) << np.uint64(_k.ID_BITS)) | rights.astype(np.uint64)) * np.uint64(0xC2B2AE3D27D4EB4F)
        m = (np.uint64(1) << ((h >> np.uint64(20)) & np.uint64(63))) | (np.uint64(1) << ((h >> np.uint64(26)) & np.uint64(63)))
        return (pfilter[(h >> np.uint64(64 - fbits)).astype(np.int64)] & m) == m

    assert passes(left, right).all()
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, enc.n_vocab - 300, size=(2, 100_000))
    assert passes(a, b).mean() < 0.15
    # and the kernel's own check agrees with the NumPy one (helpers are called from kernels only)
    pair_pri_f = njit(lambda ptab, pbits, pfilter, fbits, x, y, m: _k._pair_pri_f(ptab, pbits, pfilter, fbits, x, y, m))
    pair_pri = njit(lambda ptab, pbits, x, y, m: _k._pair_pri(ptab, pbits, x, y, m))
    for x, y in list(zip(left[:50], right[:50])) + list(zip(a[:50], b[:50])):
        assert (pair_pri_f(enc._pair_tab, int(len(enc._pair_tab)).bit_length() - 1, pfilter, fbits, x, y, _k.INF_PRIORITY) < _k.INF_PRIORITY) == (
            pair_pri(enc._pair_tab, int(len(enc._pair_tab)).bit_length() - 1, x, y, _k.INF_PRIORITY) < _k.INF_PRIORITY
        )


@pytest.mark.parametrize("name", CORE)
def test_lone_surrogates_become_replacement_chars(name):
    enc, ref = numtok.load(name), reference(name)
    for text in ["\ud800", "a\udfffb", "\ud83d\ude00", "x\ud83d", "\udc00\ud800 q"]:
        assert ids(enc.encode(text)) == ref.encode(text)
    # Long texts take the GIL-free UTF-8 conversion, which hands surrogates back to utf8_bytes.
    long = sample_text()[:30_000]
    for text in [long + "\ud800", "\ud83d\ude00" + long, long[:20_000] + "x\udc00y" + long[20_000:]]:
        assert ids(enc.encode(text)) == ref.encode(text)
        assert ids(enc.encode_batch([text, "a\ud800"], num_threads=2)[0]) == ref.encode(text)


@pytest.mark.parametrize("name", CORE)
def test_sample_lines_match_naive_encoder(name):
    enc, naive = numtok.load(name), naive_for(name)
    for line in sample_text().splitlines()[:200:7]:
        assert ids(enc.encode_ordinary(line)) == naive.encode_ordinary(line)


# ----------------------------------------------------------------------------------------------
# long pieces (heap path) and worst cases


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
@pytest.mark.parametrize("c", ["^", "0", "a", "'s", " ", "\n", "中"])
def test_catastrophically_repetitive(name, c):
    enc, ref = numtok.load(name), reference(name)
    for text in [c * 10_000, " " + c * 10_000, c * 10_000 + "\n", "x" + c * 3000 + " y"]:
        assert ids(enc.encode_ordinary(text)) == ref.encode_ordinary(text)


def copy_of(name: str) -> Tokenizer:
    """A new Tokenizer equal to the named encoding (free to change private knobs on)."""
    enc = numtok.load(name)
    m = enc._mergeable_ids
    return Tokenizer._from_arrays(enc._tok_bytes, enc._tok_off[m], np.diff(enc._tok_off)[m], m,
                                  pattern=enc.pattern, special_tokens=enc.special_tokens)  # fmt: skip


@functools.cache
def heap_only(name: str) -> Tokenizer:
    """A copy of the named encoding that merges every piece with the heap."""
    tok = copy_of(name)
    tok._heap_min = 2
    return tok


@pytest.mark.parametrize("name", CORE)
def test_documents_cut_into_chunks(name):
    enc = numtok.load(name)
    text = sample_text()
    expected = ids(enc.encode(text, allowed_special="all"))
    tok = copy_of(name)
    tok._chunk_bytes = 97  # cut every ~100 bytes (at a space after an ASCII letter)
    assert ids(tok.encode(text, allowed_special="all")) == expected
    batch = tok.encode_batch([text, text[:5000], ""], num_threads=3, allowed_special="all")
    assert batch.to_list() == [expected, ids(enc.encode(text[:5000], allowed_special="all")), []]
    custom = Tokenizer(enc.vocab, pattern=NAMED_PATTERNS[enc.pattern] + "|x")  # a regex: never cut
    custom._chunk_bytes = 97
    assert not custom._cuttable


@pytest.mark.parametrize("name", CORE)
def test_long_texts_streamed_in_blocks(name):
    """A long text is written to UTF-8, split and encoded a block of characters at a time
    (``_encode_streamed``), cut where the last block allows and carried over otherwise: ids
    identical to tiktoken's for strs of every kind (1, 2, 4 bytes a character), for text with
    no place to cut for many blocks, and for a lone surrogate (the repairing path)."""
    ref = reference(name)
    tok = copy_of(name)
    tok._chunk_bytes = 97  # characters per block
    base = sample_text()[:20_000]
    texts = [
        base.encode("ascii", "ignore").decode(),
        "".join(c for c in base if ord(c) < 0x100) + "\xe9",
        "".join(c for c in base if ord(c) < 0x10000) + "\u4e2d",
        base + "\U0001f600",
        "\u4e2d\u6587" * 3000 + " and then some words" * 20,
        "a" * 5000 + " b" * 10,
        " " * 5000 + "x",
        base[:5000] + "\ud800" + base[5000:10000],
    ]
    for text in texts:
        assert ids(tok.encode_ordinary(text)) == ref.encode_ordinary(text)
    assert all(streaming.encode_streamed(tok, text) is not None for text in texts[:-1])
    assert streaming.encode_streamed(tok, texts[-1]) is None


def keep_utf8(text: str) -> str:
    """``text`` after CPython was asked for its UTF-8 (as tiktoken's and gigatoken's bindings
    ask), which it then keeps in the str."""
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.restype, as_utf8.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.POINTER(ctypes.c_ssize_t)]
    as_utf8(text, None)
    return text


@pytest.mark.parametrize("name", CORE)
def test_long_texts_read_in_place_when_the_str_holds_its_utf8(name):
    """An ASCII str's characters, and the UTF-8 copy a non-ASCII str keeps once a C API asked
    for it, are encoded where they are, in blocks up to a cut and a padded copy of the last
    bytes: ids, counts and special-token checks identical to tiktoken's, for text with no cut
    for many blocks, cuts only in the last bytes, and a token in a block or in the tail."""
    ref = reference(name)
    tok = copy_of(name)
    tok._chunk_bytes = 97  # blocks of 194 bytes
    base = sample_text()[:20_000]
    mixed = base[:10_000] + " caf\xe9 \u4e2d\u6587 \u0442\u0435\u043a\u0441\u0442 \U0001f600 " + base[10_000:]
    eot = "<|endoftext|>"
    texts = [
        base.encode("ascii", "ignore").decode(),
        mixed,
        "\u4e2d\u6587" * 3000 + " and then some words" * 20,
        "\uac00\ub098" * 3000,  # no cut at all
        "x" * 100 + " y" * 3000,
        "word " * 1000,  # just over the tail
    ]
    for text in texts:
        text = keep_utf8((text + "!")[:-1])  # a fresh str: nothing kept in it before
        assert _pystr.utf8_in_place(text) is not None
        assert streaming.encode_streamed(tok, text) is not None
        assert ids(tok.encode_ordinary(text)) == ref.encode_ordinary(text)
        assert tok.count_tokens(text) == len(ref.encode_ordinary(text))
        assert ids(tok.encode(text)) == ref.encode(text)
    fresh = (mixed + "!")[:-1]
    assert _pystr.utf8_in_place(fresh) is None  # non-ASCII, nothing kept: written from the characters
    for at in (50, 3000, len(mixed) - 20):  # in a block, and in the last bytes (the padded copy)
        text = keep_utf8(mixed[:at] + eot + mixed[at:])
        with pytest.raises(ValueError, match=re.escape(repr(eot))):
            ref.encode(text)
        with pytest.raises(ValueError, match=re.escape(repr(eot))):
            tok.encode(text)
        assert ids(tok.encode(text, allowed_special="all")) == ref.encode(text, allowed_special="all")


@pytest.mark.parametrize("name", CORE)
def test_long_texts_checked_for_special_tokens_block_by_block(name):
    """``encode`` with only disallowed special tokens looks for them in each streamed block's
    UTF-8 (``contains_any``): a token anywhere, across a block's end included, raises as
    tiktoken does and names the token; text with only their pieces ("<|", "<|endoftext") encodes
    exactly as tiktoken; so do allowed tokens and user tokens with a cut inside (a space after a
    letter: the whole-str search)."""
    ref = reference(name)
    tok = copy_of(name)
    tok._chunk_bytes = 97  # characters per block
    eot = "<|endoftext|>"
    base = sample_text()[:6000]
    near = base[:3000] + " <| <|endoftext <|endoftext| |endoftext|> <" + base[3000:] + "<|endoftex"
    assert ids(tok.encode(near)) == ref.encode(near)
    needles = block_needles(frozenset(tok.special_tokens))
    assert streaming.encode_streamed(tok, near, needles) is not None  # the block search took it
    assert streaming.encode_streamed(tok, base[:3000] + eot + base[3000:], needles) is None
    for at in list(range(90, 110)) + [0, 2990, len(base) - len(eot)]:  # across block ends too
        text = base[:at] + eot + base[at:]
        with pytest.raises(ValueError, match=re.escape(repr(eot))):
            ref.encode(text)
        with pytest.raises(ValueError, match=re.escape(repr(eot))):
            tok.encode(text)
        assert ids(tok.encode(text, allowed_special="all")) == ref.encode(text, allowed_special="all")
    cut_inside = "my token"  # a cut ("y" then a space) inside: looked for in the whole str
    assert block_needles(frozenset({cut_inside})) is None
    assert block_needles(frozenset({eot})) is not None
    text = base[:2000] + cut_inside + base[2000:]
    with pytest.raises(ValueError, match="my token"):
        tok.encode(text, disallowed_special={cut_inside})
    with pytest.raises(ValueError, match="my token"):
        ref.encode(text, disallowed_special={cut_inside})


@SETTINGS
@given(st.text(max_size=300), st.sampled_from(CORE))
def test_one_kernel_path_equals_chunked_path(text, name):
    """Short texts are split and encoded in one kernel call (encode_text); the same bytes
    through the scanner + encode_spans path give the same ids."""
    enc = numtok.load(name)
    data = buffers.padded_utf8_of(text)
    docs = np.array([[0, len(data)]], dtype=np.int64)
    chunked, _ = engine.run(enc, data, docs, NO_SPECIAL)
    assert ids(plain.encode_whole(enc, data, len(data))) == ids(chunked)
    assert ids(plain.encode_plain(enc, text)) == ids(chunked)


@pytest.mark.parametrize("name", CORE)
def test_one_kernel_path_gives_ids_past_half_an_id_a_byte_in_an_array_of_their_own(name):
    """``encode_text`` on a text of more than half an id a byte (control characters and rare
    ideographs: an id or more a byte): tiktoken's ids, in an array of their own."""
    text = "".join(chr(0x20000 + 7 * i) + "\x01\x02" for i in range(3000)) + " done"
    data = buffers.padded_utf8_of(text)
    expected = reference(name).encode_ordinary(text)
    assert len(expected) > len(data) // 2 + 64
    got = plain.encode_whole(numtok.load(name), data, len(data))
    assert ids(got) == expected and got.flags.c_contiguous


def test_one_kernel_path_on_real_text_and_missing_bytes():
    enc = numtok.load("o200k_base")
    text = sample_text()[:200_000]
    tok = copy_of("o200k_base")
    tok._chunk_bytes = 97  # never the one-kernel path
    assert ids(enc.encode_ordinary(text)) == ids(tok.encode_ordinary(text))
    partial = Tokenizer({b"a": 0, b"b": 1, b"ab": 2}, merges=[(b"a", b"b")], pattern="gpt2")
    assert partial._scanner_id >= 0 and partial.encode("abab").tolist() == [2, 2]
    for chunk in (partial._chunk_bytes, 1):
        partial._chunk_bytes = chunk
        with pytest.raises(ValueError, match=r"no token for byte 0x63 of character 'c' \(at byte 2\)"):
            partial.encode("abc")


@pytest.mark.parametrize("name", CORE)
def test_heap_path_equals_scan_path(name):
    text = sample_text()[:40_000] + "a" * 500 + " " + "ab" * 300
    assert ids(heap_only(name).encode_ordinary(text)) == ids(numtok.load(name).encode_ordinary(text))


@pytest.mark.parametrize("name", CORE)
def test_pieces_longer_than_the_work_arrays_resume_where_they_stopped(name):
    # The encode loop stops at a piece its work arrays cannot hold and goes on with bigger
    # ones: pieces around and far past their first size, mid-document, at a document's start
    # and end, on both merge paths.
    from numtok.encode import _kernels as kernels

    size = kernels.WORK_MIN
    texts = []
    for n in (size - 2, size - 1, size, size + 1, 2 * size + 3, 5 * size):
        for letter in ("q", "中", "ж"):
            piece = letter * (n // len(letter.encode()))
            texts += [f"intro {piece} outro", piece, f"{piece}{piece}"]
    ref = reference(name)
    expected = [ref.encode_ordinary(t) for t in texts]
    for enc in (copy_of(name), heap_only(name)):
        assert enc.encode_ordinary_batch(texts).to_list() == expected
        assert [ids(enc.encode_ordinary(t)) for t in texts] == expected
        joined = "\n".join(texts)
        assert ids(enc.encode_ordinary(joined)) == ref.encode_ordinary(joined)


def _encode_range(enc, text: str, batch: int, start_at: int = 0, count: bool = False):
    """``text`` through ``_kernels.encode_docs_range`` from byte ``start_at`` of its UTF-8 (one
    document), scanned and encoded ``batch`` pieces at a time into an array (``count``: a
    CountSink): ids or their number."""
    from numtok._native.sink import CountSink
    from numtok.encode import _kernels as kernels

    data = buffers.padded_utf8_of(text)
    out = CountSink(len(data) + 1) if count else np.full(len(data) + 1, -1, np.int32)
    docs = np.array([[start_at, len(data)]], np.int64)
    status, k, _, _, _ = _docs_range(enc, data, docs, np.full(1, -1, np.int64), out, np.int64(0), batch)
    assert status == kernels.ST_DONE
    return k if count else out[:k].tolist()


@pytest.mark.parametrize("name", CORE)
def test_range_scanned_and_encoded_a_batch_of_pieces_at_a_time(name):
    """``encode_docs_range`` scans a batch of pieces, encodes it, and resumes the scan where the
    batch ended: with batches of 1 to 8192 pieces, ids (and their count, into a CountSink)
    identical to tiktoken's, for mixed-script text, pieces longer than the encode loop's work
    arrays inside a batch, and a range that starts past byte 0."""
    from numtok.encode import _kernels as kernels

    ref = reference(name)
    long_piece = "ж" * (3 * kernels.WORK_MIN)
    text = sample_text()[:12_000] + f" intro {long_piece} outro " + "中文" * 400 + " end"
    expected = ref.encode_ordinary(text)
    enc = copy_of(name)
    for batch in (1, 2, 3, 7, 64, kernels.SPAN_BATCH):
        assert _encode_range(enc, text, batch) == expected, batch
    assert _encode_range(enc, text, 5, count=True) == len(expected)
    head = "some words first "  # ends where every pattern starts a piece
    assert _encode_range(enc, head + text, 3, start_at=len(head)) == expected


@pytest.mark.parametrize("name", CORE)
def test_documents_scanned_and_encoded_a_batch_of_pieces_at_a_time(name, monkeypatch):
    """Batch calls and long texts whose batches of pieces (``encode_docs_range``) end inside a
    document, at its end, or span several: ids identical to tiktoken's, special tokens between
    documents in place, empty documents and texts kept."""
    from numtok.encode import _kernels as kernels

    ref = reference(name)
    long_piece = "ж" * (3 * kernels.WORK_MIN)
    texts = [sample_text()[:3000], "", "a", f"x {long_piece} y", "中文" * 300, " ", "hello<|endoftext|>world<|endoftext|>", ""]
    expected = [ref.encode(t, allowed_special="all") for t in texts]
    tok = copy_of(name)
    tok._chunk_bytes = 97  # several groups, long texts streamed
    for batch in (1, 2, 5, 64):
        monkeypatch.setattr(kernels, "SPAN_BATCH", batch)
        assert tok.encode_batch(texts, num_threads=2, allowed_special="all").to_list() == expected, batch
        assert np.asarray(tok.count_tokens_batch(texts)).tolist() == [len(e) for e in ref.encode_ordinary_batch(texts)]
        assert ids(tok.encode_ordinary(texts[0] * 3)) == ref.encode_ordinary(texts[0] * 3)


def _docs_range(enc, data, docs, specials, out, k, batch):
    """``_kernels.encode_docs_range`` of ``enc`` on ``docs``: (status, k, d, pos, doc_end)."""
    from numtok.encode import _kernels as kernels
    from numtok.pretokenizers._unicode import class_table

    doc_end = np.full(len(docs), -1, np.int64)
    result = kernels.ENCODE_DOCS_RANGE[enc._scanner_id](
        data, docs, specials, doc_end, class_table(), out, k, batch, enc._core, enc._piece_caches.take(len(data)), enc._heap_min,
    )  # fmt: skip
    return (*result, doc_end)


@pytest.mark.parametrize("name", CORE)
def test_a_full_output_says_where_to_resume(name):
    """``encode_docs_range`` into an output of every size up to the worst case (one id a byte
    and a document): short of room for the next piece's worst case, it stops with the ids
    before document d's byte ``pos`` written (a piece's start, or the document's end when only
    its special token is missing), and resuming from (d, pos) into a bigger output gives the
    rest: ids, specials and document ends as tiktoken's."""
    from numtok.encode import _kernels as kernels

    ref = reference(name)
    # a special stops the kernel only where every piece before it had room for one id a byte
    texts = ["x", "", "y", "中文文本 и русский", "Hello world, it's 2026.", "  \n\n  end"]
    special = ref.eot_token
    per_doc = [ref.encode_ordinary(t) + [special] for t in texts]
    expected = [i for p in per_doc for i in p]
    ends = np.cumsum([len(p) for p in per_doc]).tolist()
    data = buffers.padded_utf8_of("".join(texts))
    bounds = np.cumsum([0] + [len(t.encode()) for t in texts])
    docs = np.stack([bounds[:-1], bounds[1:]], axis=1).astype(np.int64)
    specials = np.full(len(texts), special, np.int64)
    enc = copy_of(name)
    stops = set()
    worst = int(bounds[-1]) + len(texts)
    for cap in range(worst + 1):
        for batch in (2, kernels.SPAN_BATCH):
            out = np.full(cap, -1, np.int32)
            status, k, d, pos, doc_end = _docs_range(enc, data, docs, specials, out, np.int64(0), batch)
            if status == kernels.ST_DONE:
                assert out[:k].tolist() == expected and doc_end.tolist() == ends
                continue
            assert cap < worst and status == kernels.ST_FULL and out[:k].tolist() == expected[:k]
            assert doc_end[:d].tolist() == ends[:d] and docs[d, 0] <= pos <= docs[d, 1]
            stops.add((int(d), bool(pos == docs[d, 1])))
            rest = docs[d:].copy()
            rest[0, 0] = pos
            big = np.full(len(expected) + 8, -1, np.int32)
            big[:k] = out[:k]
            status, k2, _, _, rest_end = _docs_range(enc, data, rest, specials[d:], big, k, batch)
            assert status == kernels.ST_DONE and big[:k2].tolist() == expected
            assert doc_end[:d].tolist() + rest_end.tolist() == ends
    assert {(0, True), (1, True), (2, True), (3, False), (5, False)} <= stops


@pytest.mark.parametrize("name", CORE)
def test_ids_arrays_that_start_small_grow_to_the_same_ids(name, monkeypatch):
    """Every path that sizes its ids array for the usual ids a byte (``output.IdsOut``) grows it
    when a text gives more: started at a hundredth of an id a byte, long texts (streamed from
    the str and read in place), batches with special tokens and empty documents, another
    pattern's path and counts are tiktoken's."""
    from numtok.encode import output

    monkeypatch.setattr(output, "EXPECTED_IDS_PER_BYTE", 0.01)
    monkeypatch.setattr(output, "IDS_SLACK", 1)
    grows = []
    real_grow = output.IdsOut.grow
    monkeypatch.setattr(output.IdsOut, "grow", lambda self, *a: grows.append(a) or real_grow(self, *a))
    ref = reference(name)
    tok = copy_of(name)
    tok._chunk_bytes = 997  # streamed, in blocks, several groups
    text = sample_text()[:20_000] + "中文" * 500 + " " + "a" * 3000
    assert ids(tok.encode_ordinary(text)) == ref.encode_ordinary(text)
    in_place = keep_utf8(text + "é")
    assert _pystr.utf8_in_place(in_place) is not None
    assert ids(tok.encode_ordinary(in_place)) == ref.encode_ordinary(in_place)
    texts = [text[:5000], "", "x<|endoftext|>y", text[5000:9000], ""]
    batch = tok.encode_batch(texts, num_threads=1, allowed_special="all")
    assert batch.to_list() == [ref.encode(t, allowed_special="all") for t in texts]
    assert tok.count_tokens(text) == len(ref.encode_ordinary(text))
    ranks = reference(name)._mergeable_ranks
    custom = Tokenizer(ranks, pattern=r"\S+|\s+")  # another pattern: split, then encode_spans
    custom._chunk_bytes = 997
    custom_ref = tiktoken.Encoding(name="custom", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    assert ids(custom.encode_ordinary(text)) == custom_ref.encode_ordinary(text)
    assert len(grows) > 10


@SETTINGS
@given(st.text(max_size=400), st.integers(1, 9), st.sampled_from(CORE))
def test_range_in_batches_equals_one_batch(text, batch, name):
    enc = numtok.load(name)
    assert _encode_range(enc, text, batch) == ids(enc.encode_ordinary(text))


@SETTINGS
@given(pieces=st.lists(st.text(st.sampled_from("ab aab xyz中文\n"), min_size=1, max_size=120), max_size=5))
def test_heap_path_matches_naive(pieces):
    heap, naive = heap_only("cl100k_base"), naive_for("cl100k_base")
    for text in pieces:
        assert ids(heap.encode_ordinary(text)) == naive.encode_ordinary(text)


# ----------------------------------------------------------------------------------------------
# custom vocabularies against the naive encoder


def random_text(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


CONFIGS = [
    dict(),
    dict(units="chars"),
    dict(end_of_word="</w>"),
    dict(units="chars", end_of_word="</w>"),
    dict(unk_token="<unk>"),
    dict(units="chars", unk_token="<unk>"),
]


@pytest.mark.parametrize("mode", ["ranks", "merges", "ignore_merges"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_custom_vocab_matches_naive(mode, config):
    rng = random.Random(f"{mode}{config}")
    alphabet = "abcé中 "
    if config.get("units") == "chars":
        base = [c.encode() for c in sorted(set(alphabet))]
    else:
        base = [bytes([b]) for b in sorted(set(alphabet.encode()))]
    vocab = {t: i for i, t in enumerate(base)}
    if config.get("end_of_word"):
        vocab[b"</w>"] = len(vocab)
    tokens = list(vocab)
    merges = []
    while len(merges) < 60:
        a, b = rng.choice(tokens), rng.choice(tokens)
        if a + b in vocab or len(a + b) > 14:
            continue
        vocab[a + b] = len(vocab)
        tokens.append(a + b)
        merges.append((a, b))
    specials = {"<unk>": len(vocab)} if config.get("unk_token") else {}
    # with an unknown token, the text has a character that is not in the vocabulary
    text_alphabet = alphabet + "?" if config.get("unk_token") else alphabet
    kwargs = dict(pattern=r"\S+|\s+", special_tokens=specials, **config)
    if mode != "ranks":
        kwargs["merges"] = merges
        kwargs["ignore_merges"] = mode == "ignore_merges"
    tok = Tokenizer(vocab, **kwargs)
    naive = NaiveBPE(vocab, **kwargs)
    for heap_min in (64, 2):
        tok._heap_min = heap_min
        for n in [0, 1, 5, 40, 300]:
            text = random_text(rng, text_alphabet, n)
            got = ids(tok.encode_ordinary(text))
            assert got == naive.encode_ordinary(text), (text, heap_min)
            assert tok.decode_bytes(got) == naive.decode_bytes(got)
            if not config.get("unk_token"):
                assert tok.decode(got) == text


def test_many_splits_per_token_grow_the_pair_table():
    vocab = {b"a" * k: k - 1 for k in range(1, 41)}  # every split of every token is a pair
    tok, naive = Tokenizer(vocab, pattern=r"\w+"), NaiveBPE(vocab, pattern=r"\w+")
    for n in [1, 2, 39, 40, 41, 100, 1000]:
        assert ids(tok.encode("a" * n)) == naive.encode("a" * n)


def test_merge_mode_uses_only_listed_merges():
    vocab = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"bc": 4, b"abc": 5}
    tok = Tokenizer(vocab, merges=[(b"b", b"c"), (b"a", b"b")], pattern=r"\w+")
    assert ids(tok.encode("abc")) == [0, 4]  # "abc" is a token but no listed merge makes it
    tok = Tokenizer(vocab, merges=[(b"b", b"c"), (b"a", b"b")], pattern=r"\w+", ignore_merges=True)
    assert ids(tok.encode("abc")) == [5]
    tok = Tokenizer(vocab, pattern=r"\w+")  # rank mode: whole-piece lookup
    assert ids(tok.encode("abc")) == [5]
    assert ids(tok.encode("abca")) == [5, 0]  # ab (rank 3) first, then ab+c = abc


def test_two_byte_pieces_follow_the_mode():
    """2-byte pieces take a shortcut through the byte-pair table; it must agree with each mode:
    with ignore_merges a 2-byte token that no merge makes is still emitted whole."""
    vocab = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"bc": 4}
    for kwargs, want in [
        (dict(merges=[(b"b", b"c")]), [[0, 1], [4], [0, 2]]),
        (dict(merges=[(b"b", b"c")], ignore_merges=True), [[3], [4], [0, 2]]),
        (dict(), [[3], [4], [0, 2]]),  # rank mode
    ]:
        tok = Tokenizer(vocab, pattern=r"\w+", **kwargs)
        naive = NaiveBPE(vocab, pattern=r"\w+", **kwargs)
        for text, expected in zip(["ab", "bc", "ac"], want):
            assert ids(tok.encode(text)) == expected == naive.encode(text), (kwargs, text)


def test_end_of_word_is_dropped_by_decode():
    vocab = {b"l": 0, b"o": 1, b"w": 2, b"</w>": 3, b"lo": 4, b"low": 5, b"low</w>": 6}
    tok = Tokenizer(vocab, merges=[(b"l", b"o"), (b"lo", b"w"), (b"low", b"</w>")], pattern=r"\w+",
                    end_of_word="</w>", units="chars")  # fmt: skip
    got = tok.encode_ordinary("low lol")
    assert ids(got) == [6, 4, 0, 3]
    assert tok.decode(got) == "lowlol"


def test_unknown_symbol_errors_name_the_character():
    tok = Tokenizer({b"a": 0, b"b": 1}, pattern=r"\w+|\s")
    with pytest.raises(ValueError, match="'é'"):
        tok.encode("abé")
    tok = Tokenizer({b"a": 0, "é".encode(): 1}, pattern=r"\w+", units="chars")
    assert ids(tok.encode("aé")) == [0, 1]
    with pytest.raises(ValueError, match="'z'"):
        tok.encode("az")
    tok = Tokenizer({b"a": 0, b"<unk>": 1}, pattern=r"\w+", units="chars", unk_token="<unk>")
    assert ids(tok.encode("aza")) == [0, 1, 0]


# ----------------------------------------------------------------------------------------------
# special tokens


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "p50k_edit", "o200k_harmony"])
def test_special_tokens_like_tiktoken(name):
    enc, ref = numtok.load(name), reference(name)
    specials = sorted(ref.special_tokens_set)[:6]
    text = "hi " + specials[0] + " there" + "".join(specials) + "<|endoftext" + specials[-1]
    assert ids(enc.encode(text, allowed_special="all")) == ref.encode(text, allowed_special="all")
    assert ids(enc.encode(text, allowed_special={specials[0]}, disallowed_special=())) == ref.encode(
        text, allowed_special={specials[0]}, disallowed_special=()
    )
    assert ids(enc.encode_ordinary(text)) == ref.encode_ordinary(text)
    for token in specials:
        with pytest.raises(ValueError, match=re.escape(repr(token))):
            enc.encode("x " + token)
    with pytest.raises(ValueError):
        enc.encode_batch(["fine", "not " + specials[0]])
    # a disallowed token that is not special still raises, as in tiktoken
    with pytest.raises(ValueError, match="bad"):
        enc.encode("a bad b", disallowed_special={"bad"})
    got = enc.encode(text, allowed_special="all")
    assert enc.decode_bytes(got) == text.encode() or name == "o200k_harmony"


def test_special_token_ids_and_batch_specials():
    enc = numtok.load("cl100k_base")
    texts = ["a<|endoftext|>b", "<|endoftext|>", "", "<|fim_prefix|>x<|fim_suffix|>"]
    batch = enc.encode_batch(texts, allowed_special="all")
    assert batch.to_list() == [ids(enc.encode(t, allowed_special="all")) for t in texts]
    assert batch[1].tolist() == [100257]


# ----------------------------------------------------------------------------------------------
# batches, padding, threads, processes


def test_batch_equals_single():
    enc = numtok.load("o200k_base")
    text = sample_text()
    texts = [text[i : i + n] for i, n in zip(range(0, 200_000, 997), [0, 1, 5, 50, 500, 5000] * 1000)]
    for threads in (1, 2, 3):
        batch = enc.encode_batch(texts, num_threads=threads, allowed_special="all")
        assert isinstance(batch, BatchEncoding) and len(batch) == len(texts)
        assert batch.ids.dtype == np.int32 and batch.offsets.dtype == np.int64
        assert len(batch.offsets) == len(texts) + 1 and batch.offsets[-1] == len(batch.ids)
        for i in range(0, len(texts), 17):
            assert ids(batch[i]) == ids(enc.encode(texts[i], allowed_special="all"))
        ordinary = enc.encode_ordinary_batch(texts, num_threads=threads)
        assert ordinary.to_list() == [ids(enc.encode_ordinary(t)) for t in texts]
    assert batch[-1].tolist() == enc.encode(texts[-1], allowed_special="all").tolist()
    assert len(enc.encode_batch([])) == 0 and enc.encode_batch([]).offsets.tolist() == [0]


@SETTINGS
@given(st.lists(st.text(max_size=40), max_size=12), st.integers(1, 30))
@example(["a\ud800", "\udc00b", "é😀"], 2)  # lone surrogates (also split across texts)
def test_batch_utf8_of_texts(texts, block_chars):
    """The batch's one-join conversion (and its byte lengths) equals converting each text."""
    from numtok._native.utf8 import utf8_bytes

    chars = np.array([len(t) for t in texts], dtype=np.int64)
    enc = numtok.load("cl100k_base")
    singles = [ids(enc.encode_ordinary(t)) for t in texts]
    original = batch_module.BLOCK_CHARS, buffers.DIRECT_UTF8_CHARS
    for direct_from in (0, original[1]):  # the GIL-free conversion, and text by text
        buffers.DIRECT_UTF8_CHARS = direct_from
        try:
            data, lens = buffers.utf8_of_texts("".join(texts), texts, chars)
            assert data.tobytes() == b"".join(utf8_bytes(t) for t in texts)
            assert data.base[len(data) : len(data) + buffers.PAD].tolist() == [0] * buffers.PAD
            assert lens.tolist() == [len(utf8_bytes(t)) for t in texts]
            batch_module.BLOCK_CHARS = block_chars  # many blocks: also the 1-thread block loop
            for threads in (1, 2):
                assert enc.encode_ordinary_batch(texts, num_threads=threads).to_list() == singles
            assert [ids(enc.encode_ordinary(t)) for t in texts] == singles
        finally:
            batch_module.BLOCK_CHARS, buffers.DIRECT_UTF8_CHARS = original


@SETTINGS
@given(st.text(max_size=80), st.sampled_from(["", "é", "\u20ac", "\U0001F600"]), st.data())
def test_padded_utf8_reads_every_str_kind(text, widener, data):
    """The GIL-free conversion reads CPython's 1-, 2- and 4-byte strings (``widener`` sets the
    kind) exactly as str.encode writes them, with the byte offset of any character offsets."""
    from numtok._native.utf8 import padded_utf8

    text = text + widener
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    converted = padded_utf8(text, 8, np.array(cuts, dtype=np.int64))
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert converted is None  # the caller repairs surrogates
        return
    out, ends = converted
    assert out.tobytes() == text.encode("utf-8") and out.flags.writeable
    assert out.base[len(out) : len(out) + 8].tolist() == [0] * 8
    assert ends.tolist() == [len(text[:c].encode("utf-8")) for c in cuts]


# Mixes of UTF-8 widths the conversion has a loop for (ASCII with 2-byte, ASCII with 3-byte),
# and any mix.
WIDTH_MIXES = [
    ["a", " ", ".", "é", "я", "\u07ff"],
    ["a", " ", ".", "\u0800", "\u0915", "한", "中", "\uffff"],
    ["a", " ", ".", "é", "я", "\u0915", "한", "中", "\u20ac", "\U0001F600"],
]


@SETTINGS
@given(
    st.sampled_from(WIDTH_MIXES).flatmap(lambda mix: st.lists(st.sampled_from(mix), min_size=1, max_size=8)).flatmap(
        lambda alphabet: st.text(st.sampled_from(alphabet), min_size=28, max_size=200)
    ),
    st.sampled_from([0, 1, 8]),
    st.sampled_from(["", " " * 33 + "\U0001F600"]),
    st.one_of(st.none(), st.integers(0, 200)),
)
def test_padded_utf8_blocks_of_mixed_widths(text, pad, widener, surrogate_at):
    """Blocks of 32 characters with ASCII and 2-, 3- and 4-byte characters in any order (each
    mix of widths has its own loop), in strs of every kind (``widener``: a 4-byte str), up to a
    buffer with no room past the worst case (``pad`` 0: the last characters are written a byte
    at a time), give str.encode's bytes; a lone surrogate among them is found whatever the mix."""
    from numtok._native.utf8 import padded_utf8

    if surrogate_at is not None:
        text = text[:surrogate_at] + "\udc00" + text[surrogate_at:]
    text += widener
    converted = padded_utf8(text, pad, np.zeros(0, np.int64))
    if surrogate_at is not None:
        assert converted is None  # the caller repairs surrogates
        return
    out, _ = converted
    assert out.tobytes() == text.encode("utf-8")
    assert out.base[len(out) : len(out) + pad].tolist() == [0] * pad


def _utf8_of_units_reference(units: list[int]) -> bytes | None:
    """Slow and obviously right: the UTF-8 of code units, None if one is a surrogate."""
    if any(0xD800 <= u <= 0xDFFF for u in units):
        return None
    return "".join(map(chr, units)).encode("utf-8")


@functools.cache
def _utf8_of16_blocks():
    from numba import njit

    from numtok._native.intrinsics import utf8_of16

    @njit
    def blocks(units, out, o):  # every whole block of 16 units, from out[o] on
        for i in range(0, len(units) - 15, 16):
            o = utf8_of16(units, i, out, o)
            if o < 0:
                return -1
        return o

    return blocks


UNIT_RANGES = {np.uint8: [(0, 0x7F), (0x80, 0xFF)], np.uint16: [(0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF)]}
UNIT_RANGES[np.uint32] = UNIT_RANGES[np.uint16] + [(0x10000, 0x10FFFF)]


@pytest.mark.skipif(tuple(llvm_binding.llvm_version_info) < (19,), reason="the vector compress needs LLVM 19 or later")
@SETTINGS
@given(st.sampled_from(sorted(UNIT_RANGES, key=lambda t: t().itemsize)).flatmap(
    lambda dtype: st.tuples(
        st.just(dtype),
        st.lists(st.sampled_from(UNIT_RANGES[dtype]).flatmap(lambda r: st.integers(*r)), min_size=16, max_size=80),
    )
), st.integers(0, 9))  # fmt: skip
def test_utf8_of16_writes_each_units_utf8(dtype_units, o):
    """The vector kernel (each unit's UTF-8 word compressed: vpcompressb, or LLVM's scalar form
    of it on CPUs without it) writes the reference's bytes for each whole block of 16 code units
    of any width, and returns -1 for a block with a surrogate."""
    dtype, values = dtype_units
    units = np.array(values, dtype=dtype)
    whole = len(values) // 16 * 16
    out = np.full(o + 4 * whole + 64, 0xAA, np.uint8)
    end = _utf8_of16_blocks()(units, out, o)
    expected = _utf8_of_units_reference(values[:whole])
    if expected is None:
        assert end == -1
        return
    assert end == o + len(expected) and out[o:end].tobytes() == expected
    assert out[:o].tolist() == [0xAA] * o


def test_utf8_conversion_without_byte_compress():
    """Where Numba compiles for a CPU without vpcompressb (``NUMBA_CPU_NAME=generic`` here),
    the conversion keeps its per-character loops, and they write str.encode's bytes for every
    mix of widths and str kind."""
    script = f"""
import random
import numpy as np
from numtok._native import intrinsics
from numtok._native.utf8 import padded_utf8
assert not intrinsics.HAS_BYTE_COMPRESS
rng = random.Random(7)
for mix in {WIDTH_MIXES!r}:
    for n in (31, 32, 33, 100, 1000):
        for widener in ("", "\\U0001F600"):
            text = "".join(rng.choice(mix) for _ in range(n)) + widener
            out, _ = padded_utf8(text, 8, np.zeros(0, np.int64))
            assert out.tobytes() == text.encode("utf-8"), (mix, n)
        assert padded_utf8(text[:20] + "\\udc00" + text[20:], 8, np.zeros(0, np.int64)) is None
print("ok")
"""
    env = dict(os.environ, NUMBA_CPU_NAME="generic")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def _mapping_flags(address: int) -> set[str]:
    """The VmFlags of the memory mapping that holds ``address`` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()[0]
            if not head.endswith(":"):  # a mapping's first line: "lo-hi perms ..."
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return set(line.split()[1:])
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"), reason="no transparent huge pages")
def test_ids_and_utf8_of_long_texts_stay_off_huge_pages(monkeypatch):
    """Arrays written once in order (a batch's UTF-8) from ``SMALL_PAGES_FROM`` bytes on, and
    the ids of texts from ``output.SMALL_PAGES_TEXT`` bytes on, are advised off the huge pages
    NumPy asks for (both lowered here to reach them); shrinking the ids keeps the advice, and
    the ids stay tiktoken's. Smaller ones keep NumPy's advice."""
    from numtok._native import hugepages
    from numtok.encode import output

    middle = lambda a: a.ctypes.data + a.nbytes // 2  # noqa: E731
    small = hugepages.empty_written_once(3 << 20, np.int32)  # 12 MiB: NumPy's huge pages
    assert "hg" in _mapping_flags(middle(small)) and "nh" not in _mapping_flags(middle(small))
    monkeypatch.setattr(hugepages, "SMALL_PAGES_FROM", 1 << 20)
    monkeypatch.setattr(output, "SMALL_PAGES_TEXT", 1 << 20)
    big = hugepages.empty_written_once(3 << 20, np.int32)
    assert "nh" in _mapping_flags(middle(big)) and "hg" not in _mapping_flags(middle(big))
    enc = numtok.load("cl100k_base")
    text = (sample_text() + "\n\n") * 6 + "é"  # 1.8 M characters: streamed, ids shrunk at the end
    expected = reference("cl100k_base").encode_ordinary(text)
    ids = enc.encode_ordinary(text)
    assert ids.tolist() == expected
    assert "nh" in _mapping_flags(middle(ids))
    batch = enc.encode_ordinary_batch([text, text[:1000]], num_threads=1)
    assert batch.to_list() == [expected, reference("cl100k_base").encode_ordinary(text[:1000])]
    assert "nh" in _mapping_flags(middle(batch.ids))


def test_utf8_conversion_falls_back_when_its_buffer_is_refused(monkeypatch):
    """The GIL-free conversion reserves the worst case (4 bytes a character for a 4-byte str);
    where the OS refuses that much address space, str.encode (real size) takes over."""
    from numtok._native import utf8 as _text

    enc = numtok.load("cl100k_base")
    text = sample_text()[:40_000] + "😀"
    expected = ids(enc.encode_ordinary(text))
    monkeypatch.setattr(_text, "_utf8_bound", lambda s: 1 << 62)
    assert _text.padded_utf8(text, 8, np.zeros(0, np.int64)) is None
    assert ids(enc.encode_ordinary(text)) == expected
    assert enc.encode_ordinary_batch([text] * 3, num_threads=2).to_list() == [expected] * 3


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_near_miss_keys_of_long_tokens(name):
    """Pieces that share a long token's length and first 8 (or 16) bytes but differ later must
    not be taken for it: the table keeps bytes 8-15 of such keys, and the rest is compared."""
    enc = numtok.load(name)
    ref = reference(name)
    long_tokens = [t for t in enc.vocab if 9 <= len(t) <= 24 and t.isascii() and t.strip().isalpha()][:400]
    assert long_tokens
    pieces = []
    for t in long_tokens:
        s = t.decode()
        for at in sorted({8, len(s) - 1, min(16, len(s) - 1)}):
            swapped = "q" if s[at] != "q" else "z"
            pieces.append(s[:at] + swapped + s[at + 1 :])
        pieces.append(s)
    text = " ".join(pieces)
    assert ids(enc.encode_ordinary(text)) == ref.encode_ordinary(text)
    for piece in pieces[:200]:
        assert ids(enc.encode_ordinary(piece)) == ref.encode_ordinary(piece)


def test_find_key_rejects_near_misses_in_its_probe_chain():
    """A key with the same length and first 8 (or 16) bytes sitting in the probe chain of a
    piece is not that piece: checked with and without the table's bytes 8-15 (``ext``)."""
    from numba import njit

    from numtok.encode import _kernels as kernels

    @njit
    def home_slot(a, n, bits):
        _, h = kernels._hash_bytes(a, 0, n)
        return np.int64(h >> np.uint64(64 - bits))

    @njit
    def find(tab, ext, tok_bytes, tok_off, a, n):
        k0, h = kernels._hash_bytes(a, 0, n)
        return kernels._find_key(tab, ext, kernels._table_bits(tab), tok_bytes, tok_off, a, 0, n, k0, h)

    def padded(raw: bytes) -> np.ndarray:
        return np.frombuffer(raw + bytes(16), dtype=np.uint8)

    for key, near in [(b" international", b" internaqional"), (b"abcdefghijklmnopqrst", b"abcdefghijklmnopqrXt")]:
        tok_bytes, tok_off = padded(key), np.array([0, len(key)], dtype=np.int64)
        for query, want in [(near, -1), (key, 0)]:
            tab = np.zeros(2 * 4, dtype=np.uint64)  # 4 slots: put the key where the query starts
            slot = home_slot(padded(query), len(query), 2)
            tab[2 * slot] = np.frombuffer(key[:8], dtype=np.uint64)[0]
            tab[2 * slot + 1] = (len(key) << 32) | 0
            ext = kernels.key_table_ext(tab, tok_bytes, tok_off)
            assert ext[slot] != 0
            for table_ext in (ext, np.zeros(0, np.uint64)):
                assert find(tab, table_ext, tok_bytes, tok_off, padded(query), len(query)) == want


def test_piece_caches_kept_at_most_one_per_core():
    from numtok._native.threads import cores_at_start

    enc = numtok.load("cl100k_base")
    text = sample_text()[:20_000]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: ids(enc.encode_ordinary(text)), range(32)))
    assert all(r == results[0] for r in results)
    assert 1 <= len(enc._piece_caches.free) <= cores_at_start()


def test_short_texts_from_many_threads():
    """Short texts go through a per-thread scratch buffer: threads must not see each other's."""
    enc = numtok.load("o200k_base")
    lines = [line for line in sample_text().splitlines() if line][:400]
    expected = [ids(enc.encode_ordinary(line)) for line in lines]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            assert list(pool.map(lambda line: ids(enc.encode_ordinary(line)), lines)) == expected


def test_piece_cache_grows_with_its_entries():
    """A grown piece cache holds each entry where encoding into that size would put it."""
    from numtok.encode import _kernels as kernels

    enc = numtok.load("cl100k_base")
    # short pieces, and long ones (16-64 bytes) for the long-piece region
    words = ["zyxwvut", "qwertyuiop", "xylophonic", "blorptastic", "aaaaaaaabbb", "   \n\n   ",
             "zyxwvutsrqponmlkjihgfedcba", "Pneumonoultramicroscopicsilicovolcanoconiosis",
             "qzjx" * 30, "中文的句子没有空格所以很长" * 4, "".join(chr(c) for c in range(0x20000, 0x2000F))]  # arena
    text = " ".join(words * 3)

    def cache_after(bits):
        pin_piece_cache(enc, kernels.new_piece_cache(bits))
        got = enc.encode_ordinary(text)
        return enc._piece_caches.free.pop(), got

    small, ids_small = cache_after(14)
    direct, ids_direct = cache_after(16)
    assert ids_small.tolist() == ids_direct.tolist() == ids(reference("cl100k_base").encode_ordinary(text))
    grown = kernels.new_piece_cache(16)
    kernels.grow_piece_cache(small, grown)
    assert np.count_nonzero(direct) > 0 and np.array_equal(grown, direct)
    assert len(piece_cache_arena(grown, 16)) == 3
    enc._piece_caches = PieceCaches()


def test_piece_cache_grows_only_with_the_text_encoded():
    """A crowded cache grows, but never past ``GROW_RATIO`` bytes per byte of text encoded so far:
    a growth rehashes every entry into fresh memory, which a short first pass does not win back."""
    from numtok.encode import _kernels as kernels
    from numtok.encode import piece_cache

    caches = PieceCaches()
    cache = caches.take(1000)
    bits = piece_cache.cache_bits(cache)
    long_base = 8 << bits
    cache[long_base + 24 : long_base + (16 << (bits - kernels.LONG_SHIFT)) : 32] = 1  # way 1 of every long set taken
    assert piece_cache.growth(cache, short=False) >= 1
    step = piece_cache.CHECK_BYTES
    seen = 1000
    while kernels.piece_cache_size(bits + 1) * 8 > piece_cache.GROW_RATIO * (seen + step):
        cache = caches.check(cache, step)  # crowded, but too little text went by
        seen += step
        assert piece_cache.cache_bits(cache) == bits
    assert piece_cache.cache_bits(caches.check(cache, step)) == bits + 1


def test_short_key_and_long_compare_match_their_plain_definitions():
    """The loop's branch-free helpers against obviously-correct Python: ``_short_key`` gives
    bytes 0-7 and 8-14 of a 1-15-byte piece and ``_hash_bytes``' hash (the whole-piece table
    is built with the latter: a differing hash would only cost probes, never change ids, so no
    encoding test would see it); ``_long_differs`` is 0 exactly when a long-region entry holds
    the piece (16-32 bytes, entry bytes zero past its length)."""
    from numba import njit

    from numtok.encode import _kernels as kernels

    short_key = njit(lambda a, s, n: kernels._short_key(a, s, n))
    hash_bytes = njit(lambda a, s, n: kernels._hash_bytes(a, s, n))
    long_differs = njit(lambda cache, way, a, s, n: kernels._long_differs(cache, way, a, s, n))
    rng = random.Random(3)
    for _ in range(300):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 48)))
        data = buffers.padded(np.frombuffer(raw, np.uint8))
        for s in range(len(raw)):
            n = min(len(raw) - s, rng.randrange(1, 16))
            k0, w1, h = short_key(data, s, n)
            piece = raw[s : s + n]
            assert int(k0) == int.from_bytes(piece[:8], "little")
            assert int(w1) == int.from_bytes(piece[8:], "little")
            assert h == hash_bytes(data, s, n)[1]
    for _ in range(300):
        n = rng.randrange(16, 33)
        piece = bytes(rng.randrange(256) for _ in range(n))
        tail = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(0, 24)))  # text after the piece
        data = buffers.padded(np.frombuffer(piece + tail, np.uint8))
        stored = piece if rng.random() < 0.5 else bytes(rng.choice([piece, piece[:-1] + b"x", piece + b"y", piece[:16]])[:32])
        entry = np.zeros(16, np.uint64)
        entry[:4] = np.frombuffer(stored.ljust(32, b"\0"), np.uint64)
        entry[8] = (3 << 8) | len(stored)
        assert (long_differs(entry, 0, data, 0, n) == 0) == (stored == piece), (piece, stored)


def test_long_piece_region_is_two_way_then_spills_to_the_arena():
    """Three long pieces of one long-region set: the first takes way 0, the second way 1, and
    the third, with both ways taken, goes to the arena; a lookup reads both ways and the arena
    (an id planted in any of the three comes back out)."""
    from numba import njit

    from numtok.encode import _kernels as kernels

    enc = numtok.load("cl100k_base")
    ref = reference("cl100k_base")
    bits = 14
    long_bits = bits - kernels.LONG_SHIFT - 1
    hash_bytes = njit(lambda a, s, n: kernels._hash_bytes(a, s, n))  # helpers are called from kernels only
    rng = random.Random(7)
    by_set: dict[int, list[str]] = {}
    while True:  # CJK letter runs of 6-12 letters (18-36 bytes): one piece each, several ids
        piece = "".join(rng.choice("的是不了人我在有他这中大来上国个到说们为子和你地出道也時年") for _ in range(rng.randrange(6, 13)))
        raw = piece.encode()
        _, h = hash_bytes(buffers.padded(np.frombuffer(raw, np.uint8)), 0, len(raw))
        group = by_set.setdefault(int(h) >> (64 - long_bits), [])
        if piece not in group:
            group.append(piece)
        if len(group) == 3:
            break
    index = int(h) >> (64 - long_bits)
    a, b, c = group
    pin_piece_cache(enc, kernels.new_piece_cache(bits))

    def encode(text):
        got = ids(enc.encode_ordinary(text))
        assert got == ids(ref.encode_ordinary(text))
        return enc._piece_caches.free[-1]

    encode(a)
    cache = encode(b)
    in_ways = [(a.encode(), ids(ref.encode_ordinary(a))), (b.encode(), ids(ref.encode_ordinary(b)))]
    assert piece_cache_long_set(cache, bits, index) == in_ways
    cache = encode(c)
    assert piece_cache_long_set(cache, bits, index) == in_ways
    assert piece_cache_arena(cache, bits) == [(c.encode(), ids(ref.encode_ordinary(c)))]
    arena_ids = piece_cache_arena_head(bits) + 8 + 1 + (len(c.encode()) + 7) // 8
    for at, piece in (((8 << bits) + 32 * index + 9, a), ((8 << bits) + 32 * index + 16 + 9, b), (arena_ids, c)):
        cache[at] = cache[at] & ~np.uint64((1 << 21) - 1)  # plant id 0 as the first id: a hit reads it back
        assert ids(enc.encode_ordinary(piece))[0] == 0
    enc._piece_caches = PieceCaches()


def test_piece_cache_answers_tokens_and_marks_pieces_of_more_than_four_ids():
    """Pieces the token table does not answer first (any of 9-15 bytes, and non-ASCII ones in a
    call where few are tokens) are kept in the piece cache's short set when they are
    tokens, as one id; in a call where enough are tokens, the token table answers a non-ASCII
    one and the cache does not keep it. A short piece of
    more than 4 ids leaves a mark there and its ids in the long region; a 16-64-byte token is
    kept in the long region. A hit reads each back from where it is kept, and a mark whose
    long entry is gone is merged again."""
    from numba import njit

    from numtok.encode import _kernels as kernels

    enc = numtok.load("cl100k_base")
    ref = reference("cl100k_base")
    bits = 14
    long_bits = bits - kernels.LONG_SHIFT - 1
    hash_bytes = njit(lambda a, s, n: kernels._hash_bytes(a, s, n))  # helpers are called from kernels only

    def h(piece: str) -> int:
        raw = piece.encode()
        return int(hash_bytes(buffers.padded(np.frombuffer(raw, np.uint8)), 0, len(raw))[1])

    def one_token(piece: str) -> bool:
        return len(ref.encode_ordinary(piece)) == 1 and len(numtok.pretokenize(piece, "cl100k")) == 1

    short_token = next(p for p in ("的", "是", "ки", " не") if one_token(p))
    ascii_token = next(p for p in (" different", " performance", " something") if one_token(p))
    long_token = next(p for p in ("-" * 32, "-" * 16, " " * 16) if one_token(p))
    many = next(p for p in ("鬱齉龘", "齉龘鬱齉", "龘鬱") if len(p.encode()) <= 15 and len(ref.encode_ordinary(p)) > 4)
    # After the short token, short non-ASCII pieces that are no tokens: the call's sample
    # (``mostly_tokens``) then sends such pieces to the piece cache first.
    not_tokens = 3 * next(p for p in (" 龘", " 齉", " 鬱") if not one_token(p))
    pin_piece_cache(enc, kernels.new_piece_cache(bits))
    cache = enc._piece_caches.free[-1]
    assert ids(enc.encode_ordinary(short_token)) == ids(ref.encode_ordinary(short_token))
    assert piece_cache_short_set(cache, h(short_token) >> (64 - bits)) == [None, None]
    for text in (short_token + not_tokens, ascii_token, long_token, many):
        assert ids(enc.encode_ordinary(text)) == ids(ref.encode_ordinary(text))
    for piece in (short_token, ascii_token):
        assert (piece.encode(), ids(ref.encode_ordinary(piece))) in piece_cache_short_set(cache, h(piece) >> (64 - bits))
    assert (many.encode(), None) in piece_cache_short_set(cache, h(many) >> (64 - bits))
    in_long = piece_cache_long_set(cache, bits, h(many) >> (64 - long_bits))
    assert (many.encode(), ids(ref.encode_ordinary(many))) in in_long
    assert (long_token.encode(), ids(ref.encode_ordinary(long_token))) in piece_cache_long_set(cache, bits, h(long_token) >> (64 - long_bits))
    # An id planted where each is kept comes back out.
    for piece in (short_token, ascii_token):
        index = h(piece) >> (64 - bits)
        way = [w and w[0] for w in piece_cache_short_set(cache, index)].index(piece.encode())
        cache[8 * index + 4 * way + 2] = np.uint64(0xFFFFFFFF00000000)  # id 0
        assert ids(enc.encode_ordinary(piece + not_tokens))[0] == 0
    index = h(long_token) >> (64 - long_bits)
    way = [w and w[0] for w in piece_cache_long_set(cache, bits, index)].index(long_token.encode())
    at = (8 << bits) + 32 * index + 16 * way + 9
    cache[at] = cache[at] & ~np.uint64((1 << 21) - 1)
    assert ids(enc.encode_ordinary(long_token)) == [0]
    # The mark's long entry gone: merged again, and kept again.
    index = h(many) >> (64 - long_bits)
    cache[(8 << bits) + 32 * index : (8 << bits) + 32 * index + 32] = 0
    assert ids(enc.encode_ordinary(many)) == ids(ref.encode_ordinary(many))
    assert (many.encode(), ids(ref.encode_ordinary(many))) in piece_cache_long_set(cache, bits, index)
    enc._piece_caches = PieceCaches()


def test_piece_cache_notes_whether_short_pieces_of_more_than_four_ids_are_common():
    """A call that meets many short pieces of more than 4 ids (marks) sets the arena head's
    third word, which makes later calls prefetch more pieces' long-region sets; English text
    clears it. (It only steers prefetching: the ids are checked equal either way.)"""
    from numtok.encode import _kernels as kernels

    enc = numtok.load("cl100k_base")
    ref = reference("cl100k_base")
    bits = 14
    rng = random.Random(3)
    many = [p for p in ("鬱齉龘", "齉龘鬱", "龘鬱", "鬱齉", "齉龘") if len(ref.encode_ordinary(p)) > 4]
    text = " ".join(rng.choice(many) for _ in range(3000))
    pin_piece_cache(enc, kernels.new_piece_cache(bits))
    cache = enc._piece_caches.free[-1]
    flag = piece_cache_arena_head(bits) + 2
    for _ in range(2):  # the first call stores the pieces, the second meets their marks
        assert ids(enc.encode_ordinary(text)) == ids(ref.encode_ordinary(text))
    assert cache[flag] == 1
    english = " ".join(rng.choice(["the", "cache", "of", "pieces", "and", "words"]) for _ in range(3000))
    assert ids(enc.encode_ordinary(english)) == ids(ref.encode_ordinary(english))
    assert cache[flag] == 0
    enc._piece_caches = PieceCaches()


def long_piece_text(seed: str, n: int) -> str:
    """Pieces for the piece cache's arena: CJK and kana runs of 22-120 letters (65-360 bytes),
    ASCII letter runs of 65-300, and runs of rare CJK letters (4 bytes, several ids each) of up
    to 64 bytes with more than 21 ids; each seen a few times, with short pieces between."""
    rng = random.Random(seed)
    common = "的是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之過家學ありがとうございますカタカナ"
    rare = "".join(chr(c) for c in range(0x20000, 0x20040))  # CJK Extension B
    pieces = ["".join(rng.choice(common) for _ in range(rng.randrange(22, 120))) for _ in range(n)]
    pieces += ["".join(rng.choice("qzjxkvwb") for _ in range(rng.randrange(65, 300))) for _ in range(n // 4)]
    pieces += ["".join(rng.choice(rare) for _ in range(rng.randrange(8, 17))) for _ in range(n // 4)]
    return "\n".join(rng.choice(pieces) + rng.choice([" 1", ", ", "。"]) for _ in range(3 * n))


def pin_piece_cache(enc: Tokenizer, cache: np.ndarray) -> None:
    """Make ``enc`` encode with ``cache`` whatever it has encoded before (its sizing policy
    would otherwise grow a small cache), short texts too (their path keeps a cache per thread)."""
    enc._piece_caches = PieceCaches()  # (which makes the short-call path anew)
    enc._short = NoShortCalls()
    enc._piece_caches.free = [cache]
    enc._piece_caches.grow = False


@pytest.mark.parametrize("name", CORE)
def test_piece_cache_arena_holds_long_pieces(name):
    """Every piece of more than 64 bytes, or of more than 21 ids, is kept in the arena with
    tiktoken's ids for it, and a second pass is answered from there."""
    from numtok.encode import _kernels as kernels

    enc, ref = numtok.load(name), reference(name)
    text = long_piece_text(name, 300)
    expected = ref.encode_ordinary(text)
    pieces = {p.encode() for p in regex.compile(ref._pat_str).findall(text)}
    wanted = {p for p in pieces if len(p) > 64 or len(ref._encode_single_piece(p)) > 21}
    pin_piece_cache(enc, kernels.new_piece_cache(14))
    assert ids(enc.encode_ordinary(text)) == expected
    cache = enc._piece_caches.free[0]
    entries = piece_cache_arena(cache, 14)
    assert {p for p, _ in entries} == wanted
    assert all(got == ref._encode_single_piece(p) for p, got in entries)
    assert ids(enc.encode_ordinary(text)) == expected
    assert len(piece_cache_arena(cache, 14)) == len(entries)  # all hits: nothing appended
    # Answers come from the arena: with its ids spoiled, the output changes.
    spoiled = cache.copy()
    head = piece_cache_arena_head(14)
    data = spoiled[head + 8 : head + 8 + int(spoiled[head])]
    data[data < 2**32] ^= np.uint64(1)  # id words (headers have n_ids in their high bits)
    pin_piece_cache(enc, spoiled)
    assert ids(enc.encode_ordinary(text)) != expected
    enc._piece_caches = PieceCaches()


@pytest.mark.parametrize("name", CORE)
def test_piece_cache_arena_full_starts_again(name):
    """A small arena fills many times over (and is then cleared): ids stay exact on every pass."""
    from numtok.encode import _kernels as kernels

    enc, ref = numtok.load(name), reference(name)
    text = long_piece_text(name + "full", 200)
    expected = ref.encode_ordinary(text)
    cache = kernels.new_piece_cache(8)  # 64 KiB of arena data
    data_words = 1 << (8 + kernels.ARENA_DATA_SHIFT)
    longest = data_words >> kernels.ARENA_MAX_SHIFT
    head = piece_cache_arena_head(8)
    used = []
    for _ in range(3):
        pin_piece_cache(enc, cache)
        assert ids(enc.encode_ordinary(text)) == expected
        cache = enc._piece_caches.free.pop()
        assert len(cache) == kernels.piece_cache_size(8)
        used.append(int(cache[head]))
        assert 0 < used[-1] <= data_words
    entries = piece_cache_arena(cache, 8)
    assert entries and all(got == ref._encode_single_piece(p) for p, got in entries)
    fitting = {p for p in map(str.encode, regex.compile(ref._pat_str).findall(text)) if 64 < len(p) <= longest}
    assert len(entries) < len(fitting)  # it was cleared
    enc._piece_caches = PieceCaches()


def test_batch_pad():
    batch = BatchEncoding(np.array([1, 2, 3, 4, 5, 6], np.int32), np.array([0, 3, 3, 6], np.int64))
    assert batch.pad(0).tolist() == [[1, 2, 3], [0, 0, 0], [4, 5, 6]]
    assert batch.pad(-1, length=5).tolist() == [[1, 2, 3, -1, -1], [-1] * 5, [4, 5, 6, -1, -1]]
    assert batch.pad(9, length=2, truncate=True).tolist() == [[1, 2], [9, 9], [4, 5]]
    with pytest.raises(ValueError, match="text 0"):
        batch.pad(0, length=2)
    assert batch.pad(0).dtype == np.int32
    assert BatchEncoding(np.zeros(0, np.int32), np.zeros(1, np.int64)).pad(0).shape == (0, 0)
    with pytest.raises(IndexError):
        batch[3]


def test_batch_views_and_lists():
    enc = numtok.load("cl100k_base")
    batch = enc.encode_batch(["hello world", "x"])
    view = batch[0]
    assert view.base is not None and np.shares_memory(view, batch.ids)
    assert batch.to_list() == [[15339, 1917], [87]]
    assert [v.tolist() for v in batch] == batch.to_list()


def test_threads_share_one_tokenizer():
    enc = numtok.load("cl100k_base")
    text = sample_text()
    chunks = [text[i : i + 20_000] for i in range(0, len(text), 20_000)] * 3
    expected = [ids(enc.encode_ordinary(c)) for c in chunks]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda c: ids(enc.encode_ordinary(c)), chunks))
        batches = list(pool.map(lambda k: enc.encode_ordinary_batch(chunks[k::4], num_threads=2).to_list(), range(4)))
    assert got == expected
    assert batches == [expected[k::4] for k in range(4)]


def _encode_in_child(args):
    tok, text = args
    return ids(tok.encode_ordinary(text))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_processes(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method}")
    enc = numtok.load("cl100k_base")
    custom = Tokenizer({b"a": 0, b"b": 1, b"ab": 2}, pattern=r"\w+", name="tiny")
    text = sample_text()[:30_000]
    enc.encode_ordinary_batch([text, text], num_threads=2)  # threads used before forking
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        got = pool.map(_encode_in_child, [(enc, text), (custom, "abab ba")])
    assert got == [ids(enc.encode_ordinary(text)), ids(custom.encode("abab ba"))]


def test_pickle_by_name_and_by_value():
    enc = numtok.load("cl100k_base")
    assert len(pickle.dumps(enc)) < 200 and pickle.loads(pickle.dumps(enc)) is enc
    vocab = {b"a": 0, b"b": 1, b"ab": 2, b"</w>": 3}
    for tok in [Tokenizer(vocab, pattern=r"\w+", special_tokens={"<s>": 9}, name="x"),
                Tokenizer(vocab, merges=[(b"a", b"b")], pattern=r"\w+", end_of_word="</w>")]:  # fmt: skip
        copy = pickle.loads(pickle.dumps(tok))
        assert copy.vocab == tok.vocab and copy.merges == tok.merges and copy.name == tok.name
        assert ids(copy.encode("abba ab", allowed_special="all")) == ids(tok.encode("abba ab", allowed_special="all"))


# ----------------------------------------------------------------------------------------------
# files and bad input


def test_from_tiktoken_equals_load(tmp_path):
    path = tmp_path / "cl.tiktoken"
    path.write_bytes(registry.rank_file_content("cl100k_base"))
    tok = Tokenizer.from_tiktoken(path, pattern="cl100k", special_tokens={"<|endoftext|>": 100257})
    text = sample_text()[:50_000]
    assert ids(tok.encode_ordinary(text)) == ids(numtok.load("cl100k_base").encode_ordinary(text))
    assert tok.name == "cl" and tok.eot_token == 100257
    ranks = read_tiktoken_ranks(path)
    assert ranks == reference("cl100k_base")._mergeable_ranks


@pytest.mark.parametrize(
    "content, line, what",
    [
        (b"YQ== 0\nYg== x\n", 2, "invalid rank"),
        (b"YQ== 0\nYg==\n", 2, "expected"),
        (b"YQ== 0\n\nY*== 1\n", 3, "base64"),
        (b"YQ== 0\nYWI 1\n", 2, "base64"),
        (b"YQ== 0\nYQ== 1\n", 2, "twice"),
        (b"YQ== 0\nYg== 0\n", 2, "twice"),
        (b"YQ== 0\nYg== 99999999999\n", 2, "invalid rank"),
        (b"YQ== 0\nYg== 1\nYW", 3, "expected"),
    ],
)
def test_corrupt_rank_files(tmp_path, content, line, what):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"bad\.tiktoken: line {line}: .*{what}"):
        read_tiktoken_ranks(path)
    with pytest.raises(ValueError, match=rf"bad\.tiktoken: line {line}"):
        Tokenizer.from_tiktoken(path, pattern="gpt2")


def test_truncated_gzip_and_missing_file(tmp_path):
    path = tmp_path / "cut.tiktoken.gz"
    path.write_bytes((registry.DATA_DIR / "r50k_base.tiktoken.gz").read_bytes()[:5000])
    with pytest.raises(ValueError, match="cut.tiktoken.gz"):
        read_tiktoken_ranks(path)
    missing = tmp_path / "nope.tiktoken"
    with pytest.raises(FileNotFoundError, match="nope.tiktoken"):
        Tokenizer.from_tiktoken(missing)


def test_decode_errors():
    enc = numtok.load("cl100k_base")
    for bad in [-1, 100256, 100277, 10**12, 2**70]:
        with pytest.raises(ValueError, match=str(bad)):
            enc.decode([15339, bad])
    with pytest.raises(TypeError):
        enc.decode(["a"])
    with pytest.raises(TypeError):
        enc.decode([1.5])
    assert enc.decode([]) == "" and enc.decode(np.array([15339], np.uint16)) == "hello"
    assert enc.decode_tokens_bytes(np.array([15339, 1917])) == [b"hello", b" world"]
    assert enc.decode_single_token_bytes(100257) == b"<|endoftext|>"


def test_encode_type_errors():
    enc = numtok.load("cl100k_base")
    for bad in [b"bytes", None, 3, ["list"]]:
        with pytest.raises(TypeError):
            enc.encode(bad)
        with pytest.raises(TypeError):
            enc.encode_ordinary(bad)
    with pytest.raises(TypeError):
        enc.encode_batch("a string")
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str, not bytes"):
        enc.encode_batch(["ok", b"no"])
    original = batch_module.BLOCK_CHARS
    batch_module.BLOCK_CHARS = 10  # many blocks: the bad text is found in a later one
    try:
        for threads in (1, 2):
            for bad, kind in ((b"no", "bytes"), (None, "NoneType"), (["x"], "list")):
                texts = ["some text"] * 40 + [bad] + ["more"] * 5
                with pytest.raises(TypeError, match=rf"texts\[40\] must be a str, not {kind}"):
                    enc.encode_batch(texts, num_threads=threads)
    finally:
        batch_module.BLOCK_CHARS = original
    with pytest.raises(ValueError):
        enc.encode_batch(["x"], num_threads=0)


def test_constructor_errors():
    with pytest.raises(TypeError):
        Tokenizer({"a": 0})
    with pytest.raises(ValueError, match="id 0"):
        Tokenizer({b"a": 0, b"b": 0})
    with pytest.raises(ValueError, match="special"):
        Tokenizer({b"a": 0}, special_tokens={"<s>": 0})
    with pytest.raises(ValueError, match="not in the vocab"):
        Tokenizer({b"a": 0, b"b": 1}, merges=[(b"a", b"b")])
    with pytest.raises(ValueError, match="units"):
        Tokenizer({b"a": 0}, units="words")
    with pytest.raises(ValueError, match="unk_token"):
        Tokenizer({b"a": 0}, unk_token="<unk>")


def test_empty_and_tiny_inputs():
    enc = numtok.load("cl100k_base")
    assert enc.encode("").shape == (0,) and enc.encode("").dtype == np.int32
    assert ids(enc.encode("a")) == [64]
    assert enc.decode(enc.encode(" ")) == " "


def test_repr_and_single_token():
    enc = numtok.load("cl100k_base")
    assert "cl100k_base" in repr(enc)
    assert enc.encode_single_token("hello") == 15339
    assert enc.encode_single_token("<|endoftext|>") == 100257
    with pytest.raises(KeyError):
        enc.encode_single_token("hello world")


def test_piece_cache_grows_when_its_pieces_crowd_it():
    """Many distinct long CJK pieces in one call crowd the smallest cache's long-piece region:
    it is replaced by a bigger one between blocks, keeps serving exact ids, and is the one
    given back. Short calls of a few pieces leave the cache as small as it started."""
    from numtok.encode import piece_cache

    enc = numtok.load("cl100k_base")
    ref = reference("cl100k_base")
    enc._piece_caches = PieceCaches()
    for line in sample_text().splitlines()[:300]:
        assert ids(enc.encode_ordinary(line)) == ids(ref.encode_ordinary(line))
    assert enc._piece_caches.bits == piece_cache.MIN_CACHE_BITS
    assert all(piece_cache.growth(c) == 0 for c in enc._piece_caches.free)

    rng = random.Random(11)
    letters = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    text = "。".join("".join(rng.choice(letters) for _ in range(rng.randrange(6, 20))) for _ in range(100_000))
    assert len(text.encode()) > 3 * piece_cache.CHECK_BYTES
    assert ids(enc.encode_ordinary(text)) == ids(ref.encode_ordinary(text))
    grown = enc._piece_caches.bits
    assert grown > piece_cache.MIN_CACHE_BITS
    assert [piece_cache.cache_bits(c) for c in enc._piece_caches.free] == [grown]
    assert ids(enc.encode_ordinary(text)) == ids(ref.encode_ordinary(text))  # from the grown cache
    enc._piece_caches.clear()
    assert enc._piece_caches.bits == piece_cache.MIN_CACHE_BITS and not enc._piece_caches.free
    enc._piece_caches = PieceCaches()


def test_pieces_per_set_inverts_the_share_of_sets_holding_two():
    """``pieces_per_set`` against pieces thrown into sets at random: the share of sets that
    got two or more gives back the pieces per set thrown."""
    from numtok.encode.piece_cache import pieces_per_set

    rng = np.random.default_rng(5)
    sets = 1 << 16
    for per_set in (0.1, 0.4, 0.8, 1.5, 3.0):
        counts = np.bincount(rng.integers(0, sets, int(per_set * sets)), minlength=sets)
        share = np.count_nonzero(counts >= 2) / sets
        assert pieces_per_set(share) == pytest.approx(per_set, rel=0.05)
    assert pieces_per_set(0.0) == 0.0 and pieces_per_set(1.0) == float("inf")


def test_piece_cache_crowded_by_short_pieces_grows_to_fit_them_after_the_call(monkeypatch):
    """A call with more distinct short pieces than the smallest cache holds leaves it crowded;
    it is grown when the call gives it back, at once to hold them at ``TARGET_LOAD`` a set
    (more than one doubling), keeps their ids exact, and later calls keep that size. (Here
    without the bound of ``GROW_RATIO``, which ``test_piece_cache_grows_only_with_the_text_encoded``
    checks.)"""
    from numtok.encode import piece_cache

    monkeypatch.setattr(piece_cache, "GROW_RATIO", 1 << 40)
    enc = numtok.load("cl100k_base")
    ref = reference("cl100k_base")
    enc._piece_caches = PieceCaches()
    rng = random.Random(3)
    letters = "bcdfghjklmnpqrstvwxz"  # consonant runs: mostly pieces of 2-4 ids, not tokens
    words = ["".join(rng.choice(letters) for _ in range(rng.randrange(4, 8))) for _ in range(40_000)]
    text = " ".join(rng.choice(words) for _ in range(150_000))
    assert piece_cache.CHECK_BYTES < len(text) < 1 << (piece_cache.MIN_CACHE_BITS + 8)  # the byte rule keeps 2^14
    crowded = []
    give = enc._piece_caches.give
    monkeypatch.setattr(enc._piece_caches, "give", lambda cache: (crowded.append(piece_cache.growth(cache)), give(cache)))
    assert ids(enc.encode_ordinary(text)) == ids(ref.encode_ordinary(text))
    (grown,) = enc._piece_caches.free
    bits = piece_cache.cache_bits(grown)
    assert crowded[0] >= 2 and bits >= piece_cache.MIN_CACHE_BITS + 2 and enc._piece_caches.bits == bits
    assert piece_cache.growth(grown) == 0
    assert ids(enc.encode_ordinary(text)) == ids(ref.encode_ordinary(text))
    assert [piece_cache.cache_bits(c) for c in enc._piece_caches.free] == [bits]
    enc._piece_caches = PieceCaches()
