#!/usr/bin/env python
"""Encoding throughput of numtok vs tiktoken, HF tokenizers (and gigatoken, TokenDagger, tokie,
kitoken when they import), all on the same text in one run.

    python benchmarks/compare_encode.py /work/corpus/mixed-10M.txt
    python benchmarks/compare_encode.py CORPUS --encodings cl100k_base --repeat 5 --threads 2
    python benchmarks/compare_encode.py CORPUS --only numtok,tiktoken --modes single,batch
    python benchmarks/compare_encode.py CORPUS --only numtok,tiktoken --modes single --short --worst
    python benchmarks/compare_encode.py /work/corpus/multi-100M.txt --by-script --modes single,batch1

Modes (every figure is MB/s of UTF-8 input, the median of the ``--repeat`` runs after each
mode's first; the machine is shared, so compare medians and the ratios to tiktoken printed next
to them):

* ``single``: the whole corpus as one string, one call, one thread (tokie is skipped here: it
  splits one long input over all cores). Every run gets the same str object: once a library's
  C API asked for its UTF-8 (tiktoken's and gigatoken's bindings do), CPython keeps a copy in
  the str and every later call, whichever library makes it, skips the conversion.
* ``fresh``: as ``single``, each run on a new copy of the string (made before the clock
  starts), which holds no UTF-8 yet: a pipeline's texts, read and encoded once each.

In every mode the clock stops when the call returns: freeing its result and the fresh copy is
the caller's work and is done off the clock (for 100 MB, 18 ms to free a copy and 170 ms to
free tiktoken's list of ids).
* ``cold``, ``unseen``, ``warm``: what a pipeline meets, on the odd-numbered distinct documents
  (split on blank lines, duplicates dropped) joined, a new str each run. ``cold``: a new tokenizer object of every library
  (empty piece caches), text it never saw. ``unseen``: a new object that first encoded the
  even-numbered documents (the same kind of text, off the clock), then the odd ones. ``warm``:
  the same text again, by an object that encoded it once (piece caches full of it).
* ``batch1``: the corpus as documents (split on blank lines), batch call, one thread.
* ``batch``: the same with ``--threads`` threads (default: all cores). Each library's fastest
  batch API: gigatoken's ``encode_batch`` (an awkward array), HF's ``encode_batch_fast``.

After each mode's first run the modes take turns (single, batch1, batch, single, ...), so that
a ratio between two of them is taken under the same machine load.

Libraries are built offline from the rank files numtok ships: tiktoken from the parsed ranks,
HF tokenizers / tokie / kitoken from a tokenizer.json numtok writes, gigatoken from a
``<name>.tiktoken`` copy. Before timing, every library's ids on the first ``--check-mb`` MB are
compared with tiktoken's ("exact" column). numtok and gigatoken keep a piece cache across
calls: ``first`` is numtok's first run on a fresh cache (text it has not seen), not counted in
the median. A numtok tokenizer's piece caches also grow between calls until they have a set per
256 bytes of all the text given (full size from 64 MiB): a run that grows one pays for it (tens
of ms: the new cache's memory is faulted in), and a text of S MB repeated grows one on the runs
where the text seen passes a power of two, two or three of the first eight for S = 3-16 MB. So
``--by-script`` medians need ``--repeat 9``; ``--repeat 5`` is enough for 100 MB corpora.

``--by-script`` (for the multi-*.txt files of benchmarks/corpus/build-multilingual) splits the
corpus into documents as the batch modes do, gives each document the script group holding >= 60%
of its letter bytes (UTF-8 bytes of all characters but whitespace, ASCII digits and punctuation and
U+0300-U+036F; a document without letters counts as latin), else ``mixed``, and times each group on
its own: ``single`` on the group's documents joined, the batch modes on them as a list. Groups:
cjk (Han, kana, CJK punctuation, fullwidth forms), korean (Hangul syllables and Jamo), cyrillic,
devanagari, latin (ASCII and Latin letters), mixed. Every library's ids from each mode's first
run, on the whole group, are compared with tiktoken's. build-multilingual's MANIFEST uses the same
rule (there on whole files, here on the blank-line-separated documents).
"""

