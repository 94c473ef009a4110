import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

DATA = Path(__file__).parent / "data"

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=30, deadline=None)
# Long differential runs (tests/test_fuzz.py, `-m fuzz --hypothesis-profile=thorough`): 100,000
# batches of 1-24 strings, about 1.2 million strings per encoding.
settings.register_profile("thorough", max_examples=100_000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def sample_text() -> str:
    """~250 KB of mixed real text (prose, code, French/German, CJK, emoji) shipped in tests/."""
    return (DATA / "sample_mixed.txt").read_bytes().decode("utf-8")  # keeps its \r\n lines


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
