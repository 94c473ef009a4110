"""The ``numtok`` command line: train, encode, decode, eval, sweep, info, demo, warmup.

Argument parsing (``parser.py``) and printing (``commands.py``) only: the work is done by ``train.trainer``, ``io.encode_files``,
``io.decode_file``, ``evaluation`` and ``demo``. Every command prints one line on stderr and exits non-zero on
a user mistake (missing file, unreadable tokenizer, bad option value); progress bars go to
stderr when it is a terminal (``--quiet`` turns them and the summaries off). Outputs appear
under their final name only once complete (``io/atomic.py``). How ``.txt``, ``.jsonl`` and
``.parquet`` inputs are cut into documents: ``io/documents.py``.
"""

from __future__ import annotations

import os
import signal
import sys

from .common import PROG, UserError, load_tokenizer
from .parser import build_parser

__all__ = ["main", "load_tokenizer"]

# How main reports a file that cannot be opened (the first that matches).
_FILE_ERRORS = ((FileNotFoundError, "no such file"), (IsADirectoryError, "is a directory"), (PermissionError, "permission denied"))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``numtok`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if getattr(args, "quiet", False):
        from .._native.jit import set_quiet

        set_quiet(True)
    previous = _raise_on_sigterm()
    try:
        return args.func(args) or 0
    except UserError as exc:
        return _fail(f"{args.command}: {exc}", 2)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        what = next(text for kind, text in _FILE_ERRORS if isinstance(exc, kind))
        return _fail(f"{args.command}: {what}: {exc.filename or exc}", 2)
    except ValueError as exc:
        return _fail(f"{args.command}: {exc}", 2)
    except OSError as exc:
        return _fail(f"{args.command}: {exc.strerror or exc}{': ' + str(exc.filename) if exc.filename else ''}", 1)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except MemoryError as exc:  # says what was being built and how much it needed
        return _fail(f"{args.command}: {exc or 'out of memory'}", 1)
    except Exception as exc:  # a bug, not a user mistake: still one line, traceback on request
        if os.environ.get("NUMTOK_DEBUG"):
            raise
        return _fail(f"{args.command}: internal error: {type(exc).__name__}: {exc} (set NUMTOK_DEBUG=1 for a traceback)", 1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _fail(message: str, code: int) -> int:
    message = " ".join(str(message).split())  # one line, whatever the exception held
    try:
        sys.stderr.write(f"{PROG}: error: {message}\n" if code != 130 else f"{PROG}: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return code


def _raise_on_sigterm():
    """SIGTERM behaves like Ctrl-C (KeyboardInterrupt), so temporary outputs are removed."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (e.g. main() called from a worker)
        return None
