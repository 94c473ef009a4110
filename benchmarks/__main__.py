"""The benchmark suite: ``python -m benchmarks`` (run from the repository root).

    python -m benchmarks list                                   # the sections and their commands
    python -m benchmarks run encode-scripts train --corpus-dir /work/corpus
    python -m benchmarks run all --corpus-dir /work/corpus     # every section (hours)
    python -m benchmarks page                                   # docs/performance.md from the kept results

``run`` prints each command's output as it comes and keeps it in ``benchmarks/results/``;
``--no-save`` only prints. A section whose corpus files are missing is skipped with a message.
"""

from __future__ import annotations

import argparse
import sys

from . import page, results
from .suite import BY_NAME, SECTIONS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("list", help="the sections and their commands")
    run = sub.add_parser("run", help="run sections and keep their output")
    run.add_argument("sections", nargs="+", help=f"section names or 'all': {', '.join(BY_NAME)}")
    run.add_argument("--corpus-dir", default="/work/corpus", help="where the corpus files are (default %(default)s)")
    run.add_argument("--no-save", action="store_true", help="print only; keep nothing")
    run.add_argument("--page", action="store_true", help="write docs/performance.md afterwards")
    sub.add_parser("page", help="write docs/performance.md from the kept results")
    args = ap.parse_args(argv)

    if args.what == "list":
        for s in SECTIONS:
            print(f"{s.name}: {s.title}")
            for c in s.commands:
                print(f"    {c}")
        return 0
    if args.what == "page":
        print(f"wrote {page.write()}")
        return 0
    names = [s.name for s in SECTIONS] if args.sections == ["all"] else args.sections
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    failed = 0
    for name in names:
        section = BY_NAME[name]
        missing = results.missing_inputs(section, args.corpus_dir)
        if missing:
            print(f"== {name}: skipped, {args.corpus_dir} lacks {', '.join(missing)}", file=sys.stderr)
            failed += 1
            continue
        print(f"== {name}: {section.title}", flush=True)
        record = results.run(section, args.corpus_dir)
        failed += any(r["exit_code"] != 0 for r in record["runs"])
        if not args.no_save:
            print(f"kept {results.save(record)}")
    if args.page:
        print(f"wrote {page.write()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
