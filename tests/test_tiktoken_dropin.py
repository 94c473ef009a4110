"""numtok.tiktoken against the real tiktoken: the same results, types and exceptions.

The references are real ``tiktoken.Encoding`` objects made by tiktoken's own constructors
(``tiktoken_ext.openai_public``), their rank files served offline from numtok's bundled copies
(sha256-checked). Inputs are real text from ``tests/data`` (many scripts) and hypothesis text.
tiktoken's own test suite runs against the drop-in in ``test_tiktoken_suite`` (marked slow).
"""

from __future__ import annotations

import functools
import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numtok.tiktoken as dropin
from numtok.tiktoken import load as dropin_load
from numtok.tiktoken import registry as dropin_registry

tiktoken = pytest.importorskip("tiktoken")
openai_public = pytest.importorskip("tiktoken_ext.openai_public")

DATA = Path(__file__).parent / "data"
REF = Path(__file__).resolve().parents[1].parent / "shared" / "ref"
ALL = ["gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony"]
CORE = ["r50k_base", "cl100k_base", "o200k_base"]
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
# every code point, lone surrogates included (the drop-in repairs them as tiktoken does)
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=60)


@functools.cache
def real_arguments(name: str) -> dict:
    """tiktoken's own constructor's arguments for ``name``, its files read offline."""
    patched = {"load_tiktoken_bpe": dropin_load.load_tiktoken_bpe,
               # gpt2's data-gym files hold r50k's ranks (numtok's registry checks the same)
               "data_gym_to_mergeable_bpe_ranks": lambda *a, **k: dropin_load.load_tiktoken_bpe(dropin_load._OPENAI_PUBLIC + "r50k_base.tiktoken")}  # fmt: skip
    saved = {k: getattr(openai_public, k) for k in patched}
    try:
        for k, v in patched.items():
            setattr(openai_public, k, v)
        return openai_public.ENCODING_CONSTRUCTORS[name]()
    finally:
        for k, v in saved.items():
            setattr(openai_public, k, v)


@functools.cache
def real(name: str):
    return tiktoken.Encoding(**real_arguments(name))


@functools.cache
def lines() -> list[str]:
    out = []
    for path in (DATA / "sample_mixed.txt", DATA / "multilingual_sample.txt"):
        text = path.read_bytes().decode("utf-8")
        out += [line for line in text.splitlines(keepends=True) if line.strip()]
    return out


@functools.cache
def sample_lines(k: int = 400, seed: int = 0) -> list[str]:
    return random.Random(seed).sample(lines(), k)


def outcome(call):
    """("ok", value) or (exception type, message) of ``call()``."""
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__, str(exc)


# ------------------------------------------------------------------------------------------------
# the encodings themselves


@pytest.mark.parametrize("name", ALL)
def test_bundled_encodings_have_tiktokens_attributes(name):
    enc, ref = dropin.get_encoding(name), real(name)
    assert (enc.name, enc._pat_str, enc._special_tokens) == (ref.name, ref._pat_str, ref._special_tokens)
    assert (enc.n_vocab, enc.max_token_value, enc.special_tokens_set) == (ref.n_vocab, ref.max_token_value, ref.special_tokens_set)
    assert outcome(lambda: enc.eot_token) == outcome(lambda: ref.eot_token)
    assert enc._mergeable_ranks == ref._mergeable_ranks
    assert repr(enc) == repr(ref)


def test_names_and_models_as_tiktoken():
    assert dropin.list_encoding_names() == tiktoken.list_encoding_names()
    assert dropin.model.MODEL_TO_ENCODING == tiktoken.model.MODEL_TO_ENCODING
    assert list(dropin.model.MODEL_PREFIX_TO_ENCODING.items()) == list(tiktoken.model.MODEL_PREFIX_TO_ENCODING.items())
    models = list(tiktoken.model.MODEL_TO_ENCODING) + [p + "x-2026" for p in tiktoken.model.MODEL_PREFIX_TO_ENCODING] + ["gpt-9000", ""]
    for model in models:
        assert outcome(lambda: dropin.encoding_name_for_model(model)) == outcome(lambda: tiktoken.encoding_name_for_model(model))
    assert dropin.encoding_for_model("gpt-4o") is dropin.get_encoding("o200k_base")
    with pytest.raises(ValueError, match="Unknown encoding cl200k_base.\nKnown encodings: gpt2, r50k_base"):
        dropin.get_encoding("cl200k_base")
    assert outcome(lambda: dropin.get_encoding(5)) == outcome(lambda: tiktoken.get_encoding(5))


