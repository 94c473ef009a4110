"""numtok.evaluate and ``numtok eval``: per-document kernels against tests/naive_eval.py, token
counts per group against tiktoken (the reference rank files), grouping by a field of .jsonl and
.parquet records, reports, and bad input."""

from __future__ import annotations

import csv
import gzip
import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import naive_eval
import numpy as np
import pytest
from conftest import DATA, JIT_OFF
from hypothesis import given
from hypothesis import strategies as st
from unicode_reference import agreed

import numtok
from numtok import cli
from numtok.evaluation import _kernels
from numtok.evaluation.scripts import GROUPS, SCRIPTS, document_groups, script_table
from numtok.evaluation.totals import COLUMNS
from numtok.pretokenizers._unicode import class_table

REF = Path(__file__).resolve().parents[2] / "shared" / "ref"
tiktoken = pytest.importorskip("tiktoken")
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

PATTERNS = {"cl100k_base": "cl100k", "o200k_base": "o200k"}


@lru_cache
def reference(name: str):
    """tiktoken's Encoding for ``name`` from the shared reference rank file (no network)."""
    path = REF / f"{name}.tiktoken"
    if not path.exists():
        pytest.skip(f"{path} not available")
    return tiktoken.Encoding(name=f"ref_{name}", pat_str=numtok.NAMED_PATTERNS[PATTERNS[name]],
                             mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens={})


@pytest.fixture(scope="module")
def lines() -> list[str]:
    """The multilingual sample's lines (each a document, as evaluate reads a .txt file)."""
    text = (DATA / "multilingual_sample.txt").read_bytes().decode("utf-8")
    docs = text.splitlines(keepends=True)
    return docs[:: 8] if JIT_OFF else docs


def _flat(docs: list[str]):
    parts = [d.encode("utf-8") for d in docs]
    ends = np.cumsum([len(p) for p in parts])
    data = np.frombuffer(b"".join(parts) + bytes(16), dtype=np.uint8)[: int(ends[-1]) if len(ends) else 0]
    return data, np.stack([ends - [len(p) for p in parts], ends], axis=1).astype(np.int64)


def _kernel_text_stats(docs: list[str]):
    data, ranges = _flat(docs)
    n = len(docs)
    chars, words = np.zeros(n, np.int64), np.zeros(n, np.int64)
    letters = np.zeros((n, len(SCRIPTS)), np.int64)
    _kernels.text_stats(data, ranges, class_table(), script_table(), chars, words, letters)
    return chars, words, letters


def _check_text_stats(docs: list[str]) -> None:
    chars, words, letters = _kernel_text_stats(docs)
    groups = document_groups(letters)
    for i, doc in enumerate(docs):
        want_chars, want_words, want_letters = naive_eval.text_stats(doc)
        assert (int(chars[i]), int(words[i])) == (want_chars, want_words), doc
        assert {SCRIPTS[s]: int(v) for s, v in enumerate(letters[i]) if v} == want_letters, doc
        assert GROUPS[groups[i]] == naive_eval.group_of(doc), doc


def test_text_stats_on_real_text(lines, sample_text):
    _check_text_stats(lines)
    _check_text_stats(sample_text.splitlines(keepends=True)[:: 4 if not JIT_OFF else 40])


# Code points the installed regex classifies otherwise than numtok's Unicode tables are left out.
SCRIPT_CHARS = st.one_of(agreed(st.characters(codec="utf-8")), st.sampled_from(list("aéжαअ漢あー한กא ب\t\n\u3000\u00a0")))


@given(st.lists(st.text(SCRIPT_CHARS, max_size=40), min_size=1, max_size=8))
def test_text_stats_on_generated_text(docs):
    docs = [d.encode("utf-8", "replace").decode("utf-8") for d in docs]
    _check_text_stats([d for d in docs if d] or ["x"])


