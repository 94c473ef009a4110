"""The ``numtok`` command line: train, encode, decode, eval, sweep, info, demo, warmup.

Argument parsing and printing only: the work is done by ``train.trainer``, ``io.encode_files``,
``io.decode_file``, ``evaluation`` and ``demo``. Every command prints one line on stderr and exits non-zero on
a user mistake (missing file, unreadable tokenizer, bad option value); progress bars go to
stderr when it is a terminal (``--quiet`` turns them and the summaries off). Outputs appear
under their final name only once complete (``io/atomic.py``). How ``.txt``, ``.jsonl`` and
``.parquet`` inputs are cut into documents: ``io/documents.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from typing import TYPE_CHECKING

from .io.shards import DEFAULT_SHARD_TOKENS

if TYPE_CHECKING:
    from .encode.tokenizer import Tokenizer

__all__ = ["main"]

PROG = "numtok"
_DEFAULT_CHUNK_MB = 8  # io.documents.DEFAULT_CHUNK_BYTES, named here without importing the readers


class UserError(Exception):
    """A mistake in the command line or its inputs: reported in one line, exit code 2."""


# ---------------------------------------------------------------------------------------------
# argument parsing


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _int_type(minimum: int, word: str):
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a {word} integer, got {text!r}")
        return value

    return parse


_positive_int, _non_negative_int = _int_type(1, "positive"), _int_type(0, "non-negative")

_TOKENIZER_HELP = (
    "a bundled encoding name (cl100k_base, o200k_base, gpt2, ...), a tokenizer.json, a .tiktoken rank file (its .tiktoken.json sidecar gives pattern "
    "and special tokens), or a directory holding tokenizer.json or vocab.json + merges.txt"
)

_DOCS_HELP = (
    "documents in .txt inputs: 'file' = each file is one document (default), 'blank-line' = documents separated by empty lines, 'line' = one "
    "document per line. .jsonl inputs always have one document per record"
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
        description="Train a byte-level BPE tokenizer (merges identical to HF's BpeTrainer). Inputs: .txt (each line one sequence), .jsonl (the "
                    "--field of each record), either optionally .gz, .parquet (the --field column, each row one sequence). The output format follows "
                    "the -o suffix: .json = HF tokenizer.json, .tiktoken = tiktoken rank file + sidecar, a directory (or --format gpt2) = vocab.json "
                    "+ merges.txt.",
    )  # fmt: skip
    p.add_argument("files", nargs="*", metavar="FILE", help="training text (.txt, .jsonl, .gz, .parquet)")
    p.add_argument("--vocab-size", type=_positive_int, required=True, metavar="N", help="final vocabulary size, special tokens included")
    p.add_argument("--weight", action="append", default=[], metavar="PATH=W", dest="weights",
                   help="every word of this input counts W times (repeatable; W > 0, exact for integers, else rounded); the "
                   "file is an input whether or not it is also listed as FILE; others weigh 1")
    p.add_argument("--pattern", default=None, help="pre-tokenizer: gpt2 (default), r50k, cl100k, o200k, or a regex (with --base: the base's)")
    p.add_argument("--base", default=None, metavar="NAME_OR_PATH",
                   help="continue training this tokenizer (a bundled encoding such as o200k_base, a tokenizer.json or "
                   ".tiktoken file): its tokens and merges keep their ids, new ones follow; --vocab-size is the final size")
    p.add_argument("--special-token", action="append", default=[], metavar="TOK", dest="special_tokens",
                   help="a special token (repeatable); they take the first ids, in order")
    p.add_argument("--min-frequency", type=_non_negative_int, default=0, metavar="N", help="stop when the best pair occurs fewer than N times")
    p.add_argument("--max-token-length", type=_positive_int, default=None, metavar="N", help="learned tokens have at most N bytes")
    p.add_argument("--field", default="text", help="the text field of .jsonl records, column of .parquet files (default: text)")
    p.add_argument("--threads", type=_positive_int, default=None, metavar="N", help="threads (default: all cores)")
    p.add_argument("--format", choices=("json", "tiktoken", "gpt2"), default=None, help="output format (default: from the -o suffix)")
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="where to write the tokenizer")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "encode", parents=[quiet], help="encode text files into a token-id array (.npy or .bin)",
        description="Encode text into one flat array of token ids, streaming with bounded memory on all cores. The end-of-text id goes between "
                    "consecutive documents. Special-token text in the input is encoded as ordinary text unless --allow-special. Output: .npy (NumPy "
                    "array) or anything else = raw little-endian ids (.bin); uint16 when the vocabulary fits, else uint32. A directory (-o DIR/, or "
                    "--shard-tokens) gets token shards for training: DIR/shard-00000.bin ... (raw ids, --shard-tokens each) and DIR/index.json "
                    "(dtype, tokens and documents per shard). .parquet inputs: each row of the --field column is a document.",
    )  # fmt: skip
    p.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER", help=_TOKENIZER_HELP)
    p.add_argument("files", nargs="+", metavar="FILE", help="input text (.txt, .jsonl, .gz, .parquet)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file (.npy or .bin), or DIR/ for token shards")
    p.add_argument("--shard-tokens", type=_positive_int, default=None, metavar="N",
                   help=f"write token shards of N ids into the -o directory (default for DIR/: {DEFAULT_SHARD_TOKENS:,})")
    p.add_argument("--dtype", choices=("uint16", "uint32"), default=None, help="force the id type")
    p.add_argument("--no-eot", action="store_true", help="no end-of-text id between documents")
    p.add_argument("--eot", default=None, metavar="TOKEN", help="the special token put between documents (default: <|endoftext|>)")
    p.add_argument("--txt-docs", choices=("file", "blank-line", "line"), default="file", help=_DOCS_HELP)
    p.add_argument("--field", default="text", help="the text field of .jsonl records, column of .parquet files (default: text)")
    p.add_argument("--allow-special", action="store_true", help="text of a special token encodes to its id (default: as ordinary text)")
    p.add_argument("--threads", type=_positive_int, default=None, metavar="N", help="threads (default: all cores)")
    p.add_argument("--chunk-mb", type=_positive_int, default=_DEFAULT_CHUNK_MB, metavar="MB",
                   help=f"text encoded per batch, in MB (default {_DEFAULT_CHUNK_MB}); bounds memory")
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser(
        "decode", parents=[quiet], help="decode a token-id file back to text",
        description="Decode a .npy or .bin id file (as written by 'numtok encode') to text on stdout or -o. End-of-text ids separate documents, "
                    "written back as --txt-docs says (or one JSON record per document with --jsonl).",
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

    report = _Parser(add_help=False)
    report.add_argument("--group-by", default="script", metavar="script|FIELD",
                        help="group documents by their dominant Unicode script (default), or by a field of .jsonl/.parquet records such as lang")
    report.add_argument("--field", default="text", help="the text field of .jsonl records, column of .parquet files (default: text)")
    report.add_argument("-o", "--output", default=None, metavar="DIR", help="write DIR/report.csv, report.json and (with matplotlib) report.png/.svg")
    report.add_argument("--plot", action=argparse.BooleanOptionalAction, default=None,
                        help="the plot in -o DIR (default: when matplotlib is installed; --plot fails without it)")
    report.add_argument("--threads", type=_positive_int, default=None, metavar="N", help="threads (default: all cores)")

    p = sub.add_parser(
        "eval", parents=[quiet, report], help="compare tokenizers: bytes, characters and words per token, per script or language",
        description="Encode the documents of DATA with each tokenizer (batch encoder, all cores, streamed) and report per group: bytes, "
                    "characters and whitespace words per token, the share of bytes that fall back to single-byte tokens and the share of the "
                    "vocabulary used. Documents: each line of .txt files, each record of .jsonl, each row of .parquet.",
    )  # fmt: skip
    p.add_argument("-t", "--tokenizer", action="append", required=True, metavar="TOKENIZER", dest="tokenizers",
                   help=_TOKENIZER_HELP + " (repeatable)")
    p.add_argument("files", nargs="+", metavar="DATA", help="text to evaluate on (.txt, .jsonl, .gz, .parquet)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser(
        "sweep", parents=[quiet, report], help="train once, evaluate every vocabulary size on held-out text",
        description="Train a BPE tokenizer once to the largest size, then evaluate each size's prefix of the merges on the --eval data: "
                    "the compression curve per group that shows which vocabulary size to choose.",
    )  # fmt: skip
    p.add_argument("files", nargs="*", metavar="DATA", help="training text (.txt, .jsonl, .gz, .parquet)")
    p.add_argument("--vocab-sizes", required=True, metavar="A,B,...", help="the sizes to evaluate, e.g. 8192,16384,32768")
    p.add_argument("--eval", action="append", required=True, metavar="HELDOUT", dest="heldout", help="held-out text (repeatable)")
    p.add_argument("--weight", action="append", default=[], metavar="PATH=W", dest="weights", help="as for 'numtok train'")
    p.add_argument("--pattern", default=None, help="pre-tokenizer: gpt2 (default), r50k, cl100k, o200k, or a regex")
    p.add_argument("--special-token", action="append", default=[], metavar="TOK", dest="special_tokens", help="a special token (repeatable)")
    p.add_argument("--min-frequency", type=_non_negative_int, default=0, metavar="N", help="stop when the best pair occurs fewer than N times")
    p.add_argument("--save-tokenizers", action="store_true", help="also write DIR/tokenizer-<size>.json (HF format) for every size")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("info", help="describe a tokenizer",
                       description="Vocabulary size, pattern, special tokens and the longest tokens.")
    p.add_argument("tokenizer", metavar="TOKENIZER", help=_TOKENIZER_HELP)
    p.add_argument("--top", type=_non_negative_int, default=10, metavar="N", help="how many longest tokens (default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser(
        "demo", parents=[quiet], help="train a small tokenizer on a bundled text and show it at work",
        description="Train on the first chapters of Pride and Prejudice (public domain, shipped with numtok) and print a few encodings. Takes "
                    "seconds.",
    )  # fmt: skip
    p.add_argument("--vocab-size", type=_positive_int, default=1000, metavar="N", help="default 1000")
    p.add_argument("--pattern", default="gpt2", help="pre-tokenizer (default gpt2)")
    p.add_argument("-o", "--output", default=None, metavar="PATH", help="also save the tokenizer (tokenizer.json)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "warmup", parents=[quiet], help="compile every kernel ahead (for images, CI caches and cluster workers)",
        description="Compile numtok's Numba kernels for this machine in parallel processes and save them where later processes load them (printed at "
                    "the end). Add 'RUN numtok warmup' to a Dockerfile after installing numtok.",
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


def load_tokenizer(spec: str) -> Tokenizer:
    """A Tokenizer from a bundled name, a tokenizer.json, a .tiktoken file or a directory."""
    from .encode.from_spec import load_tokenizer as load  # here: `numtok --help` imports no Numba

    return load(spec)


def _option(resolve, *args):
    """``resolve(*args)``, its ValueError (which names the keyword) reported as the flag."""
    try:
        return resolve(*args)
    except ValueError as exc:
        raise UserError(f"--{exc}") from None


# ---------------------------------------------------------------------------------------------
# train


def _infer_format(output: str, forced: str | None) -> str:
    if forced is not None:
        return forced
    return "tiktoken" if output.endswith(".tiktoken") else "gpt2" if os.path.isdir(output) or output.endswith(os.sep) else "json"


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


def cmd_train(args) -> int:
    from .pretokenizers import patterns
    from .train import trainer

    source = _weighted_inputs(args.files, args.weights)
    _check_inputs([path for path, _ in source])
    fmt = _infer_format(args.output, args.format)
    _check_output_dir(args.output, is_dir=fmt == "gpt2")
    if args.pattern is not None:
        patterns.resolve_pattern(args.pattern)  # a bad pattern fails now, not after reading the corpus
    base = load_tokenizer(args.base) if args.base is not None else None
    started = time.perf_counter()
    tok = trainer.train_bpe(source if args.weights else [path for path, _ in source], args.vocab_size, pattern=args.pattern, special_tokens=args.special_tokens,
                            min_frequency=args.min_frequency, max_token_length=args.max_token_length, field=args.field,
                            show_progress=_progress_enabled(args), num_threads=args.threads, base=base)
    seconds = time.perf_counter() - started
    {"tiktoken": tok.save_tiktoken, "gpt2": tok.save_gpt2}.get(fmt, tok.save)(args.output)
    _say(args, _train_summary(tok, seconds, args.output))
    return 0


def _weighted_inputs(files: list[str], weights: list[str]) -> list[tuple[str, float]]:
    """The inputs in order with their weights: FILEs first, then --weight paths not among them."""
    from .train.weights import check_weight

    given: dict[str, float] = {}
    for item in weights:
        path, sep, text = item.rpartition("=")
        if not sep or not path:
            raise UserError(f"--weight takes PATH=W, got {item!r}")
        try:
            given[path] = check_weight(float(text), f"--weight {path}")
        except ValueError as exc:
            raise UserError(str(exc) if "--weight" in str(exc) else f"--weight {path}: not a number: {text!r}") from None
    inputs = list(files) + [p for p in given if p not in files]
    if not inputs:
        raise UserError("no input: give FILE arguments or --weight PATH=W")
    return [(path, given.get(path, 1)) for path in inputs]


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
# encode


def cmd_encode(args, tokenizer=None) -> int:
    """``numtok encode``; ``tokenizer`` (a Tokenizer) replaces loading ``args.tokenizer``."""
    from .io.encode_files import encode_files, eot_id, id_dtype

    _check_inputs(args.files)
    shards = args.shard_tokens is not None or args.output.endswith(os.sep)
    _check_output_dir(args.output, is_dir=shards)
    if shards and os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UserError(f"--shard-tokens writes into a directory, but {args.output} is a file")
    if not shards and os.path.isdir(args.output):
        raise UserError(f"the output is a directory: {args.output} (for token shards: -o {args.output.rstrip(os.sep)}{os.sep})")
    tok = tokenizer if tokenizer is not None else load_tokenizer(args.tokenizer)
    eot = False if args.no_eot else (args.eot if args.eot is not None else True)
    _option(id_dtype, tok, args.dtype), _option(eot_id, tok, eot)
    done = encode_files(args.files, tok, args.output, field=args.field, txt_docs=args.txt_docs, dtype=args.dtype, eot=eot,
                        allow_special=args.allow_special, shard_tokens=args.shard_tokens, num_threads=args.threads,
                        chunk_bytes=args.chunk_mb << 20, show_progress=_progress_enabled(args), tokenizer_name=args.tokenizer)
    mb, seconds = done.input_bytes / 1e6, done.seconds
    _say(args, f"encoded {done.documents:,} document{'s' if done.documents != 1 else ''}, {mb:,.1f} MB -> {done.tokens:,} tokens "
               f"({done.dtype.name}{', end-of-text ' + str(done.eot) + ' between documents' if done.eot is not None else ''}) "
               f"in {seconds:,.1f} s ({mb / max(seconds, 1e-9):,.1f} MB/s) -> {args.output}")
    return 0


# ---------------------------------------------------------------------------------------------
# decode


def cmd_decode(args) -> int:
    from .io.atomic import atomic_write
    from .io.decode_file import decode_ids, open_ids
    from .io.encode_files import eot_id

    tok = load_tokenizer(args.tokenizer)
    ids = open_ids(args.file, tok, args.dtype)
    eot = False if args.keep_eot else (args.eot if args.eot is not None else True)
    _option(eot_id, tok, eot)
    to_stdout = args.output == "-"
    if not to_stdout:
        _check_output_dir(args.output)
    try:
        with (contextlib.nullcontext(sys.stdout.buffer) if to_stdout else atomic_write(args.output, "wb")) as out:
            decode_ids(ids, tok, out, eot=eot, txt_docs=args.txt_docs, jsonl=args.jsonl, field=args.field)
            out.flush()
    except BrokenPipeError:
        # The reader went away (``numtok decode ... | head``): not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


# ---------------------------------------------------------------------------------------------
# eval, sweep


def _check_report_args(args) -> None:
    """Checks made before any work: the output directory's parent, the plot's matplotlib."""
    from .evaluation.report import require_matplotlib

    if args.output is not None:
        _check_output_dir(args.output, is_dir=True)
        if os.path.exists(args.output) and not os.path.isdir(args.output):
            raise UserError(f"-o takes a directory, but {args.output} is a file")
    if args.plot and args.output is None:
        raise UserError("--plot writes into the -o directory: give -o DIR")
    if args.plot:
        try:
            require_matplotlib()
        except ImportError as exc:
            raise UserError(str(exc)) from None


def _report(args, rows: list, kind: str) -> None:
    from .evaluation.report import format_table, write_report

    print(format_table(rows))
    if args.output is not None:
        written = write_report(rows, args.output, plot=args.plot, kind=kind)
        _say(args, "wrote " + ", ".join(written))


def cmd_eval(args) -> int:
    from .evaluation.runner import evaluate

    _check_inputs(args.files)
    _check_report_args(args)
    tokenizers = {spec: load_tokenizer(spec) for spec in dict.fromkeys(args.tokenizers)}
    rows = evaluate(tokenizers, list(args.files), group_by=args.group_by, field=args.field, num_threads=args.threads,
                    show_progress=_progress_enabled(args))
    _report(args, rows, "eval")
    return 0


def cmd_sweep(args) -> int:
    from .evaluation.sweep import sweep
    from .pretokenizers import patterns

    try:
        sizes = [int(k.replace("_", "")) for k in args.vocab_sizes.split(",") if k.strip()]
    except ValueError:
        raise UserError(f"--vocab-sizes takes integers separated by commas, got {args.vocab_sizes!r}") from None
    source = _weighted_inputs(args.files, args.weights)
    _check_inputs([path for path, _ in source] + args.heldout)
    _check_report_args(args)
    if args.save_tokenizers and args.output is None:
        raise UserError("--save-tokenizers writes into the -o directory: give -o DIR")
    if args.pattern is not None:
        patterns.resolve_pattern(args.pattern)
    result = sweep(source if args.weights else [path for path, _ in source], sizes, list(args.heldout), group_by=args.group_by,
                   field=args.field, pattern=args.pattern, special_tokens=args.special_tokens, min_frequency=args.min_frequency,
                   num_threads=args.threads, show_progress=_progress_enabled(args))
    _report(args, result.rows, "sweep")
    if args.save_tokenizers:
        for k in result.sizes:
            result.tokenizer_of(k).save(os.path.join(args.output, f"tokenizer-{k}.json"))
        _say(args, f"wrote {len(result.sizes)} tokenizers to {args.output}")
    return 0


# ---------------------------------------------------------------------------------------------
# info, demo, warmup


def _token_repr(b: bytes) -> str:
    try:
        return repr(b.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(b)


class _Version(argparse.Action):
    # Not argparse's "version": which kernels are in use is known only once Numba is imported.
    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__
        from ._native.jit import describe_kernels

        print(f"numtok {__version__}\nkernels: {describe_kernels()}")
        parser.exit()


def cmd_info(args) -> int:
    from ._native.jit import describe_kernels
    from .io.tokenizer_view import tokenizer_info

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


def cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(args.vocab_size, args.pattern, args.output, show_progress=_progress_enabled(args))
    return 0


def cmd_warmup(args) -> int:
    from .precompile import warmup

    jobs = tuple(j.strip() for j in args.jobs.split(",") if j.strip()) if args.jobs else None
    print(warmup(processes=args.processes, jobs=jobs, quiet=args.quiet))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
