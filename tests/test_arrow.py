"""Arrow input and output: encode_batch of Arrow strings (every form) against tiktoken and the
list-of-str path, BatchEncoding.to_arrow, invalid UTF-8, nulls, bad input, 🤗 datasets."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_encode import CORE, reference, sample_text
from unicode_reference import differing_code_points

import numtok
from numtok.pretokenizers.patterns import NAMED_PATTERNS

pa = pytest.importorskip("pyarrow")

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
STRING_TYPES = [pa.string(), pa.large_string(), pa.string_view()]
TEXTS = st.lists(st.one_of(st.none(), st.text(st.characters(exclude_categories=["Cn", "Cs"]), max_size=40)), max_size=25)


def documents() -> list[str]:
    """The shipped real text as documents (split on blank lines, as the benchmarks do), plus
    empty ones."""
    docs = [d + "\n\n" for d in sample_text().split("\n\n") if d]
    return docs[:300] + ["", ""] + docs[300:]


def as_lists(batch) -> list[list[int]]:
    return batch.to_list()


class StreamOnly:
    def __init__(self, arr):
        self._arr = arr

    def __arrow_c_stream__(self, requested_schema=None):
        return self._arr.__arrow_c_stream__(requested_schema)


class ArrayOnly:
    def __init__(self, arr):
        self._arr = arr

    def __arrow_c_array__(self, requested_schema=None):
        return self._arr.__arrow_c_array__(requested_schema)


def chunked(texts: list, kind, cuts: list[int]):
    bounds = [0, *sorted(c % (len(texts) + 1) for c in cuts), len(texts)]
    return pa.chunked_array([pa.array(texts[a:b], kind) for a, b in zip(bounds[:-1], bounds[1:])], kind)


@pytest.mark.parametrize("name", CORE)
@pytest.mark.parametrize("kind", STRING_TYPES, ids=str)
def test_real_text_identical_to_tiktoken_and_the_list_path(name, kind):
    enc, ref = numtok.load(name), reference(name)
    docs = documents()
    expected = ref.encode_ordinary_batch(docs)
    arr = pa.array(docs, kind)
    for form in (arr, chunked(docs, kind, [7, 100, 101, 250]), StreamOnly(pa.chunked_array([arr])), ArrayOnly(arr)):
        for threads in (1, 2):
            batch = enc.encode_ordinary_batch(form, num_threads=threads)
            assert as_lists(batch) == expected
    options = {"allowed_special": "all"}
    assert np.array_equal(enc.encode_batch(arr, **options).ids, enc.encode_batch(docs, **options).ids)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_long_documents_are_cut_and_spread_over_threads(name):
    enc, ref = numtok.load(name), reference(name)
    long_doc = sample_text() * 3  # over twice a chunk: cut where the pattern starts a piece
    docs = ["short one", long_doc, "", long_doc[:1000]]
    batch = enc.encode_ordinary_batch(pa.array(docs, pa.large_string()), num_threads=2)
    assert as_lists(batch) == ref.encode_ordinary_batch(docs)


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(texts=TEXTS, data=st.data())
def test_any_text_every_form_and_slice(name, texts, data):
    enc, ref = numtok.load(name), reference(name)
    kind = data.draw(st.sampled_from(STRING_TYPES))
    plain = ["" if t is None else t for t in texts]
    arr = pa.array(texts, kind)
    expected = [ref.encode_ordinary(t) for t in plain]
    assert as_lists(enc.encode_ordinary_batch(arr, nulls="empty")) == expected
    lo = data.draw(st.integers(0, len(texts)))
    hi = data.draw(st.integers(lo, len(texts)))
    assert as_lists(enc.encode_ordinary_batch(arr[lo:hi], nulls="empty", num_threads=2)) == expected[lo:hi]
    cuts = data.draw(st.lists(st.integers(0, 30), max_size=4))
    assert as_lists(enc.encode_ordinary_batch(chunked(texts, kind, cuts), nulls="empty")) == expected
    assert as_lists(enc.encode_ordinary_batch(plain)) == expected


def test_slices_at_every_offset():
    enc, ref = numtok.load("cl100k_base"), reference("cl100k_base")
    docs = documents()[:40]
    expected = ref.encode_ordinary_batch(docs)
    for kind in (pa.string(), pa.large_string()):
        arr = pa.array(docs, kind)
        for lo in range(len(docs) + 1):
            for hi in (lo, min(lo + 1, len(docs)), len(docs)):
                assert as_lists(enc.encode_ordinary_batch(arr[lo:hi])) == expected[lo:hi], (kind, lo, hi)


def test_any_tokenizer_same_as_list_path():
    docs = documents()
    tok = numtok.train_bpe(docs[:200], 400, pattern=r"\w+|[^\w\s]+|\s+")  # merge mode, a regex pattern
    arr = pa.array(docs, pa.large_string())
    assert as_lists(tok.encode_batch(arr, num_threads=2)) == as_lists(tok.encode_batch(docs))


def test_special_tokens_follow_the_list_path():
    enc = numtok.load("cl100k_base")
    docs = ["a <|endoftext|> b", "plain", "<|endoftext|>", "", "x<|fim_prefix|>y"]
    arr = pa.array(docs)
    for options in ({"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()}):
        assert as_lists(enc.encode_batch(arr, **options)) == as_lists(enc.encode_batch(docs, **options))
    with pytest.raises(ValueError, match="disallowed special token '<|endoftext|>'"):
        enc.encode_batch(arr)


def test_to_arrow_shares_the_buffers():
    enc = numtok.load("cl100k_base")
    docs = documents()
    batch = enc.encode_ordinary_batch(pa.array(docs))
    out = batch.to_arrow()
    assert out.type == pa.large_list(pa.int32())
    assert out.values.buffers()[1].address == batch.ids.ctypes.data
    assert out.buffers()[1].address == batch.offsets.ctypes.data
    assert out.to_pylist() == batch.to_list()
    out.validate(full=True)
    assert enc.encode_batch([]).to_arrow().to_pylist() == []


def test_nulls_raise_naming_the_first_null_over_all_chunks():
    enc = numtok.load("cl100k_base")
    arr = pa.chunked_array([pa.array(["a", "b"]), pa.array(["c", None, None])])
    with pytest.raises(ValueError, match=r"text 3 is null \(pass nulls='empty'"):
        enc.encode_batch(arr)
    with pytest.raises(ValueError, match="text 0 is null"):
        enc.encode_batch(pa.array([None, "x"])[0:])
    assert enc.encode_batch(pa.array(["x", None, "y"])[1:2], nulls="empty").to_list() == [[]]
    with pytest.raises(ValueError, match="nulls must be 'raise' or 'empty'"):
        enc.encode_batch(arr, nulls="skip")


def test_non_text_arrow_input_is_refused_clearly():
    enc = numtok.load("cl100k_base")
    with pytest.raises(TypeError, match="expected an Arrow array of strings .* got int64"):
        enc.encode_batch(pa.array([1, 2]))
    with pytest.raises(TypeError, match="binary data is not text"):
        enc.encode_batch(pa.array([b"a"], pa.binary()))
    with pytest.raises(ValueError, match="columns: a, b"):
        enc.encode_batch(pa.table({"a": ["x"], "b": ["y"]}))
    table = pa.table({"text": ["hello world", "hi"]})
    assert enc.encode_batch(table).to_list() == enc.encode_batch(["hello world", "hi"]).to_list()
    reader_like = StreamOnly(table)  # a stream of record batches (as DuckDB gives): its one column
    assert enc.encode_batch(reader_like).to_list() == enc.encode_batch(["hello world", "hi"]).to_list()
    dictionary = pa.array(["hi", "hi", "yo"]).dictionary_encode()
    assert enc.encode_batch(dictionary).to_list() == enc.encode_batch(["hi", "hi", "yo"]).to_list()


def test_malformed_offsets_are_refused():
    enc = numtok.load("cl100k_base")
    data = pa.py_buffer(b"abcdef")
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 4, 2], np.int32).tobytes()), data])
    with pytest.raises(ValueError, match="malformed Arrow string array"):
        enc.encode_batch(bad)


def reference_bytes_ids(name: str, raw: bytes) -> list[int]:
    """tiktoken's BPE of each piece that ``regex`` finds in the text with every invalid byte
    escaped to one lone surrogate (an "other" character)."""
    ref = reference(name)
    text = raw.decode("utf-8", "surrogateescape")
    pattern = regex.compile(NAMED_PATTERNS[{"r50k_base": "r50k", "cl100k_base": "cl100k", "o200k_base": "o200k"}[name]])
    out: list[int] = []
    for piece in pattern.findall(text):
        out += ref._encode_single_piece(piece.encode("utf-8", "surrogateescape"))
    return out


def string_array_of_bytes(items: list[bytes]):
    """An Arrow string array holding these bytes as they are (Arrow does not check UTF-8)."""
    offsets = np.zeros(len(items) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in items], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(items), [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(items))])


BYTES = st.lists(st.binary(max_size=30) | st.text(max_size=10).map(str.encode), max_size=8)


@pytest.mark.parametrize("name", CORE)
@SETTINGS
@given(items=st.lists(BYTES.map(b"".join), max_size=6))
def test_invalid_utf8_is_encoded_byte_for_byte(name, items):
    # the reference splits with regex: none of the code points its Unicode tables class unlike numtok's
    differing = differing_code_points()
    assume(not any(ord(ch) in differing for raw in items for ch in raw.decode("utf-8", "surrogateescape")))
    enc = numtok.load(name)
    batch = enc.encode_ordinary_batch(string_array_of_bytes(items), num_threads=2)
    assert as_lists(batch) == [reference_bytes_ids(name, raw) for raw in items]
    assert [enc.decode_bytes(ids) for ids in batch] == items


def test_invalid_utf8_with_a_regex_pattern_and_char_units():
    items = [b"ab\xffcd \xe2\x82 x\xc3", b"\x80\x80 abc"]
    arr = string_array_of_bytes(items)
    tok = numtok.train_bpe(["abcd abc x"], 300, pattern=r"\w+|[^\w\s]+|\s+")
    batch = tok.encode_batch(arr)
    assert [tok.decode_bytes(ids) for ids in batch] == items
    chars = numtok.train_bpe(["abcd abc x"], 20, alphabet="observed", units="chars")
    with pytest.raises(ValueError, match="no token for"):
        chars.encode_batch(arr)


def test_text_ending_at_an_unreadable_page_is_read_safely():
    """The last document ends exactly where readable memory ends: its bytes are copied with
    padding, since the kernels load 8 bytes at a time (in a child: a wrong read would crash it)."""
    script = textwrap.dedent(
        """
        import ctypes, mmap
        import numpy as np, pyarrow as pa, numtok
        page = mmap.PAGESIZE
        region = mmap.mmap(-1, 2 * page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(region))
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.mprotect(ctypes.c_void_p(base + page), page, 0) == 0  # PROT_NONE
        text = ("hello world, " * 400).encode()[: page - 100] + b"tail words xyz"
        text = text[-page:]
        start = page - len(text)
        region[start:page] = text
        data = pa.foreign_buffer(base + start, len(text), base=region)
        offsets = np.array([0, len(text) - 14, len(text) - 5, len(text)], np.int32)
        arr = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(offsets.tobytes()), data])
        enc = numtok.load("cl100k_base")
        got = enc.encode_batch(arr).to_list()
        want = enc.encode_batch([bytes(text[a:b]).decode() for a, b in zip(offsets[:-1], offsets[1:])]).to_list()
        assert got == want, (got, want)
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_huggingface_datasets_map():
    datasets = pytest.importorskip("datasets")
    enc = numtok.load("cl100k_base")
    docs = documents()
    ds = datasets.Dataset.from_dict({"text": docs}).with_format("arrow")
    # datasets (5.x) takes a pyarrow Table from an Arrow-format map, not a dict of Arrow arrays
    mapped = ds.map(lambda t: t.append_column("input_ids", enc.encode_ordinary_batch(t["text"]).to_arrow()), batched=True, batch_size=100)
    assert mapped.with_format(None)["input_ids"] == enc.encode_ordinary_batch(docs).to_list()
    assert mapped.with_format(None)["text"] == docs


