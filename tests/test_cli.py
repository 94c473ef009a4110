"""The ``numtok`` command line, run as a subprocess on a small corpus (and, for the many error
paths, in-process through ``numtok.cli.main``)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import write_slow_job

import numtok
from numtok import cli

DATA = Path(__file__).parent / "data"


def run(*args, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "numtok", *map(str, args)], capture_output=True, cwd=cwd,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def one_line_error(stderr: bytes | str) -> str:
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    assert "Traceback" not in text
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith("numtok")
    return lines[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """Two .txt files, a .jsonl.gz, all cut from the shared sample text (raw bytes: CRLF kept)."""
    raw = (DATA / "sample_mixed.txt").read_bytes()
    d = tmp_path_factory.mktemp("corpus")
    half = raw.index(b"\n", len(raw) // 2) + 1
    (d / "a.txt").write_bytes(raw[:half])
    (d / "b.txt").write_bytes(raw[half:])
    paragraphs = [p for p in raw.decode("utf-8").split("\n\n") if p.strip()][:300]
    with gzip.open(d / "c.jsonl.gz", "wt", encoding="utf-8") as f:
        for i, p in enumerate(paragraphs):
            f.write(json.dumps({"id": i, "text": p}, ensure_ascii=False) + "\n")
    return {"dir": d, "a": d / "a.txt", "b": d / "b.txt", "jsonl": d / "c.jsonl.gz", "paragraphs": paragraphs}


@pytest.fixture(scope="module")
def trained(corpus) -> Path:
    """``numtok train`` on .txt + .jsonl.gz inputs."""
    out = corpus["dir"] / "tok.json"
    r = run("train", corpus["a"], corpus["b"], corpus["jsonl"], "--vocab-size", 1200,
            "--special-token", "<|endoftext|>", "--pattern", "cl100k", "-o", out)
    assert r.returncode == 0, r.stderr.decode()
    summary = r.stderr.decode()
    assert "unique words" in summary and "MB" in summary and str(out) in summary
    return out


# -- the round trip ------------------------------------------------------------------------------


def test_train_encode_decode_gives_the_text_back(corpus, trained, tmp_path):
    tok = numtok.Tokenizer.from_file(trained)
    assert tok.n_vocab == 1200 and tok.pattern == "cl100k" and tok.special_tokens == {"<|endoftext|>": 0}

    r = run("encode", "-t", trained, corpus["a"], corpus["b"], "-o", tmp_path / "ids.npy", "--chunk-mb", 1)
    assert r.returncode == 0, r.stderr.decode()
    ids = np.load(tmp_path / "ids.npy")
    a, b = corpus["a"].read_bytes().decode(), corpus["b"].read_bytes().decode()
    expected = np.concatenate([tok.encode_ordinary(a), [tok.eot_token], tok.encode_ordinary(b)])
    assert ids.dtype == np.uint16 and np.array_equal(ids, expected)  # streamed chunks = one call

    r = run("decode", "-t", trained, tmp_path / "ids.npy", "-o", tmp_path / "back.txt")
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "back.txt").read_bytes() == corpus["a"].read_bytes() + corpus["b"].read_bytes()

    # Raw .bin, uint32 forced, no separator; decoded to stdout.
    r = run("encode", "-q", "-t", trained, corpus["a"], "-o", tmp_path / "ids.bin", "--dtype", "uint32", "--no-eot")
    assert r.returncode == 0 and r.stderr == b""
    raw = np.fromfile(tmp_path / "ids.bin", dtype="<u4")
    assert np.array_equal(raw, tok.encode_ordinary(a))
    r = run("decode", "-t", trained, tmp_path / "ids.bin", "--dtype", "uint32")
    assert r.returncode == 0 and r.stdout == corpus["a"].read_bytes()


def test_jsonl_documents_round_trip(corpus, trained, tmp_path):
    r = run("encode", "-t", trained, corpus["jsonl"], "-o", tmp_path / "ids.bin")
    assert r.returncode == 0, r.stderr.decode()
    tok = numtok.Tokenizer.from_file(trained)
    ids = np.fromfile(tmp_path / "ids.bin", dtype="<u2")
    assert int((ids == tok.eot_token).sum()) == len(corpus["paragraphs"]) - 1
    r = run("decode", "-t", trained, tmp_path / "ids.bin", "--jsonl")
    assert r.returncode == 0, r.stderr.decode()
    records = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert [rec["text"] for rec in records] == corpus["paragraphs"]


@pytest.mark.parametrize("mode", ["blank-line", "line"])
def test_txt_document_modes(tmp_path, mode):
    text = "First paragraph,\ntwo lines.\n\nSecond one.\n\nThird <|endoftext|> one.\n"
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    assert cli.main(["encode", "-q", "-t", "gpt2", str(tmp_path / "in.txt"), "-o", str(tmp_path / "ids.npy"),
                     "--txt-docs", mode]) == 0
    enc = numtok.load("gpt2")
    docs = ["First paragraph,\ntwo lines.\n", "Second one.\n", "Third <|endoftext|> one.\n"]
    if mode == "line":
        docs = text.split("\n")[:-1]
    expected = []
    for i, doc in enumerate(docs):
        expected += ([enc.eot_token] if i else []) + enc.encode_ordinary(doc).tolist()
    assert np.load(tmp_path / "ids.npy").tolist() == expected
    assert cli.main(["decode", "-t", "gpt2", str(tmp_path / "ids.npy"), "-o", str(tmp_path / "back.txt"),
                     "--txt-docs", mode]) == 0
    assert (tmp_path / "back.txt").read_text(encoding="utf-8") == text


def test_allow_special_and_keep_eot(tmp_path):
    (tmp_path / "in.txt").write_text("a<|endoftext|>b", encoding="utf-8")
    cli.main(["encode", "-q", "-t", "gpt2", str(tmp_path / "in.txt"), "-o", str(tmp_path / "s.npy"), "--allow-special"])
    assert np.load(tmp_path / "s.npy").tolist() == [64, 50256, 65]
    cli.main(["encode", "-q", "-t", "gpt2", str(tmp_path / "in.txt"), "-o", str(tmp_path / "o.npy")])
    assert 50256 not in np.load(tmp_path / "o.npy").tolist()
    assert cli.main(["decode", "-t", "gpt2", str(tmp_path / "s.npy"), "--keep-eot", "-o", str(tmp_path / "k.txt")]) == 0
    assert (tmp_path / "k.txt").read_text() == "a<|endoftext|>b"


def test_safe_cuts_encode_as_the_whole(tmp_path):
    # Big text in 1 MB pieces cut after "letter + space": identical to encoding it in one call.
    text = (DATA / "sample_mixed.txt").read_bytes().decode() * 6
    (tmp_path / "big.txt").write_text(text, encoding="utf-8", newline="")
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        assert cli.main(["encode", "-q", "-t", name, str(tmp_path / "big.txt"), "-o", str(tmp_path / "ids.npy"),
                         "--chunk-mb", "1"]) == 0
        assert np.array_equal(np.load(tmp_path / "ids.npy"), numtok.load(name).encode_ordinary(text)), name


@pytest.mark.parametrize("pattern", ["gpt2", "r50k", "cl100k", "o200k"])
def test_safe_cut_rule_never_splits_a_piece(pattern):
    # The rule behind streaming one big document: cutting where an ASCII letter meets a space
    # leaves every pre-token intact, for each named pattern, on adversarial strings.
    import random

    import regex

    from numtok.io.documents import safe_cut
    from numtok.pretokenizers.patterns import NAMED_PATTERNS

    compiled = regex.compile(NAMED_PATTERNS[pattern])
    alphabet = ["a", "Z", " ", " ", "  ", "\n", "\r\n", "\t", "1", "'", "s", "'ll", ".", "/", "é", "\u0301",
                "\u00a0", "東", "-", "Ǆ", "A'S"]
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 24)))
        raw = text.encode("utf-8")
        whole = [m.group() for m in compiled.finditer(text)]
        c = safe_cut(raw, 1)
        while c > 0:
            left, right = raw[:c].decode("utf-8"), raw[c:].decode("utf-8")
            parts = [m.group() for m in compiled.finditer(left)] + [m.group() for m in compiled.finditer(right)]
            assert parts == whole, (text, c)
            c = safe_cut(raw[:c], 1)


def test_tokenizer_sources(trained, tmp_path, capsys):
    tok = numtok.Tokenizer.from_file(trained)
    tok.save_tiktoken(tmp_path / "t.tiktoken")
    tok.save_gpt2(tmp_path / "gpt2dir")
    for spec in (str(tmp_path / "t.tiktoken"), str(tmp_path / "gpt2dir"), str(trained)):
        loaded = cli.load_tokenizer(spec)
        assert loaded.vocab == tok.vocab and loaded.special_tokens == tok.special_tokens
    assert cli.load_tokenizer(str(tmp_path / "t.tiktoken")).pattern == "cl100k"  # from the sidecar
    # train writes each format from the -o suffix
    assert cli.main(["info", str(tmp_path / "t.tiktoken")]) == 0
    assert "1,200 ids" in capsys.readouterr().out


def test_train_output_formats(corpus, tmp_path):
    for out in ("t.tiktoken", "gpt2dir/"):
        code = cli.main(["train", "-q", str(corpus["a"]), "--vocab-size", "400", "--special-token", "<|endoftext|>",
                         "-o", f"{tmp_path}{os.sep}{out}"])
        assert code == 0
    assert (tmp_path / "t.tiktoken.json").exists()
    assert sorted(os.listdir(tmp_path / "gpt2dir")) == ["merges.txt", "vocab.json"]


def test_train_reads_another_jsonl_field(tmp_path):
    records = [{"body": f"record {i} says hello world"} for i in range(50)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert call(["train", "-q", str(tmp_path / "d.jsonl"), "--field", "body", "--vocab-size", "270",
                 "-o", str(tmp_path / "t.json")]) == 0
    tok = numtok.Tokenizer.from_file(tmp_path / "t.json")
    assert len(tok.encode("record says hello world")) < len("record says hello world") / 2
    assert call(["train", "-q", str(tmp_path / "d.jsonl"), "--vocab-size", "270", "-o", str(tmp_path / "u.json")]) == 2


def test_info_and_demo():
    r = run("info", "cl100k_base")
    assert r.returncode == 0
    out = r.stdout.decode()
    assert "100,277" in out and "cl100k" in out and "<|endoftext|>=100257" in out and "longest tokens" in out
    r = run("info", "gpt2", "--json")
    info = json.loads(r.stdout)
    assert info["n_vocab"] == 50257 and info["eot_token"] == 50256 and len(info["longest_tokens"]) == 10
    started = time.perf_counter()
    r = run("demo")
    assert r.returncode == 0, r.stderr.decode()
    assert "tokens" in r.stdout.decode() and "Pride and Prejudice" in r.stdout.decode()
    assert time.perf_counter() - started < 120  # seconds once Numba's cache is warm


def test_help_everywhere():
    for args in ([], ["train"], ["encode"], ["decode"], ["info"], ["demo"]):
        r = run(*args, "--help")
        assert r.returncode == 0 and b"usage: numtok" in r.stdout
    assert b"blank-line" in run("encode", "--help").stdout  # documents are explained
    r = run()
    assert r.returncode == 2 and b"COMMAND" in r.stderr


# -- errors: one line, non-zero exit ------------------------------------------------------------


def test_user_errors_in_a_subprocess(corpus, tmp_path):
    r = run("encode", "-t", "gpt2", tmp_path / "missing.txt", "-o", tmp_path / "o.npy")
    assert r.returncode == 2 and "missing.txt" in one_line_error(r.stderr)
    r = run("train", corpus["a"], "--vocab-size", "lots", "-o", tmp_path / "t.json")
    assert r.returncode == 2 and "lots" in one_line_error(r.stderr)
    r = run("encode", "-t", "cl999k", corpus["a"], "-o", tmp_path / "o.npy")
    assert r.returncode == 2 and "cl100k_base" in one_line_error(r.stderr)
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.parametrize(
    "argv, words",
    [
        (["train", "{a}", "--vocab-size", "0", "-o", "{tmp}/t.json"], ["positive integer"]),
        (["train", "{a}", "--vocab-size", "100", "-o", "{tmp}/t.json"], ["vocab_size", "too small"]),
        (["train", "{a}", "--vocab-size", "300", "--pattern", "nosuchpattern", "-o", "{tmp}/t.json"], ["unknown pattern"]),
        (["train", "{a}", "--vocab-size", "300", "-o", "{tmp}/no/dir/t.json"], ["output directory"]),
        (["train", "{tmp}", "--vocab-size", "300", "-o", "{tmp}/t.json"], ["directory"]),
        (["encode", "-t", "{tmp}/garbage.json", "{a}", "-o", "{tmp}/o.npy"], ["garbage.json"]),
        (["encode", "-t", "{tmp}/bert.json", "{a}", "-o", "{tmp}/o.npy"], ["WordPiece"]),
        (["encode", "-t", "{tmp}", "{a}", "-o", "{tmp}/o.npy"], ["neither tokenizer.json"]),
        (["encode", "-t", "cl100k_base", "{a}", "-o", "{tmp}/o.npy", "--dtype", "uint16"], ["uint16", "100,277"]),
        (["encode", "-t", "cl100k_base", "{a}", "-o", "{tmp}/o.npy", "--dtype", "int8"], ["invalid choice"]),
        (["encode", "-t", "gpt2", "{a}", "-o", "{tmp}/o.npy", "--eot", "<|nope|>"], ["not a special token"]),
        (["encode", "-t", "gpt2", "{tmp}/latin1.txt", "-o", "{tmp}/o.npy"], ["UTF-8", "latin1.txt"]),
        (["encode", "-t", "gpt2", "{tmp}/nofield.jsonl", "-o", "{tmp}/o.npy"], ["nofield.jsonl:2", "'text'"]),
        (["encode", "-t", "gpt2", "{a}", "-o", "{tmp}/o.npy", "--threads", "-2"], ["positive integer"]),
        (["decode", "-t", "gpt2", "{tmp}/odd.bin"], ["whole number"]),
        (["decode", "-t", "gpt2", "{tmp}/big_ids.npy"], ["not in the vocabulary"]),
        (["decode", "-t", "gpt2", "{tmp}/nothere.npy"], ["nothere.npy"]),
        (["info", "{tmp}/garbage.json"], ["garbage.json"]),
        (["frobnicate"], ["invalid choice"]),
    ],
)
def test_user_errors(corpus, tmp_path, capsys, argv, words):
    (tmp_path / "garbage.json").write_text("{ nope", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    (tmp_path / "nofield.jsonl").write_text('{"text": "a"}\n{"body": "b"}\n', encoding="utf-8")
    (tmp_path / "odd.bin").write_bytes(b"\x01\x02\x03")
    np.save(tmp_path / "big_ids.npy", np.array([1, 2, 70000], dtype=np.uint32))
    bert = Path(__file__).resolve().parents[2] / "shared" / "ref" / "bert_uncased_tokenizer.json"
    if bert.exists():
        (tmp_path / "bert.json").write_bytes(bert.read_bytes())
    elif "{tmp}/bert.json" in argv:
        pytest.skip("no BERT reference file")
    argv = [a.format(a=corpus["a"], tmp=tmp_path) for a in argv]
    assert call(argv) == 2
    line = one_line_error(capsys.readouterr().err)
    for word in words:
        assert word in line, line
    assert not (tmp_path / "o.npy").exists()


def call(argv: list[str]) -> int:
    """cli.main in-process; argparse's own errors exit through SystemExit."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code


