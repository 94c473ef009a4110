import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

DATA = Path(__file__).parent / "data"

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=30, deadline=None)
# Long differential runs (tests/test_fuzz.py, `-m fuzz --hypothesis-profile=thorough`): 100,000
# batches of 1-24 strings (hypothesis favours short lists: about 6 strings a batch).
settings.register_profile("thorough", max_examples=100_000, deadline=None, suppress_health_check=list(HealthCheck))
# The campaign (tests/test_fuzz.py::test_campaign, `-m fuzz -k campaign`): 4,000 batches of 256
# generated strings, 1,024,000 strings per encoding.
settings.register_profile("million", max_examples=4_000, deadline=None, suppress_health_check=list(HealthCheck))
# With the JIT off (tools/kernel_coverage.sh) kernels run as plain Python, some thousand times
# slower: few examples, and the sample text cut to a few kilobytes of each of its kinds of text.
JIT_OFF = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")
NOJIT_EXAMPLES = 4
settings.register_profile("nojit", max_examples=NOJIT_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "nojit" if JIT_OFF else "ci" if os.environ.get("CI") else "dev"))


def pytest_collection_modifyitems(config, items):
    if JIT_OFF:
        skip = pytest.mark.skip(reason="checks compiled kernels (Numba dispatchers, caches): the JIT is off")
        for item in items:
            if "jit_only" in item.keywords:
                item.add_marker(skip)
            # A test's own @settings(max_examples=...) overrides the profile: cut it too.
            test = getattr(item, "obj", None)
            own = getattr(test, "_hypothesis_internal_use_settings", None)
            if own is not None and own.max_examples > NOJIT_EXAMPLES:
                test._hypothesis_internal_use_settings = settings(own, max_examples=NOJIT_EXAMPLES)


def shrink(text: str, keep: int = 6000, parts: int = 6) -> str:
    """``text`` as is, or with the JIT off ``parts`` slices of it spread over its length,
    ``keep`` characters in all (each slice starts and ends at a line break)."""
    if not JIT_OFF or len(text) <= keep:
        return text
    pieces = []
    for k in range(parts):
        start = text.find("\n", k * len(text) // parts) + 1
        stop = text.find("\n", start + keep // parts)
        pieces.append(text[start : stop + 1 if stop >= 0 else len(text)])
    return "".join(pieces)


@pytest.fixture(scope="session")
def sample_text() -> str:
    """~250 KB of mixed real text (prose, code, French/German, CJK, emoji) shipped in tests/."""
    return shrink((DATA / "sample_mixed.txt").read_bytes().decode("utf-8"))  # keeps its \r\n lines


@pytest.fixture(scope="session")
def sample_lines(sample_text) -> list[str]:
    return sample_text.splitlines(keepends=True)


# Strings compared per target by tests/test_fuzz.py, printed at the end of the run.
FUZZ_COUNTS: dict[str, int] = {}


def pytest_terminal_summary(terminalreporter):
    if FUZZ_COUNTS:
        counts = ", ".join(f"{k} {v:,}" for k, v in sorted(FUZZ_COUNTS.items()))
        terminalreporter.write_line(f"fuzz: strings compared per target: {counts}")


def pytest_keyboard_interrupt(excinfo):
    # A long fuzz run stopped by Ctrl-C (or `timeout -s INT`) still reports how far it got.
    if FUZZ_COUNTS:
        counts = ", ".join(f"{k} {v:,}" for k, v in sorted(FUZZ_COUNTS.items()))
        print(f"\nfuzz (interrupted): strings compared per target: {counts}", flush=True)


def write_slow_job(directory: Path, copies: int) -> list[str]:
    """``directory/slow.json`` (a tokenizer with a custom regex: the slow, regex-module path) and
    ``directory/big.jsonl`` (the sample text ``copies`` times), so that an encode runs for
    seconds; returns the sample's lines."""
    import json

    import numtok

    lines = (DATA / "sample_mixed.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    tok = numtok.train_bpe(lines, 500, pattern=r"\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+|\s+", special_tokens=["<|endoftext|>"])
    tok.save(directory / "slow.json")
    with open(directory / "big.jsonl", "w", encoding="utf-8") as f:
        for _ in range(copies):
            for line in lines:
                f.write(json.dumps({"text": line}) + "\n")
    return lines