@pytest.mark.parametrize("name", ALL)
def test_every_token_round_trips_as_in_tiktoken(name):
    enc, ref = dropin.get_encoding(name), real(name)
    assert enc.token_byte_values() == ref.token_byte_values()
    ids = list(range(enc.n_vocab + 2))
    for i in ids:
        got = outcome(lambda: enc.decode_single_token_bytes(i))
        assert got == outcome(lambda: ref.decode_single_token_bytes(i)), i
        if got[0] == "ok":
            assert enc.encode_single_token(got[1]) == ref.encode_single_token(got[1])
        assert enc.is_special_token(i) == ref.is_special_token(i)


# ------------------------------------------------------------------------------------------------
# encoding and decoding real text


@pytest.mark.parametrize("name", CORE)
def test_encode_and_decode_real_text(name):
    enc, ref = dropin.get_encoding(name), real(name)
    texts = sample_lines()
    for text in texts:
        ids = ref.encode(text, disallowed_special=())
        assert enc.encode(text, disallowed_special=()) == ids
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
        out = enc.encode_to_numpy(text, disallowed_special=())
        assert out.dtype == np.uint32 and out.tolist() == ids
        assert enc.decode(ids) == ref.decode(ids) == text
        assert enc.decode_bytes(ids) == ref.decode_bytes(ids)
        assert enc.decode_tokens_bytes(ids) == ref.decode_tokens_bytes(ids)
        assert enc.decode_with_offsets(ids) == ref.decode_with_offsets(ids)
        assert enc._encode_single_piece(text) == ref._encode_single_piece(text)
        assert enc._encode_only_native_bpe(text) == ref._encode_only_native_bpe(text)
    whole = "".join(texts)
    assert enc.encode(whole, disallowed_special=()) == ref.encode(whole, disallowed_special=())
    assert type(enc.encode(whole, disallowed_special=())[0]) is int


@pytest.mark.parametrize("name", CORE)
def test_batches_real_text(name):
    enc, ref = dropin.get_encoding(name), real(name)
    texts = sample_lines() + ["", " "]
    expected = ref.encode_ordinary_batch(texts)
    for threads in (1, 2, 8):
        assert enc.encode_ordinary_batch(texts, num_threads=threads) == expected
    assert enc.encode_batch(texts, disallowed_special=()) == ref.encode_batch(texts, disallowed_special=())
    assert enc.encode_ordinary_batch(iter(texts)) == expected  # any iterable, as tiktoken's map
    assert enc.decode_batch(expected) == ref.decode_batch(expected) == texts
    assert enc.decode_bytes_batch(expected) == ref.decode_bytes_batch(expected)
    assert enc.encode_batch([]) == enc.decode_batch([]) == []


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_bytes_that_are_not_utf8_as_tiktoken(name):
    enc, ref = dropin.get_encoding(name), real(name)
    rng = random.Random(1)
    for text in sample_lines(150):
        raw = text.encode("utf-8")
        for cut in {rng.randrange(len(raw) + 1) for _ in range(3)}:
            for junk in (b"", b"\x80", b"\xff\xfe", raw[cut : cut + 5]):
                data = raw[:cut] + junk
                assert enc._encode_bytes(data) == ref._encode_bytes(data), data


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
def test_encode_with_unstable_as_tiktoken(name):
    enc, ref = dropin.get_encoding(name), real(name)
    rng = random.Random(2)
    prefixes = ["hello fanta", "hello world\n", "x = 1;  ", "<|endoftext|>", "a<|endoftext|>b", "über", "日本"]
    prefixes += [t[: rng.randrange(1, min(len(t), 60) + 1)] for t in sample_lines(30, seed=3)]
    for text in prefixes:
        got = enc.encode_with_unstable(text, allowed_special="all")
        stable, completions = ref.encode_with_unstable(text, allowed_special="all")
        assert got[0] == stable and sorted(got[1]) == sorted(completions), text


# ------------------------------------------------------------------------------------------------
# special tokens and errors


