"""Interop formats: HF tokenizer.json, tiktoken rank files, GPT-2 vocab.json + merges.txt.

What numtok saves it loads back identical, and HF tokenizers, transformers and tiktoken load
numtok's files and encode real text exactly as numtok does; regex patterns mean the same in
Oniguruma (HF) after translation; unsupported files fail with a ValueError that lists why.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
from pathlib import Path

import pytest
import regex

import numtok
from numtok.io import byte_level, gpt2_files, hf_json, oniguruma, tiktoken_file, tokenizer_view
from numtok.io.atomic import atomic_write
from numtok.pretokenizers.patterns import NAMED_PATTERNS

tokenizers = pytest.importorskip("tokenizers")
tiktoken = pytest.importorskip("tiktoken")
import tiktoken.load  # noqa: E402, F811

REF = Path(__file__).resolve().parents[2] / "shared" / "ref"
GPT2_JSON = REF / "gpt2_tokenizer.json"
BERT_JSON = REF / "bert_uncased_tokenizer.json"
SPECIALS = ["<|endoftext|>", "<pad>"]

# Inputs where the engines' readings of a pattern tend to part: runs of whitespace before a
# newline / the end, digit runs, contractions in odd cases, CR/LF mixes, non-ASCII spaces.
ADVERSARIAL = [
    "", " ", "\n", "a  \nb  \n", "x\n\n\n  y", " \n ", "123456789 1234 12", "I'M HE'S they'RE we'Ve ſ",
    "don't   \t\n\r\n x", "Hello\u00a0World\u3000!", "a/\n/b", ".\n\n", "ÉCOLE école ǅungla", "\r\n\r\n",
    "   \n\n   ", "foo   ", "...   \n", "x\u2028y", "a" * 300, " " * 200 + "x", "\n" * 50, "=" * 120,
    "ab" * 150, "camelCaseHTTPServer's", "naïve café 東京 👋🏽 مرحبا", "<|endoftext|> after", "x<pad>y",
]


def _random_strings(n: int, seed: int = 0) -> list[str]:
    alphabet = ["a", "B", " ", "\n", "\r", "\t", "1", "'", "s", "S", "/", ".", "é", "Ǆ", "\u0301", "\u00a0", "ſ", "ll", "RE"]
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 16))) for _ in range(n)]


@pytest.fixture(scope="module")
def texts(sample_text) -> list[str]:
    return [sample_text] + ADVERSARIAL


@pytest.fixture(scope="module")
def trained(sample_lines) -> dict[str, numtok.Tokenizer]:
    """One numtok-trained tokenizer per named pattern (merge mode, with special tokens)."""
    return {p: numtok.train_bpe(sample_lines, 1500, pattern=p, special_tokens=SPECIALS) for p in NAMED_PATTERNS}


def ids_of(tok, text: str) -> list[int]:
    return tok.encode(text, allowed_special="all").tolist()


def assert_same_tokenizer(a, b):
    assert a.vocab == b.vocab
    assert a.merges == b.merges
    assert a.special_tokens == b.special_tokens
    assert a.pattern == b.pattern


# -- the byte-level alphabet -------------------------------------------------------------------


def test_byte_level_alphabet_is_gpt2s():
    table = byte_level.bytes_to_unicode()
    assert len(set(table.values())) == 256
    assert (table[0x20], table[0x0A], table[ord("a")], table[0xAD]) == ("Ġ", "Ċ", "a", "Ń")
    raw = bytes(range(256))
    assert byte_level.from_byte_level(byte_level.to_byte_level(raw)) == raw
    assert byte_level.from_byte_level("héllo wörld") is None  # ' ' is not a byte-level character


# -- regex translation (regex module <-> Oniguruma) --------------------------------------------


def _regex_pieces(pattern: str, text: str) -> list[str]:
    """All pieces (matches and the gaps between them), as HF's Split(Isolated) returns them."""
    out, pos = [], 0
    for m in regex.finditer(pattern, text):
        if m.start() > pos:
            out.append(text[pos : m.start()])
        if m.end() > m.start():
            out.append(m.group())
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def _hf_pieces(onig: str, text: str) -> list[str]:
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(onig), behavior="isolated")
    return [s for s, _ in split.pre_tokenize_str(text)]


