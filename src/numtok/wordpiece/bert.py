"""BERT's normalizer and pre-tokenizer, exactly as Hugging Face ``tokenizers`` runs them.

``BertNormalizer`` does, in this order (HF ``normalizers/bert.rs``):

1. ``clean_text``: drop control characters (the ``CONTROL`` table below: Cc, Cf, Co and
   U+FFFD, except tab, newline and carriage return) and turn whitespace into a space;
2. ``handle_chinese_chars``: put spaces around CJK ideographs (``CJK_RANGES``);
3. ``strip_accents`` (default: same as ``lowercase``): NFD, then drop nonspacing marks
   (the ``NONSPACING_MARK`` table);
4. ``lowercase``: per-character full lowercase (``"İ"`` becomes ``"i̇"``, a final sigma
   stays ``"σ"``: there is no context-sensitive rule, unlike ``str.lower``).

``BertPreTokenizer`` splits on whitespace (Rust's ``char::is_whitespace``) and isolates every
punctuation character (the ``PUNCTUATION`` table: ASCII punctuation plus Unicode P*).

Why explicit tables instead of ``unicodedata``
    HF's category tables are older than Python's (its Mn and P* tables predate Unicode 10, its
    lowercase map is Unicode 16), so asking ``unicodedata`` (14.0 on Python 3.11) disagrees on
    ~1,000 code points. The range tables below were read off HF ``tokenizers`` 0.23 itself,
    one code point at a time over all of U+0000..U+10FFFF, and
    ``tests/test_wordpiece.py::test_bert_normalizer_every_code_point`` re-checks them against
    the installed ``tokenizers`` on a text holding every code point. NFD itself and the
    lowercase map come from Python (``unicodedata.normalize`` / ``str.lower``) with the few
    per-character differences listed in ``NFD_KEEP`` and ``LOWERCASE_OVERRIDES``.

Known, deliberate difference: numtok applies NFD to the raw text before dropping control
characters (HF: after). The two orders agree on every single code point (checked) and differ
only when a control character sits between two combining marks that both survive accent
stripping and have different non-zero combining classes; HF's older normalization tables
reorder a few post-2019 marks differently anyway.

The hot path is one Numba kernel (``_kernels``) that normalizes,
pre-tokenizes and looks words up in a single pass over the code points; this module builds
its tables and offers the stages on their own:

>>> BertNormalizer().normalize_str("Héllo\\tWÖRLD 你好")
'hello world  你  好 '
>>> pre_tokenize("Hello, world!  Don't")
['Hello', ',', 'world', '!', 'Don', "'", 't']
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache

import numpy as np

from ._kernels import F_CJK, F_CONTROL, F_MARK, F_PUNCT, F_SPACE, F_SPLIT, normalize_kernel, pre_tokenize_kernel

__all__ = ["BertNormalizer", "pre_tokenize", "PRE_TOKENIZERS", "class_table", "lower_table"]

#: Pre-tokenizers numtok's WordPiece understands: BERT's (whitespace + isolated punctuation)
#: and a plain whitespace split (HF ``WhitespaceSplit``).
PRE_TOKENIZERS = ("bert", "whitespace")

# Hex code point ranges, read off HF tokenizers 0.23.3 (see the module docstring).
CONTROL = """
0-8 B-C E-1F 7F-9F AD 600-605 61C 6DD 70F 180E 200B-200F 202A-202E 2060-2064 2066-206F E000-F8FF
FEFF FFF9-FFFB FFFD 110BD 1BCA0-1BCA3 1D173-1D17A E0001 E0020-E007F F0000-FFFFD 100000-10FFFD
"""

#: Rust ``char::is_whitespace`` (the White_Space property). clean_text maps the ones that are
#: not control characters (all but U+000B, U+000C, U+0085) to a space.
WHITESPACE = """
9-D 20 85 A0 1680 2000-200A 2028-2029 202F 205F 3000
"""

PUNCTUATION = """
21-2F 3A-40 5B-60 7B-7E A1 A7 AB B6-B7 BB BF 37E 387 55A-55F 589-58A 5BE 5C0 5C3 5C6 5F3-5F4
609-60A 60C-60D 61B 61E-61F 66A-66D 6D4 700-70D 7F7-7F9 830-83E 85E 964-965 970 AF0 DF4 E4F
E5A-E5B F04-F12 F14 F3A-F3D F85 FD0-FD4 FD9-FDA 104A-104F 10FB 1360-1368 1400 166D-166E
169B-169C 16EB-16ED 1735-1736 17D4-17D6 17D8-17DA 1800-180A 1944-1945 1A1E-1A1F 1AA0-1AA6
1AA8-1AAD 1B5A-1B60 1BFC-1BFF 1C3B-1C3F 1C7E-1C7F 1CC0-1CC7 1CD3 2010-2027 2030-2043 2045-2051
2053-205E 207D-207E 208D-208E 2308-230B 2329-232A 2768-2775 27C5-27C6 27E6-27EF 2983-2998
29D8-29DB 29FC-29FD 2CF9-2CFC 2CFE-2CFF 2D70 2E00-2E2E 2E30-2E42 3001-3003 3008-3011 3014-301F
3030 303D 30A0 30FB A4FE-A4FF A60D-A60F A673 A67E A6F2-A6F7 A874-A877 A8CE-A8CF A8F8-A8FA A8FC
A92E-A92F A95F A9C1-A9CD A9DE-A9DF AA5C-AA5F AADE-AADF AAF0-AAF1 ABEB FD3E-FD3F FE10-FE19
FE30-FE52 FE54-FE61 FE63 FE68 FE6A-FE6B FF01-FF03 FF05-FF0A FF0C-FF0F FF1A-FF1B FF1F-FF20
FF3B-FF3D FF3F FF5B FF5D FF5F-FF65 10100-10102 1039F 103D0 1056F 10857 1091F 1093F 10A50-10A58
10A7F 10AF0-10AF6 10B39-10B3F 10B99-10B9C 11047-1104D 110BB-110BC 110BE-110C1 11140-11143
11174-11175 111C5-111C9 111CD 111DB 111DD-111DF 11238-1123D 112A9 114C6 115C1-115D7 11641-11643
1173C-1173E 12470-12474 16A6E-16A6F 16AF5 16B37-16B3B 16B44 1BC9F 1DA87-1DA8B
"""

CJK_RANGES = """
3400-4DBF 4E00-9FFF F900-FAFF 20000-2A6DF 2A700-2B81F 2B920-2CEAF 2F800-2FA1F
"""

NONSPACING_MARK = """
300-33F 342 345-36F 483-487 591-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-65F 670 6D6-6DC 6DF-6E4
6E7-6E8 6EA-6ED 711 730-74A 7A6-7B0 7EB-7F3 816-819 81B-823 825-827 829-82D 859-85B 8E3-902 93A
93C 941-948 94D 951-957 962-963 981 9BC 9C1-9C4 9CD 9E2-9E3 A01-A02 A3C A41-A42 A47-A48 A4B-A4D
A51 A70-A71 A75 A81-A82 ABC AC1-AC5 AC7-AC8 ACD AE2-AE3 B01 B3C B3F B41-B44 B4D B56 B62-B63 B82
BC0 BCD C00 C3E-C40 C46-C47 C4A-C4D C55-C56 C62-C63 C81 CBC CBF CC6 CCC-CCD CE2-CE3 D01 D41-D44
D4D D62-D63 DCA DD2-DD4 DD6 E31 E34-E3A E47-E4E EB1 EB4-EB9 EBB-EBC EC8-ECD F18-F19 F35 F37 F39
F71-F72 F74 F77 F79-F7E F80 F82-F84 F86-F87 F8D-F92 F94-F97 F99-F9C F9E-FA1 FA3-FA6 FA8-FAB
FAD-FB8 FBA-FBC FC6 102D-1030 1032-1037 1039-103A 103D-103E 1058-1059 105E-1060 1071-1074 1082
1085-1086 108D 109D 135D-135F 1712-1714 1732-1734 1752-1753 1772-1773 17B4-17B5 17B7-17BD 17C6
17C9-17D3 17DD 180B-180D 18A9 1920-1922 1927-1928 1932 1939-193B 1A17-1A18 1A1B 1A56 1A58-1A5E
1A60 1A62 1A65-1A6C 1A73-1A7C 1A7F 1AB0-1ABD 1B00-1B03 1B34 1B36-1B3A 1B3C 1B42 1B6B-1B73
1B80-1B81 1BA2-1BA5 1BA8-1BA9 1BAB-1BAD 1BE6 1BE8-1BE9 1BED 1BEF-1BF1 1C2C-1C33 1C36-1C37
1CD0-1CD2 1CD4-1CE0 1CE2-1CE8 1CED 1CF4 1CF8-1CF9 1DC0-1DF5 1DFC-1DFF 20D0-20DC 20E1 20E5-20F0
2CEF-2CF1 2D7F 2DE0-2DFF 302A-302D 3099-309A A66F A674-A67D A69E-A69F A6F0-A6F1 A802 A806 A80B
A825-A826 A8C4 A8E0-A8F1 A926-A92D A947-A951 A980-A982 A9B3 A9B6-A9B9 A9BC A9E5 AA29-AA2E
AA31-AA32 AA35-AA36 AA43 AA4C AA7C AAB0 AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1 AAEC-AAED AAF6 ABE5
ABE8 ABED FB1E FE00-FE0F FE20-FE2F 101FD 102E0 10376-1037A 10A01-10A03 10A05-10A06 10A0C-10A0F
10A38-10A3A 10A3F 10AE5-10AE6 11001 11038-11046 1107F-11081 110B3-110B6 110B9-110BA 11100-11102
11127-1112B 1112D 11130-11134 11173 11180-11181 111B6-111BE 111CA-111CC 1122F-11231 11234
11236-11237 112DF 112E3-112EA 11300-11301 1133C 11340 11366-1136C 11370-11374 114B3-114B8 114BA
114BF-114C0 114C2-114C3 115B2-115B5 115BC-115BD 115BF-115C0 115DC-115DD 11633-1163A 1163D
1163F-11640 116AB 116AD 116B0-116B5 116B7 1171D-1171F 11722-11725 11727-1172B 16AF0-16AF4
16B30-16B36 16F8F-16F92 1BC9D-1BC9E 1D167-1D169 1D17B-1D182 1D185-1D18B 1D1AA-1D1AD 1D242-1D244
1DA00-1DA36 1DA3B-1DA6C 1DA75 1DA84 1DA9B-1DA9F 1DAA1-1DAAF 1E8D0-1E8D6 E0100-E01EF
"""

#: Characters Python's NFD decomposes but HF's does not (HF's tables are older).
NFD_KEEP = "\U00011938"

#: "code point:lowercase" where HF (Unicode 16) and Python 3.11's ``str.lower`` (Unicode 14)
#: disagree: all are letters assigned after Unicode 14.
LOWERCASE_OVERRIDES = """
1C89:1C8A A7CB:264 A7CC:A7CD A7CE:A7CF A7D2:A7D3 A7D4:A7D5 A7DA:A7DB A7DC:19B 10D50:10D70
10D51:10D71 10D52:10D72 10D53:10D73 10D54:10D74 10D55:10D75 10D56:10D76 10D57:10D77 10D58:10D78
10D59:10D79 10D5A:10D7A 10D5B:10D7B 10D5C:10D7C 10D5D:10D7D 10D5E:10D7E 10D5F:10D7F 10D60:10D80
10D61:10D81 10D62:10D82 10D63:10D83 10D64:10D84 10D65:10D85 16EA0:16EBB 16EA1:16EBC 16EA2:16EBD
16EA3:16EBE 16EA4:16EBF 16EA5:16EC0 16EA6:16EC1 16EA7:16EC2 16EA8:16EC3 16EA9:16EC4 16EAA:16EC5
16EAB:16EC6 16EAC:16EC7 16EAD:16EC8 16EAE:16EC9 16EAF:16ECA 16EB0:16ECB 16EB1:16ECC 16EB2:16ECD
16EB3:16ECE 16EB4:16ECF 16EB5:16ED0 16EB6:16ED1 16EB7:16ED2 16EB8:16ED3
"""

N_CODE_POINTS = 0x110000


def _ranges(spec: str) -> np.ndarray:
    """Parse "21-2F 3A" into an int64 (n, 2) array of inclusive ranges.

    >>> _ranges("21-2F 3A").tolist()
    [[33, 47], [58, 58]]
    """
    out = []
    for item in spec.split():
        lo, _, hi = item.partition("-")
        out.append((int(lo, 16), int(hi or lo, 16)))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _set_flag(table: np.ndarray, spec: str, flag: int) -> None:
    for lo, hi in _ranges(spec):
        table[lo : hi + 1] |= flag


@cache
def class_table() -> np.ndarray:
    """uint8 flags (``F_*``) for every code point U+0000..U+10FFFF (built once, ~1 MB).

    >>> t = class_table()
    >>> bool(t[ord(",")] & F_PUNCT), bool(t[ord(" ")] & F_SPLIT), bool(t[0x4E00] & F_CJK)
    (True, True, True)
    """
    table = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    _set_flag(table, CONTROL, F_CONTROL)
    _set_flag(table, WHITESPACE, F_SPLIT)
    space = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    _set_flag(space, WHITESPACE, F_SPACE)
    table |= np.where(table & F_CONTROL, 0, space).astype(np.uint8)
    _set_flag(table, PUNCTUATION, F_PUNCT)
    _set_flag(table, CJK_RANGES, F_CJK)
    _set_flag(table, NONSPACING_MARK, F_MARK)
    table.setflags(write=False)
    return table


@cache
def lower_table() -> tuple[np.ndarray, np.ndarray]:
    """(int32 map, int32 (k, 3) expansions): the lowercase of each code point.

    ``map[c] >= 0`` is the single code point ``c`` lowercases to; ``map[c] == -1 - i`` means
    it lowercases to ``expansions[i]`` (up to three code points, -1 padded). Python 3.11 has one
    such character, U+0130 (``"İ".lower() == "i̇"``), as does HF.

    >>> m, x = lower_table()
    >>> chr(m[ord("Q")]), [chr(c) for c in x[-1 - m[0x130]] if c >= 0]
    ('q', ['i', '̇'])
    """
    # Lowercase blocks of 4096 characters at once; only a block holding a character with a
    # multi-character lowercase (one in all of Unicode 14) is done character by character.
    single = np.arange(N_CODE_POINTS, dtype=np.int32)
    expansions: list = []
    block = 4096
    for start in range(0, N_CODE_POINTS, block):
        chars = "".join(map(chr, range(start, start + block)))
        low = chars.lower()
        if len(low) != block:
            parts = []
            for i, ch in enumerate(chars):
                s = ch.lower()
                if len(s) != 1:
                    single[start + i] = -1 - len(expansions)
                    expansions.append([ord(c) for c in s] + [-1] * (3 - len(s)))
                    s = ch
                parts.append(s)
            low = "".join(parts)
        mapped = np.frombuffer(low.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int32)
        keep = single[start : start + block] >= 0
        single[start : start + block][keep] = mapped[keep]
    for item in LOWERCASE_OVERRIDES.split():
        c, _, low = item.partition(":")
        single[int(c, 16)] = int(low, 16)
    single.setflags(write=False)
    exp = np.array(expansions, dtype=np.int32).reshape(-1, 3)
    exp.setflags(write=False)
    return single, exp


@cache
def lower_table_packed() -> np.ndarray:
    """``lower_table()`` as one read-only int32 array: the map, then the expansions."""
    single, exp = lower_table()
    packed = np.concatenate([single, exp.ravel()])
    packed.setflags(write=False)
    return packed


def nfd(text: str) -> str:
    """NFD as HF computes it (Python's, except for the characters in ``NFD_KEEP``).

    >>> [hex(ord(c)) for c in nfd("é")]
    ['0x65', '0x301']
    """
    if NFD_KEEP in text:
        return NFD_KEEP.join(unicodedata.normalize("NFD", part) for part in text.split(NFD_KEEP))
    return unicodedata.normalize("NFD", text)


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as a read-only uint32 array (one kernel signature for all
    text: ASCII-only uint8 input would double the compile time for no measurable speed).

    Lone surrogates (which HF cannot even receive) are kept here and become U+FFFD in the
    kernels.

    >>> code_points("hé").tolist()
    [104, 233]
    """
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


@dataclass(frozen=True)
class BertNormalizer:
    """HF's ``BertNormalizer`` with the same options and defaults.

    ``strip_accents=None`` means "same as ``lowercase``", as in HF.

    >>> BertNormalizer(lowercase=False).normalize_str("Café\\u200b!")
    'Café!'
    """

    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: bool | None = None
    lowercase: bool = True

    @property
    def strips_accents(self) -> bool:
        return self.lowercase if self.strip_accents is None else bool(self.strip_accents)

    def options(self) -> np.ndarray:
        """int64 [clean_text, handle_chinese_chars, strip_accents, lowercase] for the kernels."""
        return np.array(
            [self.clean_text, self.handle_chinese_chars, self.strips_accents, self.lowercase], dtype=np.int64
        )

    def prepare(self, text: str) -> str:
        """The part of normalization done by Python before the kernel: NFD when stripping accents."""
        if self.strips_accents and not text.isascii():
            return nfd(text)
        return text

    def normalize_str(self, text: str) -> str:
        """Normalize ``text`` (HF ``normalize_str``)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        single, exp = lower_table() if self.lowercase else _NO_LOWER
        out = normalize_kernel(code_points(self.prepare(text)), class_table(), single, exp, self.options())
        return out.astype(np.uint32).tobytes().decode("utf-32-le")

    def to_json(self) -> dict:
        return {
            "type": "BertNormalizer",
            "clean_text": self.clean_text,
            "handle_chinese_chars": self.handle_chinese_chars,
            "strip_accents": self.strip_accents,
            "lowercase": self.lowercase,
        }


_NO_LOWER = (np.zeros(1, dtype=np.int32), np.zeros((0, 3), dtype=np.int32))
for _a in _NO_LOWER:
    _a.setflags(write=False)


def pre_tokenizer_mode(name: str) -> int:
    """Kernel code of a pre-tokenizer name; ValueError listing the known ones."""
    try:
        return PRE_TOKENIZERS.index(name)
    except ValueError:
        raise ValueError(f"unknown pre_tokenizer {name!r}; known: {', '.join(map(repr, PRE_TOKENIZERS))}") from None


def pre_tokenize(text: str, pre_tokenizer: str = "bert") -> list[str]:
    """Words of ``text`` under HF's ``BertPreTokenizer`` ("bert") or ``WhitespaceSplit``
    ("whitespace"), without normalization.

    >>> pre_tokenize("a-b  c", "whitespace")
    ['a-b', 'c']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    mode = pre_tokenizer_mode(pre_tokenizer)
    spans = pre_tokenize_kernel(code_points(text), class_table(), mode)
    return [text[s:e] for s, e in spans]