from __future__ import annotations

import argparse
import base64
import os
import resource
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.script_groups import GROUPS, group_documents  # noqa: E402

ENCODINGS = {"r50k_base": "r50k", "cl100k_base": "cl100k", "o200k_base": "o200k"}


def timed(fn, repeat: int) -> tuple[float, float]:
    """(first, median) wall seconds of fn() over ``repeat`` runs (``fn.prepare()`` first and
    ``fn.release()`` after, off the clock, where it has them; the result is freed off the
    clock too)."""
    times = []
    for _ in range(repeat):
        if hasattr(fn, "prepare"):
            fn.prepare()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        del out
        if hasattr(fn, "release"):
            fn.release()
    return times[0], statistics.median(times)


def warm_median(times: list[float]) -> float:
    """Median of the runs after the first (the first alone if there is only one)."""
    return statistics.median(times[1:] or times)


class OnFreshCopy:
    """``encode(copy)`` where ``copy`` is a new str equal to ``text``, made by ``prepare``:
    it holds no UTF-8 a library's earlier call made CPython keep."""

    def __init__(self, encode, text: str):
        self.encode, self.text, self.copy = encode, text, None

    def prepare(self) -> None:
        self.copy = None
        self.copy = (self.text + " ")[:-1]

    def release(self) -> None:
        self.copy = None

    def __call__(self):
        return self.encode(self.copy)


class Lifecycle(OnFreshCopy):
    """Modes ``cold``, ``unseen`` and ``warm`` (see above) on ``text``; ``seen`` is the text an
    ``unseen`` run's new object encodes first."""

    def __init__(self, lib, mode: str, text: str, seen: str):
        super().__init__(lambda t: lib.encode(t), text)
        self.lib, self.mode, self.seen = lib, mode, seen

    def prepare(self) -> None:
        self.copy = None
        if self.mode in ("cold", "unseen"):
            self.lib.fresh()
        if self.mode == "unseen":
            self.lib.encode(self.seen)
        if self.mode == "warm":
            self.lib.encode(self.text)
        super().prepare()


LIFECYCLE = ("cold", "unseen", "warm")


def halves(docs: list[str]) -> tuple[str, str]:
    """(the odd-numbered distinct documents joined, the even-numbered ones): the text the
    lifecycle modes time, and the text ``unseen`` encodes first. Duplicates are dropped first
    (the multilingual corpus repeats its documents), so no timed document was seen before,
    nor appears twice in the timed text."""
    docs = list(dict.fromkeys(docs))
    return "".join(docs[1::2]), "".join(docs[0::2])


def single_call(lib, mode: str, text: str, seen: str = ""):
    """The timed call of mode ``single``, ``fresh`` or a lifecycle mode on ``text``."""
    if mode in LIFECYCLE:
        return Lifecycle(lib, mode, text, seen)
    return OnFreshCopy(lib.encode, text) if mode == "fresh" else (lambda: lib.encode(text))


def mode_runs(lib, modes: list[str], threads: int, whole: tuple, docs: tuple, half: tuple) -> dict:
    """{mode: (timed call, bytes it encodes)} of the modes ``lib`` supports: ``whole`` is (text,
    bytes) for single/fresh, ``docs`` (documents, bytes) for the batch modes, ``half`` (text,
    the text seen first, bytes) for the lifecycle modes."""
    runs = {}
    for mode in modes:
        if not mode_supported(lib, mode):
            continue
        if mode in LIFECYCLE:
            runs[mode] = (single_call(lib, mode, half[0], half[1]), half[2])
        elif mode in ("single", "fresh"):
            runs[mode] = (single_call(lib, mode, whole[0]), whole[1])
        else:
            runs[mode] = ((lambda t=1 if mode == "batch1" else threads: lib.batch(docs[0], t)), docs[1])
    return runs


def mode_supported(lib, mode: str) -> bool:
    return (mode if mode not in ("fresh", *LIFECYCLE) else "single") in lib.modes


