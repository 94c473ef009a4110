"""Limits a pipeline meets: sizes taken from the corpus, never from a request; one rule for
``num_threads``; counts past int64; memory it cannot get; batches that run for hours."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hf_reference import hf_train, numtok_as_hf

import numtok
from numtok.io.encode_files import encode_files

DATA = Path(__file__).parent / "data"
SRC = Path(numtok.__file__).resolve().parents[1]

# -- vocab_size sizes nothing -------------------------------------------------------------------


@pytest.mark.parametrize("vocab_size", [10**6, 10**12, 2**62])
def test_huge_vocab_size_trains_until_no_pair_is_left_like_hf(vocab_size):
    texts = ["hello world", "hello there, wonderful world"]
    tok = numtok.train_bpe(texts, vocab_size)
    # HF stops when no pair is left (asked for 10**6; it allocates by vocab_size and aborts the
    # process at 10**12); numtok must stop there too, with the same merges and ids.
    assert numtok_as_hf(tok) == hf_train(texts, 10**6)
    assert tok.n_vocab < 400


def test_vocab_size_past_int64_is_still_a_request_not_a_size(sample_lines):
    tok = numtok.train_bpe(sample_lines[:50], 2**70)
    assert tok.merges == numtok.train_bpe(sample_lines[:50], 10**9).merges
    counts = {"abcabc": 3, "bca": 2}
    assert numtok.train_bpe_from_counts(counts, 2**70).merges == numtok.train_bpe_from_counts(counts, 300).merges


# -- num_threads: one rule everywhere -----------------------------------------------------------


def _every_num_threads():
    enc = numtok.load("r50k_base")
    data = np.frombuffer(b"hello world", dtype=np.uint8)
    docs = np.array([[0, len(data)]])
    return {
        "train_bpe": lambda n: numtok.train_bpe(["hello world"], 300, num_threads=n),
        "train_bpe_from_counts": lambda n: numtok.train_bpe_from_counts({"ab": 2}, 300, num_threads=n),
        "encode_batch": lambda n: enc.encode_batch(["hello world"], num_threads=n),
        "encode_ordinary_batch": lambda n: enc.encode_ordinary_batch(["hello world"], num_threads=n),
        "split_bytes": lambda n: numtok.split_bytes(data, docs, "gpt2", num_threads=n),
        "split_bytes(regex)": lambda n: numtok.split_bytes(data, docs, r"\w+|\s+", num_threads=n),
        "count_words": lambda n: numtok.count_words(["hello world"], num_threads=n).counts,
        "encode_files": lambda n: _encode_file_with(enc, n),
    }


def _encode_file_with(enc, num_threads) -> np.ndarray:
    with tempfile.TemporaryDirectory() as d:
        Path(d, "a.txt").write_text("hello world\n")
        encode_files([os.path.join(d, "a.txt")], enc, os.path.join(d, "ids.npy"), num_threads=num_threads)
        return np.load(os.path.join(d, "ids.npy"))


def test_dask_num_threads_follows_the_rule_before_any_client_is_needed():
    pytest.importorskip("distributed")
    import numtok.dask

    with pytest.raises(ValueError, match=r"num_threads must be an int >= 1 or None, got 0"):
        numtok.dask.train_bpe("corpus.txt", 300, num_threads=0)


@pytest.mark.parametrize("api", list(_every_num_threads()))
def test_every_num_threads_follows_one_rule(api):
    call = _every_num_threads()[api]
    for bad in (0, -1, np.int64(0)):
        with pytest.raises(ValueError, match=r"num_threads must be an int >= 1 or None, got -?\d"):
            call(bad)
    for bad in (1.5, "2", True):
        with pytest.raises(TypeError, match=r"num_threads must be an int >= 1 or None, not (float|str|bool)"):
            call(bad)
    first = call(None)
    for good in (1, 2, np.int32(3)):
        again = call(good)
        if hasattr(first, "merges"):
            assert again.merges == first.merges
        else:
            assert np.array_equal(np.asarray(getattr(again, "ids", again)), np.asarray(getattr(first, "ids", first)))


# -- counts past int64 --------------------------------------------------------------------------


def test_count_past_int64_names_the_word_and_the_limit():
    with pytest.raises(ValueError, match=r"count of b'ab' is 1180591620717411303424, past the int64 limit .*2\*\*63 - 1"):
        numtok.train_bpe_from_counts({"ab": 2**70}, 300)
    with pytest.raises(ValueError, match=r"count of b'x' is 9223372036854775808"):
        numtok.train_bpe_from_counts({"ab": 1, "x": 2**63}, 300)
    # Each fits, but a pair's count would not: b"ab" occurs 2**62 * 3 times.
    with pytest.raises(ValueError, match="int64 limit of pair counts"):
        numtok.train_bpe_from_counts({"ab": 2**62, "abab": 2**62}, 300)
    top = 2**63 // 2 - 1  # one pair (two symbols) per word: the count itself is the total
    assert numtok.train_bpe_from_counts({"ab": top}, 300).merges == [(b"a", b"b")]


# -- memory it cannot get -----------------------------------------------------------------------

# Kernels are compiled (or loaded from the cache) and the input is built first; then the address
# space is capped a little above what the process already maps, and the job runs. A kernel first
# compiled under the cap would hang there instead of failing: Numba's first compile in a process
# imports scipy.linalg, whose OpenBLAS start-up retries a failed 32 MiB malloc for ever.
UNDER_LIMIT = textwrap.dedent("""
    import json, resource, sys
    import numtok
    from numtok import cli
    numtok.train_bpe(["warm up the kernels"] * 3, 300)
    enc = numtok.load("r50k_base")
    enc.encode("warm up"), enc.encode_batch(["warm", "up"])
    # 5.2 MB in two calls: the second grows the piece cache (a set per 256 bytes seen), as the
    # encode jobs do at once.
    for _ in range(2):
        enc.encode_ordinary_batch(["hello world, " * 1000] * 200, num_threads=1)
    job, headroom, arg = sys.argv[1], int(sys.argv[2]) << 20, sys.argv[3]
    if job in ("train", "from_counts"):
        words = [f"w{i:x}q{(i * 7919) % 100003:x}" for i in range(int(arg))]
        counts = dict.fromkeys(words, 3)
    if job == "train":
        corpus = " ".join(words)
    if job == "encode_batch":
        texts = ["hello world, " * 1000] * int(arg)
    if job == "encode":
        text = "hello world, " * int(arg)
    if job.startswith("train "):  # the command's own kernels (file input) loaded too
        import os, tempfile
        warm = tempfile.mkdtemp()
        # 40,000 words: the word table grows once, so its rehash kernel is loaded too.
        open(os.path.join(warm, "w.txt"), "w").write("\\n".join(f"w{i}" for i in range(40_000)))
        cli.main(["train", os.path.join(warm, "w.txt"), "--vocab-size", "300", "-q", "-o", os.path.join(warm, "t.json")])

    def mapped():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:"))

    resource.setrlimit(resource.RLIMIT_AS, (mapped() + headroom, resource.RLIM_INFINITY))
    try:
        if job == "train":
            numtok.train_bpe([corpus], 100_000)
        elif job == "from_counts":
            numtok.train_bpe_from_counts(counts, 100_000)
        elif job == "encode_batch":
            enc.encode_ordinary_batch(texts, num_threads=1)
        elif job == "encode":
            enc.encode(text, allowed_special="all")
        else:
            sys.exit(cli.main(job.split() + [arg]))
    except MemoryError as exc:
        print(json.dumps(str(exc)))
        sys.exit(3)
    print(json.dumps(None))
