"""Train with Hugging Face tokenizers exactly as numtok's tie_break="hf" promises to match."""

from __future__ import annotations

import json

from tokenizers import Tokenizer, models, pre_tokenizers, trainers


def byte_level_table() -> dict[int, str]:
    """GPT-2's bytes_to_unicode."""
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    others = [b for b in range(256) if b not in set(printable)]
    return {b: chr(b) for b in printable} | {b: chr(0x100 + i) for i, b in enumerate(others)}


_TABLE = byte_level_table()


def to_byte_level(b: bytes) -> str:
    return "".join(_TABLE[x] for x in b)


def hf_train(sequences, vocab_size, *, special_tokens=(), min_frequency=0, files=None):
    """(merges as ByteLevel string pairs, vocab {ByteLevel string: id}) from HF BpeTrainer."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    if files is not None:
        tok.train(files, trainer)
    else:
        tok.train_from_iterator(sequences, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return merges, model["vocab"]


def numtok_as_hf(tok):
    """numtok's merges and vocab in HF's ByteLevel string form."""
    merges = [(to_byte_level(a), to_byte_level(b)) for a, b in tok.merges]
    special_ids = {i: s for s, i in tok.special_tokens.items()}
    vocab = {special_ids[i] if i in special_ids else to_byte_level(b): i for b, i in tok.vocab.items()}
    return merges, vocab