# ----------------------------------------------------------------------------------------------
# training from Arrow and Parquet


def write_parquet(path, docs, row_group_size=64, **columns):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": docs, **columns}), path, row_group_size=row_group_size)
    return str(path)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", r"\w+|[^\w\s]+|\s+"])
def test_training_from_arrow_and_parquet_equals_training_from_strs(tmp_path, pattern):
    docs = documents()
    expected = numtok.train_bpe(docs, 600, pattern=pattern, special_tokens=["<|endoftext|>"])
    for source in (
        pa.array(docs, pa.large_string()),
        chunked(docs, pa.string(), [3, 200, 201]),
        pa.array(["x", *docs])[1:],
        write_parquet(tmp_path / "docs.parquet", docs),
        [write_parquet(tmp_path / "a.parquet", docs[:100]), write_parquet(tmp_path / "b.parquet", docs[100:], 1000)],
    ):
        tok = numtok.train_bpe(source, 600, pattern=pattern, special_tokens=["<|endoftext|>"])
        assert tok.merges == expected.merges
        assert tok.vocab == expected.vocab


def test_parquet_is_streamed_in_bounded_batches(tmp_path):
    from numtok.io.sources import iter_chunks

    docs = documents()
    path = write_parquet(tmp_path / "docs.parquet", docs, row_group_size=100, other=list(range(len(docs))))
    chunks = list(iter_chunks(path, chunk_bytes=4096))
    assert len(chunks) > 20
    assert max(len(c.data) for c in chunks) < 4096 + max(len(d.encode()) for d in docs) * 2
    got = [bytes(c.data[a:b]).decode() for c in chunks for a, b in c.docs]
    assert got == [d for d in docs if d]
    assert [c.consumed for c in chunks] == sorted(c.consumed for c in chunks)


