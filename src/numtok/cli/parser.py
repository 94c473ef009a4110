"""The ``numtok`` argument parser: every command, its options and their help."""

from __future__ import annotations

import argparse

from ..io.shards import DEFAULT_SHARD_TOKENS
from .commands import cmd_decode, cmd_demo, cmd_encode, cmd_eval, cmd_info, cmd_sweep, cmd_train, cmd_warmup
from .common import PROG

_DEFAULT_CHUNK_MB = 8  # io.documents.DEFAULT_CHUNK_BYTES, named here without importing the readers


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

    for add in (_add_train, _add_encode, _add_decode, _add_eval, _add_sweep, _add_info, _add_demo, _add_warmup):
        add(sub, quiet)
    return parser


def _add_train(sub, quiet: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "train", parents=[quiet], help="train a BPE tokenizer on text files",
        description="Train a byte-level BPE tokenizer (merges identical to HF's BpeTrainer). Inputs: .txt (each line one sequence), .jsonl (the "
                    "--field of each record), either optionally .gz, .parquet (the --field column, each row one sequence). The output format follows "
                    "the -o suffix: .json = HF tokenizer.json, .tiktoken = tiktoken rank file + sidecar, a directory (or --format gpt2) = vocab.json "
                    "+ merges.txt.",
    )  # fmt: skip
    p.add_argument("files", nargs="*", metavar="FILE", help="training text (.txt, .jsonl, .gz, .parquet)")
    p.add_argument("--vocab-size", type=_positive_int, required=True, metavar="N", help="final vocabulary size, special tokens included")
    p.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="PATH=W",
        dest="weights",
        help="every word of this input counts W times (repeatable; W > 0, exact for integers, else rounded); the "
        "file is an input whether or not it is also listed as FILE; others weigh 1",
    )
    p.add_argument("--pattern", default=None, help="pre-tokenizer: gpt2 (default), r50k, cl100k, o200k, or a regex (with --base: the base's)")
    p.add_argument(
        "--base",
        default=None,
        metavar="NAME_OR_PATH",
        help="continue training this tokenizer (a bundled encoding such as o200k_base, a tokenizer.json or "
        ".tiktoken file): its tokens and merges keep their ids, new ones follow; --vocab-size is the final size",
    )
    p.add_argument(
        "--special-token",
        action="append",
        default=[],
        metavar="TOK",
        dest="special_tokens",
        help="a special token (repeatable); they take the first ids, in order",
    )
    p.add_argument("--min-frequency", type=_non_negative_int, default=0, metavar="N", help="stop when the best pair occurs fewer than N times")
    p.add_argument("--max-token-length", type=_positive_int, default=None, metavar="N", help="learned tokens have at most N bytes")
    p.add_argument("--field", default="text", help="the text field of .jsonl records, column of .parquet files (default: text)")
    p.add_argument("--threads", type=_positive_int, default=None, metavar="N", help="threads (default: all cores)")
    p.add_argument("--format", choices=("json", "tiktoken", "gpt2"), default=None, help="output format (default: from the -o suffix)")
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="where to write the tokenizer")
    p.set_defaults(func=cmd_train)


def _add_encode(sub, quiet: argparse.ArgumentParser) -> None:
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
    p.add_argument(
        "--shard-tokens",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"write token shards of N ids into the -o directory (default for DIR/: {DEFAULT_SHARD_TOKENS:,})",
    )
    p.add_argument("--dtype", choices=("uint16", "uint32"), default=None, help="force the id type")
    p.add_argument("--no-eot", action="store_true", help="no end-of-text id between documents")
    p.add_argument("--eot", default=None, metavar="TOKEN", help="the special token put between documents (default: <|endoftext|>)")
    p.add_argument("--txt-docs", choices=("file", "blank-line", "line"), default="file", help=_DOCS_HELP)
    p.add_argument("--field", default="text", help="the text field of .jsonl records, column of .parquet files (default: text)")
    p.add_argument("--allow-special", action="store_true", help="text of a special token encodes to its id (default: as ordinary text)")
    p.add_argument("--threads", type=_positive_int, default=None, metavar="N", help="threads (default: all cores)")
    p.add_argument(
        "--chunk-mb",
        type=_positive_int,
        default=_DEFAULT_CHUNK_MB,
        metavar="MB",
        help=f"text encoded per batch, in MB (default {_DEFAULT_CHUNK_MB}); bounds memory",
    )
    p.set_defaults(func=cmd_encode)


