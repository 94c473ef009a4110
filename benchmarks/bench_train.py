"""asv: BPE training time and peak memory (corpus: NUMTOK_BENCH_CORPUS or generated 10 MB)."""

from __future__ import annotations

import numtok

from .common import TrainingSuite


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
