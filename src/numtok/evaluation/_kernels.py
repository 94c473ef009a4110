"""Private Numba kernels of evaluation: per-document text statistics and per-tokenizer token
statistics, over the flat arrays the readers and the batch encoder produce.

* ``text_stats``: for each document (a ``[start, end)`` range of valid UTF-8), its characters,
  its whitespace-separated words (runs of characters whose class has no ``BIT_S``) and the
  UTF-8 bytes of its letters in each script (``scripts[cp]``: 0 = not a letter, ``s + 1`` =
  script ``s``).
* ``token_stats``: for each document (its ids end at ``doc_end[d]``), the byte-fallback tokens
  among its ids (``fallback[id]`` is 1 for a token of one byte >= 0x80), and marks every id it
  uses in its group's row of ``used``.
* ``word_token_stats``: the same for unique words of one group, each weighted by its count:
  totals of tokens and fallback tokens, and the ids of words counted at least once.
"""

from __future__ import annotations

import numpy as np

from .._native.jit import cached_njit
from ..pretokenizers._unicode import BIT_S


@cached_njit(nogil=True)
def text_stats(data, docs, classes, scripts, chars, words, letters):
    """Fill ``chars[d]``, ``words[d]`` and ``letters[d, s]`` (UTF-8 bytes of script ``s``)."""
    for d in range(docs.shape[0]):
        i = np.int64(docs[d, 0])
        end = np.int64(docs[d, 1])
        n_chars = 0
        n_words = 0
        in_word = False
        while i < end:
            b = np.int64(data[i])
            if b < 0x80:
                cp, n = b, 1
            elif b < 0xE0:
                cp, n = ((b & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), 2
            elif b < 0xF0:
                cp, n = ((b & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F), 3
            else:
                cp = ((b & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12) | ((np.int64(data[i + 2]) & 0x3F) << 6)
                cp, n = cp | (np.int64(data[i + 3]) & 0x3F), 4
            n_chars += 1
            if classes[cp] & BIT_S:
                in_word = False
            elif not in_word:
                in_word = True
                n_words += 1
            s = np.int64(scripts[cp])
            if s > 0:
                letters[d, s - 1] += n
            i += n
        chars[d] = n_chars
        words[d] = n_words


@cached_njit(nogil=True)
def token_stats(ids, doc_end, doc_group, fallback, used, out_fallback):
    """Fill ``out_fallback[d]`` and set ``used[doc_group[d], id]`` for every id of document d."""
    k = np.int64(0)
    for d in range(doc_end.shape[0]):
        end = np.int64(doc_end[d])
        g = np.int64(doc_group[d])
        n = np.int64(0)
        while k < end:
            t = np.int64(ids[k])
            n += np.int64(fallback[t])
            used[g, t] = 1
            k += 1
        out_fallback[d] = n


@cached_njit(nogil=True)
def word_token_stats(ids, word_end, counts, fallback, used):
    """(tokens, fallback tokens) of words whose ids end at ``word_end``, word i counted
    ``counts[i]`` times; sets ``used[id]`` for the ids of words with a count."""
    k = np.int64(0)
    tokens = np.int64(0)
    fallbacks = np.int64(0)
    for w in range(word_end.shape[0]):
        end = np.int64(word_end[w])
        c = np.int64(counts[w])
        n = np.int64(0)
        f = np.int64(0)
        while k < end:
            t = np.int64(ids[k])
            f += np.int64(fallback[t])
            if c > 0:
                used[t] = 1
            n += 1
            k += 1
        tokens += c * n
        fallbacks += c * f
    return tokens, fallbacks
