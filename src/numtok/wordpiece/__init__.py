"""WordPiece: training as in the Hugging Face course, encoding identical to HF ``tokenizers``.

Training (:func:`train_wordpiece`) follows the course's WordPiece chapter: words from the
pre-tokenizer, each split into its first character and ``"##"``-prefixed following
characters; the vocabulary starts with the special tokens, then every symbol sorted as a
string; then, repeatedly, the pair with the highest

    score = freq(pair) / (freq(first) * freq(second))

is merged (ties go to the pair seen first: words in first-seen order, positions left to right)
into ``first + second`` without the second's ``"##"``, until ``vocab_size`` tokens.

Encoding (:class:`WordPiece`) is greedy longest-match-first with the ``"##"`` prefix for
word-internal pieces; a word with any unmatched position, or longer than
``max_input_chars_per_word`` (100) characters, is a single ``[UNK]``. Loaded from a BERT
``tokenizer.json`` (:meth:`WordPiece.from_file`) or ``vocab.txt``
(:meth:`WordPiece.from_vocab`), it gives the ids HF gives, normalizer and pre-tokenizer included.

>>> wp = train_wordpiece({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, 15)
>>> wp.merges
[('##g', '##s', '##gs'), ('h', '##u', 'hu'), ('hu', '##gs', 'hugs')]
>>> wp.tokenize("bugs mug hugs")
['b', '##u', '##gs', '[UNK]', 'hugs']
>>> wp.encode("bugs").tolist(), wp.decode(wp.encode("pugs pun"))
([9, 8, 12], 'pugs pun')
"""

from __future__ import annotations

from .model import BERT_SPECIAL_TOKENS, WordPiece
from .trainer import train_wordpiece

__all__ = ["WordPiece", "train_wordpiece", "BERT_SPECIAL_TOKENS"]
