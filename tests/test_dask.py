"""numtok.dask on real Dask clusters: a LocalCluster of two worker processes, and a
``dask scheduler`` with two ``dask worker`` processes started from the command line."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

import numtok
from numtok import cli

distributed = pytest.importorskip("distributed")
import numtok.dask  # noqa: E402  (after the skip: it needs dask)

DATA = Path(__file__).parent / "data"
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this file


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, sample_text) -> dict:
    d = tmp_path_factory.mktemp("dask-corpus")
    raw = sample_text.encode("utf-8")
    half = raw.index(b"\n", len(raw) // 2) + 1
    (d / "a.txt").write_bytes(raw[:half].replace(b"the ", b"the <|endoftext|> ", 50))
    (d / "b.txt").write_bytes(raw[half:])
    paragraphs = [p for p in sample_text.split("\n\n") if p.strip()]
    with gzip.open(d / "c.jsonl.gz", "wt", encoding="utf-8") as f:
        for p in paragraphs[:200]:
            f.write(json.dumps({"body": p}, ensure_ascii=False) + "\n")
    with open(d / "d.jsonl", "w", encoding="utf-8") as f:
        for p in paragraphs[200:]:
            f.write(json.dumps({"body": p}, ensure_ascii=False) + "\n")
    return {"dir": d, "files": [str(d / n) for n in ("a.txt", "b.txt", "c.jsonl.gz", "d.jsonl")]}


def same_tokenizer(a, b) -> None:
    assert a.merges == b.merges
    assert a.vocab == b.vocab
    assert a.special_tokens == b.special_tokens
    assert a.pattern == b.pattern


# -- training ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(pattern="cl100k", special_tokens=["<|endoftext|>"], min_frequency=3),
        dict(pattern="o200k", special_tokens=["<|endoftext|>", "<pad>"], tie_break="first-seen", max_token_length=8),
    ],
)
def test_train_on_files_equals_train_bpe(client, corpus, options):
    # 20 KB ranges: the .txt and .jsonl files are each read by several tasks.
    tok = numtok.dask.train_bpe(corpus["files"], 1200, field="body", partition_bytes=20_000, **options)
    same_tokenizer(tok, numtok.train_bpe(corpus["files"], 1200, field="body", **options))


def test_weighted_sources_equal_repeated_sources(client, corpus):
    """Integer weights equal the sources repeated; a fractional weight scales each source's sum
    (not each part's), as on one machine."""
    a, b, c, _ = corpus["files"]
    options = dict(field="body", special_tokens=["<|endoftext|>"], tie_break="first-seen")
    tok = numtok.dask.train_bpe({a: 3, c: 1, b: 2.0}, 1100, partition_bytes=20_000, **options)
    same_tokenizer(tok, numtok.train_bpe([a, a, a, c, b, b], 1100, **options))
    tok = numtok.dask.train_bpe([(a, 0.5), (b, 1.5)], 1000, partition_bytes=20_000, **options)
    same_tokenizer(tok, numtok.train_bpe([(a, 0.5), (b, 1.5)], 1000, **options))


def test_glob_and_explicit_client(client, corpus):
    tok = numtok.dask.train_bpe(str(corpus["dir"] / "*.txt"), 900, client=client, pattern="r50k")
    same_tokenizer(tok, numtok.train_bpe(sorted(f for f in corpus["files"] if f.endswith(".txt")), 900, pattern="r50k"))


def test_train_on_a_bag(client, sample_lines):
    bag = pytest.importorskip("dask.bag").from_sequence(sample_lines, npartitions=5)
    options = dict(special_tokens=["<|endoftext|>"], unk_token="<unk>", tie_break="first-seen", min_frequency=2)
    same_tokenizer(numtok.dask.train_bpe(bag, 1000, **options), numtok.train_bpe(sample_lines, 1000, **options))


def test_train_on_a_dataframe_column_and_parquet(client, tmp_path, sample_lines):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    frame = dd.from_pandas(pd.DataFrame({"id": range(len(sample_lines)), "text": sample_lines}), npartitions=4)
    expected = numtok.train_bpe(sample_lines, 800, pattern="cl100k")
    same_tokenizer(numtok.dask.train_bpe(frame["text"], 800, pattern="cl100k"), expected)
    same_tokenizer(numtok.dask.train_bpe(frame, 800, pattern="cl100k"), expected)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"doc": sample_lines}), path, row_group_size=1000)
    same_tokenizer(numtok.dask.train_bpe(str(path), 800, pattern="cl100k", field="doc"), expected)


def test_missing_file_names_host_and_path(client, corpus):
    missing = str(corpus["dir"] / "nowhere.txt")
    with pytest.raises(FileNotFoundError, match=f"{missing}: no such file on {socket.gethostname()}"):
        numtok.dask.train_bpe([corpus["files"][0], missing], 600)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        numtok.dask.train_bpe(str(corpus["dir"] / "*.nothing"), 600)