@pytest.mark.parametrize("name", list(NAMED_PATTERNS))
def test_named_patterns_split_identically_in_oniguruma(name, texts):
    pattern = NAMED_PATTERNS[name]
    onig = oniguruma.to_oniguruma(pattern)
    for text in texts + _random_strings(1500):
        assert _hf_pieces(onig, text) == _regex_pieces(pattern, text), (name, text[:60])
    if name == "gpt2":  # written as HF's own ByteLevel(use_regex=True): same pieces
        hf_byte_level = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        for text in texts:
            pieces = [byte_level.from_byte_level(s).decode("utf-8") for s, _ in hf_byte_level.pre_tokenize_str(text)]
            assert pieces == _regex_pieces(pattern, text)


def test_untranslated_cl100k_differs_in_oniguruma():
    # Why the translation exists: Oniguruma reads "{1,3}+" as "({1,3})+", so digits run on.
    raw = NAMED_PATTERNS["cl100k"]
    assert _regex_pieces(raw, "1234567") == ["123", "456", "7"]
    assert _hf_pieces(raw, "1234567") == ["1234567"]
    assert _hf_pieces(oniguruma.to_oniguruma(raw), "1234567") == ["123", "456", "7"]


@pytest.mark.parametrize(
    "pattern, text",
    [
        (r"\p{N}{1,3}+", "1234567 12"),
        (r"a{2}+|.", "aaaaa"),
        (r"\s++$|\s+", "a  \nb  \n"),
        (r"x$", "x\nx yx\n"),
        (r"^x|x", "x\nx"),
        (r"x\Z|y", "x\nx"),
        (r"(?s:a.b)|.", "a\nb a\rb"),
        (r"(?i)[sdmt]|ll", "SLLdſK"),
        (r"\w+|\W", "x² ab_1 ½ ü"),
        (r"\u00e9+|\U0001F600|\N{BULLET}", "éé😀•"),
        (r"(?P<x>ab)+", "ababx"),
        (r"[^\s\p{L}]++|(?>\p{L}+)", "ab,,  c"),
    ],
)
def test_to_oniguruma_keeps_meaning(pattern, text):
    assert _hf_pieces(oniguruma.to_oniguruma(pattern), text) == _regex_pieces(pattern, text)


@pytest.mark.parametrize(
    "onig, text",
    [
        (r"\p{N}{1,3}+", "1234567 12"),
        (r"x$", "x\nx yx\n"),
        (r"^x|x", "x\nx"),
        (r"x\Z|y", "x\nx\n"),
        (r"x\z|y", "x\nx\n"),
        (r"(?m:a.b)|.", "a\nb"),
        (r"\h+", "ab12 zz"),
        (r"\w+|\W", "x² ab_1 ½"),
        (r"\x{41}+", "AAB"),
    ],
)
def test_from_oniguruma_keeps_meaning(onig, text):
    assert _regex_pieces(oniguruma.from_oniguruma(onig), text) == _hf_pieces(onig, text)


@pytest.mark.parametrize("pattern", [r"(?m)^x", r"a(?i)b", r"\bword\b", r"[\w-]+", r"(a"])
def test_untranslatable_patterns_raise(pattern):
    with pytest.raises(ValueError):
        oniguruma.to_oniguruma(pattern)


# -- HF tokenizer.json -------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", list(NAMED_PATTERNS))
def test_hf_libraries_encode_saved_file_identically(trained, texts, tmp_path, pattern):
    from transformers import PreTrainedTokenizerFast

    tok = trained[pattern]
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    fast = PreTrainedTokenizerFast(tokenizer_file=str(path))
    for text in texts:
        ids = ids_of(tok, text)
        assert hf.encode(text, add_special_tokens=False).ids == ids, text[:60]
        assert fast(text, add_special_tokens=False)["input_ids"] == ids, text[:60]
        assert hf.decode(ids, skip_special_tokens=False) == tok.decode(ids)
    assert hf.get_vocab_size(with_added_tokens=True) == tok.n_vocab
    assert hf.token_to_id("<|endoftext|>") == tok.special_tokens["<|endoftext|>"]


