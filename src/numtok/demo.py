"""``numtok demo``: train a small tokenizer on a bundled public-domain text and show it at work.

The first chapters of Pride and Prejudice ship in ``numtok/data/``, so the demo needs no
download and no input; it trains in seconds once the kernels are cached.
"""

from __future__ import annotations

import os
import time

__all__ = ["run_demo"]

_DEMO_TEXT = "pride_and_prejudice.txt"
_DEMO_SENTENCES = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.",
    "Mr. Darcy danced only once with Miss Bennet.",
    "Tokenizers turn text into numbers: 12345 tokens/s, naïve café, 東京!",
]


def run_demo(vocab_size: int = 1000, pattern: str = "gpt2", output: str | None = None, *, show_progress: bool | None = None) -> None:
    """Train a ``vocab_size`` tokenizer on the bundled text and print what it does (stdout);
    save it as a tokenizer.json at ``output`` if given."""
    from .encode.registry import DATA_DIR
    from .train.trainer import train_bpe

    path = os.path.join(DATA_DIR, _DEMO_TEXT)
    if not os.path.isfile(path):
        raise ValueError(f"the demo text is missing from the installation: {path}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    print(f"Training a {vocab_size:,}-token BPE tokenizer (pattern {pattern}) on "
          f"{len(text.encode()) / 1e3:,.0f} KB of Pride and Prejudice (chapters 1-19, public domain)...", flush=True)
    started = time.perf_counter()
    tok = train_bpe(text.splitlines(keepends=True), vocab_size, pattern=pattern,
                    special_tokens=["<|endoftext|>"], show_progress=show_progress)
    seconds = time.perf_counter() - started
    ids = tok.encode_ordinary(text)
    print(f"  {len(tok.merges):,} merges in {seconds:.1f} s; the text is {len(text.encode()):,} bytes = "
          f"{len(ids):,} tokens ({len(text.encode()) / max(len(ids), 1):.2f} bytes per token)")
    if seconds > 5:
        print("  (most of that time was Numba compiling numtok's kernels; they are cached, so the next run is fast)")
    print()
    print("First merges:   " + "  ".join(_show(a) + "+" + _show(b) for a, b in tok.merges[:8]))
    longest = sorted((t for t in tok.vocab if t not in {s.encode() for s in tok.special_tokens}), key=len, reverse=True)[:8]
    print("Longest tokens: " + "  ".join(_show(t) for t in longest) + "\n")
    for sentence in _DEMO_SENTENCES:
        sids = tok.encode_ordinary(sentence)
        pieces = tok.decode_tokens_bytes(sids)
        print(f"{sentence}\n  {len(sids)} tokens: " + "|".join(_show(p) for p in pieces))
        print(f"  ids: {' '.join(map(str, sids.tolist()[:24]))}{' ...' if len(sids) > 24 else ''}")
        assert tok.decode(sids) == sentence
    print("\nDecoding gives the text back exactly; unseen characters (é, 東) fall back to bytes.")
    if output:
        parent = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(parent):
            raise ValueError(f"output directory does not exist: {parent}")
        tok.save(output)
        print(f"Saved to {output} (loads in numtok, HF tokenizers and transformers).")
    print("Next: numtok train FILES --vocab-size 32000 -o tokenizer.json; numtok encode -t tokenizer.json FILES -o ids.npy")


def _show(b: bytes) -> str:
    text = b.decode("utf-8", errors="backslashreplace")
    return text.replace("\n", "\\n").replace(" ", "\u2423") if text.strip() != text or "\n" in text else text
