"""The ``numtok`` commands: each checks its arguments, calls the library and prints one summary line."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from .common import UserError, check_inputs, check_output_dir, load_tokenizer, option, progress_enabled, say

# ---------------------------------------------------------------------------------------------
# train


def _infer_format(output: str, forced: str | None) -> str:
    if forced is not None:
        return forced
    return "tiktoken" if output.endswith(".tiktoken") else "gpt2" if os.path.isdir(output) or output.endswith(os.sep) else "json"


def cmd_train(args) -> int:
    from ..pretokenizers import patterns
    from ..train import trainer

    source = _weighted_inputs(args.files, args.weights)
    check_inputs([path for path, _ in source])
    fmt = _infer_format(args.output, args.format)
    check_output_dir(args.output, is_dir=fmt == "gpt2")
    if args.pattern is not None:
        patterns.resolve_pattern(args.pattern)  # a bad pattern fails now, not after reading the corpus
    base = load_tokenizer(args.base) if args.base is not None else None
    started = time.perf_counter()
    tok = trainer.train_bpe(
        source if args.weights else [path for path, _ in source],
        args.vocab_size,
        pattern=args.pattern,
        special_tokens=args.special_tokens,
        min_frequency=args.min_frequency,
        max_token_length=args.max_token_length,
        field=args.field,
        show_progress=progress_enabled(args),
        num_threads=args.threads,
        base=base,
    )
    seconds = time.perf_counter() - started
    {"tiktoken": tok.save_tiktoken, "gpt2": tok.save_gpt2}.get(fmt, tok.save)(args.output)
    say(args, _train_summary(tok, seconds, args.output))
    return 0


def _weighted_inputs(files: list[str], weights: list[str]) -> list[tuple[str, float]]:
    """The inputs in order with their weights: FILEs first, then --weight paths not among them."""
    from ..train.weights import check_weight

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
    parts = [
        f"trained {tok.n_vocab:,} tokens ({len(tok.merges):,} merges, pattern {tok.pattern if len(tok.pattern) < 20 else 'custom'}"
        + (f", {len(tok.special_tokens)} special" if tok.special_tokens else "")
        + f") in {seconds:,.1f} s"
    ]
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
    from ..io.encode_files import encode_files, eot_id, id_dtype

    check_inputs(args.files)
    shards = args.shard_tokens is not None or args.output.endswith(os.sep)
    check_output_dir(args.output, is_dir=shards)
    if shards and os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UserError(f"--shard-tokens writes into a directory, but {args.output} is a file")
    if not shards and os.path.isdir(args.output):
        raise UserError(f"the output is a directory: {args.output} (for token shards: -o {args.output.rstrip(os.sep)}{os.sep})")
    tok = tokenizer if tokenizer is not None else load_tokenizer(args.tokenizer)
    eot = False if args.no_eot else (args.eot if args.eot is not None else True)
    option(id_dtype, tok, args.dtype), option(eot_id, tok, eot)
    done = encode_files(
        args.files,
        tok,
        args.output,
        field=args.field,
        txt_docs=args.txt_docs,
        dtype=args.dtype,
        eot=eot,
        allow_special=args.allow_special,
        shard_tokens=args.shard_tokens,
        num_threads=args.threads,
        chunk_bytes=args.chunk_mb << 20,
        show_progress=progress_enabled(args),
        tokenizer_name=args.tokenizer,
    )
    mb, seconds = done.input_bytes / 1e6, done.seconds
    say(
        args,
        f"encoded {done.documents:,} document{'s' if done.documents != 1 else ''}, {mb:,.1f} MB -> {done.tokens:,} tokens "
        f"({done.dtype.name}{', end-of-text ' + str(done.eot) + ' between documents' if done.eot is not None else ''}) "
        f"in {seconds:,.1f} s ({mb / max(seconds, 1e-9):,.1f} MB/s) -> {args.output}",
    )
    return 0


# ---------------------------------------------------------------------------------------------
# decode


def cmd_decode(args) -> int:
    from ..io.atomic import atomic_write
    from ..io.decode_file import decode_ids, open_ids
    from ..io.encode_files import eot_id

    tok = load_tokenizer(args.tokenizer)
    ids = open_ids(args.file, tok, args.dtype)
    eot = False if args.keep_eot else (args.eot if args.eot is not None else True)
    option(eot_id, tok, eot)
    to_stdout = args.output == "-"
    if not to_stdout:
        check_output_dir(args.output)
    try:
        with contextlib.nullcontext(sys.stdout.buffer) if to_stdout else atomic_write(args.output, "wb") as out:
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
    from ..evaluation.report import require_matplotlib

    if args.output is not None:
        check_output_dir(args.output, is_dir=True)
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
    from ..evaluation.report import format_table, write_report

    print(format_table(rows))
    if args.output is not None:
        written = write_report(rows, args.output, plot=args.plot, kind=kind)
        say(args, "wrote " + ", ".join(written))


def cmd_eval(args) -> int:
    from ..evaluation.runner import evaluate

    check_inputs(args.files)
    _check_report_args(args)
    tokenizers = {spec: load_tokenizer(spec) for spec in dict.fromkeys(args.tokenizers)}
    rows = evaluate(tokenizers, list(args.files), group_by=args.group_by, field=args.field, num_threads=args.threads, show_progress=progress_enabled(args))
    _report(args, rows, "eval")
    return 0


def cmd_sweep(args) -> int:
    from ..evaluation.sweep import sweep
    from ..pretokenizers import patterns

    try:
        sizes = [int(k.replace("_", "")) for k in args.vocab_sizes.split(",") if k.strip()]
    except ValueError:
        raise UserError(f"--vocab-sizes takes integers separated by commas, got {args.vocab_sizes!r}") from None
    source = _weighted_inputs(args.files, args.weights)
    check_inputs([path for path, _ in source] + args.heldout)
    _check_report_args(args)
    if args.save_tokenizers and args.output is None:
        raise UserError("--save-tokenizers writes into the -o directory: give -o DIR")
    if args.pattern is not None:
        patterns.resolve_pattern(args.pattern)
    result = sweep(
        source if args.weights else [path for path, _ in source],
        sizes,
        list(args.heldout),
        group_by=args.group_by,
        field=args.field,
        pattern=args.pattern,
        special_tokens=args.special_tokens,
        min_frequency=args.min_frequency,
        num_threads=args.threads,
        show_progress=progress_enabled(args),
    )
    _report(args, result.rows, "sweep")
    if args.save_tokenizers:
        for k in result.sizes:
            result.tokenizer_of(k).save(os.path.join(args.output, f"tokenizer-{k}.json"))
        say(args, f"wrote {len(result.sizes)} tokenizers to {args.output}")
    return 0


# ---------------------------------------------------------------------------------------------
# info, demo, warmup


def _token_repr(b: bytes) -> str:
    try:
        return repr(b.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(b)


def cmd_info(args) -> int:
    from .._native.jit import describe_kernels
    from ..io.tokenizer_view import tokenizer_info

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
    from ..demo import run_demo

    run_demo(args.vocab_size, args.pattern, args.output, show_progress=progress_enabled(args))
    return 0


def cmd_warmup(args) -> int:
    from ..precompile import warmup

    jobs = tuple(j.strip() for j in args.jobs.split(",") if j.strip()) if args.jobs else None
    print(warmup(processes=args.processes, jobs=jobs, quiet=args.quiet))
    return 0