# -- interrupted runs leave no output under the final name -------------------------------------


@pytest.fixture(scope="module")
def slow_job(tmp_path_factory):
    """A tokenizer with a custom regex (the slow, regex-module path) and a few MB of text, so an
    encode runs for several seconds."""
    d = tmp_path_factory.mktemp("slow")
    write_slow_job(d, 24)
    return d


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_interrupted_encode_leaves_no_output(slow_job, tmp_path, sig):
    out = tmp_path / "ids.npy"
    # SIGINT at its default in the child: a shell's background job (pytest run with `&`) starts
    # with it ignored, the child inherits that, and Python then leaves it ignored.
    proc = subprocess.Popen([sys.executable, "-m", "numtok", "encode", "-t", str(slow_job / "slow.json"),
                             str(slow_job / "big.jsonl"), "-o", str(out), "--chunk-mb", "1", "--threads", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while not _writes_into(proc.pid, tmp_path):  # writing has begun (to a file with no name yet, on Linux)
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.time() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    assert proc.poll() is None, "the encode finished before it could be interrupted"
    proc.send_signal(sig)
    proc.wait(timeout=120)
    assert list(tmp_path.iterdir()) == []  # no output, and no temporary file either
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 130
        assert one_line_error(proc.stderr.read()) == "numtok: interrupted"


def _writes_into(pid: int, directory) -> bool:
    fd_dir = f"/proc/{pid}/fd"
    if not os.path.isdir(fd_dir):  # no /proc: a named temporary appears instead
        return any(p.name.startswith(".ids.npy.") for p in directory.iterdir())
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(os.path.join(fd_dir, fd)).startswith(str(directory) + os.sep):
                return True
        except OSError:
            pass
    return False
