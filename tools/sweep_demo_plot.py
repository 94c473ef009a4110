#!/usr/bin/env python
"""Make docs/sweep-demo.png, the README's "Choosing a tokenizer" plot: ``numtok sweep`` on the
bundled demo text (Pride and Prejudice), four fifths of its lines to train, the rest held out.

    python tools/sweep_demo_plot.py            # writes docs/sweep-demo.png (needs matplotlib)
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import numtok
from numtok.evaluation.report import write_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(ROOT, "src", "numtok", "data", "pride_and_prejudice.txt")
SIZES = [300, 500, 1000, 2000, 3000, 4000, 6000]


def main() -> int:
    with open(TEXT, encoding="utf-8") as f:
        lines = f.readlines()
    cut = len(lines) * 4 // 5
    result = numtok.sweep(lines[:cut], SIZES, lines[cut:], show_progress=False)
    with tempfile.TemporaryDirectory() as d:
        write_report([r for r in result.rows if r["group"] != "none"], d, plot=True, kind="sweep")
        shutil.copyfile(os.path.join(d, "report.png"), os.path.join(ROOT, "docs", "sweep-demo.png"))
    print("wrote docs/sweep-demo.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
