"""Evaluation reports: a table for the terminal, ``report.csv`` and ``report.json``, and a plot
(``report.png`` and ``report.svg``) when matplotlib is installed (``pip install "numtok[plot]"``).

Every file is made in memory first and written through ``io/atomic.py``, so an error (a missing
matplotlib, a full disk) leaves no file half-written. matplotlib is imported only to plot.

>>> rows = [{"tokenizer": "a", "vocab_size": 300, "group": "latin", "documents": 1, "bytes": 10, "tokens": 4,
...          "bytes_per_token": 2.5, "chars_per_token": 2.5, "tokens_per_word": None, "byte_fallback_share": 0.0,
...          "vocab_used_share": 0.01}]
>>> print(format_table(rows).splitlines()[2])
a             300 latin         1          10           4   2.500   2.500        -    0.00%      1.00%
"""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any

from ..io.atomic import atomic_write
from .totals import ALL, COLUMNS

__all__ = ["format_table", "write_report", "require_matplotlib", "PLOT_EXTRA"]

PLOT_EXTRA = 'pip install "numtok[plot]"'


def require_matplotlib() -> None:
    """ImportError naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(f"plotting needs matplotlib: {PLOT_EXTRA}") from None


def _has_matplotlib() -> bool:
    try:
        require_matplotlib()
    except ImportError:
        return False
    return True


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rows as an aligned text table (shares in percent, ``-`` for no value)."""
    width = max([9, *(len(str(r["tokenizer"])) for r in rows)])
    group = max([5, *(len(str(r["group"])) for r in rows)])
    head = (f"{'tokenizer':<{width}} {'vocab':>7} {'group':<{group}} {'docs':>9} {'bytes':>11} {'tokens':>11} {'B/tok':>7} "
            f"{'ch/tok':>7} {'tok/word':>8} {'fallback':>8} {'vocab used':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['tokenizer']:<{width}} {r['vocab_size']:>7} {r['group']:<{group}} {r['documents']:>9} {r['bytes']:>11} "
                     f"{r['tokens']:>11} {_num(r['bytes_per_token'], 7)} {_num(r['chars_per_token'], 7)} {_num(r['tokens_per_word'], 8)} "
                     f"{_pct(r['byte_fallback_share'], 8)} {_pct(r['vocab_used_share'], 10)}")
    return "\n".join(lines)


def _num(value, width: int) -> str:
    return f"{value:>{width}.3f}" if value is not None else f"{'-':>{width}}"


def _pct(value, width: int) -> str:
    return f"{100 * value:>{width - 1}.2f}%" if value is not None else f"{'-':>{width}}"


def write_report(rows: list[dict[str, Any]], directory: str, *, plot: bool | None = None, kind: str = "eval") -> list[str]:
    """Write ``report.csv``, ``report.json`` and (``plot`` True, or None and matplotlib
    installed) ``report.png`` / ``report.svg`` into ``directory`` (made if missing); returns
    the paths written. ``kind``: ``"eval"`` (bars per group) or ``"sweep"`` (bytes per token
    against the vocabulary size, a line per group). ``plot=True`` without matplotlib raises
    ImportError before anything is written."""
    if plot is True:
        require_matplotlib()
    files: dict[str, bytes] = {"report.csv": _csv(rows).encode("utf-8"),
                               "report.json": (json.dumps(rows, indent=1, ensure_ascii=False) + "\n").encode("utf-8")}
    if plot is True or (plot is None and _has_matplotlib()):
        files.update(_figures(rows, kind))
    os.makedirs(directory, exist_ok=True)
    written = []
    for name, content in files.items():
        path = os.path.join(directory, name)
        with atomic_write(path, "wb") as f:
            f.write(content)
        written.append(path)
    return written


def _csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in COLUMNS})
    return out.getvalue()


def _figures(rows: list[dict[str, Any]], kind: str) -> dict[str, bytes]:
    """PNG and SVG of the plot of ``rows``."""
    from matplotlib.figure import Figure  # a figure without pyplot: no GUI backend, no global state

    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.subplots()
    if kind == "sweep":
        groups = list(dict.fromkeys(r["group"] for r in rows))
        for group in groups:
            points = sorted((r["vocab_size"], r["bytes_per_token"]) for r in rows if r["group"] == group and r["bytes_per_token"] is not None)
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=group, linewidth=2.5 if group == ALL else 1.5)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("vocabulary size")
        ax.set_title("Compression against vocabulary size, per group")
    else:
        tokenizers = list(dict.fromkeys(r["tokenizer"] for r in rows))
        groups = list(dict.fromkeys(r["group"] for r in rows))
        width = 0.8 / max(1, len(tokenizers))
        for t, name in enumerate(tokenizers):
            by_group = {r["group"]: r["bytes_per_token"] or 0.0 for r in rows if r["tokenizer"] == name}
            ax.bar([g + (t - (len(tokenizers) - 1) / 2) * width for g in range(len(groups))],
                   [by_group.get(g, 0.0) for g in groups], width, label=name)
        ax.set_xticks(range(len(groups)), groups)
        ax.set_xlabel("group")
        ax.set_title("Compression per group")
    ax.set_ylabel("bytes per token (higher: fewer tokens)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    out = {}
    for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None})):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=110, metadata=metadata)
        out[f"report.{fmt}"] = buf.getvalue()
    return out
