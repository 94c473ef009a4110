"""Every file numtok writes is atomic: killed at any moment, a run leaves the complete old file or
the complete new one under the final name and nothing beside it; a full disk keeps the old file.

The kills are real SIGKILLs of ``numtok encode``, ``numtok train`` and a process looping over
``Tokenizer.save``; the full disk is a real 128 KiB tmpfs where the machine allows mounting one
(root), else a write that raises ENOSPC.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import write_slow_job

import numtok
from numtok.io import atomic
from numtok.io.atomic import atomic_write, is_temporary_name, remove_stale_temporaries
from numtok.io.pretrained import PRETRAINED_FILES
from numtok.io.tiktoken_file import read_tiktoken_sidecar

DATA = Path(__file__).parent / "data"
SRC = Path(numtok.__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to see a child's open files")


def numtok_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "numtok", *map(str, args)]


def child_env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def files_open_in(pid: int, directory: Path) -> list[str]:
    """Files (named or unnamed) that process ``pid`` holds open in ``directory``."""
    found = []
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith(str(directory) + os.sep):
                    found.append(target)
    return found


def wait_until_writing(proc: subprocess.Popen, directory: Path, timeout: float = 180) -> None:
    deadline = time.time() + timeout
    while not files_open_in(proc.pid, directory):
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "the child ended"
        assert time.time() < deadline, "the child never started writing"
        time.sleep(0.01)


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)


def leftovers(directory: Path, final: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != final)


# -- the jobs -----------------------------------------------------------------------------------

# Writers run by a loop that saves two tokenizers in turn into the target, for ever.
SAVE_LOOP = """
import sys, numtok
kind, target, ref = sys.argv[1], sys.argv[2], sys.argv[3]
load = numtok.WordPiece.from_file if kind == "wordpiece" else numtok.Tokenizer.from_file
a, b = load(ref + "/a.json"), load(ref + "/b.json")
save = {"save": lambda t: t.save(target), "wordpiece": lambda t: t.save(target), "tiktoken": lambda t: t.save_tiktoken(target),
        "gpt2": lambda t: t.save_gpt2(target), "pretrained": lambda t: t.save_pretrained(target)}[kind]
print("ready", flush=True)
while True:
    save(a); save(b)
"""
SAVE_JOBS = ("save", "wordpiece", "tiktoken", "gpt2", "pretrained")
DIRECTORY_JOBS = ("gpt2", "pretrained", "shards")
JOBS = ("encode", "shards", "train", *SAVE_JOBS)
# Seconds a run may go before its kill: about its length, so kills land everywhere in it.
RUN_SECONDS = {"encode": 8.0, "shards": 8.0, "train": 6.0, "save": 1.5, "wordpiece": 1.0, "tiktoken": 1.5, "gpt2": 1.5,
               "pretrained": 1.5}
KEPT = b"a file of the user's, kept\n"
OLD = b"the previous output, complete\n"


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Inputs, and the complete outputs of each job (what a run that is not killed writes)."""
    d = tmp_path_factory.mktemp("jobs")
    lines = write_slow_job(d, 12)
    (d / "corpus.txt").write_text("".join(lines), encoding="utf-8")
    cmd = {
        "encode": numtok_cmd("encode", "-t", d / "slow.json", d / "big.jsonl", "--chunk-mb", "1", "--threads", "1", "-q", "-o"),
        "shards": numtok_cmd("encode", "-t", d / "slow.json", d / "big.jsonl", "--chunk-mb", "1", "--threads", "1", "-q",
                             "--shard-tokens", "300000", "-o"),
        "train": numtok_cmd("train", d / "corpus.txt", "--vocab-size", "3000", "-q", "-o"),
    }  # fmt: skip
    complete: dict[str, list[dict[str, bytes]]] = {}
    for name in ("encode", "shards", "train"):
        out = d / f"complete-{name}"
        out.mkdir()
        target = out / {"encode": "ids.bin", "shards": "shards", "train": "tok.json"}[name]
        r = subprocess.run([*cmd[name], target], capture_output=True, env=child_env(), timeout=600)
        assert r.returncode == 0, r.stderr.decode()
        complete[name] = [snapshot(name, target)]
    ref = d / "save-ref"
    ref.mkdir()
    numtok.train_bpe(lines, 2000).save(ref / "a.json")
    numtok.train_bpe(lines, 4000, special_tokens=["<|endoftext|>"]).save(ref / "b.json")
    (ref / "wordpiece").mkdir()
    numtok.train_wordpiece(lines, 2000).save(ref / "wordpiece" / "a.json")
    numtok.train_wordpiece(lines, 3000).save(ref / "wordpiece" / "b.json")
    for kind in SAVE_JOBS:
        sets = []
        for which in ("a", "b"):
            out = d / f"complete-{kind}-{which}"
            out.mkdir()
            target = out / target_name(kind)
            if kind in DIRECTORY_JOBS:
                target.mkdir()
                (target / "kept.txt").write_bytes(KEPT)
            source = ref / "wordpiece" if kind == "wordpiece" else ref
            loader = numtok.WordPiece.from_file if kind == "wordpiece" else numtok.Tokenizer.from_file
            tok = loader(source / f"{which}.json")
            {"save": tok.save, "wordpiece": tok.save, "tiktoken": getattr(tok, "save_tiktoken", None), "gpt2": getattr(tok, "save_gpt2", None),
             "pretrained": getattr(tok, "save_pretrained", None)}[kind](target)  # fmt: skip
            sets.append(snapshot(kind, target))
        complete[kind] = sets
    return {"dir": d, "cmd": cmd, "ref": ref, "complete": complete}


