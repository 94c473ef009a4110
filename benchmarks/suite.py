"""The benchmark suite behind docs/performance.md: its sections, each a few side-by-side runs.

A section is what one table of the page holds: a title, a paragraph on what it measures and how
to read it, and the commands that measure it. ``python -m benchmarks run SECTION`` runs its
commands (``{DIR}`` is the corpus directory, ``{PY}`` this Python) and keeps their output with
the date, commit and machine (``results.py``); ``python -m benchmarks page`` writes the page
from the kept results (``page.py``). No figure is written here or by hand: the page holds what
the commands printed.
"""

from __future__ import annotations

from typing import NamedTuple


class Section(NamedTuple):
    name: str  # the subcommand
    title: str
    about: str  # what is measured and how to read it (no figures)
    commands: tuple[str, ...]
    needs: tuple[str, ...] = ()  # corpus files under {DIR}


SECTIONS: tuple[Section, ...] = (
    Section(
        "encode-scripts", "Encoding by script: cold, unseen, warm",
        "What a pipeline meets, per script group of the multilingual corpus. One thread, every library on the "
        "same text in one process, ids compared with tiktoken's before timing (`exact`). MB/s of UTF-8 input, "
        "median of the runs after the first. The timed text is every other distinct document of the group "
        "(the corpus repeats its documents; repeats are dropped). **cold**: new objects of every library, text "
        "never seen; **unseen**: a new object that first encoded the other distinct documents of the group; "
        "**warm**: the same text again (numtok's piece cache holds it).",
        ("{PY} benchmarks/compare_encode.py {DIR}/multi-100M.txt --by-script --modes cold,unseen,warm "
         "--only numtok,tiktoken,gigatoken --repeat 3 --encodings cl100k_base,o200k_base",),
        ("multi-100M.txt",),
    ),
    Section(
        "encode-mixed", "Encoding English and code: cold, unseen, warm, batch",
        "As above on the English/code corpus, plus batches: `batch1` / `batch` = the documents (split on blank "
        "lines) as one batch call on 1 / 2 threads, against each library's fastest batch API (gigatoken's "
        "`encode_batch`, an awkward array; tiktoken's `encode_ordinary_batch`).",
        ("{PY} benchmarks/compare_encode.py {DIR}/mixed-100M.txt --modes cold,unseen,warm,batch1,batch "
         "--only numtok,tiktoken,gigatoken --repeat 3 --encodings cl100k_base",),
        ("mixed-100M.txt",),
    ),
    Section(
        "short", "Short calls",
        "µs per call of `encode_ordinary` on strings of about 11 B, 90 B and 1 KB and on each line of the "
        "corpus, warm (the same strings again), every library in the same process.",
        ("{PY} benchmarks/compare_encode.py {DIR}/mixed-10M.txt --encodings cl100k_base "
         "--only numtok,gigatoken,tiktoken --modes warm --short --repeat 5",),
        ("mixed-10M.txt",),
    ),
    Section(
        "dropin", "Drop-in for tiktoken",
        "`numtok.tiktoken` against tiktoken, both returning lists, cl100k, the first 30 MB of each corpus: "
        "cold objects, `encode_ordinary`, `encode`, batches and short calls.",
        ("{PY} benchmarks/compare_tiktoken_dropin.py {DIR}/mixed-100M.txt --repeat 3 --mb 30",
         "{PY} benchmarks/compare_tiktoken_dropin.py {DIR}/multi-100M.txt --repeat 3 --mb 30"),
        ("mixed-100M.txt", "multi-100M.txt"),
    ),
    Section(
        "arrow", "Arrow and datasets",
        "Arrow `encode_batch` against the same documents as a list of str, and `datasets.map` against the same "
        "map with `PreTrainedTokenizerFast`.",
        ("{PY} benchmarks/compare_arrow.py {DIR}/mixed-100M.txt --parts encode,rss --encodings cl100k_base --repeat 5 --hf-mb 10",
         "{PY} benchmarks/compare_arrow.py {DIR}/mixed-100M.txt --parts datasets --encodings cl100k_base --repeat 3"),
        ("mixed-100M.txt",),
    ),
    Section(
        "offsets", "Offsets and counts",
        "`encode_with_offsets` against `encode_ordinary` (and HF with offsets); `count_tokens_batch` against "
        "`encode_ordinary_batch` (and tiktoken), first 10 MB, 2 threads.",
        ("{PY} benchmarks/compare_offsets.py {DIR}/mixed-100M.txt --max-mb 10 --repeat 5",
         "{PY} benchmarks/compare_count.py {DIR}/mixed-100M.txt --max-mb 10 --repeat 9 --threads 2"),
        ("mixed-100M.txt",),
    ),
    Section(
        "cli", "Command line",
        "`numtok encode` to a `.bin` against a Python loop over tiktoken writing the same file, whole processes.",
        ("{PY} benchmarks/compare_cli_encode.py {DIR}/mixed-100M.txt --encoding cl100k_base",),
        ("mixed-100M.txt",),
    ),
    Section(
        "train", "Training",
        "`train_bpe`, vocab 32768, pattern gpt2, 2 threads; each library in its own process on the same corpus; "
        "median wall time and peak RSS (`ru_maxrss` of the process). `--check` compares the merges with HF's.",
        ("{PY} benchmarks/compare_train.py {DIR}/mixed-100M.txt --repeat 3 --only numtok,gigatoken",
         "{PY} benchmarks/compare_train.py {DIR}/multi-100M.txt --repeat 3 --only numtok,gigatoken",
         "{PY} benchmarks/compare_train.py {DIR}/mixed-1G.txt --repeat 1 --only numtok,gigatoken",
         "{PY} benchmarks/compare_train.py {DIR}/multi-100M.txt --repeat 1 --only numtok,hf --check"),
        ("mixed-100M.txt", "multi-100M.txt", "mixed-1G.txt"),
    ),
    Section(
        "scale", "Training at scale: Dask and the long tail",
        "One process against a Dask `LocalCluster` of 2 single-threaded workers (64 MB partitions), and the "
        "long tail: 10 M unique random words, where the unique-word table and the merge loop's rows dominate. "
        "Peak RSS of each process; unique-word table cost per word.",
        ("{PY} benchmarks/compare_scale.py {DIR}/mixed-1G.txt",
         "{PY} benchmarks/compare_scale.py --make-long-tail {DIR}/long-tail-100M.txt",
         "{PY} benchmarks/compare_scale.py {DIR}/long-tail-100M.txt"),
        ("mixed-1G.txt",),
    ),
    Section(
        "continue", "Continued training",
        "Learning merges on top of o200k_base against learning as many from bytes.",
        ("{PY} benchmarks/compare_continue.py {DIR}/mixed-100M.txt --repeat 3",),
        ("mixed-100M.txt",),
    ),
    Section(
        "evaluate", "Evaluation and vocabulary sweeps",
        "`numtok.evaluate` of cl100k_base, o200k_base and gpt2 against encoding the same lines once with each "
        "`encode_ordinary_batch`; a sweep (8 sizes up to 131072, the last 20 MB held out): its training against "
        "one `train_bpe` to the largest size, its 8 evaluations against one of the largest size; weighted "
        "training `{train: 2}` against `train_bpe(train)`. Peak RSS after each part.",
        ("{PY} benchmarks/eval_sweep.py {DIR}/mixed-100M.txt --threads 2",
         "{PY} benchmarks/eval_sweep.py {DIR}/multi-100M.txt --threads 2"),
        ("mixed-100M.txt", "multi-100M.txt"),
    ),
    Section(
        "wordpiece", "WordPiece",
        "Training (HF `WordPieceTrainer` against numtok) and BERT-uncased encoding against HF.",
        ("{PY} benchmarks/compare_wordpiece.py {DIR}/mixed-10M.txt --repeat 3",),
        ("mixed-10M.txt",),
    ),
    Section(
        "pretok", "Pre-tokenizers",
        "The four built-in scanners against `regex.finditer` with the same pattern (which numtok's spans equal), "
        "on the English/code corpus and per script group.",
        ("{PY} benchmarks/compare_pretok.py {DIR}/mixed-100M.txt --repeat 5 --regex-mb 3",
         "{PY} benchmarks/compare_pretok.py {DIR}/multi-100M.txt --repeat 5 --regex-mb 3"),
        ("mixed-100M.txt", "multi-100M.txt"),
    ),
    Section(
        "cold-start", "Cold start",
        "Whole processes in a fresh venv, kernel and table caches wiped before every \"first ever\" run: a "
        "source install (`pip install .`: each kernel compiles on first use) and a release wheel (kernels "
        "precompiled for several CPU levels, the best one the CPU has is loaded: nothing compiles). "
        "`compile_times.py` shows where a source install's first run goes, kernel by kernel.",
        ("bash benchmarks/cold_start.sh /tmp/numtok-bench-src",
         "rm -rf /tmp/numtok-bench-dist && NUMTOK_PRECOMPILE=x86-64-v2,x86-64-v3,x86-64-v4,x86-64-v4+avx512vbmi2 "
         "{PY} -m pip wheel -q --no-deps . -w /tmp/numtok-bench-dist",
         "bash benchmarks/cold_start.sh /tmp/numtok-bench-wheel /tmp/numtok-bench-dist/numtok-*.whl",
         "{PY} benchmarks/compile_times.py --scenarios load_encode,demo --top 10"),
    ),
)

SECTIONS += (
    Section(
        "exactness", "Exactness runs",
        "The million-string differential campaign (`tests/test_fuzz.py::test_campaign`, profile `million`): per "
        "encoding (r50k, cl100k, o200k), 1,024,000 generated strings through `encode`, `encode_ordinary`, `decode`, "
        "`encode_batch` from lists and Arrow forms against tiktoken, and offsets against HF `tokenizers`; the counts "
        "compared and the mismatches (the run fails on the first) are printed at the end.",
        ("{PY} -m pytest -q -s -p no:cacheprovider tests/test_fuzz.py -m fuzz -k campaign --hypothesis-profile=million",),
    ),
)

BY_NAME = {s.name: s for s in SECTIONS}
