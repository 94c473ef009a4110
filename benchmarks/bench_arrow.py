"""asv: Arrow pipelines (corpus: NUMTOK_BENCH_CORPUS or a generated 10 MB; needs pyarrow).

``ArrowEncode``: the corpus's paragraphs (split on blank lines) encoded on 2 threads as a
``pa.large_string()`` array (``time_encode_arrow_2``), as a list of str already built
(``time_encode_list_2``) and through ``to_pylist()`` (``time_encode_pylist_2``, what a list API
costs an Arrow user); ``time_to_arrow`` hands the ids back as Arrow; ``peakmem_encode_arrow_2``.
``ArrowTrain``: ``train_bpe`` on the corpus as ``.txt`` and as the same lines in a ``.parquet``
file. Side-by-side figures with HF tokenizers and 🤗 datasets are in ``compare_arrow.py``.
"""

from __future__ import annotations

import os
import tempfile

import numtok

from .common import corpus_path, corpus_text


def _pyarrow():
    try:
        import pyarrow
    except ImportError:  # asv skips a benchmark whose setup raises NotImplementedError
        raise NotImplementedError("pyarrow is not installed") from None
    return pyarrow


class ArrowEncode:
    params = (["cl100k_base", "o200k_base"],)
    param_names = ["encoding"]
    timeout = 600
    repeat = 5
    number = 1

    def setup(self, encoding):
        pa = _pyarrow()
        self.docs = [d + "\n\n" for d in corpus_text(10).split("\n\n") if d]
        self.arr = pa.array(self.docs, pa.large_string())
        self.enc = numtok.load(encoding)
        self.batch = self.enc.encode_ordinary_batch(self.arr, num_threads=2)  # kernels loaded before timing

    def time_encode_arrow_2(self, encoding):
        self.enc.encode_ordinary_batch(self.arr, num_threads=2)

    def time_encode_list_2(self, encoding):
        self.enc.encode_ordinary_batch(self.docs, num_threads=2)

    def time_encode_pylist_2(self, encoding):
        self.enc.encode_ordinary_batch(self.arr.to_pylist(), num_threads=2)

    def time_to_arrow(self, encoding):
        self.batch.to_arrow()

    def peakmem_encode_arrow_2(self, encoding):
        self.enc.encode_ordinary_batch(self.arr, num_threads=2)


class ArrowTrain:
    timeout = 900
    repeat = 3
    number = 1

    def setup(self):
        pa = _pyarrow()
        import pyarrow.parquet as pq

        self.txt = corpus_path(10)
        with open(self.txt, "rb") as f:
            text = f.read().decode("utf-8")
        lines = [line + "\n" for line in text.split("\n")]  # the .txt sequences: "\n" ends a line
        lines[-1] = lines[-1][:-1]
        if not lines[-1]:
            lines.pop()
        self.parquet = os.path.join(tempfile.mkdtemp(prefix="numtok-asv-"), "corpus.parquet")
        pq.write_table(pa.table({"text": lines}), self.parquet)
        numtok.train_bpe(["warm up the kernels, warm up"] * 4, 300)

    def time_train_txt(self):
        numtok.train_bpe(self.txt, 4000)

    def time_train_parquet(self):
        numtok.train_bpe(self.parquet, 4000)
