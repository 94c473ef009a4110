"""Slow, obviously-correct BPE trainer that the Numba engine is checked against.

It recounts every pair from scratch before each merge, exactly as the documents describe,
and breaks ties either like HF (smallest pair of ids) or like the course (first pair seen).
"""

from __future__ import annotations

import regex


def pretokenize_naive(lines, pattern_string: str) -> dict[bytes, int]:
    """Word counts in first-seen order, each line pre-tokenized on its own."""
    counts: dict[bytes, int] = {}
    for line in lines:
        for piece in regex.findall(pattern_string, line):
            b = piece.encode("utf-8")
            counts[b] = counts.get(b, 0) + 1
    return counts


def train_naive(word_counts: dict, base: list[bytes], vocab_size: int, *, specials=(), min_frequency=0,
                tie_break="hf", max_token_length=None, units="bytes", end_of_word=None):
    """Return (merges, vocab) with vocab = {token bytes: id}, ids: specials, base, merges."""
    vocab: dict[bytes, int] = {}
    for tok in list(specials) + list(base):
        vocab.setdefault(tok if isinstance(tok, bytes) else tok.encode(), len(vocab))
    words = []
    for word, freq in word_counts.items():
        w = word if isinstance(word, bytes) else word.encode()
        if units == "bytes":
            symbols = [bytes([x]) for x in w]
        else:
            symbols = [c.encode() for c in w.decode()]
        if end_of_word:
            symbols.append(end_of_word.encode())
        words.append((symbols, freq))
    merges = []
    limit = max_token_length if max_token_length is not None else float("inf")

    def size(tok: bytes) -> int:
        if units == "bytes":
            return len(tok)
        return 1 if end_of_word and tok == end_of_word.encode() else len(tok.decode())

    # token lengths in units, for max_token_length
    lengths = {tok: size(tok) for tok in vocab}
    while len(vocab) < vocab_size:
        counts: dict[tuple[bytes, bytes], int] = {}
        for symbols, freq in words:
            for a, b in zip(symbols, symbols[1:]):
                if lengths[a] + lengths[b] <= limit:
                    counts[(a, b)] = counts.get((a, b), 0) + freq
        if not counts:
            break
        if tie_break == "hf":
            best = min(counts, key=lambda p: (-counts[p], vocab[p[0]], vocab[p[1]]))
        else:
            best = max(counts, key=counts.get)  # first maximum in first-seen order
        if counts[best] < 1 or counts[best] < min_frequency:
            break
        a, b = best
        new = a + b
        if new not in vocab:
            vocab[new] = len(vocab)
            lengths[new] = lengths[a] + lengths[b]
        merges.append(best)
        for symbols, _ in words:
            i = 0
            while i < len(symbols) - 1:
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i : i + 2] = [new]
                i += 1
    return merges, vocab