def target_name(job: str) -> str:
    return {"encode": "ids.bin", "train": "tok.json", "save": "tok.json", "wordpiece": "wordpiece.json", "tiktoken": "ranks.tiktoken"}.get(job, "out")


def snapshot(job: str, target: Path) -> dict[str, bytes]:
    """What ``job`` wrote at ``target``: its file (and a rank file's sidecar), or its directory."""
    if job in DIRECTORY_JOBS:
        return {p.name: p.read_bytes() for p in sorted(target.iterdir())} if target.is_dir() else {}
    files = {target.name: target.read_bytes()} if target.exists() else {}
    sidecar = Path(str(target) + ".json")
    if job == "tiktoken" and sidecar.exists():
        files[sidecar.name] = sidecar.read_bytes()
    return files


def write_old(job: str, target: Path) -> dict[str, bytes]:
    """Put a complete previous output at ``target``; returns its snapshot."""
    if job in DIRECTORY_JOBS:
        target.mkdir(exist_ok=True)
        for p in target.iterdir():
            p.unlink()
        (target / "kept.txt").write_bytes(KEPT)
        if job != "shards":
            for name in {"gpt2": ("vocab.json", "merges.txt"), "pretrained": PRETRAINED_FILES}[job]:
                (target / name).write_bytes(b"the previous " + name.encode() + b", complete\n")
        else:
            (target / "index.json").write_text('{"previous": true}\n')
            (target / "shard-00000.bin").write_bytes(b"\0\1" * 10)
    else:
        target.write_bytes(OLD)
        if job == "tiktoken":
            Path(str(target) + ".json").write_bytes(b"the previous sidecar, complete\n")
    return snapshot(job, target)


