"""The BPE trainer: identical to HF tokenizers, and to the naive reference, for every option."""

from __future__ import annotations

import collections
import gzip
import json
import sys

import numpy as np
import pytest
from hf_reference import hf_train, numtok_as_hf
from hypothesis import given
from hypothesis import strategies as st
from naive_bpe import pretokenize_naive, train_naive

import numtok
from numtok.pretokenizers.patterns import NAMED_PATTERNS
from numtok.train.trainer import byte_level_order
from numtok.train.words import WordCounter

BYTES = [bytes([b]) for b in byte_level_order().tolist()]


def assert_same_as_hf(sequences, vocab_size, **kw):
    tok = numtok.train_bpe(sequences, vocab_size, **kw)
    hf_merges, hf_vocab = hf_train(sequences, vocab_size, **kw)
    merges, vocab = numtok_as_hf(tok)
    assert merges == hf_merges
    assert vocab == hf_vocab
    return tok


# -- identical to HF tokenizers ------------------------------------------------------------------


@pytest.mark.parametrize("vocab_size", [257, 300, 1000, 3000])
@pytest.mark.parametrize("min_frequency", [0, 2, 7])
def test_real_text_matches_hf(sample_lines, vocab_size, min_frequency):
    assert_same_as_hf(sample_lines, vocab_size, min_frequency=min_frequency)


# The largest needs the whole sample text, which runs cut with the JIT off (conftest).
@pytest.mark.parametrize("reservable", [0, 64 * 1500, pytest.param(64 * 4000, marks=pytest.mark.jit_only)])
def test_pair_table_grown_by_copying_matches_hf(sample_lines, monkeypatch, reservable):
    # Where address space cannot be reserved (strict overcommit, RLIMIT_AS) the pair table
    # starts small and is copied as it grows, in counting and in the merge loop; a reservation
    # that runs out midway goes from growing inside it to copying.
    from numtok.train import trainer

    monkeypatch.setattr(trainer, "reservable_bytes", lambda: reservable)
    tok = assert_same_as_hf(sample_lines, 3000)
    assert tok.training_stats["engine"]["pair_rows"] > reservable // 64


@pytest.mark.parametrize("hide_below", [0, 2, 10**12])
def test_hidden_pairs_brought_back_match_hf(sample_lines, monkeypatch, hide_below):
    # Pairs below the floor keep no row, postings or heap entry. 0: none hidden; 2: the
    # count-1 pairs, brought back when the best count falls to 1; a huge cap lets the floor
    # follow the best count (>> 6), so they are brought back (recounted from the words) midway.
    from numtok.train import trainer

    monkeypatch.setattr(trainer, "HIDE_BELOW", hide_below)
    assert_same_as_hf(sample_lines[:3000], 3000)
    assert_same_as_hf(sample_lines[:300], 2500)  # down to count-1 pairs


def test_special_tokens_take_first_ids_like_hf(sample_lines):
    tok = assert_same_as_hf(sample_lines[:2000], 800, special_tokens=["<|endoftext|>", "<pad>"])
    assert tok.vocab[b"<|endoftext|>"] == 0 and tok.vocab[b"<pad>"] == 1


def test_files_read_line_by_line_like_hf(tmp_path, sample_text):
    path = tmp_path / "corpus.txt"
    path.write_text(sample_text[:120_000] + "\n\n  trailing spaces  \r\nlast line without newline", encoding="utf-8")
    tok = numtok.train_bpe(str(path), 1200)
    hf_merges, hf_vocab = hf_train(None, 1200, files=[str(path)])
    assert numtok_as_hf(tok) == (hf_merges, hf_vocab)


@pytest.mark.parametrize(
    "sequences",
    [
        ["aaaa"],
        ["aaaaaaaaaaaaaaaaaaaaaaaaa", "aaa aaaa", ""],
        ["", "", ""] + ["ab"] * 3,
        ["abababab ba ba", "bbbbbbb aaaa"],
        ["日本語のテキスト、日本語のテキスト", "😀😀😀 🎉🎉"],
        ["\n\n\n", "  \t  \r\n\r\n", "x" * 300],
    ],
)
def test_runs_and_empty_documents_match_hf(sequences):
    assert_same_as_hf(sequences, 400)


