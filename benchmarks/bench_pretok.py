"""asv: pre-tokenizer throughput per named pattern (corpus: NUMTOK_BENCH_CORPUS or generated 10 MB).

``time_split_one_thread`` is the per-core figure (num_threads=1, all on the calling thread);
``time_split_all_threads`` uses every core, the corpus being one document cut at safe points;
``time_split_lines`` treats each line as a document, as the trainer does. ``track_mb_per_s``
reports the one-thread throughput directly. Cold start (import + table load + Numba cache load
or compile + first call) is timed in a fresh interpreter by ``PretokFirstCall``.
"""

from __future__ import annotations

import numpy as np

from numtok.pretokenizers import split_bytes

from .common import corpus_bytes, corpus_path, line_docs, mb_per_s

PATTERNS = ["gpt2", "r50k", "cl100k", "o200k"]


class Pretokenize:
    params = (PATTERNS,)
    param_names = ["pattern"]
    timeout = 300
    repeat = 5
    number = 1

    def setup(self, pattern):
        self.data = corpus_bytes(corpus_path(10))
        self.one_doc = np.array([[0, len(self.data)]], dtype=np.int64)
        self.lines = line_docs(self.data)
        # Compile (or load from Numba's cache) before timing.
        split_bytes(self.data[:4096], [[0, 4096]], pattern, num_threads=1)

    def time_split_one_thread(self, pattern):
        split_bytes(self.data, self.one_doc, pattern, num_threads=1)

    def time_split_all_threads(self, pattern):
        split_bytes(self.data, self.one_doc, pattern)

    def time_split_lines(self, pattern):
        split_bytes(self.data, self.lines, pattern, num_threads=1)

    def track_mb_per_s(self, pattern):
        return mb_per_s(lambda: split_bytes(self.data, self.one_doc, pattern, num_threads=1), len(self.data), 3)

    track_mb_per_s.unit = "MB/s"

    def peakmem_split_one_thread(self, pattern):
        split_bytes(self.data, self.one_doc, pattern, num_threads=1)


class PretokFirstCall:
    """Cold start in a fresh interpreter: import, class table, Numba cache (or compile), 1 call."""

    params = (PATTERNS,)
    param_names = ["pattern"]

    def timeraw_import_and_first_call(self, pattern):
        return f"""
        import numtok
        numtok.pretokenize("Hello world, it's 2024!", {pattern!r})
        """