def test_bad_parquet_and_arrow_training_input(tmp_path):
    docs = documents()[:50]
    path = write_parquet(tmp_path / "docs.parquet", docs, body=docs)
    with pytest.raises(ValueError, match=r"docs.parquet: no column 'content' \(columns: text, body\)"):
        numtok.train_bpe(path, 300, field="content")
    raw = open(path, "rb").read()
    for name, content in (("truncated.parquet", raw[: len(raw) // 2]), ("garbage.parquet", b"not parquet at all" * 10),
                          ("corrupt.parquet", raw[:4] + bytes(len(raw) - 8) + raw[-4:])):
        bad = tmp_path / name
        bad.write_bytes(content)
        with pytest.raises(ValueError, match=f"{name}: not a readable Parquet file"):
            numtok.train_bpe(str(bad), 300)
    with pytest.raises(ValueError, match=r"nulls.parquet: column 'text': text 70 is null"):
        numtok.train_bpe(write_parquet(tmp_path / "nulls.parquet", docs + ["a"] * 20 + [None], row_group_size=16), 300)
    with pytest.raises(TypeError, match="got int64"):
        numtok.train_bpe(write_parquet(tmp_path / "ints.parquet", docs, n=list(range(50))), 300, field="n")
    with pytest.raises(ValueError, match=r"text 1 is not valid UTF-8 \(at its byte 2\)"):
        numtok.train_bpe(string_array_of_bytes([b"fine", b"ab\xff"]), 300)


# ----------------------------------------------------------------------------------------------
# the command line: .parquet inputs, token shards


def cli_run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "numtok", *map(str, args)], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def shard_ids(directory) -> tuple[dict, np.ndarray]:
    import json

    index = json.loads((directory / "index.json").read_text())
    parts = [np.fromfile(directory / s["file"], dtype=np.dtype(index["dtype"]).newbyteorder("<")) for s in index["shards"]]
    for part, shard in zip(parts, index["shards"]):
        assert len(part) == shard["tokens"]
    return index, np.concatenate(parts) if parts else np.zeros(0, np.uint32)


def test_cli_parquet_to_token_shards_equals_jsonl_to_bin(tmp_path):
    import json

    docs = [d for d in documents() if d]
    with open(tmp_path / "docs.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"body": d}) + "\n")
    parquet = write_parquet(tmp_path / "docs.parquet", ["x"] * len(docs), row_group_size=100, body=docs)
    r = cli_run("encode", "-t", "cl100k_base", tmp_path / "docs.jsonl", "--field", "body", "-o", tmp_path / "ids.bin")
    assert r.returncode == 0, r.stderr
    expected = np.fromfile(tmp_path / "ids.bin", dtype="<u4")
    out = tmp_path / "shards"
    r = cli_run("encode", "-t", "cl100k_base", parquet, "--field", "body", "-o", f"{out}/", "--shard-tokens", 7000, "--chunk-mb", 1)
    assert r.returncode == 0, r.stderr
    index, ids = shard_ids(out)
    assert np.array_equal(ids, expected)
    assert index["dtype"] == "uint32" and index["tokens"] == len(expected) and index["documents"] == len(docs)
    assert [s["tokens"] for s in index["shards"][:-1]] == [7000] * (len(index["shards"]) - 1)
    eot = numtok.load("cl100k_base").eot_token
    starts = np.r_[0, np.flatnonzero(ids == eot) + 1]  # the sample text holds no end-of-text token
    assert [s["documents"] for s in index["shards"]] == np.bincount(starts // 7000, minlength=len(index["shards"])).tolist()
    # a rerun with bigger shards replaces everything: no shard of the first run is left
    r = cli_run("encode", "-t", "gpt2", parquet, "--field", "body", "-o", out, "--shard-tokens", 50000)
    assert r.returncode == 0, r.stderr
    index, ids = shard_ids(out)
    assert index["dtype"] == "uint16"
    assert sorted(p.name for p in out.iterdir()) == ["index.json"] + [s["file"] for s in index["shards"]]
    gpt2 = numtok.load("gpt2")
    assert np.array_equal(ids, np.concatenate([np.r_[gpt2.encode_ordinary(d), gpt2.eot_token] for d in docs])[:-1])


def test_cli_failures_write_nothing_under_the_final_name(tmp_path):
    docs = [d for d in documents() if d][:200]
    good = write_parquet(tmp_path / "good.parquet", docs)
    nulls = write_parquet(tmp_path / "nulls.parquet", docs[:150] + [None] + docs[150:], row_group_size=40)
    out = tmp_path / "shards"
    r = cli_run("encode", "-t", "cl100k_base", good, nulls, "-o", f"{out}/", "--shard-tokens", 1000)
    assert r.returncode == 2 and "nulls.parquet: row 150 of column 'text' is null" in r.stderr, r.stderr
    assert not out.exists()
    assert cli_run("encode", "-t", "cl100k_base", good, "-o", f"{out}/", "--shard-tokens", 1000).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = cli_run("encode", "-t", "cl100k_base", good, nulls, "-o", f"{out}/", "--shard-tokens", 500)
    assert r.returncode == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old output, untouched
    for argv, words in (
        (["encode", "-t", "cl100k_base", good, "--field", "body", "-o", tmp_path / "x.bin"], "good.parquet: no column 'body' (columns: text)"),
        (["train", good, "--field", "body", "--vocab-size", "300", "-o", tmp_path / "t.json"], "good.parquet: no column 'body' (columns: text)"),
    ):
        r = cli_run(*argv)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(open(good, "rb").read()[:-100])
    r = cli_run("encode", "-t", "cl100k_base", broken, "-o", tmp_path / "x.bin")
    assert r.returncode == 2 and "broken.parquet: not a readable Parquet file" in r.stderr, r.stderr
    assert not (tmp_path / "x.bin").exists() and not (tmp_path / "t.json").exists()


def test_cli_train_from_parquet_equals_jsonl(tmp_path):
    import json

    docs = [d for d in documents() if d]
    with open(tmp_path / "docs.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"text": d}) + "\n")
    parquet = write_parquet(tmp_path / "docs.parquet", docs, row_group_size=50)
    for source, out in ((tmp_path / "docs.jsonl", "a.json"), (parquet, "b.json")):
        r = cli_run("train", source, "--vocab-size", 700, "--pattern", "cl100k", "-o", tmp_path / out, "-q")
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_shard_writer_removes_its_files_on_error(tmp_path):
    from numtok.io.shards import ShardWriter

    out = tmp_path / "new"
    with pytest.raises(KeyboardInterrupt):
        with ShardWriter(out, 3, np.uint16) as shards:
            shards.write(np.arange(10))
            raise KeyboardInterrupt
    assert not out.exists()
    with pytest.raises(ValueError, match="does not fit the shards' uint16"):
        with ShardWriter(out, 3, np.uint16) as shards:
            shards.write(np.array([1, 70000]))
    assert not out.exists()