@st.composite
def small_corpora(draw):
    alphabet = draw(st.sampled_from(["a", "ab", "aab", "aaaab", "xyz ", "ab \n", "aé日 ", "\u00e9\u0301a"]))
    words = st.text(alphabet=alphabet, min_size=0, max_size=30)
    return draw(st.lists(words, min_size=1, max_size=25))


@given(small_corpora(), st.integers(257, 330), st.sampled_from([0, 1, 2, 3]))
def test_random_corpora_match_hf(sequences, vocab_size, min_frequency):
    if not any(sequences):
        with pytest.raises(ValueError, match="empty"):
            numtok.train_bpe(sequences, vocab_size)
        return
    assert_same_as_hf(sequences, vocab_size, min_frequency=min_frequency)


@given(small_corpora(), st.integers(257, 330), st.sampled_from([0, 1, 2, 3]), st.sampled_from([0, 2, 10**12]))
def test_hidden_pairs_with_reused_ids_match_hf(sequences, vocab_size, min_frequency, hide_below):
    # Small alphabets make merges that re-use an id (("aa", "a") after ("a", "aa")), which can
    # raise a hidden pair's count: every hidden pair is brought back first.
    from numtok.train import trainer

    if not any(sequences):
        return
    old = trainer.HIDE_BELOW
    trainer.HIDE_BELOW = hide_below
    try:
        assert_same_as_hf(sequences, vocab_size, min_frequency=min_frequency)
    finally:
        trainer.HIDE_BELOW = old


# -- identical to the naive reference (options HF does not have, or has differently) --------------


def naive_for(sequences, vocab_size, pattern="gpt2", **kw):
    counts = pretokenize_naive(sequences, NAMED_PATTERNS.get(pattern, pattern))
    return train_naive(counts, BYTES, vocab_size, **kw)


@given(small_corpora(), st.integers(257, 320), st.sampled_from(["hf", "first-seen"]), st.sampled_from([None, 2, 3, 5]))
def test_engine_matches_naive(sequences, vocab_size, tie_break, max_token_length):
    if not any(sequences):
        return
    tok = numtok.train_bpe(sequences, vocab_size, tie_break=tie_break, max_token_length=max_token_length)
    merges, vocab = naive_for(sequences, vocab_size, tie_break=tie_break, max_token_length=max_token_length)
    assert tok.merges == merges
    assert {b: i for b, i in tok.vocab.items()} == vocab


@pytest.mark.parametrize("pattern", ["gpt2", "r50k", "cl100k", "o200k", r"\S+|\s+"])
def test_patterns_match_naive(sample_lines, pattern):
    lines = sample_lines[:1500]
    tok = numtok.train_bpe(lines, 600, pattern=pattern)
    merges, _ = naive_for(lines, 600, pattern=pattern)
    assert tok.merges == merges


@pytest.mark.parametrize("max_token_length", [1, 2, 3, 4, 8])
def test_max_token_length_is_exact(sample_lines, max_token_length):
    tok = numtok.train_bpe(sample_lines[:800], 700, max_token_length=max_token_length)
    longest = max(len(b) for b in tok.vocab)
    assert longest <= max(1, max_token_length)
    if max_token_length > 1:
        assert longest == max_token_length
    merges, _ = naive_for(sample_lines[:800], 700, max_token_length=max_token_length)
    assert tok.merges == merges


def test_first_seen_follows_corpus_order():
    # (c,d) and (a,b) tie at 2; "cd" appears first in the corpus, so first-seen merges it first,
    # while HF takes the smaller ids (a, b).
    tok = numtok.train_bpe(["cd ab", "ab cd"], 257, tie_break="first-seen")
    assert tok.merges == [(b"c", b"d")]
    tok = numtok.train_bpe(["cd ab", "ab cd"], 257)
    assert tok.merges == [(b"a", b"b")]