@pytest.mark.parametrize("name", ["cl100k_base", "p50k_edit", "o200k_harmony"])
def test_special_tokens_as_tiktoken(name):
    enc, ref = dropin.get_encoding(name), real(name)
    specials = sorted(ref.special_tokens_set)[:6]
    texts = [f"a{s} b{t}c" for s, t in zip(specials, reversed(specials))] + ["plain text", specials[0]]
    options = [{}, {"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {specials[0]}},
               {"allowed_special": {specials[0]}, "disallowed_special": ()}, {"disallowed_special": {specials[-1]}},
               {"allowed_special": "all", "disallowed_special": "all"}, {"disallowed_special": ["plain"]}]  # fmt: skip
    for text in texts:
        for kw in options:
            assert outcome(lambda: enc.encode(text, **kw)) == outcome(lambda: ref.encode(text, **kw)), (text, kw)
            assert outcome(lambda: enc.encode_batch(["ok", text], **kw)) == outcome(lambda: ref.encode_batch(["ok", text], **kw))
            assert outcome(lambda: enc.encode_to_numpy(text, **kw).tolist()) == outcome(lambda: ref.encode_to_numpy(text, **kw).tolist())


def test_bad_arguments_raise_as_tiktoken():
    enc, ref = dropin.get_encoding("cl100k_base"), real("cl100k_base")
    calls = [
        lambda e: e.decode([100261]), lambda e: e.decode([-1]), lambda e: e.decode([2**32]), lambda e: e.decode(["a"]),
        lambda e: e.decode([1.0]), lambda e: e.decode("ab"), lambda e: e.decode(iter([1, 2])), lambda e: e.decode(b"ab"),
        lambda e: e.decode((1, 2)), lambda e: e.decode(np.array([1, 2], dtype=np.uint32)), lambda e: e.decode([True]),
        lambda e: e.decode_bytes([15339, 100261]), lambda e: e.decode_single_token_bytes(100261),
        lambda e: e.decode_single_token_bytes(-1), lambda e: e.decode_single_token_bytes(np.int64(5)),
        lambda e: e.decode_tokens_bytes([1, 100261]), lambda e: e.decode_with_offsets([100261]),
        lambda e: e.decode_with_offsets([9468]), lambda e: e.decode_batch([[1], [100261]]),
        lambda e: e.decode([9468], errors="strict"), lambda e: e.decode([9468], errors="ignore"),
        lambda e: e.encode_single_token("zzzzqqq"), lambda e: e.encode_single_token(b"\xff"),
        lambda e: e.encode_single_token("<|fim_middle|>"), lambda e: e.is_special_token(1.0),
        lambda e: e.encode(b"x"), lambda e: e.encode_ordinary_batch("ab"), lambda e: e.encode_batch(["a"], num_threads=0),
        lambda e: e.encode("a", allowed_special={"zz"}), lambda e: e.encode("x", disallowed_special={"x"}),
        lambda e: e.encode("\ud83d\udc4d \ud83d"), lambda e: e.encode_ordinary("\udc4d\ud83d"),
        lambda e: e.encode_batch(["\ud83d\udc4d", "\ud83d"]),
    ]  # fmt: skip
    for i, call in enumerate(calls):
        assert outcome(lambda: call(enc)) == outcome(lambda: call(ref)), i


def test_custom_encodings_as_tiktoken():
    base = real_arguments("r50k_base")
    for pat_str in (base["pat_str"], r"\w+|\s+|[^\w\s]+", "hello"):  # "hello": a regex, not a pattern name
        kw = dict(name="custom", pat_str=pat_str, mergeable_ranks=base["mergeable_ranks"], special_tokens={"<|x|>": 100_000})
        enc, ref = dropin.Encoding(**kw), tiktoken.Encoding(**kw)
        assert enc._mergeable_ranks is kw["mergeable_ranks"] and enc.n_vocab == ref.n_vocab == 100_001
        for text in sample_lines(60) + ["hello<|x|>hellohello"]:
            assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        clone = pickle.loads(pickle.dumps(enc))
        assert clone.encode("hi <|x|>", allowed_special="all") == ref.encode("hi <|x|>", allowed_special="all")
        assert clone._mergeable_ranks == ref._mergeable_ranks
    bad = dict(name="bad", pat_str=base["pat_str"], mergeable_ranks=base["mergeable_ranks"], special_tokens={}, explicit_n_vocab=5)
    assert outcome(lambda: dropin.Encoding(**bad)) == outcome(lambda: tiktoken.Encoding(**bad))


def test_pickle_registered_by_name():
    enc = dropin.get_encoding("o200k_base")
    data = pickle.dumps(enc)
    assert len(data) < 200 and pickle.loads(data) is enc


# ------------------------------------------------------------------------------------------------
# registration, files


def test_registration_as_tiktoken(tmp_path, monkeypatch):
    """A ``tiktoken_ext`` plugin module and an entry added to ``ENCODING_CONSTRUCTORS`` both register."""
    plugin = tmp_path / "tiktoken_ext" / "numtok_test_plugin.py"
    plugin.parent.mkdir()
    plugin.write_text(
        "from numtok.tiktoken.registry import _bundled_arguments\n"
        "def gpt2_im():\n"
        "    a = _bundled_arguments('gpt2')\n"
        "    return dict(a, name='gpt2_im', special_tokens={**a['special_tokens'], '<|im_start|>': 50257}, explicit_n_vocab=None)\n"
        "ENCODING_CONSTRUCTORS = {'gpt2_im': gpt2_im}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(dropin_registry, "ENCODING_CONSTRUCTORS", None)
    monkeypatch.setattr(dropin_registry, "ENCODINGS", {})
    dropin_registry._available_plugin_modules.cache_clear()
    try:
        assert "tiktoken_ext.numtok_test_plugin" in dropin_registry._available_plugin_modules()
        assert dropin.list_encoding_names()[-1] == "gpt2_im"
        enc = dropin.get_encoding("gpt2_im")
        assert enc.encode("<|im_start|>hi", allowed_special="all") == [50257, 5303]
        assert pickle.loads(pickle.dumps(enc)) is enc
        dropin_registry.ENCODING_CONSTRUCTORS["tiny"] = lambda: dict(
            name="tiny", pat_str=r"\S+|\s+", mergeable_ranks={bytes([b]): b for b in range(256)}, special_tokens={}
        )
        assert dropin.get_encoding("tiny").encode("ab") == [97, 98]
    finally:
        dropin_registry._available_plugin_modules.cache_clear()


def test_load_functions_as_tiktoken(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would cache (and later return) local files' content
    url = dropin_load._OPENAI_PUBLIC + "p50k_base.tiktoken"
    ranks = dropin_load.load_tiktoken_bpe(url, expected_hash="94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069")
    assert ranks == real_arguments("p50k_base")["mergeable_ranks"]
    path = tmp_path / "p50k.tiktoken"
    dropin_load.dump_tiktoken_bpe(ranks, str(path))
    assert dropin_load.load_tiktoken_bpe(str(path)) == tiktoken.load.load_tiktoken_bpe(str(path)) == ranks
    with pytest.raises(ValueError, match="Hash mismatch"):
        dropin_load.load_tiktoken_bpe(str(path), expected_hash="0" * 64)
    odd = tmp_path / "odd.tiktoken"  # a repeated rank and a token twice: tiktoken keeps them
    odd.write_bytes(b"YQ== 0\nYg== 0\n\nYQ== 2\r\n")
    assert dropin_load.load_tiktoken_bpe(str(odd)) == tiktoken.load.load_tiktoken_bpe(str(odd))
    odd = tmp_path / "bad.tiktoken"
    odd.write_bytes(b"YQ== 0\nYg==\n")
    assert outcome(lambda: dropin_load.load_tiktoken_bpe(str(odd))) == outcome(lambda: tiktoken.load.load_tiktoken_bpe(str(odd)))
    with pytest.raises(OSError, match="does not download"):
        dropin_load.read_file("https://example.invalid/x.tiktoken")


def test_data_gym_files_as_tiktoken(tmp_path):
    import numtok

    numtok.train_bpe(lines()[:2000], 600).save_gpt2(tmp_path)  # vocab.json + merges.txt: data-gym's files
    files = (str(tmp_path / "merges.txt"), str(tmp_path / "vocab.json"))
    got = outcome(lambda: dropin_load.data_gym_to_mergeable_bpe_ranks(*files))
    assert got == outcome(lambda: tiktoken.load.data_gym_to_mergeable_bpe_ranks(*files))
    got = dropin_load.data_gym_to_mergeable_bpe_ranks(*files, clobber_one_byte_tokens=True)
    assert got == tiktoken.load.data_gym_to_mergeable_bpe_ranks(*files, clobber_one_byte_tokens=True)


def test_import_loads_no_blobfile():
    code = "import sys, numtok.tiktoken as t; t.get_encoding('gpt2').encode('x'); print('blobfile' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


# ------------------------------------------------------------------------------------------------
# hypothesis


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(texts=st.lists(ANY_TEXT, max_size=6))
def test_hypothesis_text_as_tiktoken(name, texts):
    enc, ref = dropin.get_encoding(name), real(name)
    for text in texts:
        assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
    assert enc.encode_batch(texts, disallowed_special=()) == ref.encode_batch(texts, disallowed_special=())


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
@SETTINGS
@given(data=st.binary(max_size=40))
def test_hypothesis_bytes_as_tiktoken(name, data):
    enc, ref = dropin.get_encoding(name), real(name)
    assert enc._encode_bytes(data) == ref._encode_bytes(data)


@SETTINGS
@given(ids=st.lists(st.integers(0, 100_300), max_size=12))
def test_hypothesis_ids_decode_as_tiktoken(ids):
    enc, ref = dropin.get_encoding("cl100k_base"), real("cl100k_base")
    for method in ("decode", "decode_bytes", "decode_tokens_bytes", "decode_with_offsets"):
        assert outcome(lambda: getattr(enc, method)(ids)) == outcome(lambda: getattr(ref, method)(ids)), method


# ------------------------------------------------------------------------------------------------
# tiktoken's own suite (downloads its sdist)


@pytest.mark.slow
def test_tiktoken_suite():
    """tools/tiktoken_suite.py: tiktoken 0.14.0's test files, all of which apply, pass."""
    tool = Path(__file__).resolve().parents[1] / "tools" / "tiktoken_suite.py"
    done = subprocess.run([sys.executable, str(tool), "--", "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and not any(w in summary for w in ("failed", "skipped", "error", "deselected")), summary