def test_bad_options_fail_before_any_task(client, corpus):
    with pytest.raises(ValueError, match="too small"):
        numtok.dask.train_bpe(corpus["files"], 100)
    with pytest.raises(ValueError, match="unknown pattern"):
        numtok.dask.train_bpe(corpus["files"], 600, pattern="gtp2")
    with pytest.raises(TypeError, match="dask.bag"):
        numtok.dask.train_bpe(42, 600)
    with pytest.raises(ValueError, match="partition_bytes"):
        numtok.dask.train_bpe(corpus["files"], 600, partition_bytes=0)


def test_no_client():
    code = "import numtok.dask\ntry:\n    numtok.dask.train_bpe(['x.txt'], 600)\nexcept ValueError as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert out.startswith("no Dask client: create one first")


# -- encoding ------------------------------------------------------------------------------------


_CLI_OUTPUTS: dict = {}


def cli_encode(tokenizer: str, path: str, *flags: str) -> bytes:
    """What ``numtok encode -t tokenizer path -o X.bin *flags`` writes (run in this process)."""
    key = (tokenizer, path, flags)
    if key not in _CLI_OUTPUTS:
        out = Path(path).with_name(f"cli-reference-{len(_CLI_OUTPUTS)}.bin")
        assert cli.main(["encode", "-q", "-t", tokenizer, path, "-o", str(out), *flags]) == 0
        _CLI_OUTPUTS[key] = out.read_bytes()
        out.unlink()
    return _CLI_OUTPUTS[key]


@pytest.mark.parametrize("by_object", [False, True])
def test_encode_files_equal_the_cli(client, corpus, tmp_path, by_object):
    flags = dict(txt_docs="line", eot="<|endoftext|>", field="body")
    tokenizer = numtok.load("cl100k_base") if by_object else "cl100k_base"
    outs = numtok.dask.encode_files(corpus["files"], tokenizer, tmp_path / "out", **flags)
    assert outs == [str(tmp_path / "out" / (os.path.basename(f) + ".bin")) for f in corpus["files"]]
    for f, out in zip(corpus["files"], outs):
        assert Path(out).read_bytes() == cli_encode("cl100k_base", f, "--txt-docs", "line", "--field", "body")
    assert sorted(os.listdir(tmp_path / "out")) == sorted(os.path.basename(o) + s for o in outs for s in ("", ".numtok.json"))


