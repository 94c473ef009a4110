"""WordPiece training as in the Hugging Face course (shared seed 003).

Words come from the pre-tokenizer, each split into its first character and ``"##"``-prefixed
following characters; the vocabulary starts with the special tokens, then every symbol sorted
as a string; then, repeatedly, the pair with the highest

    score = freq(pair) / (freq(first) * freq(second))

is merged (ties go to the pair seen first: words in first-seen order, positions left to right)
into ``first + second`` without the second's ``"##"``, until ``vocab_size`` tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Iterable

import numpy as np

from . import _kernels as K
from .bert import class_table, pre_tokenizer_mode

__all__ = ["WordPiece", "train_wordpiece", "BERT_SPECIAL_TOKENS"]
from .model import BERT_SPECIAL_TOKENS, WordPiece, pack_tokens

__all__ = ["train_wordpiece"]


def train_wordpiece(
    source_or_counts,
    vocab_size: int,
    *,
    special_tokens: Iterable[str] = BERT_SPECIAL_TOKENS,
    prefix: str = "##",
    pre_tokenizer: str = "bert",
    unk_token: str = "[UNK]",
    show_progress: bool | None = None,
) -> WordPiece:
    """Train a WordPiece vocabulary the way the Hugging Face course's WordPiece chapter does.

    The score of a pair is ``freq(pair) / (freq(first) * freq(second))`` with frequencies
    recomputed after every merge; the best score wins, ties go to the pair seen first (words
    in first-seen order, positions left to right), and the merged token is ``first + second``
    without the second's prefix. Ids: special tokens, then the alphabet (every first
    character and every ``prefix + following character``) sorted as strings, then the merges
    in order.

    The course's prose about its hug/pug/pun/bun/hugs example says ``("hu", "##g")`` is merged
    third, "both at 1/15"; by its own formula ``("hu", "##g")`` scores 10/225 while
    ``("hu", "##gs")`` scores 5/75 = 1/15, so numtok (and the course's code) merges
    ``("hu", "##gs") -> "hugs"`` third:

    >>> wp = train_wordpiece({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, 15)
    >>> [m[2] for m in wp.merges]
    ['##gs', 'hu', 'hugs']

    A merge whose string is already a token (possible with literal ``#`` characters under the
    "whitespace" pre-tokenizer) re-uses that token's id; the course's loop would append a
    duplicate entry to its vocabulary list. Training stops early when no pair is left.

    Args:
        source_or_counts: a mapping ``{word: count}`` (words are used as they are, in the
            mapping's order), or an iterable of str (each one sequence), or a path / list of
            paths (``.txt``: each line one sequence; ``.jsonl``: the "text" field; ``.gz``).
        vocab_size: the number of tokens wanted, special tokens included.
        special_tokens: the first ids, in order; where they occur in the training text they
            are cut out (and at encoding time they are matched in the text).
        prefix: the continuing-subword prefix.
        pre_tokenizer: "bert" (split on whitespace, isolate punctuation; no normalization,
            like the course's use of ``bert-base-cased``'s pre-tokenizer) or "whitespace".
        unk_token: the token for unmatched words; must be one of ``special_tokens``.
        show_progress: a progress bar for reading the corpus (default: when stderr is a terminal).

    Returns:
        A :class:`WordPiece` (no normalizer, the same pre-tokenizer, ``[CLS] ... [SEP]``
        template when both are special tokens) whose ``merges`` lists the merges learned.

    Raises:
        ValueError: vocab_size smaller than the special tokens plus the alphabet (the message
            gives the minimum), empty corpus, unknown pre_tokenizer, bad counts.
        TypeError: a source that is neither a mapping, an iterable of str nor a path.
    """
    mode = pre_tokenizer_mode(pre_tokenizer)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive int, not {vocab_size!r}")
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a sequence of str, not a str")
    specials = list(dict.fromkeys(special_tokens))
    for s in specials:
        if not isinstance(s, str) or not s:
            raise ValueError(f"special tokens must be non-empty strings, not {s!r}")
    if unk_token not in specials:
        raise ValueError(f"unk_token {unk_token!r} must be one of special_tokens {specials!r}")
    if not isinstance(prefix, str):
        raise TypeError("prefix must be a str")

    if isinstance(source_or_counts, Mapping):
        cps, starts, freqs = _words_from_counts(source_or_counts)
    else:
        cps, starts, freqs = _words_from_source(source_or_counts, mode, specials, show_progress)
    if len(freqs) == 0:
        raise ValueError("empty corpus: no words to train on")

    # alphabet: first characters, and the prefixed following characters, sorted as strings
    is_first = np.zeros(len(cps), dtype=bool)
    is_first[starts[:-1]] = True
    firsts = np.unique(cps[is_first])
    inners = np.unique(cps[~is_first])
    first_str = [chr(c) for c in firsts.tolist()]
    inner_str = [prefix + chr(c) for c in inners.tolist()]
    tokens = list(specials)
    index = {t: i for i, t in enumerate(tokens)}
    for s in sorted(set(first_str) | set(inner_str)):
        if s not in index:
            index[s] = len(tokens)
            tokens.append(s)
    if vocab_size < len(tokens):
        raise ValueError(
            f"vocab_size {vocab_size} is too small: the {len(specials)} special tokens and the "
            f"{len(tokens) - len(specials)}-symbol alphabet already take {len(tokens)}; the minimum is {len(tokens)}"
        )
    first_ids = np.array([index[s] for s in first_str], dtype=np.int32)
    inner_ids = np.array([index[s] for s in inner_str], dtype=np.int32)
    sym = np.empty(len(cps), dtype=np.int32)
    sym[is_first] = first_ids[np.searchsorted(firsts, cps[is_first])]
    sym[~is_first] = inner_ids[np.searchsorted(inners, cps[~is_first])]
    encoded = [t.encode("utf-8", "surrogatepass") for t in tokens]
    tok_bytes, tok_off = pack_tokens(encoded)

    # every merge removes at least one symbol occurrence: no more tokens than that are reachable
    reachable = min(int(vocab_size), len(tokens) + len(cps) - len(freqs))
    merges, tok_bytes, tok_off, n_tok = K.train_kernel(
        sym, starts, freqs, tok_bytes.copy(), tok_off, len(tokens), len(prefix.encode("utf-8")), reachable
    )
    raw = tok_bytes.tobytes()
    all_tokens = tokens + [raw[tok_off[i] : tok_off[i + 1]].decode("utf-8", "surrogatepass")
                           for i in range(len(tokens), n_tok)]
    vocab = {t: i for i, t in enumerate(all_tokens)}
    template = ([vocab["[CLS]"]], [vocab["[SEP]"]]) if "[CLS]" in specials and "[SEP]" in specials else None
    wp = WordPiece(vocab, unk_token=unk_token, prefix=prefix, pre_tokenizer=pre_tokenizer,
                   special_tokens=specials, template=template)
    wp.merges = [(all_tokens[a], all_tokens[b], all_tokens[n]) for a, b, n in merges.tolist()]
    return wp


def _words_from_counts(counts: Mapping) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    words, freqs = [], []
    for w, c in counts.items():
        if not isinstance(w, str):
            raise TypeError(f"words must be str, not {type(w).__name__}")
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise TypeError(f"count of {w!r} must be an int, not {type(c).__name__}")
        if c < 1:
            raise ValueError(f"count of {w!r} must be >= 1, not {c}")
        if w:
            words.append(w)
            freqs.append(int(c))
    lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    starts = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(lens, out=starts[1:])
    cps = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    return cps, starts, np.array(freqs, dtype=np.int64)


def _words_from_source(source, mode: int, specials: list[str], show_progress):
    """Unique words of a text source: (code points int64, word starts, counts), first-seen order."""
    from ..io.sources import iter_chunks, source_size
    from ..progress import Progress

    flags = class_table()
    slots = np.full(1 << 16, -1, dtype=np.int64)
    w_hash = np.zeros(1 << 15, dtype=np.uint64)
    w_start = np.zeros(1 << 15, dtype=np.int64)
    w_len = np.zeros(1 << 15, dtype=np.int64)
    w_count = np.zeros(1 << 15, dtype=np.int64)
    store = np.zeros(1 << 20, dtype=np.uint8)
    sizes = np.zeros(2, dtype=np.int64)
    progress = Progress("Counting words", total=source_size(source), unit="B", enabled=show_progress)
    for chunk in iter_chunks(source, special_tokens=specials):
        slots, w_hash, w_start, w_len, w_count, store = K.count_words_kernel(
            chunk.data, chunk.docs, flags, mode, slots, w_hash, w_start, w_len, w_count, store, sizes)
        progress.set(chunk.consumed)
    progress.close()
    n_words, used = int(sizes[0]), int(sizes[1])
    lens = K.utf8_char_counts(store, w_start[:n_words], w_len[:n_words])
    starts = np.zeros(n_words + 1, dtype=np.int64)
    np.cumsum(lens, out=starts[1:])
    cps = np.frombuffer(store[:used].tobytes().decode("utf-8").encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    return cps, starts, w_count[:n_words].copy()