@pytest.mark.parametrize("pattern", list(NAMED_PATTERNS))
def test_hf_json_round_trip(trained, sample_text, tmp_path, pattern):
    tok = trained[pattern]
    tok.save(tmp_path / "tokenizer.json")
    back = numtok.Tokenizer.from_file(tmp_path / "tokenizer.json")
    assert_same_tokenizer(back, tok)
    assert ids_of(back, sample_text) == ids_of(tok, sample_text)


def test_custom_pattern_round_trip(sample_lines, sample_text, tmp_path):
    pattern = r"\p{L}+|\p{N}{1,2}+|[^\s\p{L}\p{N}]+|\s+$|\s"
    tok = numtok.train_bpe(sample_lines, 600, pattern=pattern)
    tok.save(tmp_path / "t.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "t.json"))
    assert hf.encode(sample_text).ids == ids_of(tok, sample_text)
    back = numtok.Tokenizer.from_file(tmp_path / "t.json")
    assert back.vocab == tok.vocab and back.merges == tok.merges
    assert ids_of(back, sample_text + "12345  \n") == ids_of(tok, sample_text + "12345  \n")


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
def test_rank_mode_tokenizer_saves_for_hf(name, texts, tmp_path):
    # tiktoken semantics as HF merges: every split of every token, plus ignore_merges.
    tok = numtok.load(name)
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in texts:
        assert hf.encode(text, add_special_tokens=False).ids == ids_of(tok, text), text[:60]
    back = numtok.Tokenizer.from_file(path)
    assert back.vocab == tok.vocab and back.special_tokens == tok.special_tokens
    assert ids_of(back, texts[0]) == ids_of(tok, texts[0])


def test_merges_from_ranks_lists_every_split():
    ranks = {b"a": 0, b"b": 1, b"ab": 2, b"ba": 3, b"aba": 4}
    assert tokenizer_view.merges_from_ranks(ranks) == [(b"a", b"b"), (b"b", b"a"), (b"a", b"ba"), (b"ab", b"a")]


@pytest.mark.skipif(not GPT2_JSON.exists(), reason="shared/ref/gpt2_tokenizer.json not available")
def test_gpt2_reference_file_encodes_as_hf(texts):
    tok = numtok.Tokenizer.from_file(GPT2_JSON)
    hf = tokenizers.Tokenizer.from_file(str(GPT2_JSON))
    assert tok.n_vocab == 50257 and tok.special_tokens == {"<|endoftext|>": 50256}
    for text in texts:
        assert ids_of(tok, text) == hf.encode(text, add_special_tokens=False).ids, text[:60]
    # ... and as tiktoken's gpt2, whose ranks are the same BPE.
    assert ids_of(tok, texts[0]) == numtok.load("gpt2").encode(texts[0], allowed_special="all").tolist()


LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


@pytest.mark.parametrize("split_regex", [LLAMA3_REGEX, NAMED_PATTERNS["cl100k"]], ids=["llama3", "raw-cl100k"])
def test_from_file_reads_third_party_split_regexes_as_hf_does(trained, texts, tmp_path, split_regex):
    # Files converted by other tools carry tiktoken-style regexes verbatim; the raw cl100k one
    # means "digits run on" in Oniguruma ("{1,3}+"), and numtok must follow HF there too.
    trained["cl100k"].save(tmp_path / "t.json")
    data = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = split_regex
    data["model"]["ignore_merges"] = True
    (tmp_path / "t.json").write_text(json.dumps(data), encoding="utf-8")
    tok = numtok.Tokenizer.from_file(tmp_path / "t.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "t.json"))
    for text in texts + ["12345678 and 1234"]:
        assert ids_of(tok, text) == hf.encode(text).ids, text[:60]


def _tiny_hf_dict(**model_overrides) -> dict:
    """A small byte-level BPE tokenizer.json as HF itself writes it."""
    table = byte_level.bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(sorted(table.values()))}
    merges = [("a", "b"), ("ab", "c"), ("Ġ", "x")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    vocab["abcabc"] = len(vocab)  # reachable only with ignore_merges
    hf = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    hf.add_special_tokens(["<eos>"])
    hf.add_tokens(["wxyz"])  # a non-special added token: HF splits it out of text too
    data = json.loads(hf.to_str())
    data["model"].update(model_overrides)
    return data


@pytest.mark.parametrize("ignore_merges", [False, True])
@pytest.mark.parametrize("merge_format", ["pairs", "strings"])
def test_from_file_follows_hf_specifics(tmp_path, ignore_merges, merge_format):
    data = _tiny_hf_dict(ignore_merges=ignore_merges)
    if merge_format == "strings":  # the older "a b" form
        data["model"]["merges"] = [" ".join(m) for m in data["model"]["merges"]]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    tok = numtok.Tokenizer.from_file(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in ["abcabc abc xab", " x abcabc<eos>ab", "abcabcabc", "awxyzb wxyz"]:
        assert ids_of(tok, text) == hf.encode(text).ids, text


def _with(data: dict, *edits) -> dict:
    data = copy.deepcopy(data)
    for edit in edits:
        edit(data)
    return data


def _set(*keys_value):
    *keys, value = keys_value

    def edit(data):
        node = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


@pytest.mark.parametrize(
    "edits, expected",
    [
        ([_set("normalizer", {"type": "NFC"})], ["normalizer NFC"]),
        ([_set("pre_tokenizer", "add_prefix_space", True)], ["add_prefix_space"]),
        ([_set("model", "dropout", 0.1)], ["dropout"]),
        ([_set("model", "end_of_word_suffix", "</w>")], ["end_of_word_suffix"]),
        ([_set("pre_tokenizer", {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True})],
         ["Metaspace"]),
        ([_set("post_processor", {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<eos>", "type_id": 0}},
                                  {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {}})],
         ["post-processor TemplateProcessing"]),
        ([_set("added_tokens", 0, "lstrip", True)], ["lstrip"]),
        ([_set("truncation", {"max_length": 8})], ["truncation"]),
        # Several problems are all listed.
        ([_set("normalizer", {"type": "Lowercase"}), _set("model", "dropout", 0.5)], ["normalizer Lowercase", "dropout"]),
    ],
)
def test_from_file_rejects_what_it_cannot_represent(tmp_path, edits, expected):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_with(_tiny_hf_dict(), *edits)), encoding="utf-8")
    with pytest.raises(ValueError, match="cannot be represented") as info:
        numtok.Tokenizer.from_file(path)
    for word in expected:
        assert word in str(info.value)


def test_from_file_points_wordpiece_to_its_loader(tmp_path):
    path = BERT_JSON if BERT_JSON.exists() else tmp_path / "bert.json"
    if not BERT_JSON.exists():
        wp = tokenizers.Tokenizer(tokenizers.models.WordPiece(vocab={"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
        wp.save(str(path))
    with pytest.raises(ValueError, match=r"WordPiece\.from_file"):
        numtok.Tokenizer.from_file(path)


def test_from_file_rejects_unigram_and_garbage(tmp_path):
    uni = tokenizers.Tokenizer(tokenizers.models.Unigram([("a", -1.0), ("b", -2.0)], 0, False))
    uni.save(str(tmp_path / "uni.json"))
    with pytest.raises(ValueError, match="Unigram"):
        numtok.Tokenizer.from_file(tmp_path / "uni.json")
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not a tokenizer.json"):
        numtok.Tokenizer.from_file(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="not a tokenizer.json"):
        numtok.Tokenizer.from_file(tmp_path / "list.json")
    with pytest.raises(FileNotFoundError):
        numtok.Tokenizer.from_file(tmp_path / "missing.json")


def test_save_rejects_non_byte_level(tmp_path):
    tok = numtok.train_bpe_from_counts({"low": 5, "lower": 2}, 12, units="chars", alphabet="observed", end_of_word="</w>")
    for save in (tok.save, tok.save_tiktoken, tok.save_gpt2):
        with pytest.raises(ValueError, match="cannot save"):
            save(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


# -- tiktoken ----------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", list(NAMED_PATTERNS))
def test_tiktoken_loads_saved_ranks_and_encodes_identically(trained, texts, tmp_path, pattern):
    tok = trained[pattern]
    path = tmp_path / "tok.tiktoken"
    tok.save_tiktoken(path)
    ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    assert ranks == tokenizer_view.mergeable_vocab(tok)
    side = json.loads(Path(tiktoken_file.tiktoken_sidecar_path(path)).read_text(encoding="utf-8"))
    enc = tiktoken.Encoding(**{k: side[k] for k in ("name", "pat_str", "special_tokens")}, mergeable_ranks=ranks)
    for text in texts:
        # tiktoken's rank rule equals numtok's merge rule on trained tokenizers (see save_tiktoken).
        assert enc.encode(text, allowed_special="all") == ids_of(tok, text), text[:60]


@pytest.mark.parametrize("pattern", list(NAMED_PATTERNS))
def test_tiktoken_round_trip_with_sidecar(trained, sample_text, tmp_path, pattern):
    tok = trained[pattern]
    path = tmp_path / "tok.tiktoken"
    tok.save_tiktoken(path)
    side = tiktoken_file.read_tiktoken_sidecar(path)
    assert side["pattern"] == pattern and side["special_tokens"] == tok.special_tokens
    back = numtok.Tokenizer.from_tiktoken(path, **tiktoken_file.sidecar_arguments(path))  # pattern and specials from the sidecar
    assert back.vocab == tok.vocab and back.special_tokens == tok.special_tokens and back.pattern == tok.pattern
    assert ids_of(back, sample_text) == ids_of(tok, sample_text)
    explicit = numtok.Tokenizer.from_tiktoken(path, pattern=pattern, special_tokens=tok.special_tokens)
    assert explicit.vocab == tok.vocab


def test_tiktoken_of_bundled_encoding_is_the_official_file(tmp_path):
    if not (REF / "r50k_base.tiktoken").exists():
        pytest.skip("shared/ref not available")
    numtok.load("r50k_base").save_tiktoken(tmp_path / "r50k_base.tiktoken")
    assert (tmp_path / "r50k_base.tiktoken").read_bytes() == (REF / "r50k_base.tiktoken").read_bytes()


def test_tiktoken_refuses_rank_inconsistent_merges(tmp_path):
    vocab = {bytes([b]): b for b in range(256)} | {b"ab": 257, b"bc": 256}
    tok = numtok.Tokenizer(vocab, merges=[(b"a", b"b"), (b"b", b"c")])  # ids out of merge order
    with pytest.raises(ValueError, match="not rank-consistent"):
        tok.save_tiktoken(tmp_path / "x.tiktoken")
    assert not (tmp_path / "x.tiktoken").exists()
    tok.save(tmp_path / "x.json")  # fine as HF, which keeps the merge order
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "x.json"))
    assert hf.encode("abc abcbc").ids == ids_of(tok, "abc abcbc")


def test_tiktoken_refuses_missing_bytes(sample_lines, tmp_path):
    tok = numtok.train_bpe(sample_lines[:50], 300, alphabet="observed")
    with pytest.raises(ValueError, match="single bytes"):
        tok.save_tiktoken(tmp_path / "x.tiktoken")


def test_malformed_sidecar_is_reported(tmp_path):
    (tmp_path / "x.tiktoken").write_text("YQ== 0\n", encoding="utf-8")
    (tmp_path / "x.tiktoken.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="sidecar"):
        tiktoken_file.read_tiktoken_sidecar(tmp_path / "x.tiktoken")
    assert tiktoken_file.read_tiktoken_sidecar(tmp_path / "none.tiktoken") is None


# -- GPT-2 vocab.json + merges.txt -------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k"])
def test_gpt2_files_round_trip(trained, sample_text, tmp_path, pattern):
    tok = trained[pattern]
    tok.save_gpt2(tmp_path / "out")
    assert sorted(os.listdir(tmp_path / "out")) == ["merges.txt", "vocab.json"]
    assert (tmp_path / "out" / "merges.txt").read_text(encoding="utf-8").startswith("#version: 0.2\n")
    back = numtok.Tokenizer.from_gpt2(tmp_path / "out" / "vocab.json", tmp_path / "out" / "merges.txt", pattern=pattern)
    assert_same_tokenizer(back, tok)
    assert ids_of(back, sample_text) == ids_of(tok, sample_text)


def test_gpt2_files_load_in_hf(trained, texts, tmp_path):
    tok = trained["gpt2"]
    tok.save_gpt2(tmp_path)
    model = tokenizers.models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    hf = tokenizers.Tokenizer(model)
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    for text in texts:
        assert hf.encode(text).ids == tok.encode_ordinary(text).tolist(), text[:60]


def test_gpt2_bad_files(tmp_path):
    (tmp_path / "vocab.json").write_text('{"a": 0, "b": 1}', encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not in"):
        numtok.Tokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b c\n", encoding="utf-8")
    with pytest.raises(ValueError, match="merge line"):
        numtok.Tokenizer.from_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")


# -- atomic saves ------------------------------------------------------------------------------


class _Boom(OSError):
    pass


@contextlib.contextmanager
def _failing_atomic_write(path, mode="wb", **kw):
    """The real atomic_write, but the file dies half-way through the first big write."""
    with atomic_write(path, mode, **kw) as f:

        class Dying:
            def __getattr__(self, name):
                return getattr(f, name)

            def write(self, data):
                f.write(data[: len(data) // 2])
                f.flush()
                raise _Boom(28, "No space left on device (simulated)")

            def writelines(self, lines):
                self.write(b"".join(lines))

        yield Dying()


@pytest.mark.parametrize("fmt", ["json", "tiktoken", "gpt2"])
def test_interrupted_save_leaves_the_old_file(trained, tmp_path, monkeypatch, fmt):
    old, new = trained["gpt2"], trained["o200k"]
    target = {"json": tmp_path / "t.json", "tiktoken": tmp_path / "t.tiktoken", "gpt2": tmp_path}[fmt]
    save = {"json": "save", "tiktoken": "save_tiktoken", "gpt2": "save_gpt2"}[fmt]
    getattr(old, save)(target)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    writer = {"json": hf_json, "tiktoken": tiktoken_file, "gpt2": gpt2_files}[fmt]
    monkeypatch.setattr(writer, "atomic_write", _failing_atomic_write)
    with pytest.raises(OSError, match="No space left on device while writing .* previous content is kept") as info:
        getattr(new, save)(target)
    assert isinstance(info.value.__cause__, _Boom)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before  # old content intact, no temporary file left behind


def test_atomic_write_cleans_up_on_interrupt(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("old")
    os.chmod(path, 0o640)
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(path, "w") as f:
            f.write("new, partial")
            raise KeyboardInterrupt
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]
    with atomic_write(path, "w") as f:
        f.write("new")
    assert path.read_text() == "new"
    assert os.stat(path).st_mode & 0o777 == 0o640  # the replaced file's permissions are kept
    with atomic_write(tmp_path / "fresh.bin") as f:
        f.write(b"x")
    from numtok.io.atomic import _umask

    assert os.stat(tmp_path / "fresh.bin").st_mode & 0o777 == 0o666 & ~_umask()  # not mkstemp's 0o600


def test_atomic_write_needs_existing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        with atomic_write(tmp_path / "no" / "such" / "file"):
            pass
    with pytest.raises(ValueError):
        with atomic_write(tmp_path / "x", "r"):
            pass