class Library:
    name = "?"
    modes = ("single", "batch1", "batch")
    args: tuple = ()  # what it was built with (make_libraries)

    def fresh(self) -> None:
        """A new tokenizer object: no cache of an earlier call."""
        type(self).__init__(self, *self.args)

    def encode(self, text: str):  # -> sequence of ids
        raise NotImplementedError

    def batch(self, docs: list[str], threads: int):
        raise NotImplementedError


class Numtok(Library):
    name = "numtok"

    def __init__(self, encoding, workdir):
        import numtok

        self.enc = numtok.load(encoding)
        self.encoding = encoding

    def fresh(self):
        from numtok.encode import registry

        self.enc = registry._build(self.encoding, registry._ENCODINGS[self.encoding])  # not load()'s shared object

    def encode(self, text):
        return self.enc.encode_ordinary(text)

    def batch(self, docs, threads):
        return self.enc.encode_ordinary_batch(docs, num_threads=threads)

    def reset(self):
        self.enc._clear_caches()  # start from empty piece caches


class Tiktoken(Library):
    name = "tiktoken"

    def __init__(self, encoding, workdir):
        import tiktoken

        from numtok.encode import registry
        from numtok.pretokenizers.patterns import NAMED_PATTERNS

        spec = registry._ENCODINGS[encoding]
        content = registry.rank_file_content(spec.ranks)
        ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in content.splitlines() if line)}
        self.enc = tiktoken.Encoding(
            f"ref_{encoding}", pat_str=NAMED_PATTERNS[spec.pattern], mergeable_ranks=ranks,
            special_tokens=spec.special_tokens,
        )  # fmt: skip

    def encode(self, text):
        return self.enc.encode_ordinary(text)

    def batch(self, docs, threads):
        return self.enc.encode_ordinary_batch(docs, num_threads=threads)


def _hf_json(encoding, workdir) -> str:
    import numtok

    path = os.path.join(workdir, f"{encoding}.json")
    if not os.path.exists(path):
        numtok.load(encoding).save(path)
    return path


def _tiktoken_file(encoding, workdir) -> str:
    from numtok.encode import registry

    path = os.path.join(workdir, f"{encoding}.tiktoken")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(registry.rank_file_content(registry._ENCODINGS[encoding].ranks))
    return path


class HFTokenizers(Library):
    name = "hf-tokenizers"

    def __init__(self, encoding, workdir):
        import tokenizers

        self.tok = tokenizers.Tokenizer.from_file(_hf_json(encoding, workdir))

    def encode(self, text):
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        return self.tok.encode(text, add_special_tokens=False).ids

    def batch(self, docs, threads):
        os.environ["TOKENIZERS_PARALLELISM"] = "false" if threads == 1 else "true"
        out = self.tok.encode_batch_fast(docs, add_special_tokens=False)
        return [e.ids for e in out]


class Gigatoken(Library):
    name = "gigatoken"

    def __init__(self, encoding, workdir):
        import gigatoken

        self.tok = gigatoken.Tokenizer.from_tiktoken(_tiktoken_file(encoding, workdir))

    def encode(self, text):
        return self.tok.encode(text)

    def batch(self, docs, threads):
        return self.tok.encode_batch(docs, parallel=threads > 1)  # its fastest: flat ids in an awkward array


class Tokie(Library):
    name = "tokie"
    modes = ("batch",)  # its single-string encode already uses every core

    def __init__(self, encoding, workdir):
        import tokie

        self.tok = tokie.Tokenizer.from_json(_hf_json(encoding, workdir))

    def encode(self, text):
        return self.tok.encode(text).ids

    def batch(self, docs, threads):
        ids, lengths = self.tok.encode_batch_flat(docs)
        return np.split(ids, np.cumsum(lengths)[:-1])


class Kitoken(Library):
    name = "kitoken"
    modes = ("single", "batch")

    def __init__(self, encoding, workdir):
        import kitoken

        self.tok = kitoken.Kitoken.from_tiktoken_file(_tiktoken_file(encoding, workdir))

    def encode(self, text):
        return self.tok.encode(text, False)

    def batch(self, docs, threads):
        return self.tok.encode_all(docs, False)