def test_counts_are_64_bit():
    # 3e9 > 2**31: HF's i32 pair counts would wrap and drop this pair; ours must not.
    big = 3_000_000_000
    tok = numtok.train_bpe_from_counts({"ab": big, "cd": 5, "ce": 5}, 257)
    assert tok.merges == [(b"a", b"b")]
    tok = numtok.train_bpe_from_counts({"ab": big, "cd": big + 1}, 257)
    assert tok.merges == [(b"c", b"d")]


def test_from_counts_equals_training_on_the_words():
    words = {"Ġhello": 3, "hello": 2, "world": 7, " wor": 1}
    tok = numtok.train_bpe_from_counts(words, 270)
    merges, vocab = train_naive(words, BYTES, 270)
    assert tok.merges == merges


def test_special_tokens_in_text_are_cut_out_and_never_merged():
    text = ["<|endoftext|>hello<|endoftext|>hello<|endoftext|>"] * 50
    tok = numtok.train_bpe(text, 290, special_tokens=["<|endoftext|>"])
    for a, b in tok.merges:
        assert b"<|" not in a + b and b"|>" not in a + b and b"endoftext" not in a + b
    assert (b"hel", b"lo") in tok.merges or (b"h", b"ello") in tok.merges or any(a + b == b"hello" for a, b in tok.merges)


# -- inputs ---------------------------------------------------------------------------------------


def test_txt_jsonl_and_gzip_sources_agree(tmp_path, sample_lines):
    lines = sample_lines[:600]
    txt = tmp_path / "a.txt"
    txt.write_text("".join(lines), encoding="utf-8")
    gz = tmp_path / "a.txt.gz"
    gz.write_bytes(gzip.compress(txt.read_bytes()))
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text("".join(json.dumps({"text": line, "id": i}) + "\n" for i, line in enumerate(lines)), encoding="utf-8")
    jgz = tmp_path / "a.jsonl.gz"
    jgz.write_bytes(gzip.compress(jsonl.read_bytes()))
    expected = numtok.train_bpe(lines, 500).merges
    for source in (str(txt), str(gz), str(jsonl), str(jgz), [str(txt)], [txt]):
        assert numtok.train_bpe(source, 500).merges == expected
    half = len(lines) // 2
    (tmp_path / "b.txt").write_text("".join(lines[:half]), encoding="utf-8")
    (tmp_path / "c.txt").write_text("".join(lines[half:]), encoding="utf-8")
    assert numtok.train_bpe([str(tmp_path / "b.txt"), str(tmp_path / "c.txt")], 500).merges == expected


@given(st.lists(st.text(alphabet="ab\r\n é日", max_size=40), max_size=12), st.integers(1, 50), st.booleans())
def test_text_files_read_in_chunks_give_every_line_once(tmp_path_factory, parts, chunk_bytes, gz):
    # Chunks of a few bytes: lines longer than a chunk are carried into the next read, and
    # a last line without its newline is a line.
    from numtok.io.sources import iter_chunks

    raw = "".join(parts).encode()
    path = tmp_path_factory.mktemp("lines") / ("a.txt.gz" if gz else "a.txt")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    got = [bytes(c.data[a:b]) for c in iter_chunks(str(path), chunk_bytes=chunk_bytes) for a, b in c.docs.tolist()]
    *lines, last = raw.split(b"\n")
    assert got == [line + b"\n" for line in lines] + ([last] if last else [])


def test_chunked_two_thread_counting_is_exact(sample_text):
    from numtok.train import trainer
    from numtok.train.options import TrainOptions

    opts = TrainOptions.check(300)
    lines = sample_text.splitlines(keepends=True)
    counter, _ = trainer._count_words(lines, opts, False, 2)
    expected = pretokenize_naive(lines, NAMED_PATTERNS["gpt2"])
    got = dict(zip(counter.word_list(), counter.counts.tolist()))
    assert got == expected