def _add_decode(sub, quiet: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "decode", parents=[quiet], help="decode a token-id file back to text",
        description="Decode a .npy or .bin id file (as written by 'numtok encode') to text on stdout or -o. End-of-text ids separate documents, "
                    "written back as --txt-docs says (or one JSON record per document with --jsonl).",
    )  # fmt: skip
    p.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER", help=_TOKENIZER_HELP)
    p.add_argument("file", metavar="FILE", help="ids: .npy, or raw .bin (see --dtype)")
    p.add_argument("-o", "--output", default="-", metavar="OUT", help="output file (default: stdout)")
    p.add_argument(
        "--dtype",
        choices=("uint16", "uint32", "int32"),
        default=None,
        help="id type of a raw .bin file (default: uint16 when the vocabulary fits, else uint32)",
    )
    p.add_argument(
        "--txt-docs",
        choices=("file", "blank-line", "line"),
        default="file",
        help="how documents are joined: 'file' = back to back, 'blank-line' = one empty line between them, 'line' = one per line",
    )
    p.add_argument("--jsonl", action="store_true", help="one JSON record per document")
    p.add_argument("--field", default="text", help="the field name for --jsonl (default: text)")
    p.add_argument("--eot", default=None, metavar="TOKEN", help="the document separator token (default: <|endoftext|>)")
    p.add_argument("--keep-eot", action="store_true", help="write the separator token's text instead of splitting")
    p.set_defaults(func=cmd_decode)


def _report_options() -> argparse.ArgumentParser:
    """The options eval and sweep share: grouping, the text field, the report directory, the plot, threads."""
    report = _Parser(add_help=False)
    report.add_argument(
        "--group-by",
        default="script",
        metavar="script|FIELD",
        help="group documents by their dominant Unicode script (default), or by a field of .jsonl/.parquet records such as lang",
    )
    report.add_argument("--field", default="text", help="the text field of .jsonl records, column of .parquet files (default: text)")
    report.add_argument("-o", "--output", default=None, metavar="DIR", help="write DIR/report.csv, report.json and (with matplotlib) report.png/.svg")
    report.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the plot in -o DIR (default: when matplotlib is installed; --plot fails without it)",
    )
    report.add_argument("--threads", type=_positive_int, default=None, metavar="N", help="threads (default: all cores)")
    return report


def _add_eval(sub, quiet: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "eval", parents=[quiet, _report_options()], help="compare tokenizers: bytes, characters and words per token, per script or language",
        description="Encode the documents of DATA with each tokenizer (batch encoder, all cores, streamed) and report per group: bytes, "
                    "characters and whitespace words per token, the share of bytes that fall back to single-byte tokens and the share of the "
                    "vocabulary used. Documents: each line of .txt files, each record of .jsonl, each row of .parquet.",
    )  # fmt: skip
    p.add_argument("-t", "--tokenizer", action="append", required=True, metavar="TOKENIZER", dest="tokenizers", help=_TOKENIZER_HELP + " (repeatable)")
    p.add_argument("files", nargs="+", metavar="DATA", help="text to evaluate on (.txt, .jsonl, .gz, .parquet)")
    p.set_defaults(func=cmd_eval)


def _add_sweep(sub, quiet: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "sweep", parents=[quiet, _report_options()], help="train once, evaluate every vocabulary size on held-out text",
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


def _add_info(sub, quiet: argparse.ArgumentParser) -> None:
    p = sub.add_parser("info", help="describe a tokenizer", description="Vocabulary size, pattern, special tokens and the longest tokens.")
    p.add_argument("tokenizer", metavar="TOKENIZER", help=_TOKENIZER_HELP)
    p.add_argument("--top", type=_non_negative_int, default=10, metavar="N", help="how many longest tokens (default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)


def _add_demo(sub, quiet: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "demo", parents=[quiet], help="train a small tokenizer on a bundled text and show it at work",
        description="Train on the first chapters of Pride and Prejudice (public domain, shipped with numtok) and print a few encodings. Takes "
                    "seconds.",
    )  # fmt: skip
    p.add_argument("--vocab-size", type=_positive_int, default=1000, metavar="N", help="default 1000")
    p.add_argument("--pattern", default="gpt2", help="pre-tokenizer (default gpt2)")
    p.add_argument("-o", "--output", default=None, metavar="PATH", help="also save the tokenizer (tokenizer.json)")
    p.set_defaults(func=cmd_demo)


def _add_warmup(sub, quiet: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "warmup", parents=[quiet], help="compile every kernel ahead (for images, CI caches and cluster workers)",
        description="Compile numtok's Numba kernels for this machine in parallel processes and save them where later processes load them (printed at "
                    "the end). Add 'RUN numtok warmup' to a Dockerfile after installing numtok.",
    )  # fmt: skip
    p.add_argument("--processes", type=_positive_int, default=None, metavar="N", help="worker processes (default: all cores)")
    p.add_argument("--jobs", default=None, metavar="A,B", help="only these areas: encode, encodings, train, wordpiece, arrow")
    p.set_defaults(func=cmd_warmup)


class _Version(argparse.Action):
    # Not argparse's "version": which kernels are in use is known only once Numba is imported.
    def __call__(self, parser, namespace, values, option_string=None):
        from .. import __version__
        from .._native.jit import describe_kernels

        print(f"numtok {__version__}\nkernels: {describe_kernels()}")
        parser.exit()
