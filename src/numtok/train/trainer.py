"""Training a BPE tokenizer: count words, then learn merges with the array engine.

>>> tok = train_bpe(["low lower lowest"] * 3, 260)
>>> tok.merges[:2]
[(b'l', b'o'), (b'lo', b'w')]
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from .._native.memory import out_of_memory, release_free_memory, reservable_bytes
from .._native.threads import check_num_threads
from ..io.byte_level import CHAR_TO_BYTE, bytes_to_unicode
from ..io.sources import iter_chunks, source_size
from ..pretokenizers.patterns import NAMED_PATTERNS, resolve_pattern
from ..progress import Progress
from . import _kernels as _bpe_kernels
from .base import derive_merges_early, start_from_base
from .counting import count_chunks
from .options import TrainOptions
from .weights import weighted_sources
from .word_counts import WordCounts
from .words import WordCounter

if TYPE_CHECKING:
    from ..encode.tokenizer import Tokenizer

__all__ = ["train_bpe", "train_bpe_from_counts", "byte_level_order"]

_COUNT_MAX = 2**63 - 1  # word and pair counts are int64
# The merge loop hides pairs whose count is below a floor that rises with the best count up to
# this (0: none hidden); hidden pairs come back, recounted, if the best falls to the floor.
HIDE_BELOW = 8


def byte_level_order() -> np.ndarray:
    """The 256 bytes in HF ByteLevel id order (their GPT-2 ``bytes_to_unicode`` characters
    sorted by code point): printable latin-1 first, then 0x00-0x20, 0x7F-0xA0, 0xAD.

    >>> order = byte_level_order(); int(order[0]), int(np.flatnonzero(order == 0x20)[0])
    (33, 220)
    """
    char = bytes_to_unicode()
    return np.array(sorted(range(256), key=lambda b: ord(char[b])), dtype=np.uint8)


def train_bpe(
    source,
    vocab_size: int,
    *,
    pattern: str | None = None,
    special_tokens: Iterable[str] = (),
    min_frequency: int = 0,
    max_token_length: int | None = None,
    tie_break: str = "hf",
    show_progress: bool | None = None,
    num_threads: int | None = None,
    alphabet: str = "bytes",
    units: str = "bytes",
    unk_token: str | None = None,
    end_of_word: str | None = None,
    field: str = "text",
    base=None,
) -> Tokenizer:
    """Train a byte-level BPE tokenizer on a corpus, from bytes or on top of ``base``.

    Args:
        source: an iterable of str (each item one sequence, like HF ``train_from_iterator``),
            Arrow strings (a pyarrow array, chunked array or one-column table, or any object
            with ``__arrow_c_array__`` / ``__arrow_c_stream__``; each string one sequence, read
            in place; ``pip install "numtok[arrow]"``), or a path / list of paths: ``.txt``
            (each line one sequence), ``.jsonl`` (its ``field``), optionally ``.gz``, or
            ``.parquet`` (its ``field`` column, streamed a few MB at a time). Read as a stream;
            only unique words are kept. Weighted: a dict ``{source: weight}`` or a list of
            ``(source, weight)`` pairs; each source is counted once and every word counted in
            it counts ``weight`` times (exactly for an integer weight, which equals repeating
            the source; otherwise rounded halves up: :mod:`numtok.train.weights`).
        vocab_size: the final number of tokens, special tokens included. Training stops
            earlier when no pair is left; memory follows the corpus, not this number.
        pattern: "gpt2" (the default), "r50k", "cl100k", "o200k" or a regex (``regex`` syntax);
            with a base, its pattern (the default) and no other.
        special_tokens: tokens that take the first ids, in order. Where they occur in the
            training text they are cut out and never merged into other tokens (HF does not do
            this: it learns from their characters).
        min_frequency: stop when the best pair occurs fewer times.
        max_token_length: learned tokens have at most this many bytes (chars with
            ``units="chars"``), exactly (HF's limit is one less than asked).
        tie_break: "hf" = among equal counts the smallest (left id, right id) in HF's id order:
            merges and ids identical to HF ``BpeTrainer`` with the ByteLevel pre-tokenizer;
            "first-seen" = the pair whose first occurrence in the corpus comes first (the
            course notebooks' rule).
        show_progress: progress bars on stderr (default: when stderr is a terminal).
        num_threads: threads for word counting (default: all cores, at most 2 are used).
        alphabet: "bytes" (all 256 bytes) or "observed" (only the symbols seen, sorted).
        units: "bytes" or "chars" (symbols are Unicode characters; needs alphabet="observed").
        unk_token: the token for symbols outside the vocabulary at encoding time; it takes an
            id after the special tokens (and counts in vocab_size).
        end_of_word: a symbol appended to every word (Sennrich's "</w>"), merged like any
            other. HF instead glues its ``end_of_word_suffix`` to the last character.
        field: the field of ``.jsonl`` records, or the column of ``.parquet`` files, that
            holds the text.
        base: continue training this tokenizer: a :class:`numtok.Tokenizer`, a bundled
            encoding's name (``"o200k_base"``), a path to a ``tokenizer.json`` (or its
            directory) or ``.tiktoken`` file, a ``tokenizers.Tokenizer`` or a
            ``tiktoken.Encoding``. Every token, merge and special token of the base is kept
            with its id; the words are split into base tokens (a merge list is applied in
            order; a rank-mode base encodes them by its ranks) and new merges are learned
            until ``vocab_size`` (the final ``n_vocab``, above the base's), their tokens taking
            ids from the base's ``n_vocab``. New ``special_tokens`` come first. Ties break on
            base ids. The base's units, alphabet and unk_token are used. See the README's
            "Continue training".

    Returns:
        A :class:`numtok.Tokenizer` with ``merges`` and ``vocab``.

    Raises:
        ValueError: vocab_size too small (with a base: not above its n_vocab), empty corpus
            (without a base), a pattern other than the base's, unknown pattern name, invalid regex,
            a file that is not UTF-8 (naming the file and byte offset), an Arrow null or
            invalid UTF-8 (naming the text), a Parquet file that cannot be read or lacks the
            column, bad options.
        FileNotFoundError: a missing input file (or base file).
        TypeError: a base of a kind numtok cannot continue from.

    >>> small = train_bpe(["low lower lowest"] * 3, 258)
    >>> more = train_bpe(["newer newest"] * 3, 262, base=small)
    >>> more.merges[:2] == small.merges, more.merges[2:]
    (True, [(b'e', b'w'), (b'n', b'ew'), (b'new', b'e'), (b's', b't')])
    """
    options = TrainOptions.check(vocab_size, pattern, special_tokens, min_frequency, max_token_length,
                             tie_break, alphabet, units, unk_token, end_of_word, base)
    threads = check_num_threads(num_threads)
    if options.base is not None:
        options.base_merges = derive_merges_early(options.base)
    started = time.perf_counter()
    weighted = weighted_sources(source)
    counter: WordCounter | WordCounts
    if weighted is not None:
        counter, corpus_bytes = _count_weighted(weighted, options, show_progress, threads, field)
    else:
        counter, corpus_bytes = _count_words(source, options, show_progress, threads, field)
    holder = [counter]
    del counter  # the holder owns it now, so it is freed as soon as the words are symbolized
    return _train_from_counter(holder, options, show_progress, started, corpus_bytes)


def train_bpe_from_counts(counts: WordCounts | Mapping, vocab_size: int, **options) -> Tokenizer:
    """Train on pre-counted words: a :class:`numtok.WordCounts` (from :func:`numtok.count_words`,
    possibly summed over shards) or a mapping ``{word (str | bytes): count}``. Words are not
    split again.

    Takes the same options as :func:`train_bpe`; under ``tie_break="first-seen"`` the words'
    order is the corpus order. ``train_bpe_from_counts(count_words(src, **c), n, **c, **t)``
    equals ``train_bpe(src, n, **c, **t)``. For WordCounts, ``pattern`` and ``special_tokens``
    default to the ones it was counted with and must match them (ValueError otherwise):
    the words were split with that pattern and those tokens cut out.

    >>> tok = train_bpe_from_counts({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 21,
    ...     units="chars", alphabet="observed", end_of_word="</w>", tie_break="first-seen")
    >>> [a.decode() + " " + b.decode() for a, b in tok.merges][:4]
    ['e s', 'es t', 'est </w>', 'l o']
    """
    show_progress = options.pop("show_progress", None)
    check_num_threads(options.pop("num_threads", None))  # accepted for symmetry; counting is done
    options.pop("field", None)
    if isinstance(counts, WordCounts):
        return _train_from_word_counts(counts, vocab_size, show_progress, options)
    checked = TrainOptions.check(vocab_size, **options)
    if not isinstance(counts, Mapping):
        raise TypeError(f"counts must be a mapping {{word: count}}, not {type(counts).__name__}")
    started = time.perf_counter()
    try:
        counter, corpus_bytes = _counter_of_counts(counts)
    except MemoryError as exc:
        traceback.clear_frames(exc.__traceback__)  # the lists built so far: the message needs memory too
        # The words as bytes, their spans, counts and the word table.
        raise out_of_memory(exc, f"reading {len(counts):,} counted words", 160 * len(counts)) from exc
    holder = [counter]
    del counter
    return _train_from_counter(holder, checked, show_progress, started, corpus_bytes)


def _counter_of_counts(counts: Mapping) -> tuple[WordCounter, int]:
    """The word table of ``counts`` ({word: count}, checked here) and the bytes of its words. (Its
    own function: the lists and arrays it builds are freed before training starts.)"""
    words, freqs = [], []
    occurrences = 0
    for word, count in counts.items():
        if isinstance(word, str):
            word = word.encode("utf-8")
        elif not isinstance(word, (bytes, bytearray)):
            raise TypeError(f"counts keys must be str or bytes, not {type(word).__name__}")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"count of {word!r} must be a non-negative integer, got {count!r}")
        if count > _COUNT_MAX:
            raise ValueError(f"count of {word!r} is {count}, past the int64 limit of counts ({_COUNT_MAX} = 2**63 - 1)")
        if word:
            words.append(bytes(word))
            freqs.append(int(count))
            occurrences += int(count) * len(word)
    # A pair's count sums its words' counts times occurrences: it must fit the int64 counters.
    if occurrences > _COUNT_MAX:
        raise ValueError(f"the counts total {occurrences} symbol occurrences, past the int64 limit of pair counts "
                         f"({_COUNT_MAX} = 2**63 - 1): scale them down")
    nbytes = sum(map(len, words))
    counter = WordCounter(len(words), store_bytes=nbytes)
    if words:
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        ends = np.cumsum(lengths)
        spans = np.stack([ends - lengths, ends], axis=1)
        data = np.frombuffer(b"".join(words), dtype=np.uint8)
        counter._insert(data, spans, np.array(freqs, dtype=np.int64), np.arange(len(words), dtype=np.int64), True, 0)
    return counter, nbytes


def _train_from_word_counts(counts: WordCounts, vocab_size: int, show_progress, options: dict):
    counted = counts.special_tokens
    unk = options.get("unk_token")
    options.setdefault("special_tokens", [s for s in counted if s != unk])
    options.setdefault("pattern", counts.pattern)
    checked = TrainOptions.check(vocab_size, **options)
    if resolve_pattern(checked.pattern)[1] != resolve_pattern(counts.pattern)[1]:
        raise ValueError(f"the WordCounts were split with pattern {counts.pattern!r}, not {checked.pattern!r}: "
                         "count and train with the same pattern")
    if checked.base is not None:
        # The base's special tokens need not have been cut out (they are no new tokens), but
        # every new one must have been, and nothing else.
        kept = set(checked.special_tokens)
        if not set(counted) <= kept or not set(checked.new_specials) <= set(counted):
            raise ValueError(f"the WordCounts were counted with special tokens {list(counted)!r} cut out, but training "
                             f"on the base adds {checked.new_specials!r} and keeps {checked.special_tokens!r}: "
                             "count with the new special tokens cut out")
    elif set(checked.special_tokens) != set(counted):
        raise ValueError(f"the WordCounts were counted with special tokens {list(counted)!r} cut out, but training "
                         f"asks for {checked.special_tokens!r} (unk_token included): count with the same ones")
    return _train_from_counter([counts], checked, show_progress, time.perf_counter(), counts.corpus_bytes)


def _count_words(source, options: TrainOptions, show_progress, num_threads, field: str = "text") -> tuple[WordCounter, int]:
    """Pre-tokenize and count the corpus on up to two threads (one WordCounter each)."""
    named = options.pattern in NAMED_PATTERNS
    chunks = iter_chunks(source, special_tokens=options.special_tokens, field=field, cut_long_lines=named)
    # First positions matter only to tie_break="first-seen" (8 bytes a word while counting).
    return count_chunks(chunks, options.pattern, source_size(source), show_progress, num_threads,
                         track_firsts=options.tie_break == "first-seen")


def _count_weighted(weighted: list, options: TrainOptions, show_progress, num_threads, field: str) -> tuple[WordCounts, int]:
    """Count each source once, scale its counts by its weight, sum in order (so the words stay
    in first-occurrence order, as in the sources read one after another)."""
    total: WordCounts | None = None
    for source, weight in weighted:
        counter, nbytes = _count_words(source, options, show_progress, num_threads, field)  # as an unweighted source
        counts = WordCounts.from_counter(counter, options.pattern, options.special_tokens, nbytes) * weight
        del counter
        total = counts if total is None else total + counts
    assert total is not None
    return total, total.corpus_bytes


def _alphabet(options: TrainOptions, symbols_seen: list[bytes]) -> list[bytes]:
    """Base symbols (as bytes) in id order, after the special tokens."""
    if options.units == "bytes":
        order = byte_level_order()
        if options.alphabet == "bytes":
            alphabet = [bytes([b]) for b in order.tolist()]
        else:
            seen = {s[0] for s in symbols_seen}
            alphabet = [bytes([b]) for b in order.tolist() if b in seen]
    else:
        alphabet = sorted(symbols_seen, key=lambda s: s.decode("utf-8"))
    if options.end_of_word is not None:
        eow = options.end_of_word.encode("utf-8")
        if eow not in alphabet:
            alphabet.append(eow)
            # Sorted as a string among the others, like the course sorts its alphabet.
            if options.alphabet == "observed":
                alphabet.sort(key=lambda s: s.decode("utf-8", "replace") if options.units == "chars" else _byte_level_str(s))
    return alphabet


def _byte_level_str(b: bytes) -> str:
    """A byte string as characters that sort in HF ByteLevel order."""
    rank = np.argsort(byte_level_order())
    return "".join(chr(0x10000 + int(rank[x])) for x in b)


def _symbolize(counter: WordCounter, options: TrainOptions):
    """Words as symbol ids: (sym, w_start, w_len, w_freq, alphabet)."""
    if isinstance(counter, WordCounter):
        counter.freeze()  # its table is freed before the symbols are made
    store = counter.store
    # Views, not copies: nothing below or in the merge loop writes into them (it fancy-indexes).
    starts, lengths, freqs = counter.starts, counter.lengths.astype(np.int64), counter.counts
    k = len(options.special_tokens)
    if options.units == "bytes":
        present = np.bincount(store, minlength=256) > 0
        seen = [bytes([b]) for b in np.flatnonzero(present).tolist()]
        alphabet = _alphabet(options, seen)
        byte_to_id = np.full(256, -1, dtype=np.int32)
        for i, symbol in enumerate(alphabet):
            if len(symbol) == 1:
                byte_to_id[symbol[0]] = k + i
        sym = byte_to_id[store]
    else:
        # Characters: decode the store once; a word's char offset = lead bytes before it.
        text = store.tobytes().decode("utf-8")
        code_points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        uniq = np.unique(code_points)
        seen = [chr(c).encode("utf-8") for c in uniq.tolist()]
        alphabet = _alphabet(options, seen)
        char_id = {s: k + i for i, s in enumerate(alphabet)}
        sym = np.array([char_id[chr(c).encode("utf-8")] for c in uniq.tolist()], dtype=np.int32)[
            np.searchsorted(uniq, code_points)]
        lead = np.concatenate([[0], np.cumsum((store & 0xC0) != 0x80)])
        ends = lead[starts + lengths]
        starts = lead[starts]
        lengths = ends - starts
    if options.end_of_word is not None:
        # Append one symbol to every word. Words lie back to back in insertion order, so
        # word i's symbols move right by i and its end-of-word symbol follows them.
        eow_id = k + alphabet.index(options.end_of_word.encode("utf-8"))
        shift = np.arange(len(starts), dtype=np.int64)
        new_sym = np.empty(len(sym) + len(starts), dtype=np.int32)
        new_sym[np.arange(len(sym)) + np.repeat(shift, lengths)] = sym
        starts = starts + shift
        new_sym[starts + lengths] = eow_id
        sym, lengths = new_sym, lengths + 1
    return sym.astype(np.int32, copy=False), starts.astype(np.int64, copy=False), lengths.astype(np.int32), freqs, alphabet


def _train_from_counter(holder: list, options: TrainOptions, show_progress, started: float, corpus_bytes: int):
    """Learn from the counter in ``holder`` (taken out of it, so its memory is freed once the
    words are symbolized) and build the Tokenizer."""
    from ..encode.tokenizer import Tokenizer

    unique_words = holder[0].n_words
    word_bytes = holder[0].store_used
    try:
        merges, token_bytes, counters, merge_ids = _learn(holder, options, show_progress)
    except MemoryError as exc:
        # Word rows, symbols and their pairs' rows, postings, slots and heap entries.
        raise out_of_memory(exc, f"learning merges from {unique_words:,} unique words ({word_bytes:,} bytes)",
                            48 * unique_words + 120 * word_bytes) from exc
    if options.base is not None:
        tokenizer = _continued_tokenizer(options, token_bytes, merge_ids)
    else:
        k = len(options.special_tokens)
        tokenizer = Tokenizer(
            {tok: i for i, tok in enumerate(token_bytes) if i >= k},
            merges=merges,
            pattern=options.pattern,
            special_tokens={tok: i for i, tok in enumerate(options.special_tokens)},
            units=options.units,
            unk_token=options.unk_token,
            end_of_word=options.end_of_word,
        )
    tokenizer.training_stats = {
        "corpus_bytes": corpus_bytes,
        "unique_words": unique_words,
        "merges": len(merges),
        "seconds": time.perf_counter() - started,
        "engine": counters,  # postings visited, words rewritten, heap pops/pushes, table sizes
    }
    return tokenizer


def _continued_tokenizer(options: TrainOptions, token_bytes, merge_ids: tuple):
    """The base's tokens, merges and special tokens (ids unchanged), then the new ones: built
    from the base's arrays (a bundled encoding has 200,000 tokens: no dict of them)."""
    from ..encode.tokenizer import Tokenizer

    base = options.base
    specials = dict(base.special_tokens)
    specials.update({s: base.n_vocab + j for j, s in enumerate(options.new_specials)})
    if options.base_merges is not None:
        options.base_merges.join()
    first_new = base.n_vocab + len(options.new_specials)
    new_tokens = [token_bytes[i] for i in range(first_new, len(token_bytes))]
    off = base._tok_off
    base_ids = base._mergeable_ids
    new_lens = np.fromiter(map(len, new_tokens), dtype=np.int64, count=len(new_tokens))
    flat = np.concatenate([base._tok_bytes[: off[-1]], np.frombuffer(b"".join(new_tokens), dtype=np.uint8)])
    starts = np.concatenate([off[base_ids], off[-1] + np.cumsum(new_lens) - new_lens])
    lens = np.concatenate([off[base_ids + 1] - off[base_ids], new_lens])
    ids = np.concatenate([base_ids, np.arange(first_new, first_new + len(new_tokens), dtype=np.int64)])
    lefts, rights, results = base._merge_ids()
    return Tokenizer._from_arrays(
        flat, starts, lens, ids,
        merges=(),  # made from merge_ids when asked for: no 200,000 pairs of bytes now
        merge_ids=tuple(np.concatenate([old, new]) for old, new in zip((lefts, rights, results), merge_ids)),
        pattern=base.pattern,
        special_tokens=specials,
        unk_token=base.unk_token,
        # A rank-mode base's derived merges give its rule only with its whole-piece lookup.
        ignore_merges=base._rank_mode or base.ignore_merges,
    )  # fmt: skip


def _learn(counter, options: TrainOptions, show_progress) -> tuple[list[tuple[bytes, bytes]], list, dict, tuple]:
    """Run the merge engine; returns (merges, token bytes by id: specials, alphabet, merges
    (with a base: a base.TokenBytes of the base's ids, then new specials and merges),
    the engine's work counters, the merges as (left, right, result) id arrays).

    ``counter`` is a WordCounter, or a one-item list holding one (emptied here to free it).
    """
    holder = counter if isinstance(counter, list) else [counter]
    counter = holder.pop()
    if options.base is not None:
        start = start_from_base(counter, options.base, options.new_specials)
        sym, w_start, w_len = start.sym, start.w_start, start.w_len
        w_freq = np.array(counter.counts, dtype=np.int64)
        firsts = counter.firsts if options.tie_break == "first-seen" else None
        del counter
        token_bytes: Any = start.token_bytes
        tok_len, tok_seq, tok_seq_len = start.tok_len, start.tok_seq, start.tok_seq_len
        minimum = len(tok_len)
    else:
        if counter.n_words == 0:
            raise ValueError("the corpus is empty: it has no word to learn from")
        sym, w_start, w_len, w_freq, alphabet = _symbolize(counter, options)
        firsts = counter.firsts if options.tie_break == "first-seen" else None
        del counter
        release_free_memory()  # the word table and what symbolizing freed
        token_bytes = [tok.encode("utf-8") for tok in options.special_tokens] + list(alphabet)
        tok_len, tok_seq, tok_seq_len = _base_symbols(options, alphabet)
        minimum = len(tok_len)
        if options.vocab_size < minimum:
            raise ValueError(
                f"vocab_size {options.vocab_size} is too small: the minimum is {minimum} "
                f"({len(alphabet)} alphabet symbols + {len(options.special_tokens)} special tokens)"
            )
    if options.tie_break == "first-seen":
        order = np.argsort(firsts, kind="stable")  # type: ignore[arg-type]
        w_start, w_len, w_freq = w_start[order], w_len[order], w_freq[order]
    keep = w_len >= 2  # a single symbol holds no pair
    # The merge loop's word rows, made here so the per-word arrays are freed before it runs.
    words = np.zeros((int(keep.sum()), 4), dtype=np.int64)
    words[:, _bpe_kernels.W_START] = w_start[keep]
    words[:, _bpe_kernels.W_LEN] = w_len[keep]
    words[:, _bpe_kernels.W_FREQ] = w_freq[keep]
    del w_start, w_freq, keep
    max_len = options.max_token_length if options.max_token_length is not None else int(_bpe_kernels.NO_LIMIT)

    progress = np.zeros(_bpe_kernels.STOP + 1, dtype=np.int64)
    result: list = []
    # Every merge rewrites at least one occurrence, so a word of n symbols allows at most n - 1
    # of them: the engine's id tables are sized by that, never by a huge vocab_size, and
    # training stops when no pair is left (as HF does).
    positions = int((words[:, _bpe_kernels.W_LEN] - 1).sum())
    n_target = min(options.vocab_size, minimum + positions)
    del w_len
    # The pair table's rows, reserved (not touched) for as many pairs as there are adjacent
    # positions and an eighth more: growing inside them never holds a second table.
    row_bytes = 8 * _bpe_kernels.NCOL
    reserve_rows = min(positions + positions // 8 + 1024, reservable_bytes() // row_bytes)
    first_seen = options.tie_break == "first-seen"
    # Pairs below a floor (at most this) keep no row, postings or heap entry until the best
    # count falls to it; only under "hf", whose heap entries hold keys.
    floor_cap = 0 if first_seen else HIDE_BELOW
    bar = Progress("Merging", total=n_target - minimum, unit="merges", enabled=show_progress)

    def run():
        try:
            result.append(_bpe_kernels._bpe_train(
                sym, words, tok_len, tok_seq, tok_seq_len,
                n_target, options.min_frequency, max_len, first_seen, reserve_rows, floor_cap, progress))
        except BaseException as exc:  # surfaced in the caller's thread
            result.append(exc)

    worker = threading.Thread(target=run, name="numtok-merge", daemon=True)
    worker.start()
    freed = 0
    try:
        while worker.is_alive():
            worker.join(0.05)
            if progress[8] != freed:
                # The engine freed a table it outgrew: glibc keeps such blocks in the merge
                # thread's arena, resident, unless given back before the next, larger table.
                freed = int(progress[8])
                release_free_memory()
            bar.set(int(progress[0]))
    except BaseException:  # Ctrl-C: the merge loop stops after its current merge, freeing its arrays
        progress[_bpe_kernels.STOP] = 1
        bar.close()
        raise
    bar.set(int(progress[0]))
    bar.close()
    if isinstance(result[0], BaseException):
        raise result[0]
    left, right, new, n_merges, n_ids = result[0]
    counters = dict(zip(("merges", "postings", "rewrites", "pops", "pushes", "pairs", "pool", "pair_rows"),
                        progress.tolist()))

    merges: list[tuple[bytes, bytes]] = []
    for a, b, t in zip(left.tolist(), right.tolist(), new.tolist()):
        merged = token_bytes[a] + token_bytes[b]
        if t == len(token_bytes):
            token_bytes.append(merged)
        merges.append((token_bytes[a], token_bytes[b]))
    return merges, token_bytes, counters, (left.astype(np.int64), right.astype(np.int64), new.astype(np.int64))


def _base_symbols(options: TrainOptions, alphabet: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(length, base-symbol sequence, sequence length) of the first ids: specials (spelled in
    base symbols where expressible, so a merge that rebuilds one re-uses its id, as HF does),
    then the alphabet."""
    k = len(options.special_tokens)
    symbol_id = {s: k + i for i, s in enumerate(alphabet)}
    tok_len = np.zeros(k + len(alphabet), dtype=np.int64)
    seqs: list[list[int]] = []
    for tok in options.special_tokens:
        seqs.append(_as_symbols(tok, options, symbol_id))
    for i, s in enumerate(alphabet):
        seqs.append([k + i])
        tok_len[k + i] = len(s) if options.units == "bytes" else 1
    if options.end_of_word is not None and options.units == "chars":
        tok_len[symbol_id[options.end_of_word.encode("utf-8")]] = 1
    tok_seq_len = np.array([len(s) for s in seqs], dtype=np.int64)
    tok_seq = np.array([x for s in seqs for x in s], dtype=np.int32)
    return tok_len, tok_seq, tok_seq_len


def _as_symbols(tok: str, options: TrainOptions, symbol_id: dict) -> list[int]:
    """A special token as base symbols, or [] when the alphabet cannot spell it."""
    raw = tok.encode("utf-8")
    if options.units == "bytes":
        if options.alphabet == "bytes":
            # HF compares ByteLevel strings: a special token is rebuilt by merges only if each
            # of its characters is a ByteLevel character (then its bytes are those chars' bytes).
            inverse = CHAR_TO_BYTE  # ByteLevel character -> byte
            if all(c in inverse for c in tok):
                return [symbol_id[bytes([inverse[c]])] for c in tok]
            return []
        parts = [bytes([b]) for b in raw]
    else:
        parts = [c.encode("utf-8") for c in tok]
    if all(p in symbol_id for p in parts):
        return [symbol_id[p] for p in parts]
    return []
