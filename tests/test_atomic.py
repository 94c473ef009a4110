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


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Inputs, and the complete output of each job (what a run that is not killed writes)."""
    d = tmp_path_factory.mktemp("jobs")
    lines = write_slow_job(d, 12)
    (d / "corpus.txt").write_text("".join(lines), encoding="utf-8")
    jobs = {
        "encode": numtok_cmd("encode", "-t", d / "slow.json", d / "big.jsonl", "--chunk-mb", "1", "--threads", "1", "-q", "-o"),
        "train": numtok_cmd("train", d / "corpus.txt", "--vocab-size", "3000", "-q", "-o"),
    }
    complete = {}
    for name, cmd in jobs.items():
        out = d / f"complete-{name}"
        out.mkdir()
        target = out / ("ids.bin" if name == "encode" else "tok.json")
        r = subprocess.run([*cmd, target], capture_output=True, env=child_env(), timeout=600)
        assert r.returncode == 0, r.stderr.decode()
        complete[name] = target.read_bytes()
    return {"dir": d, "cmd": jobs, "complete": complete, "old": b"the previous output, complete\n"}


SAVE_LOOP = """
import sys, numtok
lines = open(sys.argv[1], encoding="utf-8").read().splitlines(keepends=True)
a, b = numtok.train_bpe(lines, 2000), numtok.train_bpe(lines, 4000)
a.save(sys.argv[3] + "/a.json"); b.save(sys.argv[3] + "/b.json")
print("ready", flush=True)
while True:
    a.save(sys.argv[2]); b.save(sys.argv[2])
"""


def start(job: str, jobs, target: Path) -> subprocess.Popen:
    if job == "save":
        (jobs["dir"] / "save-ref").mkdir(exist_ok=True)
        cmd = [sys.executable, "-c", SAVE_LOOP, str(jobs["dir"] / "corpus.txt"), str(target), str(jobs["dir"] / "save-ref")]
    else:
        cmd = [*jobs["cmd"][job], str(target)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env())
    if job == "save":
        assert proc.stdout.readline() == b"ready\n", proc.stderr.read().decode()
    return proc


def complete_outputs(job: str, jobs) -> set[bytes]:
    if job == "save":
        return {(jobs["dir"] / "save-ref" / n).read_bytes() for n in ("a.json", "b.json")}
    return {jobs["complete"][job]}


def check_after_kill(job: str, jobs, target: Path, *, strict: bool) -> list[str]:
    """The final path holds the old file or a complete new one; returns what else is there."""
    content = target.read_bytes()
    assert content == jobs["old"] or content in complete_outputs(job, jobs), f"{job}: torn file ({len(content)} bytes)"
    left = leftovers(target.parent, target.name)
    assert all(is_temporary_name(n) for n in left), left
    if strict:
        assert left == []
    # Whatever a kill between link and rename left, the next write into the directory removes.
    with atomic_write(target.parent / "next", "w") as f:
        f.write("x")
    (target.parent / "next").unlink()
    assert leftovers(target.parent, target.name) == []
    return left


@pytest.fixture(autouse=True)
def fresh_sweep(monkeypatch):
    # atomic_write sweeps a directory once per process; each test starts anew.
    monkeypatch.setattr(atomic, "_swept", set())


@pytest.mark.parametrize("job", ["encode", "save"])
def test_killed_while_writing_leaves_the_old_file_and_nothing_else(jobs, tmp_path, job):
    target = tmp_path / ("ids.bin" if job == "encode" else "tok.json")
    target.write_bytes(jobs["old"])
    proc = start(job, jobs, target)
    wait_until_writing(proc, tmp_path)
    time.sleep(random.uniform(0, 0.2))
    kill(proc)
    check_after_kill(job, jobs, target, strict=job == "encode")


def test_killed_train_leaves_the_old_file_and_nothing_else(jobs, tmp_path):
    target = tmp_path / "tok.json"
    target.write_bytes(jobs["old"])
    proc = start("train", jobs, target)
    time.sleep(2.0)
    kill(proc)
    check_after_kill("train", jobs, target, strict=True)


@pytest.mark.slow
@pytest.mark.parametrize("job", ["encode", "train", "save"])
def test_random_kills(jobs, tmp_path, job):
    """SIGKILL at random moments, 12 runs per job: never a torn file, never a lasting temporary."""
    rng = random.Random(job)
    target = tmp_path / "out"
    target.write_bytes(jobs["old"])
    kept = 0
    for _ in range(12):
        proc = start(job, jobs, target)
        time.sleep(rng.uniform(0.0, {"encode": 8.0, "train": 6.0, "save": 1.5}[job]))
        kill(proc)
        kept += check_after_kill(job, jobs, target, strict=False) != []
        target.write_bytes(rng.choice([jobs["old"], target.read_bytes()]))
    assert kept <= 2  # a kill inside the microseconds between link and rename is rare


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
    target.write_bytes(jobs["old"])
    r = subprocess.run([*jobs["cmd"]["encode"], target], capture_output=True, env=child_env(), timeout=600)
    assert r.returncode == 1
    assert r.stderr.decode().strip() == f"numtok: error: encode: No space left on device while writing {target} (its previous content is kept): {target}"
    assert target.read_bytes() == jobs["old"] and os.listdir(small_disk) == ["ids.bin"]


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