def start(job: str, jobs, target: Path) -> subprocess.Popen:
    if job in SAVE_JOBS:
        ref = jobs["ref"] / "wordpiece" if job == "wordpiece" else jobs["ref"]
        cmd = [sys.executable, "-c", SAVE_LOOP, job, str(target), str(ref)]
    else:
        cmd = [*jobs["cmd"][job], f"{target}/" if job == "shards" else str(target)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    if job in SAVE_JOBS:
        assert proc.stdout.readline() == b"ready\n", proc.stderr.read().decode()
    return proc


def allowed(job: str, jobs, old: dict[str, bytes]) -> list[dict[str, bytes]]:
    sets = [old]
    for done in jobs["complete"][job]:
        sets.append({**done, "kept.txt": KEPT} if job in DIRECTORY_JOBS else done)
    return sets


def check_after_kill(job: str, jobs, target: Path, old: dict[str, bytes], *, strict: bool) -> list[str]:
    """The target holds the old output or a complete new one, all of a set from the same run;
    returns what else was left in its directory (only numtok's temporaries, removed by the next
    run's start)."""
    state = snapshot(job, target)
    sets = allowed(job, jobs, old)
    if job == "tiktoken":  # two files beside others: each complete, renamed one right after the other
        for name, content in state.items():
            assert content in [s.get(name) for s in sets], f"{job}: torn {name} ({len(content)} bytes)"
        if state not in sets:  # a kill between the two renames: reading refuses the pair
            with pytest.raises(ValueError, match="was written with another rank file|malformed tiktoken sidecar"):
                read_tiktoken_sidecar(target)
    else:
        assert state in sets, f"{job}: torn output {sorted((k, len(v)) for k, v in state.items())}"
    parent = target.parent
    own = {target.name, target.name + ".json"}
    left = sorted(n for n in os.listdir(parent) if n not in own)
    assert all(is_temporary_name(n) for n in left), left
    if strict:
        assert left == []
    # What a kill left, the next run's start removes (every writer sweeps its directory first).
    remove_stale_temporaries(parent)
    assert sorted(n for n in os.listdir(parent) if n not in own) == []
    return left


@pytest.fixture(autouse=True)
def fresh_sweep(monkeypatch):
    # atomic_write sweeps a directory once per process; each test starts anew.
    monkeypatch.setattr(atomic, "_swept", set())


@pytest.mark.parametrize("job", ["encode", "shards", *SAVE_JOBS])
def test_killed_while_writing_leaves_the_old_output_and_nothing_else(jobs, tmp_path, job):
    target = tmp_path / target_name(job)
    old = write_old(job, target)
    proc = start(job, jobs, target)
    wait_until_writing(proc, tmp_path)
    time.sleep(random.uniform(0, 0.2))
    kill(proc)
    check_after_kill(job, jobs, target, old, strict=job == "encode")


def test_killed_train_leaves_the_old_file_and_nothing_else(jobs, tmp_path):
    target = tmp_path / "tok.json"
    old = write_old("train", target)
    proc = start("train", jobs, target)
    time.sleep(2.0)
    kill(proc)
    check_after_kill("train", jobs, target, old, strict=True)


def test_next_shard_run_removes_what_a_killed_one_left_when_it_starts(jobs, tmp_path):
    target = tmp_path / "out"
    write_old("shards", target)
    proc = start("shards", jobs, target)
    wait_until_writing(proc, tmp_path)
    kill(proc)
    left = [n for n in os.listdir(tmp_path) if n != "out"]
    assert left and all(is_temporary_name(n) for n in left)  # the killed run's temporary directory
    proc = start("shards", jobs, target)
    try:
        wait_until_writing(proc, tmp_path)
        assert not any(n in os.listdir(tmp_path) for n in left)  # gone before the new run's output
    finally:
        kill(proc)


KILLS = 50


@pytest.mark.slow
@pytest.mark.parametrize("job", JOBS)
def test_random_kills(jobs, tmp_path, job):
    """SIGKILL at random moments, KILLS runs per writer: never a torn file or a mixed set,
    never a lasting temporary."""
    rng = random.Random(job)
    target = tmp_path / target_name(job)
    old = write_old(job, target)
    kept = mixed = 0
    for _ in range(KILLS):
        proc = start(job, jobs, target)
        time.sleep(rng.uniform(0.0, RUN_SECONDS[job]))
        kill(proc)
        kept += check_after_kill(job, jobs, target, old, strict=False) != []
        mixed += snapshot(job, target) not in allowed(job, jobs, old)
        old = snapshot(job, target)
    print(f"{job}: {KILLS} kills, {kept} left a temporary that the next start removed, {mixed} left a mixed pair")


# -- stale temporaries --------------------------------------------------------------------------

HOLD = """
import os, sys, time
if sys.argv[2] == "named":
    del os.O_TMPFILE  # a file system without unnamed files: the temporary has a name from the start
from numtok.io.atomic import atomic_write
with atomic_write(sys.argv[1], "wb") as f:
    f.write(b"partial"); f.flush()
    print("writing", flush=True)
    time.sleep(600)
"""


def hold_a_write(path: Path, kind: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), kind], stdout=subprocess.PIPE, env=child_env())
    assert proc.stdout.readline() == b"writing\n"
    return proc


