"""asv: BPE training time and peak memory (corpus: NUMTOK_BENCH_CORPUS or generated 10 MB)."""

from __future__ import annotations

import numtok

from .common import TrainingSuite, corpus_path, warm_up_bpe


class TrainBPE(TrainingSuite):
    params = ([4096, 32768],)

    def time_train(self, vocab_size):
        numtok.train_bpe(self.path, vocab_size)

    def peakmem_train(self, vocab_size):
        numtok.train_bpe(self.path, vocab_size)

    def track_merges_per_second(self, vocab_size):
        tok = numtok.train_bpe(self.path, vocab_size)
        return len(tok.merges) / tok.training_stats["seconds"]

    track_merges_per_second.unit = "merges/s"


class TrainFirstCall:
    """Cold start: import + first (tiny) training in a fresh interpreter."""

    def timeraw_import_and_first_train(self):
        return """
        import numtok
        numtok.train_bpe(["hello world, hello numtok"], 260)
        """


def peakmem_reference():
    """Memory of the benchmark process itself, to subtract from peakmem_train."""


class ContinueBPE:
    """Continued training: 2,000 merges on top of o200k_base (loaded in setup) on the 10 MB
    corpus; compare with TrainBPE (benchmarks/compare_continue.py times both on 100 MB)."""

    timeout = 900
    number = 1
    repeat = 3

    def setup(self):
        self.path = corpus_path(10)
        warm_up_bpe()
        tiny = numtok.train_bpe(["warm up continued training, warm up"] * 4, 300)
        numtok.train_bpe(["warm up continued training, warm up"] * 4, 310, base=tiny)
        self.base = numtok.load("o200k_base")

    def time_continue_o200k(self):
        numtok.train_bpe(self.path, self.base.n_vocab + 2000, base=self.base)

    def peakmem_continue_o200k(self):
        numtok.train_bpe(self.path, self.base.n_vocab + 2000, base=self.base)