def test_word_counter_against_counter():
    rng = np.random.default_rng(0)
    data = rng.integers(97, 100, size=20_000).astype(np.uint8)
    cuts = np.sort(rng.choice(np.arange(1, len(data)), size=5000, replace=False))
    bounds = np.concatenate([[0], cuts, [len(data)]])
    spans = np.stack([bounds[:-1], bounds[1:]], axis=1)
    wc = WordCounter(capacity=4)  # forces many grow/rehash rounds
    wc.add_spans(data, spans, 0)
    other = WordCounter(capacity=4)
    other.add_spans(data, spans[::2], 10**9)
    wc.merge(other)
    raw = data.tobytes()
    expected = collections.Counter(raw[s:e] for s, e in spans.tolist())
    expected.update(raw[s:e] for s, e in spans[::2].tolist())
    assert dict(zip(wc.word_list(), wc.counts.tolist())) == dict(expected)
    expected_first: dict[bytes, int] = {}
    for s, e in spans.tolist():
        expected_first.setdefault(raw[s:e], s)
    assert dict(zip(wc.word_list(), wc.firsts.tolist())) == expected_first


@given(st.lists(st.tuples(st.binary(min_size=1, max_size=20), st.integers(1, 2**40)), max_size=60),
       st.lists(st.tuples(st.binary(min_size=1, max_size=20), st.integers(1, 2**40)), max_size=60), st.booleans())
def test_word_counters_merged_into_a_bigger_table_keep_words_counts_and_firsts(a, b, track_firsts):
    # The merged-into counter is made big enough for both first: its table is rebuilt from
    # the words' bytes (short keys, hashed keys) and the counts' low halves, the over array kept.
    counters = []
    for items, first in ((a, 0), (b, 1000)):
        wc = WordCounter(capacity=4, track_firsts=track_firsts)
        if items:
            words = [w for w, _ in items]
            store = np.frombuffer(b"".join(words), dtype=np.uint8)
            bounds = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
            wc.add_words(store, bounds, np.array([c for _, c in items], dtype=np.int64), np.arange(first, first + len(items)))
        counters.append(wc)
    counters[0].merge(counters[1])
    expected: collections.Counter = collections.Counter()
    expected_first: dict[bytes, int] = {}
    for items, first in ((a, 0), (b, 1000)):
        for k, (w, c) in enumerate(items):
            expected[w] += c
            expected_first[w] = min(expected_first.get(w, first + k), first + k)
    got = counters[0]
    assert dict(zip(got.word_list(), got.counts.tolist())) == dict(expected)
    if track_firsts:
        assert dict(zip(got.word_list(), got.firsts.tolist())) == expected_first
    else:
        assert len(got.firsts) == 0


def test_a_counter_without_first_positions_cannot_merge_into_one_with_them():
    keeps, keeps_none = WordCounter(), WordCounter(track_firsts=False)
    keeps_none.add_spans(np.frombuffer(b"ab", dtype=np.uint8), np.array([[0, 2]]), 0)
    with pytest.raises(ValueError, match="first positions"):
        keeps.merge(keeps_none)


def test_word_counter_carries_counts_past_32_bits_from_single_occurrences():
    """A row holds a count's low 32 bits: one more occurrence of a word at 2**32 - 1 carries."""
    words = [b"ab", b"a long word, hashed"]
    data = np.frombuffer(b"".join(words), dtype=np.uint8)
    spans = np.array([[0, 2], [2, len(data)]], dtype=np.int64)
    wc = WordCounter(capacity=4)
    wc._insert(data, spans, np.array([2**32 - 1, 2**32 - 2], dtype=np.int64), np.array([5, 9], dtype=np.int64), True, 0)
    for _ in range(3):
        wc.add_spans(data, spans, 100)
    assert dict(zip(wc.word_list(), wc.counts.tolist())) == {words[0]: 2**32 + 2, words[1]: 2**32 + 1}
    assert wc.firsts.tolist() == [5, 9]


