"""numtok WordPiece against Hugging Face tokenizers (and numtok's BPE trainer), in one run.

    python benchmarks/compare_wordpiece.py CORPUS [--vocab-size 30522] [--repeat 3]
        [--encode-mb 10] [--tokenizer shared/ref/bert_uncased_tokenizer.json] [--skip-train]

Encoding (BERT uncased tokenizer.json): HF single-threaded (TOKENIZERS_PARALLELISM=false,
RAYON_NUM_THREADS=1, set before tokenizers is imported) against numtok on the same text, as
documents (blank-line separated), as lines, and as one encode_batch call; ids are checked to
be identical. Training: ``numtok.train_wordpiece`` against ``numtok.train_bpe`` on the same
file and vocabulary size (the target is WordPiece <= 2x BPE), plus HF's WordPieceTrainer
(a BPE trainer underneath, a different algorithm, shown for scale). Every figure is the median
of ``--repeat`` runs, runs of different contenders interleaved; Numba kernels are loaded
before any timer starts. Ratios > 1 mean numtok is faster.
"""

from __future__ import annotations

import os

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import interleaved, warm_up_bpe, warm_up_wordpiece  # noqa: E402

DEFAULT_TOKENIZER = Path(__file__).resolve().parents[2] / "shared" / "ref" / "bert_uncased_tokenizer.json"


def compare_encode(corpus: str, tokenizer: str, megabytes: float, repeat: int) -> None:
    from tokenizers import Tokenizer

    from numtok.wordpiece import WordPiece

    with open(corpus, encoding="utf-8") as f:
        text = f.read(int(megabytes * 1_000_000))
    size_mb = len(text.encode("utf-8")) / 1e6
    docs = [d for d in text.split("\n\n") if d]
    lines = [line for line in text.splitlines() if line]

    hf = Tokenizer.from_file(tokenizer)
    hf.no_truncation()
    hf.no_padding()
    wp = WordPiece.from_file(tokenizer)
    wp.encode_batch(["load the kernels and the Ünïcödé tables"])

    print(f"encoding {size_mb:.1f} MB of {corpus} with {tokenizer}")
    print(f"  {len(docs)} documents, {len(lines)} lines; HF single-threaded, numtok single-threaded")
    expected = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
    same = [x.tolist() for x in wp.encode_batch(docs)] == expected
    print(f"  ids identical to HF on every document: {same}")
    rows = [
        ("documents, one encode() call each",
         lambda: [hf.encode(d, add_special_tokens=False) for d in docs],
         lambda: [wp.encode(d) for d in docs]),
        ("lines, one encode() call each",
         lambda: [hf.encode(s, add_special_tokens=False) for s in lines],
         lambda: [wp.encode(s) for s in lines]),
        ("documents, one encode_batch() call",
         lambda: hf.encode_batch(docs, add_special_tokens=False),
         lambda: wp.encode_batch(docs)),
    ]
    print(f"  {'mode':38s} {'HF s':>8s} {'numtok s':>9s} {'HF MB/s':>8s} {'numtok MB/s':>11s} {'ratio':>6s}")
    for label, hf_fn, nt_fn in rows:
        t = interleaved({"hf": hf_fn, "numtok": nt_fn}, repeat)
        print(f"  {label:38s} {t['hf']:8.2f} {t['numtok']:9.2f} {size_mb / t['hf']:8.2f} "
              f"{size_mb / t['numtok']:11.2f} {t['hf'] / t['numtok']:6.1f}x")


def compare_train(corpus: str, vocab_size: int, repeat: int) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    import numtok

    warm_up_wordpiece()
    warm_up_bpe()

    def hf_wordpiece():
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.train([corpus], trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))

    contenders = {
        "numtok.train_wordpiece": lambda: numtok.train_wordpiece(corpus, vocab_size, show_progress=False),
        "numtok.train_bpe": lambda: numtok.train_bpe(corpus, vocab_size, show_progress=False),
        "HF WordPieceTrainer (1 thread)": hf_wordpiece,
    }
    print(f"training on {corpus}, vocab_size {vocab_size}, median of {repeat}")
    t = interleaved(contenders, repeat)
    base = t["numtok.train_wordpiece"]
    for name, seconds in t.items():
        print(f"  {name:32s} {seconds:8.2f} s   {seconds / base:5.2f}x numtok.train_wordpiece's time")
    print(f"  train_wordpiece / train_bpe = {base / t['numtok.train_bpe']:.2f} (target <= 2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--vocab-size", type=int, default=30522)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--encode-mb", type=float, default=10.0)
    parser.add_argument("--tokenizer", default=str(DEFAULT_TOKENIZER))
    parser.add_argument("--skip-train", action="store_true")
    parser.add_argument("--skip-encode", action="store_true")
    args = parser.parse_args()
    if not args.skip_encode:
        compare_encode(args.corpus, args.tokenizer, args.encode_mb, args.repeat)
    if not args.skip_train:
        compare_train(args.corpus, args.vocab_size, args.repeat)


if __name__ == "__main__":
    main()