def test_encode_files_skips_outputs_its_record_shows_done_and_redoes_others(client, corpus, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    files = corpus["files"][:2]
    a, b = out_dir / "a.txt.bin", out_dir / "b.txt.bin"
    a.write_bytes(b"written by something else")  # no record: redone
    numtok.dask.encode_files(files, "gpt2", out_dir, dtype="uint32", no_eot=True)
    assert a.read_bytes() == cli_encode("gpt2", files[0], "--dtype", "uint32", "--no-eot")
    assert b.read_bytes() == cli_encode("gpt2", files[1], "--dtype", "uint32", "--no-eot")
    record = json.loads((out_dir / "a.txt.bin.numtok.json").read_text())
    assert record["options"] == {"dtype": "uint32", "eot": False} and record["input"]["bytes"] == os.path.getsize(files[0])
    stamps = {p: p.stat().st_mtime_ns for p in (a, b)}
    numtok.dask.encode_files(files, "gpt2", out_dir, dtype="uint32", no_eot=True, num_threads=1)
    assert {p: p.stat().st_mtime_ns for p in (a, b)} == stamps  # skipped
    numtok.dask.encode_files(files, "cl100k_base", out_dir, dtype="uint32", no_eot=True)  # another tokenizer: redone
    assert a.read_bytes() == cli_encode("cl100k_base", files[0], "--dtype", "uint32", "--no-eot")
    numtok.dask.encode_files(files, "cl100k_base", out_dir, dtype="uint32")  # other options: redone
    assert b.read_bytes() == cli_encode("cl100k_base", files[1], "--dtype", "uint32")
    b.write_bytes(b.read_bytes()[:-4])  # a damaged output: redone
    numtok.dask.encode_files(files, "cl100k_base", out_dir, dtype="uint32")
    assert b.read_bytes() == cli_encode("cl100k_base", files[1], "--dtype", "uint32")


def test_encode_files_bad_input(client, corpus, tmp_path):
    with pytest.raises(ValueError, match="both be written"):
        numtok.dask.encode_files([corpus["files"][0], corpus["files"][0]], "gpt2", tmp_path)
    with pytest.raises(ValueError, match="bad encode option.*dtype"):
        numtok.dask.encode_files(corpus["files"][:1], "gpt2", tmp_path, dtype="int8")
    with pytest.raises(TypeError, match="unknown encode option"):
        numtok.dask.encode_files(corpus["files"][:1], "gpt2", tmp_path, threads=2)
    missing = str(corpus["dir"] / "gone.txt")
    with pytest.raises(FileNotFoundError, match=f"{missing}: no such file on {socket.gethostname()}"):
        numtok.dask.encode_files([missing], "gpt2", tmp_path / "o")
    assert os.listdir(tmp_path / "o") == []


def _big_inputs(directory: Path, sample_text: str, n: int, copies: int) -> list[str]:
    paths = []
    for i in range(n):
        p = directory / f"big{i}.txt"
        p.write_text((sample_text + f"\n{i}\n") * copies, encoding="utf-8")
        paths.append(str(p))
    return paths


def test_worker_killed_mid_task_is_retried_and_output_identical(client, tmp_path, sample_text):
    inputs = _big_inputs(tmp_path, sample_text, 2, 80)  # ~20 MB each: a task runs for a while
    out_dir = tmp_path / "out"
    result: list = []
    runner = threading.Thread(target=lambda: result.append(numtok.dask.encode_files(inputs, "o200k_base", out_dir)))
    runner.start()
    pids = client.run(os.getpid)
    killed = None
    deadline = time.time() + 300
    busy_since = None
    while killed is None and time.time() < deadline and runner.is_alive():
        # The output is written to an unnamed file (O_TMPFILE) as it is encoded, so "mid-write"
        # is a worker busy on a task for a while (a ~20 MB input takes a second or more).
        busy = [w for w, keys in client.processing().items() if keys]
        if busy and busy_since is None:
            busy_since = time.time()
        if busy and time.time() - busy_since > 0.2:
            os.kill(pids[busy[0]], signal.SIGKILL)  # a worker process, mid-write
            killed = busy[0]
        time.sleep(0.01)
    runner.join(600)
    assert killed is not None, "no task was caught mid-write"
    assert result, "encode_files did not finish"
    for src, out in zip(inputs, result[0]):
        assert Path(out).read_bytes() == cli_encode("o200k_base", src)
    assert sorted(os.listdir(out_dir)) == sorted(os.path.basename(o) + s for o in result[0] for s in ("", ".numtok.json"))  # no temporary


class _DieWhileEncoding(distributed.WorkerPlugin):
    """Every worker (restarted ones too) dies in the middle of writing an output."""

    def setup(self, worker):
        import numtok.io.encode_files

        def die(inputs, tok, output, **options):
            from numtok.io.atomic import atomic_write

            with atomic_write(output) as f:
                f.write(b"partial")
                f.flush()
                os._exit(1)

        numtok.io.encode_files.encode_files = die


@pytest.mark.slow  # a cluster of its own and two worker restarts
def test_worker_lost_for_good_leaves_nothing(tmp_path, sample_text):
    import dask

    inputs = _big_inputs(tmp_path, sample_text, 1, 1)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
            with distributed.Client(cluster) as c:
                c.register_plugin(_DieWhileEncoding())
                with pytest.raises(distributed.KilledWorker):
                    numtok.dask.encode_files(inputs, "gpt2", tmp_path / "out", client=c)
    assert os.listdir(tmp_path / "out") == []


# -- `dask scheduler` + `dask worker` from the command line -------------------------------------


@pytest.fixture
def command_line_cluster(tmp_path):
    # The one of this Python's environment, not another on PATH.
    beside = os.path.join(os.path.dirname(sys.executable), "dask")
    dask_cli = beside if os.path.exists(beside) else shutil.which("dask")
    if dask_cli is None:
        pytest.skip("the dask command line is not installed")
    scheduler_file = tmp_path / "scheduler.json"
    common = ["--scheduler-file", str(scheduler_file)]
    procs = [subprocess.Popen([dask_cli, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", *common],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen([dask_cli, "worker", "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard", *common],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 120
        while not scheduler_file.exists() and time.time() < deadline:
            time.sleep(0.1)
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=60) as c:
            c.wait_for_workers(2, timeout=120)
            assert all(addr.startswith("tcp://127.0.0.1:") for addr in c.scheduler_info()["workers"])
            yield c
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_command_line_scheduler_and_workers(command_line_cluster, corpus, tmp_path):
    options = dict(pattern="cl100k", special_tokens=["<|endoftext|>"], field="body")
    tok = numtok.dask.train_bpe(corpus["files"], 1000, partition_bytes=50_000, **options)  # the default client
    same_tokenizer(tok, numtok.train_bpe(corpus["files"], 1000, **options))
    saved = tmp_path / "tok.json"
    tok.save(str(saved))
    outs = numtok.dask.encode_files(corpus["files"][:2], str(saved), tmp_path / "out")
    for f, out in zip(corpus["files"][:2], outs):
        assert Path(out).read_bytes() == cli_encode(str(saved), f)
    assert np.frombuffer(Path(outs[0]).read_bytes(), dtype=np.uint16).max() < 1000


@pytest.mark.slow  # a LocalCluster of its own
def test_readme_cluster_example_runs(tmp_path):
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Training on a cluster"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", section.index("```python\n") + 10)]
    (tmp_path / "example.py").write_text(code)
    r = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    tok = numtok.train_bpe(os.path.join(os.path.dirname(numtok.__file__), "data", "pride_and_prejudice.txt"), 2000,
                           special_tokens=["<|endoftext|>"])
    assert (tmp_path / "ids" / "pride_and_prejudice.txt.bin").read_bytes() == np.array(
        tok.encode_ordinary(open(os.path.join(os.path.dirname(numtok.__file__), "data", "pride_and_prejudice.txt"),
                                 encoding="utf-8", newline="").read()), dtype=np.uint16).tobytes()