@pytest.mark.parametrize("floor", [0, 3])
@pytest.mark.parametrize("first_seen", [False, True])
def test_heap_rebuilt_from_pair_table_pops_in_order(first_seen, floor):
    """The heap the merge loop rebuilds when it fills (one entry per pair that can still be
    merged: a count and postings left, and a count not below the floor of hidden pairs) pops
    exactly those pairs, best first under each tie-break rule, against a sort of the table."""
    from numtok.train import _kernels as k

    rng = np.random.default_rng(1)
    n = 3000
    pairs = np.zeros((n + 5, k.NCOL), dtype=np.int64)
    pairs[:n, k.KEY] = rng.permutation(n * 7)[:n]
    pairs[:n, k.COUNT] = rng.integers(0, 6, size=n)  # many ties, and dead pairs
    pairs[:n, k.PLEN] = rng.integers(0, 3, size=n)  # 0: a merged pair (no postings left)
    pairs[:n, k.FIRST] = rng.permutation(n * 5)[:n]
    mergeable = (pairs[:n, k.COUNT] > 0) & (pairs[:n, k.COUNT] >= floor) & (pairs[:n, k.PLEN] > 0)
    assert k._n_mergeable(pairs, n, floor) == int(mergeable.sum())
    heap = np.empty((k._n_mergeable(pairs, n, floor), 3 if first_seen else 2), dtype=np.int64)
    size = k._heap_from_pairs(heap, pairs, n, first_seen, floor)
    popped = []
    while size:
        popped.append(tuple(heap[0].tolist()))
        size = k._heap_pop(heap, size)
    # The reference: the live pairs sorted best first (count down, then aux up).
    aux = k.FIRST if first_seen else k.KEY
    live = [p for p in range(n) if mergeable[p]]
    entries = [(int(pairs[p, k.COUNT]), int(pairs[p, aux])) + ((p,) if first_seen else ()) for p in live]
    assert popped == sorted(entries, key=lambda e: (-e[0], e[1]))