""")


def run_under_limit(job: str, headroom_mb: int, arg) -> subprocess.CompletedProcess:
    # One malloc arena: glibc reserves 64 MiB of address space for each thread arena, so a job
    # whose threads took over arenas the warm-up's threads left could fit under the limit (the
    # CLI train once did in CI).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]), "MALLOC_ARENA_MAX": "1"}
    return subprocess.run([sys.executable, "-c", UNDER_LIMIT, job, str(headroom_mb), str(arg)],
                          capture_output=True, text=True, env=env, timeout=600)


NEEDS = r" \(needs roughly \d+\.\d [KMGT]iB\)"


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc/self/status")
@pytest.mark.parametrize("job, arg, message", [
    ("train", 3_000_000, r"out of memory while (counting the words of the corpus \([\d,]+ bytes read, [\d,]+ unique words so far\)"
                         r"|learning merges from [\d,]+ unique words \([\d,]+ bytes\))" + NEEDS),
    ("from_counts", 3_000_000, r"out of memory while (reading 3,000,000 counted words"
                               r"|learning merges from 3,000,000 unique words \([\d,]+ bytes\))" + NEEDS),
    ("encode_batch", 20_000, r"out of memory while encoding a batch of 20,000 texts \(260,000,000 characters\)" + NEEDS),
    ("encode", 20_000_000, r"out of memory while encoding a text of 260,000,000 characters" + NEEDS),
])  # fmt: skip
def test_out_of_memory_says_what_and_how_much(job, arg, message):
    r = run_under_limit(job, 64, arg)
    assert r.returncode == 3, r.stdout + r.stderr
    assert re.fullmatch(message, json.loads(r.stdout)), r.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc/self/status")
def test_out_of_memory_in_the_cli_is_one_line_and_leaves_no_output(tmp_path):
    with open(tmp_path / "words.txt", "w") as f:
        for i in range(3_000_000):
            f.write(f"w{i:x}q{(i * 7919) % 100003:x}\n")
    out = tmp_path / "out"
    out.mkdir()
    r = run_under_limit(f"train {tmp_path / 'words.txt'} --vocab-size 100000 -q -o", 64, out / "tok.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.fullmatch(r"numtok: error: train: out of memory while .*" + NEEDS + "\n", r.stderr), r.stderr
    assert os.listdir(out) == []


# -- batches that run for hours -----------------------------------------------------------------

LONG_RUN = textwrap.dedent("""
    import json, random, sys
    import numtok
    lines = [l for l in open(sys.argv[1], encoding="utf-8").read().splitlines() if l.strip()]
    enc = numtok.load("o200k_base")
    rng = random.Random(0)

    def rss():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmRSS:"))

    seen = []
    for call in range(100):
        # New words in every call, so the piece caches keep meeting pieces they do not hold.
        docs = [f"{rng.choice(lines)} q{rng.getrandbits(40):x}z {call}" for _ in range(2000)]
        batch = enc.encode_ordinary_batch(docs, num_threads=2)
        assert batch.offsets[-1] == len(batch.ids)
        del docs, batch
        seen.append(rss())
    print(json.dumps(seen))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="reads VmRSS from /proc/self/status")
