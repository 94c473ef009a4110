"""The options of BPE training, checked once, before any corpus is read.

>>> opts = TrainOptions.check(300, special_tokens=["<s>", "<s>"])
>>> opts.pattern, opts.special_tokens
('gpt2', ['<s>'])
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..pretokenizers.patterns import resolve_pattern
from .base import resolve_base

__all__ = ["TrainOptions", "special_token_list", "TIE_BREAKS", "ALPHABETS", "UNITS"]

TIE_BREAKS = ("hf", "first-seen")
ALPHABETS = ("bytes", "observed")
UNITS = ("bytes", "chars")


class TrainOptions:
    """Validated training options: ``TrainOptions.check(vocab_size, **options)`` raises what
    :func:`numtok.train_bpe` raises for a bad option, before any corpus is read."""

    vocab_size: int
    pattern: str
    pattern_name: str | None
    pattern_string: str
    special_tokens: list[str]
    unk_token: str | None
    min_frequency: int
    max_token_length: int | None
    tie_break: str
    alphabet: str
    units: str
    end_of_word: str | None
    base: Any  # the numtok Tokenizer training continues from, or None
    base_merges: Any  # the thread deriving a rank-mode base's merges, or None
    new_specials: list[str]  # with a base: the special tokens it does not have

    @classmethod
    def check(cls, vocab_size, pattern=None, special_tokens=(), min_frequency=0, max_token_length=None,
              tie_break="hf", alphabet="bytes", units="bytes", unk_token=None, end_of_word=None, base=None) -> TrainOptions:
        self = cls()
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
            raise TypeError(f"vocab_size must be an int, not {type(vocab_size).__name__}")
        self.vocab_size = int(vocab_size)
        self.base = None if base is None else resolve_base(base)
        self.base_merges = None
        self.new_specials = []
        if self.base is not None:
            if pattern is None:
                pattern = self.base.pattern
            elif resolve_pattern(pattern)[1] != resolve_pattern(self.base.pattern)[1]:
                raise ValueError(f"pattern {pattern!r} is not the base tokenizer's pattern {self.base.pattern!r}: its words "
                                 "would not be the base's pieces (leave pattern out to take the base's)")
        elif pattern is None:
            pattern = "gpt2"
        self.pattern_name, self.pattern_string = resolve_pattern(pattern)
        self.pattern = pattern if self.pattern_name is None else self.pattern_name
        specials = special_token_list(special_tokens)
        if unk_token is not None:
            if not isinstance(unk_token, str) or not unk_token:
                raise ValueError(f"unk_token must be a non-empty str, got {unk_token!r}")
            if unk_token not in specials:
                specials.append(unk_token)
        self.special_tokens = specials
        self.unk_token = unk_token
        if isinstance(min_frequency, bool) or not isinstance(min_frequency, (int, np.integer)) or min_frequency < 0:
            raise ValueError(f"min_frequency must be a non-negative int, got {min_frequency!r}")
        self.min_frequency = int(min_frequency)
        if max_token_length is not None and (
            isinstance(max_token_length, bool) or not isinstance(max_token_length, (int, np.integer)) or max_token_length < 1
        ):
            raise ValueError(f"max_token_length must be a positive int or None, got {max_token_length!r}")
        self.max_token_length = None if max_token_length is None else int(max_token_length)
        if tie_break not in TIE_BREAKS:
            raise ValueError(f"unknown tie_break {tie_break!r}; choose one of {', '.join(TIE_BREAKS)}")
        self.tie_break = tie_break
        if alphabet not in ALPHABETS:
            raise ValueError(f"unknown alphabet {alphabet!r}; choose one of {', '.join(ALPHABETS)}")
        if units not in UNITS:
            raise ValueError(f"unknown units {units!r}; choose one of {', '.join(UNITS)}")
        if units == "chars" and alphabet == "bytes":
            raise ValueError('units="chars" needs alphabet="observed" (there is no fixed alphabet of characters)')
        self.alphabet, self.units = alphabet, units
        if end_of_word is not None and (not isinstance(end_of_word, str) or not end_of_word):
            raise ValueError(f"end_of_word must be a non-empty str, got {end_of_word!r}")
        self.end_of_word = end_of_word
        if self.base is not None:
            return self._check_base()
        if alphabet == "bytes":
            minimum = 256 + len(specials) + (end_of_word is not None)
            if self.vocab_size < minimum:
                raise ValueError(
                    f"vocab_size {self.vocab_size} is too small: the minimum is {minimum} "
                    f"(256 byte tokens + {len(specials)} special tokens{' + end_of_word' if end_of_word else ''})"
                )
        return self

    def _check_base(self) -> TrainOptions:
        base = self.base
        given = [name for name, value, default in (("alphabet", self.alphabet, "bytes"), ("units", self.units, "bytes"),
                                                   ("end_of_word", self.end_of_word, None)) if value != default]
        if given:
            raise ValueError(f"{', '.join(given)} cannot be set with a base: continued training keeps the base's "
                             "(byte-level, its own alphabet)")
        if self.unk_token is not None and self.unk_token != base.unk_token:
            raise ValueError(f"unk_token {self.unk_token!r} differs from the base tokenizer's ({base.unk_token!r})")
        self.unk_token = base.unk_token
        kept = [s for s, _ in sorted(base.special_tokens.items(), key=lambda kv: kv[1])]
        self.new_specials = [s for s in self.special_tokens if s not in base.special_tokens and s != base.unk_token]
        for s in self.new_specials:
            tid = base._lookup_token(s.encode("utf-8"))
            if tid is not None:
                raise ValueError(f"special token {s!r} is already an ordinary token of the base tokenizer (id {tid}); "
                                 "a string has one id")
        self.special_tokens = kept + self.new_specials
        n = base.n_vocab
        if self.vocab_size <= n:
            raise ValueError(f"vocab_size {self.vocab_size} is not above the base tokenizer's size {n} (its n_vocab): "
                             "continued training adds tokens to the base's")
        if self.vocab_size < n + len(self.new_specials):
            raise ValueError(f"vocab_size {self.vocab_size} is too small: the minimum is {n + len(self.new_specials)} "
                             f"(the base's {n} ids + {len(self.new_specials)} new special tokens)")
        return self


def special_token_list(special_tokens: Iterable[str]) -> list[str]:
    """The special tokens checked, without repeats, in order."""
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a sequence of str, not a str")
    specials: list[str] = []
    for tok in special_tokens:
        if not isinstance(tok, str) or not tok:
            raise ValueError(f"special tokens must be non-empty str, got {tok!r}")
        if tok not in specials:
            specials.append(tok)
    return specials
