"""Kernels with the JIT off (``NUMBA_DISABLE_JIT=1``): plain Python, every intrinsic replaced
by its pure-Python twin. A child process runs a few of them, one of each kind, on short
texts and must give what the compiled kernels give here, so that the JIT-off mode (stepping
through a kernel, ``tools/kernel_coverage.sh``) cannot break unnoticed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba.core import config

TEXTS = [
    "hi",
    "Hello world, it's 2026!\r\n  indented\tcode(x) += 42;",
    "naïve café 東京 👋🏽 мир  हिन्दी  한국어 " * 3,
    "中文的句子没有空格所以很长，日本語のテキストも。" * 2,
    "a<|endoftext|>b",
]
CORPUS = ["low lower lowest newer wider", "the quick brown fox jumps over the lazy dog", "東京 大阪 東京都"] * 4


def compute() -> dict:
    """What the checked kernels give, as JSON-able values."""
    import numtok
    from numtok.pretokenizers import pretokenize

    out: dict = {}
    for name in ("cl100k_base", "o200k_base"):
        enc = numtok.load(name)
        out[name] = {
            "ordinary": [enc.encode_ordinary(t).tolist() for t in TEXTS],
            "special": enc.encode(TEXTS[-1], allowed_special="all").tolist(),
            "batch": [np.asarray(ids).tolist() for ids in enc.encode_ordinary_batch(TEXTS, num_threads=1)],
            "count": [int(enc.count_tokens(t)) for t in TEXTS[:-1]],
            "offsets": [np.asarray(x).tolist() for x in enc.encode_with_offsets(TEXTS[2])],
            "decode": enc.decode(enc.encode_ordinary(TEXTS[2])),
        }
    out["pieces"] = {p: [pretokenize(t, p).tolist() for t in TEXTS] for p in ("gpt2", "cl100k", "o200k")}
    tok = numtok.train_bpe(CORPUS, 300, pattern="gpt2")
    out["trained"] = [[a.hex(), b.hex()] for a, b in tok.merges]
    return out


@pytest.mark.skipif(config.DISABLE_JIT, reason="compares the JIT off with the compiled kernels")
@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.0.0",
                    reason="kernels run as Python need NumPy 2's promotion (NEP 50): NumPy 1 makes uint64 * int a float")
def test_kernels_give_the_same_results_with_the_jit_off():
    want = compute()
    tests = Path(__file__).parent
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "NUMTOK_QUIET": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(tests.parent / "src"), str(tests), env.get("PYTHONPATH", "")])
    child = "import json, test_nojit; print(json.dumps(test_nojit.compute()))"
    r = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", child], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    assert got == json.loads(json.dumps(want))


def test_intrinsic_twins_match_the_intrinsics():
    """The twins against the compiled intrinsics on random bytes and code units (in this
    process the JIT is on, so the twins are called directly)."""
    from numba import njit

    from numtok._native import intrinsics as i

    if config.DISABLE_JIT:
        pytest.skip("the intrinsics themselves need the JIT")
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, 200, dtype=np.uint8)
    raw[::3] = rng.integers(0xE2, 0xF0, len(raw[::3]), dtype=np.uint8)  # some 3-byte leads
    masks64 = njit(lambda a, k: i.ascii_class_masks64(a, k))
    masks32 = njit(lambda a, k: i.ascii_class_masks32(a, k))
    letters = njit(lambda a, k: i.letter3_leads64(a, k))
    punct = njit(lambda a, k: i.punct3_leads64(a, k))
    load = njit(lambda a, k: i.load_u64(a, k))
    for k in (0, 5, 64, 100):
        assert masks64(raw, k) == i._ascii_class_masks_twin(64)(raw, k)
        assert masks32(raw, k) == i._ascii_class_masks_twin(32)(raw, k)
        assert letters(raw, k) == i._three_byte_twin(i._letter3_lanes)(raw, k)
        assert punct(raw, k) == i._three_byte_twin(i._punct3_lanes)(raw, k)
        assert load(raw, k) == i._py_load_u64(raw, k)
    widths = njit(lambda u, k: i.utf8_widths32(u, k))
    narrow = njit(lambda u, k, o, p: i.narrow_ascii32(u, k, o, p))
    tz = njit(lambda x: i.trailing_zeros(x))
    lz = njit(lambda x: i.leading_zeros(x))
    for dtype, top in ((np.uint8, 0x100), (np.uint16, 0x10000), (np.uint32, 0x110000)):
        units = rng.integers(0, top, 64, dtype=dtype)
        units[::2] = rng.integers(0, 0x80, 32, dtype=dtype)
        for k in (0, 7, 32):
            assert widths(units, k) == i._py_utf8_widths32(units, k)
            a, b = np.zeros(40, np.uint8), np.zeros(40, np.uint8)
            assert narrow(units, k, a, 3) == i._py_narrow_ascii32(units, k, b, 3)
            np.testing.assert_array_equal(a, b)
    for x in (np.uint64(0), np.uint64(1 << 63), np.uint64(40), np.uint32(0), np.uint32(0x80), np.int64(-8)):
        assert tz(x) == i._py_trailing_zeros(x)
        assert lz(x) == i._py_leading_zeros(x)