def test_rss_stops_growing_over_many_batches():
    """200,000 documents in 100 calls on 2 threads: memory after the first half stays flat
    (piece caches are bounded, nothing accumulates per call)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", LONG_RUN, str(DATA / "sample_mixed.txt")], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    rss = json.loads(r.stdout)
    settled = rss[49]
    assert max(rss[50:]) <= settled + (24 << 20), [x >> 20 for x in rss]  # MiB, to read the trend


# -- a first compile under a memory cap ---------------------------------------------------------

COLD = textwrap.dedent("""
    import json, resource, sys, time
    limit = int(sys.argv[1]) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    started = time.time()
    try:
        import numtok
        ids = numtok.load("gpt2").encode("hello world").tolist()
        outcome = ids
    except MemoryError as exc:
        outcome = str(exc)
    print(json.dumps([outcome, "scipy.linalg" in sys.modules, time.time() - started]))
""")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS")
@pytest.mark.parametrize("limit_mb", [2048, pytest.param(500, marks=pytest.mark.slow)])
def test_cold_compile_under_an_address_space_limit_finishes_or_fails_clearly(tmp_path, limit_mb):
    """No compiled kernel, no built table: the first compile under `ulimit -v` never loads SciPy's
    OpenBLAS (which could retry a failed allocation for ever), and ends within 120 s."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "NUMTOK_JIT_CACHE": str(tmp_path / "jit"), "NUMTOK_CACHE_DIR": str(tmp_path / "tables")}
    r = subprocess.run([sys.executable, "-c", COLD, str(limit_mb)], capture_output=True, text=True, env=env, timeout=120)
    if limit_mb < 2048 and r.returncode == -signal.SIGABRT:  # LLVM itself gives up: its message, no hang
        assert "allocation failed" in r.stderr, r.stderr[-2000:]
        return
    assert r.returncode == 0, r.stderr[-2000:]
    outcome, scipy_linalg, seconds = json.loads(r.stdout)
    print(f"cold compile under {limit_mb} MiB: {outcome} in {seconds:.1f} s")
    assert not scipy_linalg
    if limit_mb >= 2048:
        assert outcome == [31373, 995]
    else:
        assert outcome == [31373, 995] or re.fullmatch(r"out of memory while compiling numtok's \w+ under an address-space limit of "
                                                       r"500 MiB \(ulimit -v\): raise the limit, .*", outcome), outcome