class TokenDagger(Library):
    name = "tokendagger"

    def __init__(self, encoding, workdir):
        import tokendagger

        ref = Tiktoken(encoding, workdir).enc
        self.enc = tokendagger.Encoding(
            name=encoding, pat_str=ref._pat_str, mergeable_ranks=ref._mergeable_ranks, special_tokens=ref._special_tokens
        )

    def encode(self, text):
        return self.enc.encode_ordinary(text)

    def batch(self, docs, threads):
        return self.enc.encode_ordinary_batch(docs, num_threads=threads)


LIBRARIES = [Numtok, Tiktoken, HFTokenizers, Gigatoken, TokenDagger, Tokie, Kitoken]


WORST_CASES = ("a*1e6", "space*1e6", "cjk-1MB", "hangul-1MB", "thai-1MB")


def worst_case(label: str, run: int, size: int = 1) -> str:
    """The issue's linear-time cases: one piece of ``size`` MB each, unspaced text of random
    3-byte letters for CJK (ideographs), Hangul (syllables) and Thai (U+0E01-U+0E30, all
    letters, so one piece for every pattern). Each ``run`` is a text of its own (one
    character shorter, or other random letters): gigatoken keeps the ids of long pieces it has
    seen, so a text given twice times a lookup, not an encoding."""
    n = size * 1_000_000 - run
    if label == "a*1e6":
        return "a" * n
    if label == "space*1e6":
        return " " * n
    lo, hi = {"cjk-1MB": (0x4E00, 0xA000), "hangul-1MB": (0xAC00, 0xD7A4), "thai-1MB": (0x0E01, 0x0E31)}[label]
    rng = np.random.default_rng([run, size])
    return "".join(map(chr, rng.integers(lo, hi, n // 3).tolist()))


def cpu_ms(make, fn, repeat: int) -> float:
    """Median CPU milliseconds of fn(make(run)) (this process's CPU time: steadier than wall
    here); each input is made off the clock."""
    times = []
    for run in range(repeat):
        arg = make(run)
        t0 = time.process_time()
        fn(arg)
        times.append(time.process_time() - t0)
    return 1000 * statistics.median(times)


def print_worst_cases(libs, repeat: int) -> None:
    """CPU ms of each worst case and of its doubled input, per library; ``exact`` when every
    library that ran gave the same ids on the first input as the first one that ran."""
    for label in WORST_CASES:
        row = []
        first = worst_case(label, 0)
        reference = None
        exact = True
        for lib in libs:
            try:
                once = cpu_ms(lambda run: worst_case(label, run), lib.encode, repeat)
                twice = cpu_ms(lambda run: worst_case(label, run, 2), lib.encode, repeat)
                ids = lib.encode(first)
                if reference is None:
                    reference = ids
                exact &= _same(ids, reference)
                row.append(f"{lib.name} {once:6.0f} ms (2x input: {twice / once:4.2f}x)")
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - tiktoken's o200k panics (stack overflow) on spaces
                row.append(f"{lib.name} error {type(exc).__name__}")
        print(f"  worst {label:10s} exact={exact!s:5s} " + "  ".join(row), flush=True)


def print_short_calls(libs, lines: list[str], repeat: int) -> None:
    """Per-call cost on short texts: each of ``lines`` encoded with its own call (median
    microseconds per call over ``repeat`` passes); what a loop over small texts pays."""
    row = []
    for lib in libs:
        encode = lib.encode
        for line in lines[:50]:
            encode(line)  # warm up (compiles, caches)
        _, median = timed(lambda: [encode(line) for line in lines], repeat)
        row.append(f"{lib.name} {median / len(lines) * 1e6:6.2f} us")
    mean = sum(map(len, lines)) / len(lines)
    print(f"  short calls ({len(lines)} lines, {mean:.0f} chars each on average): " + "  ".join(row), flush=True)


def print_short_sizes(libs, text: str, repeat: int, sizes=(11, 90, 1000), count: int = 2000) -> None:
    """Microseconds per call at 11 B, 90 B and 1 KB: ``count`` different slices of the corpus of
    each size (in characters), one call each; the median pass of ``repeat`` after one pass that
    warms every library up on the same strings (warm: their pieces are cached)."""
    step = max(1, (len(text) - max(sizes)) // count)
    for size in sizes:
        strings = [text[i:i + size] for i in range(0, step * count, step)]
        mean = sum(len(x.encode("utf-8")) for x in strings) / len(strings)
        row = []
        for lib in libs:
            encode = lib.encode
            for x in strings:
                encode(x)
            _, median = timed(lambda enc=encode: [enc(x) for x in strings], repeat)
            row.append(f"{lib.name} {median / len(strings) * 1e6:7.2f}")
        print(f"  short calls, {mean:6.0f} B (warm), us per call: " + "  ".join(row), flush=True)


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))


def _flat(out) -> tuple[np.ndarray, np.ndarray]:
    """(ids, ids per text) of a single or batch result, whatever the library returns."""
    if hasattr(out, "offsets") and hasattr(out, "ids"):  # numtok's BatchEncoding
        return np.asarray(out.ids, dtype=np.int64), np.diff(np.asarray(out.offsets))
    if isinstance(out, (list, tuple)) and out and not isinstance(out[0], (int, np.integer)):
        lengths = np.array([len(x) for x in out], dtype=np.int64)
        return np.concatenate([np.asarray(x, dtype=np.int64) for x in out]), lengths
    if type(out).__module__.startswith("awkward"):  # gigatoken's encode_batch
        import awkward as ak

        return np.asarray(ak.flatten(out), dtype=np.int64), np.asarray(ak.num(out), dtype=np.int64)
    ids = np.asarray(out, dtype=np.int64)
    return ids, np.array([len(ids)])


def run_modes(lib, runs: dict, repeat: int) -> tuple[dict, dict]:
    """As main's loop: each mode's first run on an empty piece cache, then the modes take turns.
    Returns ({mode: seconds of each run}, {mode: _flat(output of its first run)})."""
    times, first = {}, {}
    for mode, (fn, _) in runs.items():
        if hasattr(lib, "reset"):
            lib.reset()
        if hasattr(fn, "prepare"):
            fn.prepare()
        t0 = time.perf_counter()
        out = fn()
        times[mode] = [time.perf_counter() - t0]
        first[mode] = _flat(out)
        del out
        if hasattr(fn, "release"):
            fn.release()
    for _ in range(repeat - 1):
        for mode, (fn, _) in runs.items():
            times[mode].append(timed(fn, 1)[0])
    return times, first


def print_peak_rss() -> None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"\npeak RSS {peak:.0f} MiB (this process: every library and encoding)")


def make_libraries(encoding: str, wanted: set[str], workdir: str) -> list:
    """The libraries asked for (all when ``wanted`` is empty) built for ``encoding``; one that
    is missing or fails to build is reported and left out."""
    libs = []
    for cls in LIBRARIES:
        if wanted and cls.name not in wanted:
            continue
        try:
            lib = cls(encoding, workdir)
            lib.args = (encoding, workdir)
            libs.append(lib)
        except Exception as exc:  # noqa: BLE001 - a missing or failing competitor is reported, not fatal
            print(f"  {cls.name:14s} unavailable: {type(exc).__name__}: {str(exc)[:100]}")
    return libs


def by_script(args, docs: list[str], modes: list[str], wanted: set, workdir: str) -> None:
    t0 = time.perf_counter()
    groups = group_documents(docs)
    sizes = {g: sum(len(d.encode("utf-8")) for d in ds) for g, ds in groups.items()}
    total = sum(sizes.values())
    print(f"script groups ({time.perf_counter() - t0:.1f} s to classify):")
    for g in GROUPS:
        print(f"  {g:10s} {sizes[g] / 1e6:7.2f} MB {100 * sizes[g] / total:5.1f}%  {len(groups[g]):7d} documents")
    for encoding in args.encodings.split(","):
        print(f"\n== {encoding}")
        libs = make_libraries(encoding, wanted, workdir)
        libs.sort(key=lambda lib: lib.name != "tiktoken")  # tiktoken first: its ids are the reference
        ref_lib = libs[0] if libs and libs[0].name == "tiktoken" else Tiktoken(encoding, workdir)
        table: dict[str, dict[str, dict[str, float]]] = {}  # group -> library -> mode -> MB/s
        for g in GROUPS:
            gdocs, size = groups[g], sizes[g]
            if not gdocs:
                continue
            gtext = "".join(gdocs)
            half, seen = halves(gdocs)
            half_size = len(half.encode("utf-8"))
            print(f"  -- {g}: {size / 1e6:.2f} MB, {len(gdocs)} documents (cold/unseen/warm: {half_size / 1e6:.2f} MB of distinct ones)", flush=True)
            reference: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # "single" / "batch" -> tiktoken's ids
            table[g] = {}
            for lib in libs:
                runs = mode_runs(lib, modes, args.threads, (gtext, size), (gdocs, size), (half, seen, half_size))
                try:
                    times, first = run_modes(lib, runs, args.repeat)
                except Exception as exc:  # noqa: BLE001
                    print(f"    {lib.name:14s} error {type(exc).__name__}: {str(exc)[:100]}")
                    continue
                exact = True
                for m, out in first.items():
                    kind = "single" if m in ("single", "fresh") else "half" if m in LIFECYCLE else "batch"
                    if kind not in reference:
                        if lib is ref_lib:
                            reference[kind] = out
                        else:
                            texts = {"single": gtext, "half": half}
                            reference[kind] = _flat(ref_lib.encode(texts[kind]) if kind in texts else ref_lib.batch(gdocs, 1))
                    exact &= np.array_equal(out[0], reference[kind][0]) and np.array_equal(out[1], reference[kind][1])
                del first
                table[g][lib.name] = {m: runs[m][1] / warm_median(ts) / 1e6 for m, ts in times.items()}
                row = "  ".join(
                    f"{m} {table[g][lib.name][m]:7.1f}" + (f" (first {runs[m][1] / times[m][0] / 1e6:.1f})" if lib.name == "numtok" else "")
                    for m in modes if m in times
                )  # fmt: skip
                print(f"    {lib.name:14s} exact={exact!s:5s}  MB/s: {row}", flush=True)
            res = table[g]
            for other in ("tiktoken", "gigatoken"):
                if "numtok" in res and other in res:
                    ratios = "  ".join(f"{m} {res['numtok'][m] / res[other][m]:5.2f}x" for m in modes if m in res["numtok"] and m in res[other])
                    print(f"    numtok / {other:10s} {ratios}")
        # one table per mode: MB/s of every group and library, and numtok's ratios
        names = [cls.name for cls in LIBRARIES if any(lib.name == cls.name for lib in libs)]
        others = [o for o in ("tiktoken", "gigatoken") if "numtok" in names and o in names]
        for m in modes:
            if not any(m in r for res in table.values() for r in res.values()):
                continue
            head = "".join(f"{n:>12s}" for n in names) + "".join(f"{'numtok/' + o[:4]:>14s}" for o in others)
            print(f"\n  {encoding}, {m}, MB/s (median of {max(args.repeat - 1, 1)} after the first):\n  {'group':10s} {'MB':>7s}{head}")
            for g, res in table.items():
                cells = "".join(f"{res[n][m]:12.1f}" if m in res.get(n, {}) else f"{'-':>12s}" for n in names)
                for o in others:
                    ok = m in res.get("numtok", {}) and m in res.get(o, {})
                    cells += f"{res['numtok'][m] / res[o][m]:13.2f}x" if ok else f"{'-':>14s}"
                print(f"  {g:10s} {sizes[g] / 1e6:7.2f}{cells}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--encodings", default=",".join(ENCODINGS))
    ap.add_argument("--only", default="", help="comma-separated library names (default: all that import)")
    ap.add_argument("--modes", default="single,batch1,batch")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--check-mb", type=float, default=1.0)
    ap.add_argument("--max-mb", type=float, default=0, help="use only the first MB of the corpus")
    ap.add_argument("--worst", action="store_true", help="also time the worst cases (CPU ms) and their doubling")
    ap.add_argument("--short", action="store_true", help="also time short calls: 11 B, 90 B, 1 KB and one call per line on 10,000 lines (us per call)")
    ap.add_argument("--by-script", action="store_true", help="time each script group's documents on their own (see above)")
    args = ap.parse_args(argv)

    with open(args.corpus, encoding="utf-8") as f:
        text = f.read(int(args.max_mb * 1_000_000)) if args.max_mb else f.read()
    docs = [d for d in text.split("\n\n") if d]
    docs = [d + "\n\n" for d in docs]
    half, seen = halves(docs)
    n_half = len(half.encode("utf-8"))
    n_bytes = len(text.encode("utf-8"))
    n_doc_bytes = sum(len(d.encode("utf-8")) for d in docs)
    check = text[: int(args.check_mb * 1_000_000)]
    modes = args.modes.split(",")
    wanted = set(filter(None, args.only.split(",")))
    workdir = tempfile.mkdtemp(prefix="numtok-compare-")
    print(f"corpus {args.corpus}: {n_bytes / 1e6:.1f} MB, {len(docs)} documents; threads={args.threads}; "
          f"median of the {max(args.repeat - 1, 1)} runs after the first (python {sys.version.split()[0]})")  # fmt: skip
    if args.by_script:
        by_script(args, docs, modes, wanted, workdir)
        print_peak_rss()
        return 0

    for encoding in args.encodings.split(","):
        print(f"\n== {encoding}")
        libs = make_libraries(encoding, wanted, workdir)
        reference = Tiktoken(encoding, workdir).encode(check)
        results: dict[str, dict[str, tuple[float, float]]] = {}
        for lib in libs:
            try:
                exact = _same(lib.encode(check), reference)
            except Exception as exc:  # noqa: BLE001
                exact = f"error {type(exc).__name__}"
            runs = mode_runs(lib, modes, args.threads, (text, n_bytes), (docs, n_doc_bytes), (half, seen, n_half))
            # Each mode's first run on an empty piece cache; then the modes take turns, so
            # that the ratios between them (2 threads / 1) see the same machine load.
            times = {}
            for mode, (fn, _) in runs.items():
                if hasattr(lib, "reset"):
                    lib.reset()
                times[mode] = [timed(fn, 1)[0]]
            for _ in range(args.repeat - 1):
                for mode, (fn, _) in runs.items():
                    times[mode].append(timed(fn, 1)[0])
            results[lib.name] = {
                mode: (size / times[mode][0] / 1e6, size / warm_median(times[mode]) / 1e6) for mode, (_, size) in runs.items()
            }
            row = "  ".join(
                f"{mode} {results[lib.name][mode][1]:7.1f}" + (f" (first {results[lib.name][mode][0]:.1f})" if lib.name == "numtok" else "")
                for mode in modes if mode in results[lib.name]
            )  # fmt: skip
            print(f"  {lib.name:14s} exact={exact!s:5s}  MB/s: {row}", flush=True)
        if args.worst:
            print_worst_cases(libs, args.repeat)
        if args.short:
            print_short_sizes(libs, text, args.repeat)
            print_short_calls(libs, [line for line in text[:2_000_000].splitlines() if line.strip()][:10_000], args.repeat)
        for name, res in results.items():
            if "batch1" in res and "batch" in res:
                print(f"  {name:14s} batch on {args.threads} threads / batch1: {res['batch'][1] / res['batch1'][1]:4.2f}x")
        for anchor in ("tiktoken", "gigatoken"):
            if anchor not in results:
                continue
            base = results[anchor]
            for name, res in results.items():
                if name == anchor or (anchor == "gigatoken" and name != "numtok"):
                    continue
                ratios = "  ".join(f"{m} {res[m][1] / base[m][1]:5.2f}x" for m in modes if m in res and m in base)
                print(f"  {name:14s} vs {anchor}: {ratios}")
    print_peak_rss()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
