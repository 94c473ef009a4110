"""asv: encoding and decoding throughput (corpus: NUMTOK_BENCH_CORPUS or a generated 10 MB).

``time_encode_ordinary`` is one thread on the whole corpus as one string;
``time_encode_batch_1``/``_2`` encode the corpus's paragraphs as a batch on 1 / 2 threads
(``_checked_2``: ``encode_batch``, which also looks for disallowed special tokens);
``time_count_tokens*`` count the same text and batch without keeping ids (compare with
``time_encode_ordinary`` / ``time_encode_batch_*``), ``time_encode_with_offsets`` adds character
offsets to ``time_encode_ordinary``'s work;
``track_mb_per_s`` reports the one-thread figure directly; ``time_first_pass`` is one encode on
a fresh piece cache (the other figures include warm-cache repeats, as a long-running pipeline
sees them), ``time_short_job_3_passes`` three encodes of 3 MB from a fresh piece cache (how
soon the caches grow to fit). ``WorstCase`` times single pieces of 1 MB ("a" * 10**6, spaces, CJK without
spaces) that are O(n^2) in tokenizers without a large-piece path. ``EncodeByScript`` times
``encode_ordinary`` and the str -> UTF-8 kernel on each script group of the multilingual corpus
(``common.multilingual_text``: NUMTOK_BENCH_MULTI_CORPUS or the sample in tests/data), piece
caches grown first.
Comparisons with tiktoken and others on the same text are in ``compare_encode.py``.
"""

from __future__ import annotations

import numpy as np

import numtok
from numtok._native.utf8 import padded_utf8

from .common import corpus_text, mb_per_s, multilingual_text, warm_piece_caches
from .script_groups import GROUPS, group_texts

ENCODINGS = ["r50k_base", "cl100k_base", "o200k_base"]
_NO_OFFSETS = np.zeros(0, np.int64)


class Encode:
    params = (ENCODINGS,)
    param_names = ["encoding"]
    timeout = 600
    repeat = 5
    number = 1

    def setup(self, encoding):
        self.text = corpus_text(10)
        self.n_bytes = len(self.text.encode("utf-8"))
        self.docs = [d for d in self.text.split("\n\n") if d]
        self.short_text = self.text[:3_000_000]
        self.enc = numtok.load(encoding)
        self.enc.encode_ordinary(self.text[:100_000])  # load kernels (Numba cache) before timing
        self.ids = self.enc.encode_ordinary(self.text)

    def time_encode_ordinary(self, encoding):
        self.enc.encode_ordinary(self.text)

    def time_first_pass(self, encoding):
        self.enc._clear_caches()  # start from empty piece caches
        self.enc.encode_ordinary(self.text)

    def time_short_job_3_passes(self, encoding):
        # A short job: a fresh tokenizer encodes 3 MB three times. Its piece caches start small
        # (a set per 256 bytes seen) and grow between calls to fit what crowds them.
        self.enc._clear_caches()
        for _ in range(3):
            self.enc.encode_ordinary(self.short_text)

    def time_encode_batch_1(self, encoding):
        self.enc.encode_ordinary_batch(self.docs, num_threads=1)

    def time_encode_batch_2(self, encoding):
        self.enc.encode_ordinary_batch(self.docs, num_threads=2)

    def time_encode_with_offsets(self, encoding):
        self.enc.encode_with_offsets(self.text)

    def time_count_tokens_batch_2(self, encoding):
        self.enc.count_tokens_batch(self.docs, num_threads=2)

    def time_count_tokens_batch_1(self, encoding):
        self.enc.count_tokens_batch(self.docs, num_threads=1)

    def time_count_tokens(self, encoding):
        self.enc.count_tokens(self.text)

    def time_encode_batch_checked_2(self, encoding):
        self.enc.encode_batch(self.docs, num_threads=2)  # special tokens looked for (disallowed)

    def time_decode(self, encoding):
        self.enc.decode(self.ids)

    def peakmem_encode_ordinary(self, encoding):
        self.enc.encode_ordinary(self.text)

    def peakmem_encode_batch_2(self, encoding):
        self.enc.encode_ordinary_batch(self.docs, num_threads=2)

    def peakmem_count_tokens_batch_2(self, encoding):
        self.enc.count_tokens_batch(self.docs, num_threads=2)

    def peakmem_encode_with_offsets(self, encoding):
        self.enc.encode_with_offsets(self.text)

    def track_mb_per_s(self, encoding):
        return mb_per_s(lambda: self.enc.encode_ordinary(self.text), self.n_bytes, repeat=3)

    track_mb_per_s.unit = "MB/s"


class EncodeSmall:
    """Per-call overhead: many short strings, one call each (the interactive use)."""

    params = (["cl100k_base"],)
    param_names = ["encoding"]

    def setup(self, encoding):
        self.enc = numtok.load(encoding)
        self.lines = [line for line in corpus_text(10, limit=200_000).splitlines() if line][:1000]
        self.enc.encode_ordinary("warm up")

    def time_encode_1000_lines(self, encoding):
        for line in self.lines:
            self.enc.encode_ordinary(line)


class WorstCase:
    params = (["cl100k_base", "o200k_base"], ["a", "space", "cjk"])
    param_names = ["encoding", "text"]
    timeout = 300

    def setup(self, encoding, text):
        self.enc = numtok.load(encoding)
        self.text = {
            "a": "a" * 1_000_000,
            "space": " " * 1_000_000,
            "cjk": "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(350_000)),
        }[text]
        self.enc.encode_ordinary("warm up")

    def time_encode(self, encoding, text):
        self.enc.encode_ordinary(self.text)


class EncodeByScript:
    """One thread, one call on a script group's documents joined (as ``compare_encode.py
    --by-script`` times ``single`` and ``fresh``: numtok never makes a str keep its UTF-8)."""

    params = (["cl100k_base", "o200k_base"], list(GROUPS))
    param_names = ["encoding", "script"]
    timeout = 600
    repeat = 7
    number = 1

    def setup(self, encoding, script):
        text = group_texts(multilingual_text()).get(script)
        if not text:
            raise NotImplementedError(f"no {script} documents in the corpus")  # asv skips it
        self.text = text
        self.n_bytes = len(text.encode("utf-8"))
        self.enc = numtok.load(encoding)
        warm_piece_caches(self.enc, lambda: self.enc.encode_ordinary(self.text))
        padded_utf8(self.text, 8, _NO_OFFSETS)  # loads the kernel (short texts never called it)

    def time_encode_ordinary(self, encoding, script):
        self.enc.encode_ordinary(self.text)

    def time_str_to_utf8(self, encoding, script):
        # The GIL-free str -> UTF-8 kernel alone (a loop per mix of character widths).
        padded_utf8(self.text, 8, _NO_OFFSETS)

    def track_mb_per_s(self, encoding, script):
        return mb_per_s(lambda: self.enc.encode_ordinary(self.text), self.n_bytes, repeat=3)

    track_mb_per_s.unit = "MB/s"
