"""The ``numtok`` command line: train, encode, decode, info, demo, warmup.

Every command prints one line on stderr and exits non-zero on a user mistake (missing file,
unreadable tokenizer, bad option value); progress bars go to stderr when it is a terminal
(``--quiet`` turns them and the summaries off). Outputs are written to a temporary file next
to the destination and renamed at the end, so an interrupted run never leaves a partial file
under the final name.

Documents (``encode`` puts the end-of-text id between consecutive documents; ``decode``
splits at it):

* ``.jsonl`` (optionally ``.gz``): one document per record, its ``--field`` (default "text");
* ``.txt`` (optionally ``.gz``), chosen with ``--txt-docs``:
  ``file`` (default) the whole file is one document;
  ``blank-line`` documents are separated by empty lines (the empty lines are not encoded);
  ``line`` every line, without its line ending, is a document.

``decode`` writes documents back in the same convention (``--txt-docs``, or ``--jsonl`` for one
JSON record per document), so ``encode`` then ``decode`` gives the text back: exactly for
``file`` (the files concatenated), for ``blank-line`` when documents were separated by one
empty line, for ``line`` when the file ends with a newline.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ._native.threads import usable_cores

__all__ = ["main"]

PROG = "numtok"
_DEFAULT_CHUNK_MB = 8
_SEGMENT_BYTES = 1 << 20
_DEFAULT_SHARD_TOKENS = 100_000_000  # as nanoGPT's and llm.c's FineWeb shards
_NPY_HEADER_BYTES = 128  # fixed, so the header can be rewritten with the final shape


class UserError(Exception):
    """A mistake in the command line or its inputs: reported in one line, exit code 2."""


# ---------------------------------------------------------------------------------------------
# argument parsing


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


_TOKENIZER_HELP = (
    "a bundled encoding name (cl100k_base, o200k_base, gpt2, ...), a tokenizer.json, "
    "a .tiktoken rank file (its .tiktoken.json sidecar gives pattern and special tokens), "
    "or a directory holding tokenizer.json or vocab.json + merges.txt"
)

_DOCS_HELP = (
    "documents in .txt inputs: 'file' = each file is one document (default), "
    "'blank-line' = documents separated by empty lines, 'line' = one document per line. "
    ".jsonl inputs always have one document per record"
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Byte-level BPE tokenizers on Numba: train, encode, decode, inspect.",
        epilog="Run 'numtok demo' for a first look; 'numtok COMMAND --help' for each command.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show numtok's version and where its kernels come from")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    quiet = _Parser(add_help=False)
    quiet.add_argument("-q", "--quiet", action="store_true", help="no progress bars and no summary")

    p = sub.add_parser(
        "train", parents=[quiet], help="train a BPE tokenizer on text files",
        description="Train a byte-level BPE tokenizer (merges identical to HF's BpeTrainer). "
        "Inputs: .txt (each line one sequence), .jsonl (the --field of each record), either "
        "optionally .gz, .parquet (the --field column, each row one sequence). The output format follows the -o suffix: .json = HF tokenizer.json, "
        ".tiktoken = tiktoken rank file + sidecar, a directory (or --format gpt2) = vocab.json + merges.txt.",
    )  # fmt: skip
    p.add_argument("files", nargs="+", metavar="FILE", help="training text (.txt, .jsonl, .gz, .parquet)")
    p.add_argument("--vocab-size", type=_positive_int, required=True, metavar="N",
                   help="final vocabulary size, special tokens included")
    p.add_argument("--pattern", default=None,
                   help="pre-tokenizer: gpt2 (default), r50k, cl100k, o200k, or a regex (with --base: the base's)")
    p.add_argument("--base", default=None, metavar="NAME_OR_PATH",
                   help="continue training this tokenizer (a bundled encoding such as o200k_base, a tokenizer.json or "
                   ".tiktoken file): its tokens and merges keep their ids, new ones follow; --vocab-size is the final size")
    p.add_argument("--special-token", action="append", default=[], metavar="TOK", dest="special_tokens",
                   help="a special token (repeatable); they take the first ids, in order")
    p.add_argument("--min-frequency", type=_non_negative_int, default=0, metavar="N",
                   help="stop when the best pair occurs fewer than N times")
    p.add_argument("--max-token-length", type=_positive_int, default=None, metavar="N",
                   help="learned tokens have at most N bytes")
    p.add_argument("--field", default="text", help="the text field of .jsonl records, column of .parquet files (default: text)")
    p.add_argument("--threads", type=_positive_int, default=None, metavar="N", help="threads (default: all cores)")
    p.add_argument("--format", choices=("json", "tiktoken", "gpt2"), default=None,
                   help="output format (default: from the -o suffix)")
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="where to write the tokenizer")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "encode", parents=[quiet], help="encode text files into a token-id array (.npy or .bin)",
        description="Encode text into one flat array of token ids, streaming with bounded memory "
        "on all cores. The end-of-text id goes between consecutive documents. Special-token text "
        "in the input is encoded as ordinary text unless --allow-special. Output: .npy (NumPy "
        "array) or anything else = raw little-endian ids (.bin); uint16 when the vocabulary fits, "
        "else uint32. A directory (-o DIR/, or --shard-tokens) gets token shards for training: "
        "DIR/shard-00000.bin ... (raw ids, --shard-tokens each) and DIR/index.json (dtype, tokens "
        "and documents per shard). .parquet inputs: each row of the --field column is a document.",
    )  # fmt: skip
    p.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER", help=_TOKENIZER_HELP)
    p.add_argument("files", nargs="+", metavar="FILE", help="input text (.txt, .jsonl, .gz, .parquet)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file (.npy or .bin), or DIR/ for token shards")
    p.add_argument("--shard-tokens", type=_positive_int, default=None, metavar="N",
                   help=f"write token shards of N ids into the -o directory (default for DIR/: {_DEFAULT_SHARD_TOKENS:,})")
    p.add_argument("--dtype", choices=("uint16", "uint32"), default=None, help="force the id type")
    p.add_argument("--no-eot", action="store_true", help="no end-of-text id between documents")
    p.add_argument("--eot", default=None, metavar="TOKEN",
                   help="the special token put between documents (default: <|endoftext|>)")
    p.add_argument("--txt-docs", choices=("file", "blank-line", "line"), default="file", help=_DOCS_HELP)
    p.add_argument("--field", default="text", help="the text field of .jsonl records, column of .parquet files (default: text)")
    p.add_argument("--allow-special", action="store_true",
                   help="text of a special token encodes to its id (default: as ordinary text)")
    p.add_argument("--threads", type=_positive_int, default=None, metavar="N", help="threads (default: all cores)")
    p.add_argument("--chunk-mb", type=_positive_int, default=_DEFAULT_CHUNK_MB, metavar="MB",
                   help=f"text encoded per batch, in MB (default {_DEFAULT_CHUNK_MB}); bounds memory")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser(
        "decode", parents=[quiet], help="decode a token-id file back to text",
        description="Decode a .npy or .bin id file (as written by 'numtok encode') to text on stdout "
        "or -o. End-of-text ids separate documents, written back as --txt-docs says (or one JSON "
        "record per document with --jsonl).",
    )  # fmt: skip
    p.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER", help=_TOKENIZER_HELP)
    p.add_argument("file", metavar="FILE", help="ids: .npy, or raw .bin (see --dtype)")
    p.add_argument("-o", "--output", default="-", metavar="OUT", help="output file (default: stdout)")
    p.add_argument("--dtype", choices=("uint16", "uint32", "int32"), default=None,
                   help="id type of a raw .bin file (default: uint16 when the vocabulary fits, else uint32)")
    p.add_argument("--txt-docs", choices=("file", "blank-line", "line"), default="file",
                   help="how documents are joined: 'file' = back to back, 'blank-line' = one empty line "
                   "between them, 'line' = one per line")
    p.add_argument("--jsonl", action="store_true", help="one JSON record per document")
    p.add_argument("--field", default="text", help="the field name for --jsonl (default: text)")
    p.add_argument("--eot", default=None, metavar="TOKEN", help="the document separator token (default: <|endoftext|>)")
    p.add_argument("--keep-eot", action="store_true", help="write the separator token's text instead of splitting")
    p.set_defaults(func=cmd_decode)

    p = sub.add_parser("info", help="describe a tokenizer",
                       description="Vocabulary size, pattern, special tokens and the longest tokens.")
    p.add_argument("tokenizer", metavar="TOKENIZER", help=_TOKENIZER_HELP)
    p.add_argument("--top", type=_non_negative_int, default=10, metavar="N", help="how many longest tokens (default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser(
        "demo", parents=[quiet], help="train a small tokenizer on a bundled text and show it at work",
        description="Train on the first chapters of Pride and Prejudice (public domain, shipped with "
        "numtok) and print a few encodings. Takes seconds.",
    )  # fmt: skip
    p.add_argument("--vocab-size", type=_positive_int, default=1000, metavar="N", help="default 1000")
    p.add_argument("--pattern", default="gpt2", help="pre-tokenizer (default gpt2)")
    p.add_argument("-o", "--output", default=None, metavar="PATH", help="also save the tokenizer (tokenizer.json)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "warmup", parents=[quiet], help="compile every kernel ahead (for images, CI caches and cluster workers)",
        description="Compile numtok's Numba kernels for this machine in parallel processes and save them "
        "where later processes load them (printed at the end). Add 'RUN numtok warmup' to a Dockerfile "
        "after installing numtok.",
    )  # fmt: skip
    p.add_argument("--processes", type=_positive_int, default=None, metavar="N", help="worker processes (default: all cores)")
    p.add_argument("--jobs", default=None, metavar="A,B", help="only these areas: encode, encodings, train, wordpiece, arrow")
    p.set_defaults(func=cmd_warmup)
    return parser


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
        from ._native.jit import set_quiet

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


def _progress_enabled(args) -> bool | None:
    return False if getattr(args, "quiet", False) else None


def _say(args, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# tokenizer resolution


def load_tokenizer(spec: str):
    """A Tokenizer from a bundled name, a tokenizer.json, a .tiktoken file or a directory."""
    from .encode import registry
    from .encode.tokenizer import Tokenizer
    from .io.tiktoken_file import sidecar_arguments

    if spec in registry.list_encodings():
        return registry.load(spec)
    if not os.path.exists(spec):
        raise UserError(
            f"tokenizer {spec!r} is neither a file nor a bundled encoding "
            f"({', '.join(registry.list_encodings())})"
        )
    if os.path.isdir(spec):
        if os.path.isfile(os.path.join(spec, "tokenizer.json")):
            return load_tokenizer(os.path.join(spec, "tokenizer.json"))
        vocab, merges = os.path.join(spec, "vocab.json"), os.path.join(spec, "merges.txt")
        if os.path.isfile(vocab) and os.path.isfile(merges):
            return _readable(Tokenizer.from_gpt2, spec, vocab, merges)
        raise UserError(f"{spec}: directory has neither tokenizer.json nor vocab.json + merges.txt")
    with open(spec, "rb") as f:
        head = f.read(64)
    if head.lstrip()[:1] == b"{":
        return _readable(Tokenizer.from_file, spec, spec)
    return _readable(lambda path: Tokenizer.from_tiktoken(path, **sidecar_arguments(path)), spec, spec)


def _readable(loader, spec, *args):
    try:
        return loader(*args)
    except (ValueError, UnicodeDecodeError, KeyError, TypeError) as exc:
        text = str(exc)
        if "WordPiece.from_file" in text:
            text = (f"{spec} is a WordPiece tokenizer; the command line handles byte-level BPE only "
                    "(in Python: numtok.WordPiece.from_file)")
        raise UserError(text if spec in text else f"cannot read tokenizer {spec}: {text}") from None


def _eot_id(tok, name: str | None) -> int | None:
    specials = tok.special_tokens
    if name is None:
        return specials.get("<|endoftext|>")
    if name not in specials:
        shown = ", ".join(list(specials)[:8]) or "none"
        raise UserError(f"--eot {name!r} is not a special token of this tokenizer (its special tokens: {shown})")
    return specials[name]


def _dtype_for(tok, forced: str | None) -> np.dtype:
    if forced is not None:
        dtype = np.dtype(forced)
        if tok.n_vocab > np.iinfo(dtype).max + 1:
            raise UserError(f"--dtype {forced} holds ids up to {np.iinfo(dtype).max}, but the vocabulary has {tok.n_vocab:,} ids")
        return dtype
    return np.dtype(np.uint16) if tok.n_vocab <= 65536 else np.dtype(np.uint32)


# ---------------------------------------------------------------------------------------------
# train


def _infer_format(output: str, forced: str | None) -> str:
    if forced is not None:
        return forced
    if output.endswith(".tiktoken"):
        return "tiktoken"
    if os.path.isdir(output) or output.endswith(os.sep):
        return "gpt2"
    return "json"


def _check_output_dir(path: str, is_dir: bool = False) -> None:
    parent = os.path.dirname(os.path.abspath(path.rstrip(os.sep) if is_dir else path))
    if not os.path.isdir(parent):
        raise UserError(f"output directory does not exist: {parent}")


def _check_inputs(files: list[str]) -> None:
    for path in files:
        if not os.path.exists(path):
            raise UserError(f"no such file: {path}")
        if os.path.isdir(path):
            raise UserError(f"is a directory, not a file: {path}")


def _save(tok, output: str, fmt: str) -> None:
    if fmt == "tiktoken":
        tok.save_tiktoken(output)
    elif fmt == "gpt2":
        tok.save_gpt2(output)
    else:
        tok.save(output)


def cmd_train(args) -> int:
    import inspect

    from .pretokenizers import patterns
    from .train import trainer

    _check_inputs(args.files)
    fmt = _infer_format(args.output, args.format)
    _check_output_dir(args.output, is_dir=fmt == "gpt2")
    if args.pattern is not None:
        patterns.resolve_pattern(args.pattern)  # a bad pattern fails now, not after reading the corpus
    options = dict(
        pattern=args.pattern, special_tokens=args.special_tokens, min_frequency=args.min_frequency,
        max_token_length=args.max_token_length, show_progress=_progress_enabled(args), num_threads=args.threads,
    )  # fmt: skip
    if args.base is not None:
        options["base"] = load_tokenizer(args.base)
    source = list(args.files)
    if args.field != "text":
        if "field" in inspect.signature(trainer.train_bpe).parameters:
            options["field"] = args.field
        else:  # read the records here (the trainer then sees an iterable, and shows no ETA)
            source = _training_sequences(args.files, args.field)
    started = time.perf_counter()
    tok = trainer.train_bpe(source, args.vocab_size, **options)
    seconds = time.perf_counter() - started
    _save(tok, args.output, fmt)
    _say(args, _train_summary(tok, seconds, args.output))
    return 0


def _training_sequences(files: list[str], field: str) -> Iterator[str]:
    """What the trainer reads from paths: .jsonl records' ``field``, .txt lines (with their
    line endings)."""
    from .io.sources import _open_binary

    for path in files:
        inner = path[:-3] if path.endswith(".gz") else path
        if inner.endswith(".jsonl"):
            yield from (seg.text for seg in _jsonl_segments(path, field, 0))
            continue
        offset = 0
        with _open_binary(path) as f:
            for raw in f:
                yield _decode_utf8(raw, path, offset)
                offset += len(raw)


def _train_summary(tok, seconds: float, output: str) -> str:
    stats = dict(getattr(tok, "training_stats", None) or {})
    seconds = stats.get("seconds", seconds)
    parts = [f"trained {tok.n_vocab:,} tokens ({len(tok.merges):,} merges, pattern {tok.pattern if len(tok.pattern) < 20 else 'custom'}"
             + (f", {len(tok.special_tokens)} special" if tok.special_tokens else "") + f") in {seconds:,.1f} s"]
    if "corpus_bytes" in stats:
        mb = stats["corpus_bytes"] / 1e6
        parts.append(f"corpus {mb:,.1f} MB ({mb / max(seconds, 1e-9):,.1f} MB/s)")
    if "unique_words" in stats:
        parts.append(f"{stats['unique_words']:,} unique words")
    return "; ".join(parts) + f" -> {output}"


# ---------------------------------------------------------------------------------------------
# reading documents


@dataclass
class _Segment:
    """A piece of a document. ``new_doc`` marks the first piece of a document; a document
    cut into several pieces (large .txt files) is cut only where no pre-token spans the cut."""

    text: str
    new_doc: bool
    consumed: int  # input bytes read so far, over all files (compressed bytes for .gz)


@dataclass
class _ArrowSegment:
    """Documents of a .parquet file as one Arrow string array (encoded in place)."""

    array: object
    consumed: int


def _decode_utf8(raw: bytes, path: str, offset: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not valid UTF-8 at byte {offset + exc.start}") from None


def _iter_segments(files: list[str], txt_docs: str, field: str, *, cut: bool,
                   chunk_bytes: int = _DEFAULT_CHUNK_MB << 20) -> Iterator[_Segment]:
    base = 0
    for path in files:
        inner = path[:-3] if path.endswith(".gz") else path
        try:
            if inner.lower().endswith((".parquet", ".parq")):
                yield from _parquet_segments(path, field, base, chunk_bytes)
            elif inner.endswith(".jsonl"):
                yield from _jsonl_segments(path, field, base)
            elif txt_docs == "file":
                # Pieces of about 1 MB, so one big document still spreads over all threads.
                yield from _file_segments(path, base, cut, min(chunk_bytes, _SEGMENT_BYTES))
            else:
                yield from _line_segments(path, base, txt_docs == "line")
        except (EOFError, gzip.BadGzipFile, json.JSONDecodeError) as exc:
            raise UserError(f"{path}: cannot read: {exc}") from None
        base += os.path.getsize(path)


_JSONL_ERRORS = {
    "json": "{path}:{line_no}: not a JSON record ({detail})",
    "field": "{path}:{line_no}: the record has no {field!r} field (see --field)",
    "type": "{path}:{line_no}: field {field!r} is not a string",
}


def _parquet_segments(path: str, field: str, base: int, chunk_bytes: int) -> Iterator[_ArrowSegment]:
    from .io.arrow import string_arrays
    from .io.parquet import parquet_batches

    first = 0
    for column, consumed in parquet_batches(path, field, target_bytes=chunk_bytes):
        try:
            string_arrays(column)
        except TypeError as exc:
            raise UserError(f"{path}: column {field!r}: {exc}") from None
        if column.null_count:
            row = first + int(np.argmax(column.is_null().to_numpy(zero_copy_only=False)))
            raise UserError(f"{path}: row {row} of column {field!r} is null")
        yield _ArrowSegment(column, base + consumed)
        first += len(column)


def _jsonl_segments(path: str, field: str, base: int) -> Iterator[_Segment]:
    from .io.sources import JsonlRecordError, _open_binary, _raw_position, iter_jsonl_texts

    with _open_binary(path) as f:
        try:
            for text in iter_jsonl_texts(f, path, field):
                yield _Segment(text, True, base + _raw_position(f))
        except JsonlRecordError as exc:
            message = _JSONL_ERRORS[exc.reason].format(path=path, line_no=exc.line_no, field=field, detail=exc.detail)
            raise UserError(message) from None


def _line_segments(path: str, base: int, per_line: bool) -> Iterator[_Segment]:
    from .io.sources import _open_binary, _raw_position

    offset = 0
    with _open_binary(path) as f:
        if per_line:
            for raw in f:
                text = _decode_utf8(raw, path, offset)
                offset += len(raw)
                yield _Segment(text[:-2] if text.endswith("\r\n") else text.rstrip("\n"), True, base + _raw_position(f))
            return
        lines: list[str] = []
        for raw in f:
            text = _decode_utf8(raw, path, offset)
            offset += len(raw)
            if text in ("\n", "\r\n"):
                if lines:
                    yield _Segment("".join(lines), True, base + _raw_position(f))
                    lines = []
                continue
            lines.append(text)
        if lines:
            yield _Segment("".join(lines), True, base + _raw_position(f))


def _safe_cut(block: bytes, lo: int) -> int:
    """The last position ``c > lo`` in ``block`` where an ASCII letter is followed by a space,
    or -1. No piece of the named patterns (gpt2, r50k, cl100k, o200k) spans such a position
    (the letter run ends there, and the piece that starts there is the same whether or not
    text precedes it), so the two sides encode exactly as the whole does."""
    c = block.rfind(b" ", lo)
    while c > lo:
        if 97 <= (block[c - 1] | 0x20) <= 122:
            return c
        c = block.rfind(b" ", lo, c)
    return -1


def _file_segments(path: str, base: int, cut: bool, chunk_bytes: int) -> Iterator[_Segment]:
    from .io.sources import _open_binary, _raw_position

    offset = 0
    carry = b""
    first = True
    with _open_binary(path) as f:
        while True:
            block = f.read(chunk_bytes)
            if not block:
                break
            data = carry + block
            c = _safe_cut(data, max(1, len(data) - (chunk_bytes // 2))) if cut else -1
            if c <= 0:
                carry = data  # no safe cut yet: keep reading (memory grows only on such text)
                continue
            yield _Segment(_decode_utf8(data[:c], path, offset), first, base + _raw_position(f))
            first = False
            offset += c
            carry = data[c:]
        if carry or first:
            yield _Segment(_decode_utf8(carry, path, offset), first, base + _raw_position(f))


# ---------------------------------------------------------------------------------------------
# encode


def _npy_header(dtype: np.dtype, n: int) -> bytes:
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (dtype.str, n)
    body_len = _NPY_HEADER_BYTES - 10
    text = text.ljust(body_len - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + body_len.to_bytes(2, "little") + text.encode("latin-1")


def _cut_allowed(tok, allow_special: bool) -> bool:
    from .pretokenizers.patterns import NAMED_PATTERNS

    if tok.pattern not in NAMED_PATTERNS:
        return False  # a custom regex: no cut is known to be safe, each document is read whole
    return not (allow_special and any(" " in s for s in tok.special_tokens))


def cmd_encode(args, tokenizer=None) -> int:
    """``numtok encode``; ``tokenizer`` (a Tokenizer) replaces loading ``args.tokenizer``."""
    _check_inputs(args.files)
    shards = args.shard_tokens is not None or args.output.endswith(os.sep)
    _check_output_dir(args.output, is_dir=shards)
    if shards and os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UserError(f"--shard-tokens writes into a directory, but {args.output} is a file")
    if not shards and os.path.isdir(args.output):
        raise UserError(f"the output is a directory: {args.output} (for token shards: -o {args.output.rstrip(os.sep)}{os.sep})")
    tok = tokenizer if tokenizer is not None else load_tokenizer(args.tokenizer)
    dtype = _dtype_for(tok, args.dtype)
    eot = None if args.no_eot else _eot_id(tok, args.eot)
    threads = args.threads or usable_cores()
    chunk_bytes = args.chunk_mb << 20
    cut = _cut_allowed(tok, args.allow_special)
    total = sum(os.path.getsize(p) for p in args.files)
    npy = args.output.endswith(".npy")

    from .io.atomic import atomic_write
    from .progress import Progress

    def encode(texts):  # a list of str, or an Arrow string array
        if args.allow_special:
            return tok.encode_batch(texts, num_threads=threads, allowed_special="all", disallowed_special=())
        return tok.encode_ordinary_batch(texts, num_threads=threads)

    started = time.perf_counter()
    n_tokens = n_docs = 0
    bar = Progress("Encoding", total=total, unit="B", enabled=_progress_enabled(args))
    if shards:
        from .io.shards import ShardWriter

        metadata = {"tokenizer": args.tokenizer, "eot": eot}
        output = ShardWriter(args.output, args.shard_tokens or _DEFAULT_SHARD_TOKENS, dtype, metadata)
    else:
        output = atomic_write(args.output, "w+b")
    with output as out, ThreadPoolExecutor(1) as pool:
        if npy and not shards:
            out.write(_npy_header(dtype, 0))
        pending = None  # (future, segments): the previous batch encodes while this one is read
        for batch in _batches(_iter_segments(args.files, args.txt_docs, args.field, cut=cut, chunk_bytes=chunk_bytes), chunk_bytes):
            future = pool.submit(encode, batch[0].array if isinstance(batch[0], _ArrowSegment) else [s.text for s in batch])
            if pending is not None:
                n, d = _write_batch(out, *pending, eot, dtype, n_docs)
                n_tokens, n_docs = n_tokens + n, n_docs + d
                bar.set(pending[1][-1].consumed)
            pending = (future, batch)
        if pending is not None:
            n, d = _write_batch(out, *pending, eot, dtype, n_docs)
            n_tokens, n_docs = n_tokens + n, n_docs + d
            bar.set(pending[1][-1].consumed)
        if npy and not shards:
            out.seek(0)
            out.write(_npy_header(dtype, n_tokens))
    bar.close()
    seconds = time.perf_counter() - started
    _say(args, f"encoded {n_docs:,} document{'s' if n_docs != 1 else ''}, {total / 1e6:,.1f} MB -> {n_tokens:,} tokens ({dtype.name}"
               f"{', end-of-text ' + str(eot) + ' between documents' if eot is not None else ''}) in {seconds:,.1f} s "
               f"({total / 1e6 / max(seconds, 1e-9):,.1f} MB/s) -> {args.output}")
    return 0


def _batches(segments: Iterator, chunk_bytes: int) -> Iterator[list]:
    """Segments in batches of about ``chunk_bytes``; an Arrow segment is a batch of its own."""
    batch: list = []
    size = 0
    for seg in segments:
        if isinstance(seg, _ArrowSegment):
            if batch:
                yield batch
                batch, size = [], 0
            yield [seg]
            continue
        batch.append(seg)
        size += len(seg.text)
        if size >= chunk_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _write_batch(out, future, segments: list, eot: int | None, dtype: np.dtype, docs_before: int) -> tuple[int, int]:
    """Write one encoded batch (to a file, or a ShardWriter); returns (tokens written,
    documents started)."""
    enc = future.result()
    ids = enc.ids
    if isinstance(segments[0], _ArrowSegment):
        starts = np.arange(len(enc))
    else:
        starts = np.array([i for i, s in enumerate(segments) if s.new_doc], dtype=np.int64)
    # Where each document's ids start once the end-of-text ids are in.
    doc_starts = enc.offsets[starts]
    if eot is not None and len(starts):
        # The end-of-text id goes before every document but the very first.
        at = starts[starts > 0] if not docs_before else starts
        if len(at):
            ids = np.insert(ids, enc.offsets[at], eot)
            doc_starts = doc_starts + np.searchsorted(enc.offsets[at], doc_starts, side="right")
    arr = ids.astype(dtype, copy=False)
    if hasattr(out, "shard_tokens"):
        out.write(arr, doc_starts=doc_starts)
    else:
        out.write(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
    return len(arr), len(starts)


# ---------------------------------------------------------------------------------------------
# decode


def _open_ids(path: str, tok, dtype_name: str | None) -> np.ndarray:
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "No such file", path)
    if path.endswith(".npy"):
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise UserError(f"{path}: not a readable .npy file ({exc})") from None
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise UserError(f"{path}: expected a 1-D integer array, got {arr.dtype} with shape {arr.shape}")
        return arr
    dtype = np.dtype(dtype_name) if dtype_name else _dtype_for(tok, None)
    size = os.path.getsize(path)
    if size % dtype.itemsize:
        raise UserError(f"{path}: {size} bytes is not a whole number of {dtype.name} ids (see --dtype)")
    if size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype.newbyteorder("<"), mode="r")


class _DocWriter:
    """Writes decoded documents in the --txt-docs / --jsonl convention, part by part."""

    def __init__(self, args, out):
        self.out, self.jsonl, self.field = out, args.jsonl, args.field
        self.sep = {"file": b"", "blank-line": b"\n", "line": b"\n"}[args.txt_docs]
        self.final = b"\n" if args.txt_docs == "line" else b""
        self.docs = 0
        self.parts: list[bytes] = []
        self.started = False

    def part(self, data: bytes) -> None:
        if self.jsonl:
            self.parts.append(data)
            return
        if not self.started:
            self._begin()
        self.out.write(data)

    def end(self) -> None:
        if self.jsonl:
            record = {self.field: b"".join(self.parts).decode("utf-8", errors="replace")}
            self.out.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
            self.parts = []
        elif not self.started:
            self._begin()  # an empty document still takes its separator
        self.docs += 1
        self.started = False

    def close(self) -> None:
        if self.docs and not self.jsonl:
            self.out.write(self.final)

    def _begin(self) -> None:
        if self.docs:
            self.out.write(self.sep)
        self.started = True


def cmd_decode(args) -> int:
    tok = load_tokenizer(args.tokenizer)
    ids = _open_ids(args.file, tok, args.dtype)
    eot = None if args.keep_eot else _eot_id(tok, args.eot)
    if len(ids) and int(ids.max()) >= tok.n_vocab:
        bad = int(np.argmax(np.asarray(ids) >= tok.n_vocab))
        raise UserError(f"{args.file}: id {int(ids[bad])} at position {bad} is not in the vocabulary "
                        f"({tok.n_vocab:,} ids): wrong tokenizer or --dtype?")
    to_stdout = args.output == "-"
    if not to_stdout:
        _check_output_dir(args.output)
    from .io.atomic import atomic_write

    step = 1 << 20
    try:
        with (_StdoutBinary() if to_stdout else atomic_write(args.output, "wb")) as out:
            writer = _DocWriter(args, out)
            for lo in range(0, len(ids), step):
                chunk = np.asarray(ids[lo : lo + step], dtype=np.int64)
                start = 0
                if eot is not None:
                    for c in np.flatnonzero(chunk == eot).tolist():
                        writer.part(tok.decode_bytes(chunk[start:c]))
                        writer.end()
                        start = c + 1
                writer.part(tok.decode_bytes(chunk[start:]))
            writer.end()  # the text after the last separator is the last document
            writer.close()
    except BrokenPipeError:
        # The reader went away (``numtok decode ... | head``): not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


class _StdoutBinary:
    def __enter__(self):
        return sys.stdout.buffer

    def __exit__(self, *exc):
        sys.stdout.buffer.flush()


# ---------------------------------------------------------------------------------------------
# info


def _token_repr(b: bytes) -> str:
    try:
        return repr(b.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(b)


def tokenizer_info(tok, top: int = 10) -> dict:
    """The facts ``numtok info`` prints."""
    from .pretokenizers.patterns import NAMED_PATTERNS

    specials = tok.special_tokens
    special_ids = set(specials.values())
    vocab = tok.vocab
    mergeable = {t: i for t, i in vocab.items() if i not in special_ids or t.decode("utf-8", "replace") not in specials}
    longest = sorted(mergeable.items(), key=lambda kv: (-len(kv[0]), kv[1]))[:top]
    rank_mode = bool(getattr(tok, "_rank_mode", False))
    return {
        "name": tok.name,
        "mode": "ranks (tiktoken)" if rank_mode else "merges (Hugging Face BPE)",
        "n_vocab": tok.n_vocab,
        "mergeable_tokens": len(mergeable),
        "merges": None if rank_mode else len(tok.merges),
        "pattern": tok.pattern if tok.pattern in NAMED_PATTERNS else "custom",
        "pattern_regex": NAMED_PATTERNS.get(tok.pattern, tok.pattern),
        "special_tokens": specials,
        "eot_token": tok.eot_token,
        "longest_tokens": [{"id": i, "bytes": len(t), "token": t.decode("utf-8", "replace")} for t, i in longest],
        "_longest_raw": longest,
    }


class _Version(argparse.Action):
    # Not argparse's "version": which kernels are in use is known only once Numba is imported.
    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__
        from ._native.jit import describe_kernels

        print(f"numtok {__version__}\nkernels: {describe_kernels()}")
        parser.exit()


def cmd_info(args) -> int:
    from ._native.jit import describe_kernels

    tok = load_tokenizer(args.tokenizer)
    info = tokenizer_info(tok, args.top)
    longest = info.pop("_longest_raw")
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=2))
        return 0
    specials = info["special_tokens"]
    shown = ", ".join(f"{s}={i}" for s, i in list(specials.items())[:12])
    if len(specials) > 12:
        shown += f", ... ({len(specials) - 12} more)"
    lines = [
        f"tokenizer:      {args.tokenizer}" + (f" ({info['name']})" if info["name"] and info["name"] != args.tokenizer else ""),
        f"mode:           {info['mode']}",
        f"vocab size:     {info['n_vocab']:,} ids ({info['mergeable_tokens']:,} tokens + {len(specials)} special)",
    ]
    if info["merges"] is not None:
        lines.append(f"merges:         {info['merges']:,}")
    lines += [
        f"pattern:        {info['pattern']}",
        f"  regex:        {info['pattern_regex']}",
        f"special tokens: {shown or 'none'}",
        f"end-of-text:    {info['eot_token'] if info['eot_token'] is not None else 'none'}",
        f"kernels:        {describe_kernels()}",
    ]
    if longest:
        lines.append("longest tokens: (bytes, id, token)")
        lines += [f"  {len(t):4d} {i:>8} {_token_repr(t)}" for t, i in longest]
    print("\n".join(lines))
    return 0


# ---------------------------------------------------------------------------------------------
# demo

_DEMO_TEXT = "pride_and_prejudice.txt"
_DEMO_SENTENCES = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.",
    "Mr. Darcy danced only once with Miss Bennet.",
    "Tokenizers turn text into numbers: 12345 tokens/s, naïve café, 東京!",
]


def cmd_demo(args) -> int:
    from .encode.registry import DATA_DIR
    from .train.trainer import train_bpe

    path = os.path.join(DATA_DIR, _DEMO_TEXT)
    if not os.path.isfile(path):
        raise UserError(f"the demo text is missing from the installation: {path}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    print(f"Training a {args.vocab_size:,}-token BPE tokenizer (pattern {args.pattern}) on "
          f"{len(text.encode()) / 1e3:,.0f} KB of Pride and Prejudice (chapters 1-19, public domain)...", flush=True)
    started = time.perf_counter()
    tok = train_bpe(text.splitlines(keepends=True), args.vocab_size, pattern=args.pattern,
                    special_tokens=["<|endoftext|>"], show_progress=_progress_enabled(args))
    seconds = time.perf_counter() - started
    ids = tok.encode_ordinary(text)
    print(f"  {len(tok.merges):,} merges in {seconds:.1f} s; the text is {len(text.encode()):,} bytes = "
          f"{len(ids):,} tokens ({len(text.encode()) / max(len(ids), 1):.2f} bytes per token)")
    if seconds > 5:
        print("  (most of that time was Numba compiling numtok's kernels; they are cached, so the next run is fast)")
    print()
    print("First merges:   " + "  ".join(_show(a) + "+" + _show(b) for a, b in tok.merges[:8]))
    longest = sorted((t for t in tok.vocab if t not in {s.encode() for s in tok.special_tokens}), key=len, reverse=True)[:8]
    print("Longest tokens: " + "  ".join(_show(t) for t in longest) + "\n")
    for sentence in _DEMO_SENTENCES:
        sids = tok.encode_ordinary(sentence)
        pieces = tok.decode_tokens_bytes(sids)
        print(f"{sentence}\n  {len(sids)} tokens: " + "|".join(_show(p) for p in pieces))
        print(f"  ids: {' '.join(map(str, sids.tolist()[:24]))}{' ...' if len(sids) > 24 else ''}")
        assert tok.decode(sids) == sentence
    print("\nDecoding gives the text back exactly; unseen characters (é, 東) fall back to bytes.")
    if args.output:
        _check_output_dir(args.output)
        tok.save(args.output)
        print(f"Saved to {args.output} (loads in numtok, HF tokenizers and transformers).")
    print("Next: numtok train FILES --vocab-size 32000 -o tokenizer.json; numtok encode -t tokenizer.json FILES -o ids.npy")
    return 0


def cmd_warmup(args) -> int:
    from .precompile import warmup

    jobs = tuple(j.strip() for j in args.jobs.split(",") if j.strip()) if args.jobs else None
    location = warmup(processes=args.processes, jobs=jobs, quiet=args.quiet)
    print(location)
    return 0


def _show(b: bytes) -> str:
    text = b.decode("utf-8", errors="backslashreplace")
    return text.replace("\n", "\\n").replace(" ", "\u2423") if text.strip() != text or "\n" in text else text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
