"""Tokenizer files from strangers: loading one never runs code, never opens a path written in
it, and a hostile one gives a clear ValueError (or loads) in memory and time that follow the
file, never a table sized by a number read from it. Unpickling takes only numtok's own state."""

from __future__ import annotations

import base64
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import numtok
from numtok.encode.tokenizer import _unpickle
from numtok.io.tiktoken_file import sidecar_arguments

REF = Path(__file__).resolve().parents[2] / "shared" / "ref"
SRC = Path(numtok.__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
BIG = 2**31 - 1


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A small trained tokenizer in every format numtok reads, and a WordPiece tokenizer.json."""
    d = tmp_path_factory.mktemp("untrusted")
    lines = (DATA / "sample_mixed.txt").read_text(encoding="utf-8").splitlines(keepends=True)[:300]
    tok = numtok.train_bpe(lines, 400, special_tokens=["<|endoftext|>"])
    tok.save(d / "tokenizer.json")
    tok.save_tiktoken(d / "ranks.tiktoken")
    tok.save_gpt2(d)
    numtok.train_wordpiece(lines, 300).save(d / "wordpiece.json")
    return d


def load(kind: str, path: Path):
    if kind == "json":
        return numtok.Tokenizer.from_file(path)
    if kind == "tiktoken":  # with its sidecar, as `numtok encode -t NAME.tiktoken` reads it
        return numtok.Tokenizer.from_tiktoken(path, **sidecar_arguments(path))
    if kind == "gpt2":
        return numtok.Tokenizer.from_gpt2(path / "vocab.json", path / "merges.txt")
    if kind == "wordpiece":
        return numtok.WordPiece.from_file(path)
    return numtok.WordPiece.from_vocab(path)


def edited_json(src: Path, dst: Path, edit) -> Path:
    data = json.loads(src.read_text(encoding="utf-8"))
    edit(data)
    dst.write_text(json.dumps(data), encoding="utf-8")
    return dst


# -- ids near 2**31 -----------------------------------------------------------------------------


def test_huge_ids_are_refused_without_a_table_that_size(files, tmp_path):
    def vocab_id(data):
        data["model"]["vocab"]["zz"] = BIG

    def added_id(data):
        data["added_tokens"].append({"id": BIG - 3, "content": "<x>", "special": True, "single_word": False,
                                     "lstrip": False, "rstrip": False, "normalized": False})

    for src, kind in ((files / "tokenizer.json", "json"), (files / "wordpiece.json", "wordpiece")):
        for edit in (vocab_id, added_id):
            with pytest.raises(ValueError, match=r"out of range \(ids are 0 \.\. 2097150\)"):
                load(kind, edited_json(src, tmp_path / f"{kind}.json", edit))
    ranks = (files / "ranks.tiktoken").read_text()
    for rank in (BIG - 1, BIG, 2**64, -1):
        (tmp_path / "r.tiktoken").write_text(ranks + f"{base64.b64encode(b'zz').decode()} {rank}\n")
        with pytest.raises(ValueError, match="out of range|invalid rank"):
            numtok.Tokenizer.from_tiktoken(tmp_path / "r.tiktoken")
    (tmp_path / "vocab.json").write_text(json.dumps({**json.loads((files / "vocab.json").read_text()), "zz": BIG}))
    (tmp_path / "merges.txt").write_text((files / "merges.txt").read_text())
    with pytest.raises(ValueError, match="out of range"):
        load("gpt2", tmp_path)


# -- malformed structure ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["json", "wordpiece", "gpt2", "sidecar"])
def test_deeply_nested_json_is_a_value_error(files, tmp_path, kind):
    nested = "[" * 100_000 + "]" * 100_000
    if kind == "gpt2":
        (tmp_path / "vocab.json").write_text(nested)
        (tmp_path / "merges.txt").write_text("")
        target = tmp_path
    elif kind == "sidecar":
        target = tmp_path / "ranks.tiktoken"
        target.write_bytes((files / "ranks.tiktoken").read_bytes())
        (tmp_path / "ranks.tiktoken.json").write_text(nested)
        kind = "tiktoken"
    else:
        target = tmp_path / "t.json"
        target.write_text(nested)
    with pytest.raises(ValueError, match="recursion|nested|not a|malformed"):
        load(kind, target)


@pytest.mark.parametrize("edit", [
    lambda d: d.update(added_tokens=[1, 2]),
    lambda d: d.update(added_tokens={"a": 1}),
    lambda d: d["model"].update(vocab="/etc/passwd"),
    lambda d: d["model"].update(vocab=["a"]),
    lambda d: d.update(model=None),
    lambda d: d.update(normalizer=[]),
])  # fmt: skip
@pytest.mark.parametrize("kind", ["json", "wordpiece"])
def test_wrong_types_anywhere_are_value_errors(files, tmp_path, kind, edit):
    src = files / ("tokenizer.json" if kind == "json" else "wordpiece.json")
    with pytest.raises(ValueError):
        load(kind, edited_json(src, tmp_path / "t.json", edit))


def test_one_enormous_token_loads_in_time_that_follows_the_file(tmp_path):
    # Every split of every token into two tokens is looked up in rank mode: a 4 MB token once
    # took minutes (quadratic). Run in a child with a generous bound so a regression shows.
    path = tmp_path / "r.tiktoken"
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    lines.append(f"{base64.b64encode(b'ab' * 2_000_000).decode()} 256")
    path.write_text("\n".join(lines) + "\n")
    code = "import sys, numtok; t = numtok.Tokenizer.from_tiktoken(sys.argv[1]); print(t.encode_ordinary('ab' * 3).tolist())"
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(SRC)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [97, 98, 97, 98, 97, 98]


# -- files at scale: a million added tokens, a gigabyte line -------------------------------------

MEASURED = textwrap.dedent("""
    import json, sys, time
    import numtok
    from numtok import cli

    def peak_rss():  # VmHWM: unlike ru_maxrss, not carried over from the process before exec
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmHWM:"))

    kind, target = sys.argv[1], sys.argv[2]
    numtok.load("gpt2").encode("warm")  # kernels loaded: the job's own memory is measured
    before = peak_rss()
    started = time.time()
    try:
        if kind == "bpe":
            numtok.Tokenizer.from_file(target)
        elif kind == "wordpiece":
            numtok.WordPiece.from_file(target)
        elif kind == "encode":
            assert cli.main(["encode", "-t", "gpt2", target, "--chunk-mb", "16", "-q", "-o", target + ".bin"]) == 0
        elif kind == "count":
            numtok.count_words(target, pattern="gpt2", show_progress=False)
        outcome = "done"
    except ValueError as exc:
        outcome = str(exc)
    peak = peak_rss()
    print(json.dumps({"outcome": outcome, "seconds": time.time() - started, "before": before, "peak": peak}))
""")


def run_measured(kind: str, target: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", MEASURED, kind, str(target)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(SRC)})
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout)
    print(f"{kind} {target.name}: {result['outcome'][:100]} in {result['seconds']:.1f} s, peak RSS {result['peak'] >> 20} MiB "
          f"({(result['peak'] - result['before']) >> 20} MiB above the warm process)")
    return result


@pytest.mark.skipif(sys.platform != "linux", reason="reads VmHWM from /proc/self/status")
@pytest.mark.parametrize("kind", ["bpe", "wordpiece"])
def test_a_million_added_tokens_is_a_clear_error_in_time_and_memory_that_follow_the_file(files, tmp_path, kind):
    source = json.loads((files / ("tokenizer.json" if kind == "bpe" else "wordpiece.json")).read_text(encoding="utf-8"))
    first = 1 + max(source["model"]["vocab"].values())
    source["added_tokens"] += [{"id": first + i, "content": f"<t{i}>", "special": True} for i in range(1_000_000)]
    target = tmp_path / "many.json"
    target.write_text(json.dumps(source))
    result = run_measured(kind, target)
    assert re.search(r"1,00\d,\d{3} special and added tokens \(numtok takes at most 100,000", result["outcome"]), result["outcome"]
    assert str(target) in result["outcome"]
    assert result["seconds"] < 60
    assert result["peak"] - result["before"] < 8 * target.stat().st_size  # the parsed JSON, no table sized by the count


def one_line_file(path: Path, size: int) -> Path:
    """A text of ``size`` bytes on one line: mixed real text with its line breaks made spaces."""
    block = (Path(__file__).parent / "data" / "sample_mixed.txt").read_text(encoding="utf-8").replace("\r", " ").replace("\n", " ").encode()
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
        f.write(block[: size % len(block)].decode("utf-8", "ignore").encode())
    return path


@pytest.mark.skipif(sys.platform != "linux", reason="reads VmHWM from /proc/self/status")
@pytest.mark.parametrize("kind", ["encode", "count"])
@pytest.mark.parametrize("size", [64 << 20, pytest.param(1 << 30, marks=pytest.mark.slow)], ids=["64MB", "1GB"])
def test_one_enormous_line_is_streamed_in_bounded_memory(tmp_path, kind, size):
    target = one_line_file(tmp_path / "line.txt", size)
    result = run_measured(kind, target)
    assert result["outcome"] == "done"
    # Streamed: memory follows the chunk size, not the line (1 GB of text is 1-4 GB as a str).
    assert result["peak"] - result["before"] < 768 << 20
    if kind == "encode":
        assert os.path.getsize(str(target) + ".bin") > size // 8


def test_a_line_longer_than_a_chunk_is_cut_where_no_piece_spans_and_counts_as_a_whole(tmp_path):
    target = one_line_file(tmp_path / "line.txt", 20 << 20)  # a few 8 MB chunks
    line = target.read_text(encoding="utf-8")
    for pattern in ("cl100k", r"\w+|\s+|[^\w\s]+"):  # a named pattern is cut, a custom one read whole
        streamed = numtok.count_words(target, pattern=pattern, show_progress=False)
        whole = numtok.count_words([line], pattern=pattern, show_progress=False)
        assert streamed == whole and list(streamed.items()) == list(whole.items())


# -- no code, no paths --------------------------------------------------------------------------

WATCH = textwrap.dedent("""
    import json, os, sys
    import numtok
    from numtok.io.tiktoken_file import sidecar_arguments
    kind, target = sys.argv[1], sys.argv[2]
    loaders = {
        "json": lambda: numtok.Tokenizer.from_file(target),
        "tiktoken": lambda: numtok.Tokenizer.from_tiktoken(target, **sidecar_arguments(target)),
        "gpt2": lambda: numtok.Tokenizer.from_gpt2(os.path.join(target, "vocab.json"), os.path.join(target, "merges.txt")),
        "wordpiece": lambda: numtok.WordPiece.from_file(target),
        "vocab": lambda: numtok.WordPiece.from_vocab(target),
    }
    try:  # kernels and tables loaded first, so only the file's own reading is watched
        loaders[kind]()
    except ValueError:
        pass
    events = []
    watched = {"open", "exec", "compile", "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "pickle.find_class",
               "ctypes.dlopen", "import", "shutil.copyfile", "os.symlink", "socket.connect", "urllib.Request"}
    sys.addaudithook(lambda event, args: events.append([event, str(args[0]) if args else ""]) if event in watched else None)
    try:
        loaders[kind]()
        outcome = "loaded"
    except ValueError as exc:
        outcome = "ValueError"
    print(json.dumps({"outcome": outcome, "events": events}))
""")


def planted(files: Path, tmp_path: Path, kind: str) -> Path:
    """A file of ``kind`` with paths and code planted where a careless loader might use them."""
    bait = str(tmp_path / "bait")
    code = "__import__('os').system('touch " + bait + "')"
    if kind in ("json", "wordpiece"):
        def edit(d):
            d["added_tokens"].append({"id": 5, "content": bait, "special": True, "single_word": False,
                                      "lstrip": False, "rstrip": False, "normalized": False})
            d["model"]["vocab_file"] = bait
            d["model"]["unk_token"] = code
            d["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": code}, "behavior": "Isolated", "invert": False}

        return edited_json(files / ("tokenizer.json" if kind == "json" else "wordpiece.json"), tmp_path / "t.json", edit)
    if kind == "tiktoken":
        target = tmp_path / "r.tiktoken"
        target.write_bytes((files / "ranks.tiktoken").read_bytes())
        (tmp_path / "r.tiktoken.json").write_text(json.dumps({"name": bait, "pat_str": code, "special_tokens": {bait: 9999}}))
        return target
    if kind == "gpt2":
        vocab = json.loads((files / "vocab.json").read_text())
        (tmp_path / "vocab.json").write_text(json.dumps({**vocab, bait: len(vocab), code: len(vocab) + 1}))
        (tmp_path / "merges.txt").write_text((files / "merges.txt").read_text() + f"{bait} x\n")
        return tmp_path
    target = tmp_path / "vocab.txt"
    target.write_text("[PAD]\n[UNK]\n" + bait + "\n" + code + "\n", encoding="utf-8")
    return target


@pytest.mark.parametrize("kind", ["json", "tiktoken", "gpt2", "wordpiece", "vocab"])
def test_loading_runs_no_code_and_opens_only_the_file(files, tmp_path, kind):
    target = planted(files, tmp_path, kind)
    r = subprocess.run([sys.executable, "-c", WATCH, kind, str(target)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(SRC)})
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.splitlines()[-1])
    allowed = {str(target), str(target) + ".json", str(target / "vocab.json"), str(target / "merges.txt")}
    for event, arg in report["events"]:
        assert event in ("open", "import"), (event, arg)
        if event == "open":
            assert arg in allowed or arg.startswith((sys.prefix, sys.base_prefix, str(SRC))) or "/numtok" in arg, arg
    assert not (tmp_path / "bait").exists()


# -- pickles ------------------------------------------------------------------------------------


def test_unpickling_takes_only_numtoks_state(files):
    tok = numtok.Tokenizer.from_file(files / "tokenizer.json")
    again = pickle.loads(pickle.dumps(tok))
    assert again.vocab == tok.vocab and again.merges == tok.merges
    state = tok.__reduce__()[1][0]
    bad = [
        ("not a dict", [1, 2]),
        ("an extra key", {**state, "extra": 1}),
        ("a missing key", {k: v for k, v in state.items() if k != "pattern"}),
        ("pattern not a str", {**state, "pattern": 5}),
        ("offsets reversed", {**state, "tok_off": state["tok_off"][::-1].copy()}),
        ("offsets past the bytes", {**state, "tok_off": state["tok_off"] * 1000}),
        ("ids past the offsets", {**state, "mergeable_ids": state["mergeable_ids"] + 10**6}),
        ("object array", {**state, "tok_bytes": state["tok_bytes"].astype(object)}),
        ("merges of str", {**state, "merges": [("a", "b")]}),
        ("special id a bool", {**state, "special_tokens": {"<x>": True}}),
    ]
    for _what, payload in bad:
        with pytest.raises(pickle.UnpicklingError, match="not a numtok Tokenizer state"):
            _unpickle(payload)
        with pytest.raises(pickle.UnpicklingError):  # the same, through pickle's own reduce path
            pickle.loads(pickle.dumps(_Forged(payload)))


class _Forged:
    """Pickles as a Tokenizer would, around a state it chooses."""

    def __init__(self, state):
        self.state = state

    def __reduce__(self):
        return (_unpickle, (self.state,))
