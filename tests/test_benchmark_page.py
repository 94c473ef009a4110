"""The benchmark suite's page machinery (benchmarks/): a section's commands run, their output is
kept with the run's facts and lands on the page verbatim; every section's command names a script
that exists. (Speed itself is measured by the suite, never here.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import page, results  # noqa: E402
from benchmarks.suite import SECTIONS, Section  # noqa: E402


def test_run_keeps_output_and_page_shows_it(tmp_path):
    section = Section("encode-scripts", "Encoding by script", "about it", ('{PY} -c "print(\'cell 12.5 MB/s\')"', "exit 3"))
    record = results.run(section, str(tmp_path), echo=False)
    assert [r["exit_code"] for r in record["runs"]] == [0, 3]
    assert record["runs"][0]["output"] == "cell 12.5 MB/s\n"
    assert record["machine"]["cores"] == os.cpu_count()
    results.save(record, str(tmp_path))
    assert os.listdir(tmp_path) == ["encode-scripts.json"]  # no temporary file left
    text = page.render(results.load_all(str(tmp_path)))
    assert "cell 12.5 MB/s" in text and "**exit code 3**" in text and "| M1 |" in text
    # Sections not run say how to run them.
    assert "python -m benchmarks run train --corpus-dir DIR" in text


def test_every_command_names_an_existing_script():
    for section in SECTIONS:
        for command in section.commands:
            scripts = [w for w in command.split() if w.startswith("benchmarks/")]
            assert all(os.path.isfile(os.path.join(REPO, s)) for s in scripts), command


@pytest.mark.parametrize("args", [["list"], ["run", "no-such-section"]])
def test_cli(args):
    proc = subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=REPO, capture_output=True, text=True)
    if args == ["list"]:
        assert proc.returncode == 0 and all(s.name in proc.stdout for s in SECTIONS)
    else:
        assert proc.returncode == 2 and "unknown section(s) no-such-section" in proc.stderr


def test_readme_links_to_sections_of_the_page():
    import re

    def slug(title: str) -> str:  # GitHub's heading anchors
        return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")

    anchors = {slug(s.title) for s in SECTIONS} | {"machines", "how-to-measure"}
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        linked = set(re.findall(r"docs/performance\.md#([\w\-]+)", f.read()))
    assert linked and linked <= anchors, linked - anchors