@pytest.mark.parametrize("pool_room", [1.0, 3.0])
@pytest.mark.parametrize("extra_room", [0.0, 4.0])
@pytest.mark.parametrize("drop_stale", [False, True])
def test_postings_pool_compacted_keeps_every_live_list(pool_room, extra_room, drop_stale):
    """A full postings pool compacted (in place when 1.5x the live entries fit, else into a new
    pool) keeps each live list's entries in order, packed from 0 with capacity = length; with
    ``drop_stale`` the lists of count-0 pairs are gone. Reference: the lists read before."""
    from numtok.train import _kernels as k

    rng = np.random.default_rng(2)
    n = 2000
    pairs = np.zeros((n, k.NCOL), dtype=np.int64)
    pairs[:, k.COUNT] = rng.integers(0, 3, size=n)
    lengths = rng.integers(0, 40, size=n)
    caps = np.where(lengths > 0, np.maximum(4, 2 * lengths), rng.integers(0, 2, size=n) * 8)
    # Lists laid out in a random order with dead space between them, as moves leave it.
    gaps = rng.integers(0, 30, size=n)
    pool = np.full(int((caps + gaps).sum()), -7, dtype=np.int32)
    used = 0
    lists = {}
    for p in rng.permutation(n):
        used += int(gaps[p])
        pairs[p, k.PSTART] = used
        pairs[p, k.PLEN] = lengths[p]
        pairs[p, k.PCAP] = caps[p]
        pool[used:used + lengths[p]] = rng.integers(0, 10**6, size=lengths[p])
        lists[p] = pool[used:used + lengths[p]].tolist()
        used += int(caps[p])
    live = sum(len(v) for p, v in lists.items() if not (drop_stale and pairs[p, k.COUNT] == 0))
    pool = np.resize(pool, max(used, int(pool_room * live)))
    st = np.zeros(4, dtype=np.int64)
    st[k.POOL_USED] = used
    extra = max(len(pool) - used + 1, int(extra_room * live))  # never fits without compaction
    out = k._reserve_pool(pairs, n, pool, st, extra, drop_stale)
    assert (out is pool) == (extra_room == 0)  # in place when 1.5x the need fits
    assert st[k.POOL_USED] == live and len(out) >= live + extra
    for p in range(n):
        start, length = int(pairs[p, k.PSTART]), int(pairs[p, k.PLEN])
        want = [] if drop_stale and pairs[p, k.COUNT] == 0 else lists[p]
        assert out[start:start + length].tolist() == want
        assert pairs[p, k.PCAP] == length
    spans = sorted((int(pairs[p, k.PSTART]), int(pairs[p, k.PLEN])) for p in range(n) if pairs[p, k.PLEN])
    assert sum(length for _, length in spans) == live
    assert all(a + la <= b for (a, la), (b, _) in zip(spans, spans[1:]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise(MADV_DONTNEED) is Linux's")
def test_released_pages_leave_the_head_and_go_back_to_the_system():
    """What the in-place pool compaction relies on: the pages wholly inside ``arr[idx:]`` go
    back to the system (RSS falls by about their size); the elements before ``idx``, those on
    the partial pages at both ends, and the memory past the array keep their values."""
    import mmap

    from numba import njit

    from numtok._native.intrinsics import release_pages

    @njit
    def release(a, i):
        release_pages(a, i)

    def anon_mb():
        with open("/proc/self/status") as f:
            return int(f.read().split("RssAnon:")[1].split()[0]) / 1024

    n = 12_001_000
    whole = np.arange(n, dtype=np.int32)  # 48 MB, touched
    page = mmap.PAGESIZE
    mid = (page // 2 - whole.ctypes.data) % page // 4  # an element in the middle of a page
    i, m = 2_000_000 + mid, 12_000_000 + mid
    a = whole[:m]
    release(a[:10], 3)  # compiled, and a range without a whole page is a no-op
    before = anon_mb()
    release(a, i)
    assert before - anon_mb() > 30
    kept = np.ones(n, dtype=bool)
    kept[i:m] = False
    assert np.array_equal(whole[kept], np.arange(n, dtype=np.int32)[kept])
    assert whole[i] == i and whole[m - 1] == m - 1  # on the partial pages at both ends
    assert np.all((whole[i:m] == 0) | (whole[i:m] == np.arange(i, m, dtype=np.int32)))


# -- bad input ------------------------------------------------------------------------------------


def test_vocab_too_small_names_the_minimum():
    with pytest.raises(ValueError, match="minimum is 258"):
        numtok.train_bpe(["abc"], 257, special_tokens=["<a>", "<b>"])


def test_empty_corpus():
    with pytest.raises(ValueError, match="empty"):
        numtok.train_bpe([], 300)
    with pytest.raises(ValueError, match="empty"):
        numtok.train_bpe(["", ""], 300)


def test_unknown_pattern_lists_known_names():
    with pytest.raises(ValueError, match="gpt2, r50k, cl100k, o200k"):
        numtok.train_bpe(["abc"], 300, pattern="cl200k")


def test_invalid_regex_carries_the_error():
    with pytest.raises(ValueError, match="invalid pattern regex.*missing \\)"):
        numtok.train_bpe(["abc"], 300, pattern=r"(\w+")


def test_non_utf8_file_names_file_and_offset(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello\nworld \xff\xfe\n")
    with pytest.raises(ValueError, match=r"bad\.txt: not valid UTF-8 at byte offset 12"):
        numtok.train_bpe(str(path), 300)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no/such/file.txt"):
        numtok.train_bpe("no/such/file.txt", 300)


def test_bad_options():
    with pytest.raises(ValueError, match="tie_break"):
        numtok.train_bpe(["a"], 300, tie_break="random")
    with pytest.raises(ValueError, match="min_frequency"):
        numtok.train_bpe(["a"], 300, min_frequency=-1)
    with pytest.raises(TypeError, match="vocab_size"):
        numtok.train_bpe(["a"], "300")
    with pytest.raises(TypeError, match="str"):
        numtok.train_bpe([b"bytes"], 300)