def test_script_table_matches_regex_on_every_letter():
    table = script_table()
    letters = np.flatnonzero(table)
    sample = letters[:: 7 if not JIT_OFF else 97]
    for cp in sample.tolist():
        assert SCRIPTS[table[cp] - 1] == naive_eval.script_of(chr(cp)), hex(cp)
    assert not table[[ord(c) for c in " 1!,\n\u0301"]].any()


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_token_counts_per_group_equal_tiktoken(name, lines, tmp_path):
    """Tokens, fallback bytes and ids used per group, from tiktoken's ids of each document."""
    path = tmp_path / "sample.txt"
    path.write_text("".join(lines), encoding="utf-8", newline="")
    rows = numtok.evaluate({name: numtok.load(name)}, [str(path)], num_threads=2)
    ref = reference(name)
    docs = "".join(lines).encode("utf-8").splitlines(keepends=True)
    docs = [d.decode("utf-8") for d in docs]
    by_group: dict[str, list[list[int]]] = {}
    text_by_group: dict[str, list[str]] = {}
    for doc in docs:
        g = naive_eval.group_of(doc)
        by_group.setdefault(g, []).append(ref.encode_ordinary(doc))
        text_by_group.setdefault(g, []).append(doc)
    got = {r["group"]: r for r in rows}
    assert set(got) == set(by_group) | {"all"}
    n_vocab = numtok.load(name).n_vocab
    every = set()
    for g, ids in by_group.items():
        fallbacks, used = naive_eval.token_stats(ids, ref.decode_single_token_bytes)
        every |= used
        nbytes = sum(len(d.encode("utf-8")) for d in text_by_group[g])
        row = got[g]
        assert (row["documents"], row["bytes"], row["tokens"]) == (len(ids), nbytes, sum(map(len, ids))), g
        assert row["chars"] == sum(map(len, text_by_group[g]))
        assert row["byte_fallback_share"] == round(sum(fallbacks) / nbytes, 6)
        assert row["vocab_used_share"] == round(len(used) / n_vocab, 6)
        assert row["bytes_per_token"] == round(nbytes / sum(map(len, ids)), 6)
    assert got["all"]["tokens"] == sum(len(i) for ids in by_group.values() for i in ids)
    assert got["all"]["vocab_used_share"] == round(len(every) / n_vocab, 6)


def test_token_stats_kernel_equals_naive(lines):
    enc, ref = numtok.load("cl100k_base"), reference("cl100k_base")
    docs = lines[:300]
    batch = enc.encode_ordinary_batch(docs)
    groups = np.arange(len(docs), dtype=np.int32) % 3
    fallback = np.zeros(enc.n_vocab, np.uint8)
    for b in range(0x80, 0x100):
        fallback[enc.encode_single_token(bytes([b]))] = 1
    used = np.zeros((3, enc.n_vocab), np.uint8)
    out = np.zeros(len(docs), np.int64)
    _kernels.token_stats(batch.ids, batch.offsets[1:], groups, fallback, used, out)
    ids = [ref.encode_ordinary(d) for d in docs]
    fallbacks, _ = naive_eval.token_stats(ids, ref.decode_single_token_bytes)
    assert out.tolist() == fallbacks
    for g in range(3):
        assert set(np.flatnonzero(used[g]).tolist()) == {t for i, d in enumerate(ids) if i % 3 == g for t in d}
    # the word kernel: each document a "word" counted i % 4 times
    counts = np.arange(len(docs), dtype=np.int64) % 4
    used1 = np.zeros(enc.n_vocab, np.uint8)
    tokens, fb = _kernels.word_token_stats(batch.ids, batch.offsets[1:], counts, fallback, used1)
    assert (int(tokens), int(fb)) == (sum(c * len(d) for c, d in zip(counts.tolist(), ids)),
                                      sum(c * f for c, f in zip(counts.tolist(), fallbacks)))
    assert set(np.flatnonzero(used1).tolist()) == {t for c, d in zip(counts.tolist(), ids) if c for t in d}


@pytest.fixture(scope="module")
def records(lines) -> list[dict]:
    langs = ["en", "ru", "zh"]
    return [{"text": d, "lang": langs[i % 3], "n": i} for i, d in enumerate(lines[:600])]


def _rows_without(rows, *keys):
    return [{k: v for k, v in r.items() if k not in keys} for r in rows]


