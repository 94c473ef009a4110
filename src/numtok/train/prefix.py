"""The tokenizer of a smaller vocabulary from a longer training run.

BPE learns merges one after another and nothing learned later changes an earlier step, so the
tokenizer ``train_bpe(..., vocab_size=k)`` is the first merges of a run to a larger size: those
made until the ``k``-th id exists (a merge that rebuilds an existing token adds no id, as in HF,
so the count of merges is not always ``k`` minus the first merge's id). ``tests/test_sweep.py``
checks that the prefix equals training to ``k``, merges and ids.

>>> from numtok.train.trainer import train_bpe
>>> big = train_bpe(["low lower lowest newer newest"] * 3, 266)
>>> vocab_prefix(big, 259).merges == train_bpe(["low lower lowest newer newest"] * 3, 259).merges
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..encode.tokenizer import Tokenizer

__all__ = ["vocab_prefix", "smallest_prefix"]


def smallest_prefix(tok: Tokenizer) -> int:
    """The smallest vocabulary size a prefix of ``tok`` can have: its ids before the first merge."""
    merges = tok.merges
    if not merges:
        return tok.n_vocab
    a, b = merges[0]
    return tok.encode_single_token(a + b)


def vocab_prefix(tok: Tokenizer, vocab_size: int) -> Tokenizer:
    """The tokenizer of ``tok``'s first ``vocab_size`` ids: its merges until the last of them
    exists, its special tokens, pattern and options.

    Raises ValueError for a tokenizer without merges in order (a rank file; a continued or
    hand-made merge list whose tokens are not made in id order), or a size below
    :func:`smallest_prefix` or above ``tok.n_vocab``.
    """
    from ..encode.tokenizer import Tokenizer

    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, not {type(vocab_size).__name__}")
    if tok.merges is None or not tok.merges or tok.ignore_merges:
        raise ValueError("a vocabulary prefix needs a tokenizer trained with merges (numtok.train_bpe), not a rank file")
    lowest = smallest_prefix(tok)
    if not lowest <= vocab_size <= tok.n_vocab:
        raise ValueError(f"vocab_size {vocab_size} is outside the sizes this run holds: {lowest} (no merge) to {tok.n_vocab}")
    if vocab_size == tok.n_vocab:
        return tok
    vocab = tok.vocab
    merges = tok.merges
    last, next_id = 0, lowest
    for i, (a, b) in enumerate(merges if vocab_size > lowest else ()):
        made = vocab[a + b]
        if made == next_id:
            next_id += 1
        elif made > next_id:
            raise ValueError(f"merge {i} makes id {made} before id {next_id}: the merges do not make the ids in order")
        if next_id == vocab_size:
            last = i + 1
            break
    kept = {token: i for token, i in vocab.items() if i < vocab_size}
    return Tokenizer(kept, merges=merges[:last], pattern=tok.pattern, special_tokens=tok.special_tokens, units=tok.units,
                     unk_token=tok.unk_token, end_of_word=tok.end_of_word)
