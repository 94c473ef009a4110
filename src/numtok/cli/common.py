"""What every ``numtok`` command shares: the one-line user error, quiet mode, loading a tokenizer, input checks."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..encode.tokenizer import Tokenizer

PROG = "numtok"


class UserError(Exception):
    """A mistake in the command line or its inputs: reported in one line, exit code 2."""


def progress_enabled(args) -> bool | None:
    return False if getattr(args, "quiet", False) else None


def say(args, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr, flush=True)


def load_tokenizer(spec: str) -> Tokenizer:
    """A Tokenizer from a bundled name, a tokenizer.json, a .tiktoken file or a directory."""
    from ..encode.from_spec import load_tokenizer as load  # here: `numtok --help` imports no Numba

    return load(spec)


def option(resolve, *args):
    """``resolve(*args)``, its ValueError (which names the keyword) reported as the flag."""
    try:
        return resolve(*args)
    except ValueError as exc:
        raise UserError(f"--{exc}") from None


def check_output_dir(path: str, is_dir: bool = False) -> None:
    parent = os.path.dirname(os.path.abspath(path.rstrip(os.sep) if is_dir else path))
    if not os.path.isdir(parent):
        raise UserError(f"output directory does not exist: {parent}")


def check_inputs(files: list[str]) -> None:
    for path in files:
        if not os.path.exists(path):
            raise UserError(f"no such file: {path}")
        if os.path.isdir(path):
            raise UserError(f"is a directory, not a file: {path}")