def test_group_by_field_jsonl_parquet_and_records(records, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    jsonl = tmp_path / "r.jsonl.gz"
    with gzip.open(jsonl, "wt", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    parquet = tmp_path / "r.parquet"
    pq.write_table(pa.table({"text": [r["text"] for r in records], "lang": [r["lang"] for r in records]}), parquet, row_group_size=100)
    toks = ["gpt2", "o200k_base"]
    want = numtok.evaluate(toks, records, group_by="lang")
    assert numtok.evaluate(toks, [str(jsonl)], group_by="lang") == want
    assert numtok.evaluate(toks, [str(parquet)], group_by="lang") == want
    # each group's row equals evaluating that group's documents alone
    for lang in ("en", "ru", "zh"):
        alone = numtok.evaluate(toks, [r["text"] for r in records if r["lang"] == lang])
        mine = [r for r in want if r["group"] == lang]
        theirs = [r for r in alone if r["group"] == "all"]
        assert _rows_without(mine, "group", "tokens_per_word") == _rows_without(theirs, "group", "tokens_per_word")
    # a numeric field groups by its value
    assert {r["group"] for r in numtok.evaluate("gpt2", records[:4], group_by="n")} == {"0", "1", "2", "3", "all"}


@pytest.mark.parametrize(
    "source, group_by, words",
    [
        ([{"text": "a", "lang": "en"}, {"text": "b"}], "lang", "no group field 'lang'"),
        ([{"text": "a", "lang": ""}], "lang", "is empty"),
        ([{"text": "a", "lang": None}], "lang", "is empty"),
        ([{"text": "a", "lang": "all"}], "lang", "'all'"),
        ([{"body": "a", "lang": "en"}], "lang", "no text field 'text'"),
        (["", ""], "script", "no document"),
        (["a"], "", "group_by"),
    ],
)
def test_bad_input(source, group_by, words):
    with pytest.raises(ValueError, match=words):
        numtok.evaluate("gpt2", source, group_by=group_by)


def test_bad_tokenizers():
    with pytest.raises(ValueError, match="two tokenizers"):
        numtok.evaluate(["gpt2", "gpt2"], ["a"])
    with pytest.raises(ValueError, match="neither a file"):
        numtok.evaluate(["no-such-tokenizer"], ["a"])


def test_each_tokenizer_uses_its_own_pattern():
    rows = numtok.evaluate(["gpt2", "cl100k_base", "o200k_base"], ["Hello   world 12345"])
    assert [r["pattern"] for r in rows if r["group"] == "all"] == ["r50k", "cl100k", "o200k"]


def test_cli_eval_writes_the_report(lines, tmp_path, capsys):
    data = tmp_path / "d.txt"
    data.write_text("".join(lines[:500]), encoding="utf-8", newline="")
    mine = tmp_path / "mine.json"
    numtok.train_bpe([str(data)], 400).save(mine)
    out = tmp_path / "report"
    assert cli.main(["eval", "-q", "-t", "cl100k_base", "-t", "gpt2", "-t", str(mine), str(data), "-o", str(out)]) == 0
    table = capsys.readouterr().out
    assert "cl100k_base" in table and "all" in table
    with open(out / "report.csv", newline="", encoding="utf-8") as f:
        got = list(csv.DictReader(f))
    want = numtok.evaluate({"cl100k_base": "cl100k_base", "gpt2": "gpt2", str(mine): str(mine)}, [str(data)])
    assert list(got[0]) == list(COLUMNS)
    assert [(r["tokenizer"], int(r["vocab_size"]), r["group"], int(r["bytes"]), int(r["tokens"]), float(r["bytes_per_token"]))
            for r in got] == [(r["tokenizer"], r["vocab_size"], r["group"], r["bytes"], r["tokens"], r["bytes_per_token"]) for r in want]
    assert json.loads((out / "report.json").read_text()) == want
    assert (out / "report.png").read_bytes()[:4] == b"\x89PNG" and b"<svg" in (out / "report.svg").read_bytes()


def test_cli_eval_errors_write_nothing(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text('{"text": "a", "lang": "en"}\n{"text": "b", "lang": ""}\n')
    out = tmp_path / "report"
    assert cli.main(["eval", "-q", "-t", "gpt2", str(data), "--group-by", "lang", "-o", str(out)]) == 2
    assert "is empty" in capsys.readouterr().err
    assert cli.main(["eval", "-q", "-t", "gpt2", str(data), "--group-by", "country", "-o", str(out)]) == 2
    assert "no group field 'country'" in capsys.readouterr().err
    txt = tmp_path / "d.txt"
    txt.write_text("hello\n")
    assert cli.main(["eval", "-q", "-t", "gpt2", str(txt), "--group-by", "lang", "-o", str(out)]) == 2
    assert ".jsonl and .parquet" in capsys.readouterr().err
    assert not out.exists()


def test_plot_without_matplotlib_names_the_extra(tmp_path):
    """In a child where matplotlib cannot be imported: --plot fails at once, naming the extra;
    without --plot the CSV and JSON are written and no plot."""
    txt = tmp_path / "d.txt"
    txt.write_text("hello world\n")
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from numtok import cli\n"
            f"print(cli.main(['eval', '-q', '-t', 'gpt2', {str(txt)!r}, '-o', {str(tmp_path / 'a')!r}, '--plot']))\n"
            f"print(cli.main(['eval', '-q', '-t', 'gpt2', {str(txt)!r}, '-o', {str(tmp_path / 'b')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    printed = done.stdout.splitlines()
    assert (printed[0], printed[-1]) == ("2", "0"), done.stderr
    assert 'pip install "numtok[plot]"' in done.stderr
    assert not (tmp_path / "a").exists()
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["report.csv", "report.json"]
