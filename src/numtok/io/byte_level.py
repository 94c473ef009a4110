"""GPT-2's byte-level alphabet: the 256 characters HF and GPT-2 files spell bytes with.

HF ``tokenizer.json`` and GPT-2's ``vocab.json``/``merges.txt`` store tokens as strings over
``bytes_to_unicode``'s alphabet (byte 0x20, the space, is ``"Ġ"``); numtok stores bytes. The
trainer also needs the alphabet: HF numbers the 256 bytes in the order of their characters.
"""

from __future__ import annotations

__all__ = ["bytes_to_unicode", "to_byte_level", "from_byte_level", "CHAR_TO_BYTE"]


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> character map: printable latin-1 bytes map to themselves, the other 68
    bytes (controls, space, 0x7F-0xA0, 0xAD) to U+0100.. in byte order.

    >>> m = bytes_to_unicode(); m[ord("a")], m[ord(" ")], m[ord("\\n")]
    ('a', 'Ġ', 'Ċ')
    """
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    others = [b for b in range(256) if b not in set(printable)]
    return {b: chr(b) for b in printable} | {b: chr(0x100 + i) for i, b in enumerate(others)}


_BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}
# str.translate tables: bytes (decoded as latin-1) -> byte-level string, and back.
_TO_BYTE_LEVEL = {b: c for b, c in _BYTE_TO_CHAR.items()}
_FROM_BYTE_LEVEL: dict[int, int | str] = {ord(c): b for c, b in CHAR_TO_BYTE.items()}
# Latin-1 characters outside the alphabet (space, controls, 0x7F-0xA0, 0xAD) must not pass
# through as their own byte: they become a character latin-1 cannot encode.
_FROM_BYTE_LEVEL.update({c: "\uffff" for c in range(256) if chr(c) not in CHAR_TO_BYTE})


def to_byte_level(token: bytes) -> str:
    return token.decode("latin-1").translate(_TO_BYTE_LEVEL)


def from_byte_level(text: str) -> bytes | None:
    """The bytes a byte-level string stands for, or None if it has a character outside the
    alphabet (an added token such as "<|endoftext|>" is usually *also* valid byte-level)."""
    try:
        return text.translate(_FROM_BYTE_LEVEL).encode("latin-1")
    except UnicodeEncodeError:
        return None
