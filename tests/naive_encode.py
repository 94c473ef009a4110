"""Slow, obviously-correct reference encoder that numtok's kernels are checked against.

Pure Python, no tables, no caches, no heaps: pre-tokenize with the ``regex`` module, then
repeatedly merge the adjacent pair with the lowest priority (leftmost on ties) until none is
left. It implements the same options as ``numtok.Tokenizer`` (rank / merge mode, byte or char
units, unknown token, end-of-word token, ignore_merges, special tokens).
"""

from __future__ import annotations

import regex

from numtok.pretokenizers.patterns import resolve_pattern


def repair(text: str) -> str:
    """Replace lone surrogates by U+FFFD (valid pairs are joined), as tiktoken does."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class NaiveBPE:
    """Reference BPE. ``merges=None`` is rank mode (tiktoken), a list is merge mode (HF)."""

    def __init__(self, vocab, *, merges=None, pattern="gpt2", special_tokens=None, units="bytes",
                 unk_token=None, end_of_word=None, ignore_merges=False):  # fmt: skip
        self.special_tokens = dict(special_tokens or {})
        special_bytes = {s.encode(): i for s, i in self.special_tokens.items()}
        # The mergeable vocabulary: everything that is not one of the special tokens.
        self.ranks = {t: i for t, i in vocab.items() if special_bytes.get(t) != i}
        self.bytes_of = {i: t for t, i in self.ranks.items()}
        for s, i in self.special_tokens.items():
            self.bytes_of[i] = s.encode()
        self.merges = None
        if merges is not None:
            self.merges = {}
            for index, (a, b) in enumerate(merges):
                # a repeated merge keeps its last index (as Hugging Face's map does)
                self.merges[(self.ranks[a], self.ranks[b])] = (index, self.ranks[a + b])
        self.regex = regex.compile(resolve_pattern(pattern)[1])
        self.units = units
        self.unk = None if unk_token is None else self.token_id(unk_token.encode())
        self.eow = None if end_of_word is None else self.token_id(end_of_word.encode())
        self.eow_bytes = None if end_of_word is None else end_of_word.encode()
        self.ignore_merges = ignore_merges

    def token_id(self, raw: bytes) -> int:
        for s, i in self.special_tokens.items():
            if s.encode() == raw:
                return i
        return self.ranks[raw]

    # -- one piece ------------------------------------------------------------------------------

    def symbols(self, piece: bytes) -> list[int]:
        units = [bytes([b]) for b in piece] if self.units == "bytes" else [c.encode() for c in piece.decode()]
        out = []
        for u in units:
            if u in self.ranks:
                out.append(self.ranks[u])
            elif self.unk is not None:
                out.append(self.unk)
            else:
                raise ValueError(f"no token for {u!r}")
        if self.eow is not None:
            out.append(self.eow)
        return out

    def priority(self, a: int, b: int, max_priority=None):
        """(priority, result) of merging ids a and b, or None."""
        if self.merges is not None:
            found = self.merges.get((a, b))
        else:
            if a not in self.bytes_of or b not in self.bytes_of:
                return None
            if self.bytes_of[a] not in self.ranks or self.bytes_of[b] not in self.ranks:
                return None  # special tokens never merge
            if self.ranks[self.bytes_of[a]] != a or self.ranks[self.bytes_of[b]] != b:
                return None
            rank = self.ranks.get(self.bytes_of[a] + self.bytes_of[b])
            found = None if rank is None else (rank, rank)
        if found is None or (max_priority is not None and found[0] >= max_priority):
            return None
        return found

    def merge(self, ids: list[int], max_priority=None) -> list[int]:
        ids = list(ids)
        while len(ids) > 1:
            best = None
            for i in range(len(ids) - 1):
                found = self.priority(ids[i], ids[i + 1], max_priority)
                if found is not None and (best is None or found[0] < best[0]):
                    best = (found[0], i, found[1])
            if best is None:
                break
            _, i, result = best
            ids[i : i + 2] = [result]
        return ids

    def encode_piece(self, piece: bytes) -> list[int]:
        if self.merges is None or self.ignore_merges:
            key = piece if self.eow_bytes is None else piece + self.eow_bytes
            if key in self.ranks:
                return [self.ranks[key]]
        return self.merge(self.symbols(piece))

    # -- text -----------------------------------------------------------------------------------

    def encode_ordinary(self, text: str) -> list[int]:
        out = []
        for m in self.regex.finditer(repair(text)):
            if m.group():
                out.extend(self.encode_piece(m.group().encode()))
        return out

    def encode(self, text: str, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        specials = set(self.special_tokens)
        allowed = specials if allowed_special == "all" else set(allowed_special)
        disallowed = specials - allowed if disallowed_special == "all" else set(disallowed_special)
        for token in disallowed:
            if token in text:
                raise ValueError(f"disallowed special token {token!r}")
        allowed &= specials
        text = repair(text)
        out, start, i = [], 0, 0
        while i < len(text):
            hits = [t for t in allowed if text.startswith(t, i)]
            if hits:
                token = max(hits, key=len)
                out.extend(self.encode_ordinary(text[start:i]))
                out.append(self.special_tokens[token])
                i = start = i + len(token)
            else:
                i += 1
        out.extend(self.encode_ordinary(text[start:]))
        return out

    def decode_bytes(self, ids) -> bytes:
        parts = []
        for i in ids:
            raw = self.bytes_of[int(i)]
            if self.eow_bytes is not None and raw.endswith(self.eow_bytes) and raw not in map(str.encode, self.special_tokens):
                raw = raw[: -len(self.eow_bytes)]
            parts.append(raw)
        return b"".join(parts)


def derive_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Merges of a rank vocabulary: each multi-byte token split by BPE over lower ranks only."""
    naive = NaiveBPE(ranks)
    by_id = {i: t for t, i in ranks.items()}
    out = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        parts = naive.merge([ranks[bytes([b])] for b in token], max_priority=rank)
        if len(parts) == 2:
            out.append((by_id[parts[0]], by_id[parts[1]]))
    return out


