import os
from pathlib import Path

import pytest
from hypothesis import settings

DATA = Path(__file__).parent / "data"

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def sample_text() -> str:
    """~250 KB of mixed real text (prose, code, French/German, CJK, emoji) shipped in tests/."""
    return (DATA / "sample_mixed.txt").read_bytes().decode("utf-8")  # keeps its \r\n lines


@pytest.fixture(scope="session")
def sample_lines(sample_text) -> list[str]:
    return sample_text.splitlines(keepends=True)