def test_without_unnamed_files_stale_temporaries_are_removed_by_the_next_run(tmp_path):
    (tmp_path / "out.bin").write_bytes(b"old")
    dead = hold_a_write(tmp_path / "out.bin", "named")
    alive = hold_a_write(tmp_path / "other.bin", "named")
    try:
        kill(dead)
        left = leftovers(tmp_path, "out.bin")
        assert len(left) == 2 and all(is_temporary_name(n) for n in left)
        with atomic_write(tmp_path / "out.bin") as f:
            f.write(b"new")
        # The dead run's temporary is gone; the live one (locked) is not touched, and finishes.
        assert [n for n in leftovers(tmp_path, "out.bin")] == [n for n in left if n.startswith(".other.bin.")]
        assert (tmp_path / "out.bin").read_bytes() == b"new"
    finally:
        kill(alive)
    assert remove_stale_temporaries(tmp_path) == [n for n in left if n.startswith(".other.bin.")]


def test_unnamed_temporary_vanishes_with_its_process(tmp_path):
    (tmp_path / "out.bin").write_bytes(b"old")
    proc = hold_a_write(tmp_path / "out.bin", "unnamed")
    assert [t.endswith("(deleted)") for t in files_open_in(proc.pid, tmp_path)] == [True]
    assert leftovers(tmp_path, "out.bin") == []
    kill(proc)
    assert sorted(os.listdir(tmp_path)) == ["out.bin"] and (tmp_path / "out.bin").read_bytes() == b"old"


def test_other_programs_temporaries_are_never_touched(tmp_path):
    names = [".out.bin.abcd1234.tmp", "out.bin.numtok-0123abcd.tmp", ".out.bin.numtok-xyz.tmp", ".x.numtok-0123abcd.tmp.gz"]
    for n in names:
        (tmp_path / n).write_text("not ours")
    (tmp_path / ".x.numtok-0123abcd.tmp").write_text("ours, stale")
    assert remove_stale_temporaries(tmp_path) == [".x.numtok-0123abcd.tmp"]
    assert sorted(os.listdir(tmp_path)) == sorted(names)


# -- a full disk --------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 128 KiB tmpfs, or a skip where mounting is not allowed."""
    mount = tmp_path / "small"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(mount)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_full_disk_keeps_the_previous_file(small_disk, sample_lines):
    target = small_disk / "tok.json"
    numtok.train_bpe(sample_lines[:200], 400).save(target)
    before = target.read_bytes()
    big = numtok.train_bpe(sample_lines, 8000)  # its JSON does not fit beside the old file
    with pytest.raises(OSError, match=r"No space left on device while writing .*tok\.json \(its previous content is kept\)") as info:
        big.save(target)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert target.read_bytes() == before and os.listdir(small_disk) == ["tok.json"]
    assert os.statvfs(small_disk).f_bfree * os.statvfs(small_disk).f_frsize > 1 << 16  # the temporary's blocks are freed


def test_full_disk_during_encode_is_one_clear_line(small_disk, jobs):
    target = small_disk / "ids.bin"
    target.write_bytes(OLD)
    r = subprocess.run([*jobs["cmd"]["encode"], target], capture_output=True, env=child_env(), timeout=600)
    assert r.returncode == 1
    assert r.stderr.decode().strip() == f"numtok: error: encode: No space left on device while writing {target} (its previous content is kept): {target}"
    assert target.read_bytes() == OLD and os.listdir(small_disk) == ["ids.bin"]


def test_no_space_from_any_write_names_the_file(tmp_path):
    # Where no small file system can be mounted: the write itself reports ENOSPC.
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(OSError, match=r"No space left on device while writing .*out\.txt"):
        with atomic_write(target, "w") as f:
            f.write("new, partial")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]


def test_text_and_read_back_modes(tmp_path):
    path = tmp_path / "f"
    with atomic_write(path, "w+b") as f:
        f.write(b"0123456789")
        f.seek(0)
        assert f.read(4) == b"0123"
        f.seek(0)
        f.write(b"AB")
    assert path.read_bytes() == b"AB23456789"
    with atomic_write(path, "w", newline="\r\n") as f:
        f.write("é\n")
    assert path.read_bytes() == "é\r\n".encode()