def char_offsets(token_bytes: list[bytes]) -> list[tuple[int, int]]:
    """[start, end) character offsets of tokens whose bytes, joined, are UTF-8 text: the
    characters holding the token's first and last byte (an empty token: where it stands)."""
    text = b"".join(token_bytes).decode("utf-8", errors="surrogatepass")
    char_of_byte = []
    for i, ch in enumerate(text):
        char_of_byte += [i] * len(ch.encode("utf-8", errors="surrogatepass"))
    out, pos = [], 0
    for tb in token_bytes:
        if tb:
            out.append((char_of_byte[pos], char_of_byte[pos + len(tb) - 1] + 1))
        else:
            here = char_of_byte[pos] if pos < len(char_of_byte) else len(text)
            out.append((here, here))
        pos += len(tb)
    return out


def piece_cache_arena_head(bits: int) -> int:
    """Where the head of a piece cache's arena is, in the layout ``numtok.encode._kernels``
    documents: after 2**bits sets of 8 words, the long-piece region (as many words) and the
    arena's index (2 << bits words). The head is 8 words: the first is how many data words are
    used; the data follows."""
    return (16 << bits) + (2 << bits)


def piece_cache_arena(cache, bits: int) -> list[tuple[bytes, list[int]]]:
    """The (piece, ids) entries of a piece cache's arena, read with plain Python: per entry
    ``n_ids << 32 | length``, the bytes in little-endian words, the ids three per word (21 bits
    each)."""
    words = [int(w) for w in cache]
    head = piece_cache_arena_head(bits)
    used, at, data = words[head], 0, head + 8
    entries = []
    while at < used:
        length, n_ids = words[data + at] & 0xFFFFFFFF, words[data + at] >> 32
        n_words = (length + 7) // 8
        raw = b"".join(w.to_bytes(8, "little") for w in words[data + at + 1 : data + at + 1 + n_words])
        packed = words[data + at + 1 + n_words : data + at + 1 + n_words + (n_ids + 2) // 3]
        ids = [(packed[q // 3] >> (21 * (q % 3))) & ((1 << 21) - 1) for q in range(n_ids)]
        entries.append((raw[:length], ids))
        at += 1 + n_words + (n_ids + 2) // 3
    return entries


def piece_cache_short_set(cache, index: int) -> list[tuple[bytes, list[int] | None] | None]:
    """The two ways of short set ``index`` of a piece cache, read with plain Python: 4 words
    each, the piece's bytes 0-7, bytes 8-14 | length << 56, then up to 4 ids of 32 bits (all
    ones = none); ids None = the mark of a piece whose ids are in the long region; None = empty."""
    ways: list[tuple[bytes, list[int] | None] | None] = []
    for way in range(2):
        k0, k1, a, b = (int(w) for w in cache[8 * index + 4 * way : 8 * index + 4 * way + 4])
        if k1 == 0:
            ways.append(None)
            continue
        raw = (k0.to_bytes(8, "little") + (k1 & ((1 << 56) - 1)).to_bytes(7, "little"))[: k1 >> 56]
        halves = [a & 0xFFFFFFFF, a >> 32, b & 0xFFFFFFFF, b >> 32]
        ways.append((raw, None if a == (1 << 64) - 1 else [x for x in halves if x != 0xFFFFFFFF]))
    return ways


def piece_cache_long_set(cache, bits: int, index: int) -> list[tuple[bytes, list[int]] | None]:
    """The two ways of set ``index`` of a piece cache's long-piece region, read with plain
    Python: after 2**bits sets of 8 words, 32-word sets of two 16-word entries (the bytes in 8
    little-endian words, ``n_ids << 8 | length``, the ids three per word); None = empty."""
    ways: list[tuple[bytes, list[int]] | None] = []
    for way in range(2):
        at = (8 << bits) + 32 * index + 16 * way
        words = [int(w) for w in cache[at : at + 16]]
        length, n_ids = words[8] & 0xFF, words[8] >> 8
        if length == 0:
            ways.append(None)
            continue
        raw = b"".join(w.to_bytes(8, "little") for w in words[:8])[:length]
        ways.append((raw, [(words[9 + q // 3] >> (21 * (q % 3))) & ((1 << 21) - 1) for q in range(n_ids)]))
    return ways
