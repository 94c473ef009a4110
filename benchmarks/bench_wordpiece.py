"""asv: WordPiece training and encoding (corpus: NUMTOK_BENCH_CORPUS or generated 10 MB).

The encoding benchmarks use the BERT uncased tokenizer of ``shared/ref`` (or the file named by
NUMTOK_BERT_JSON); without it they use a vocabulary trained on the benchmark corpus.
"""

from __future__ import annotations

import os
from pathlib import Path

import numtok
from numtok.wordpiece import WordPiece

from .common import TrainingSuite, corpus_path, corpus_text, mb_per_s, warm_up_wordpiece

ENCODE_BYTES = 4_000_000


def bert_tokenizer() -> WordPiece:
    candidates = [os.environ.get("NUMTOK_BERT_JSON"),
                  Path(__file__).resolve().parents[2] / "shared" / "ref" / "bert_uncased_tokenizer.json"]
    for path in candidates:
        if path and Path(path).is_file():
            return WordPiece.from_file(path)
    return numtok.train_wordpiece(corpus_path(10), 30522)


class TrainWordPiece(TrainingSuite):
    params = ([8000, 30522],)
    warm_up = staticmethod(warm_up_wordpiece)

    def time_train(self, vocab_size):
        numtok.train_wordpiece(self.path, vocab_size)

    def peakmem_train(self, vocab_size):
        numtok.train_wordpiece(self.path, vocab_size)


class TrainWordPieceFromCounts:
    """The merge loop alone: training from a ready {word: count} mapping."""

    timeout = 600
    number = 1
    repeat = 3

    def setup(self):
        from numtok.wordpiece.bert import pre_tokenize

        warm_up_wordpiece()
        counts: dict[str, int] = {}
        for w in pre_tokenize(corpus_text(10, limit=3_000_000)):
            counts[w] = counts.get(w, 0) + 1
        self.counts = counts

    def time_train_counts(self):
        numtok.train_wordpiece(self.counts, 20000)


class EncodeBert:
    """BERT uncased encoding: normalizer + pre-tokenizer + longest-match WordPiece."""

    timeout = 600

    def setup(self):
        warm_up_wordpiece()
        self.wp = bert_tokenizer()
        self.text = corpus_text(10, limit=ENCODE_BYTES)
        self.lines = self.text.splitlines()
        self.wp.encode("warm up the lowercase tables: Ünïcödé")

    def time_encode_text(self):
        self.wp.encode(self.text)

    def time_encode_batch_lines(self):
        self.wp.encode_batch(self.lines)

    def time_encode_loop_lines(self):
        encode = self.wp.encode
        for line in self.lines[:20000]:
            encode(line)

    def time_tokenize_text(self):
        self.wp.tokenize(self.text)

    def peakmem_encode_text(self):
        self.wp.encode(self.text)

    def track_encode_mb_per_second(self):
        return mb_per_s(lambda: self.wp.encode(self.text), len(self.text.encode("utf-8")))

    track_encode_mb_per_second.unit = "MB/s"


class DecodeBert:
    def setup(self):
        warm_up_wordpiece()
        self.wp = bert_tokenizer()
        self.ids = self.wp.encode(corpus_text(10, limit=ENCODE_BYTES))

    def time_decode(self):
        self.wp.decode(self.ids)


class FirstCall:
    """Cold start in a fresh interpreter: import, load BERT, first encode."""

    def timeraw_import_and_first_encode(self):
        return """
        import numtok
        wp = numtok.train_wordpiece(["hello world, hello numtok"], 40)
        wp.encode("hello world")
        """


def peakmem_reference():
    """Memory of the benchmark process itself, to subtract from the peakmem_ figures."""
