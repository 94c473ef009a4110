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

    def size(tok: bytes) -> int:
        if units == "bytes":
            return len(tok)
        return 1 if end_of_word and tok == end_of_word.encode() else len(tok.decode())

    # token lengths in units, for max_token_length
    lengths = {tok: size(tok) for tok in vocab}
    merges = learn_naive(words, vocab, lengths, len(vocab), vocab_size, min_frequency=min_frequency,
                         tie_break=tie_break, max_token_length=max_token_length)
    return merges, vocab


def learn_naive(words, vocab, lengths, next_id, vocab_size, *, min_frequency=0, tie_break="hf", max_token_length=None):
    """Greedily learn merges on ``words`` (lists of token bytes, with counts), recounting every
    pair before each merge, until ``next_id`` (the next new token's id) reaches vocab_size.
    ``vocab`` and ``lengths`` are extended in place; returns the merges."""
    merges = []
    limit = max_token_length if max_token_length is not None else float("inf")
    while next_id < vocab_size:
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
            vocab[new] = next_id
            next_id += 1
            lengths[new] = lengths[a] + lengths[b]
        merges.append(best)
        for symbols, _ in words:
            apply_merge(symbols, a, b)
    return merges


def apply_merge(symbols: list[bytes], a: bytes, b: bytes) -> None:
    """Merge every (a, b) of a word, left to right, in place."""
    i = 0
    while i < len(symbols) - 1:
        if symbols[i] == a and symbols[i + 1] == b:
            symbols[i : i + 2] = [a + b]
        i += 1


def rank_bpe_naive(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """tiktoken's rule: a piece that is a token is one token; else merge the adjacent pair whose
    concatenation has the lowest rank (leftmost first) until none is a token."""
    if piece in ranks:
        return [piece]
    parts = [bytes([x]) for x in piece]
    while True:
        found = [(ranks[parts[i] + parts[i + 1]], i) for i in range(len(parts) - 1) if parts[i] + parts[i + 1] in ranks]
        if not found:
            return parts
        _, i = min(found)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def continue_naive(word_counts: dict, base_vocab: dict, base_merges, vocab_size, *, rank_mode=False, n_vocab=None,
                   new_specials=(), tie_break="hf", min_frequency=0, max_token_length=None):
    """Continued training, naively: split each word into the base's tokens (its merges applied
    in order, or tiktoken's rank rule for a rank-mode base), then learn merges greedily with new
    ids from the base's size ``n_vocab`` (default: its largest id + 1), after ``new_specials``.
    Returns (new merges, vocab)."""
    vocab = dict(base_vocab)
    next_id = max(vocab.values()) + 1 if n_vocab is None else n_vocab
    for s in new_specials:
        vocab[s.encode()] = next_id
        next_id += 1
    ranks = {t: i for t, i in base_vocab.items()}
    words = []
    for word, freq in word_counts.items():
        w = word if isinstance(word, bytes) else word.encode()
        if rank_mode:
            symbols = rank_bpe_naive(w, ranks)
        else:
            symbols = [bytes([x]) for x in w]
            for a, b in base_merges:
                apply_merge(symbols, a, b)
        words.append((symbols, freq))
    lengths = {tok: len(tok) for tok in vocab}
    merges = learn_naive(words, vocab, lengths, next_id, vocab_size, tie_break=tie_break,
                         min_frequency=min_frequency, max_token_length=max_token_length)
    return merges, vocab


def encode_continued_naive(text: str, pattern_string: str, ranks: dict[bytes, int], new_merges, vocab: dict) -> list[int]:
    """Ids of ``text`` under a rank-mode base continued with ``new_merges``: a piece that is a
    token is one token; else the base's rank rule, then the new merges by priority (the
    earliest listed pair present, leftmost first) until none applies."""
    priority = {pair: i for i, pair in reversed(list(enumerate(new_merges)))}
    out = []
    for piece in regex.findall(pattern_string, text):
        b = piece.encode("utf-8")
        if b in vocab:
            out.append(vocab[b])
            continue
        parts = rank_bpe_naive(b, ranks)
        while True:
            found = [(priority[(parts[i], parts[i + 1])], i) for i in range(len(parts) - 1) if (parts[i], parts[i + 1]) in priority]
            if not found:
                break
            _, i = min(found)
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        out.extend(vocab[p] for p in parts)
    return out
