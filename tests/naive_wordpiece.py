"""Slow, obviously-correct WordPiece: the oracle the Numba kernels are checked against.

The trainer is the Hugging Face course's WordPiece code, step by step: recompute every pair's
score from scratch at each step, take the first pair with the highest score in dict order,
rewrite every word. Two deliberate additions, both documented in ``train_wordpiece``:
a merge whose string is already in the vocabulary does not append a duplicate, and training
stops when no pair is left. Pre-tokenization and normalization come from HF ``tokenizers``
itself, so this module shares no code with numtok.
"""

from __future__ import annotations

import re
from collections import defaultdict

from tokenizers import normalizers, pre_tokenizers


def pre_tokenize(text: str, pre_tokenizer: str = "bert") -> list[str]:
    """Words of ``text`` by HF's own BertPreTokenizer / WhitespaceSplit."""
    pt = pre_tokenizers.BertPreTokenizer() if pre_tokenizer == "bert" else pre_tokenizers.WhitespaceSplit()
    return [w for w, _ in pt.pre_tokenize_str(text)]


def word_counts(texts, pre_tokenizer: str = "bert", special_tokens=()) -> dict[str, int]:
    """{word: count} in first-seen order, as the course builds ``word_freqs``; occurrences of
    ``special_tokens`` are cut out of the texts first (each piece pre-tokenized on its own)."""
    cut = None
    if special_tokens:
        cut = re.compile("|".join(map(re.escape, sorted(special_tokens, key=len, reverse=True))))
    freqs: dict[str, int] = defaultdict(int)
    for text in texts:
        for piece in cut.split(text) if cut else [text]:
            for w in pre_tokenize(piece, pre_tokenizer):
                freqs[w] += 1
    return dict(freqs)


def compute_pair_scores(splits, word_freqs):
    """The course's ``compute_pair_scores``: dict of pair -> score, in first-seen order."""
    letter_freqs = defaultdict(int)
    pair_freqs = defaultdict(int)
    for word, freq in word_freqs.items():
        split = splits[word]
        if len(split) == 1:
            letter_freqs[split[0]] += freq
            continue
        for i in range(len(split) - 1):
            pair = (split[i], split[i + 1])
            letter_freqs[split[i]] += freq
            pair_freqs[pair] += freq
        letter_freqs[split[-1]] += freq
    return {pair: freq / (letter_freqs[pair[0]] * letter_freqs[pair[1]]) for pair, freq in pair_freqs.items()}


def merge_pair(a, b, merged, splits):
    """The course's ``merge_pair``: left to right, non-overlapping."""
    for word, split in splits.items():
        if len(split) == 1:
            continue
        i = 0
        while i < len(split) - 1:
            if split[i] == a and split[i + 1] == b:
                split = split[:i] + [merged] + split[i + 2 :]
            else:
                i += 1
        splits[word] = split
    return splits


BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_wordpiece(word_freqs: dict[str, int], vocab_size: int, special_tokens=BERT_SPECIALS, prefix: str = "##"):
    """Returns (vocabulary list in id order, merges as (first, second, merged))."""
    word_freqs = {w: c for w, c in word_freqs.items() if w}
    alphabet = []
    for word in word_freqs:
        if word[0] not in alphabet:
            alphabet.append(word[0])
        for letter in word[1:]:
            if prefix + letter not in alphabet:
                alphabet.append(prefix + letter)
    alphabet.sort()
    vocab = list(dict.fromkeys(special_tokens))
    vocab += [s for s in alphabet if s not in vocab]
    splits = {word: [c if i == 0 else prefix + c for i, c in enumerate(word)] for word in word_freqs}
    merges = []
    while len(vocab) < vocab_size:
        scores = compute_pair_scores(splits, word_freqs)
        if not scores:
            break
        best_pair, max_score = None, None
        for pair, score in scores.items():
            if max_score is None or max_score < score:
                best_pair = pair
                max_score = score
        a, b = best_pair
        merged = a + b[len(prefix):] if b.startswith(prefix) else a + b
        splits = merge_pair(a, b, merged, splits)
        merges.append((a, b, merged))
        if merged not in vocab:
            vocab.append(merged)
    return vocab, merges


def encode_word(word: str, vocab, prefix: str = "##", unk: str = "[UNK]", max_chars: int = 100) -> list[str]:
    """HF's WordPiece: longest prefix in the vocabulary first; any failure = the whole word unk."""
    if len(word) > max_chars:
        return [unk]
    tokens = []
    start = 0
    while start < len(word):
        end = len(word)
        piece = None
        while start < end:
            sub = word[start:end] if start == 0 else prefix + word[start:end]
            if sub in vocab:
                piece = sub
                break
            end -= 1
        if piece is None:
            return [unk]
        tokens.append(piece)
        start = end
    return tokens


def tokenize(text: str, vocab, *, pre_tokenizer: str = "bert", prefix: str = "##", unk: str = "[UNK]",
             lowercase: bool | None = None, max_chars: int = 100) -> list[str]:
    """Normalize (HF BertNormalizer when ``lowercase`` is not None), pre-tokenize, encode."""
    if lowercase is not None:
        text = normalizers.BertNormalizer(lowercase=lowercase).normalize_str(text)
    vocab = set(vocab)
    return [t for w in pre_tokenize(text, pre_tokenizer) for t in encode_word(w, vocab, prefix, unk, max_chars)]
