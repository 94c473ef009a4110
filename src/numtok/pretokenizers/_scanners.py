"""Numba scanners for the named pre-tokenization patterns.

Each scanner walks UTF-8 bytes and yields exactly the pieces ``regex.finditer`` yields for the
pattern (``numtok.pretokenizers.patterns``): one hand-written decision per start position, worked out from
the pattern's alternatives and backtracking order (below), proved against ``regex`` by
``tests/test_pretokenize.py``. Classes come from ``_unicode`` (ASCII bytes index the
same table directly; other characters are decoded on the fly).

Notation: L = \\p{L}, N = \\p{N}, S = \\s, O = [^\\s\\p{L}\\p{N}] (includes \\p{M}), "run" = the
longest sequence of characters of a class from a position. Every pattern matches at every
position, so the pieces tile each document.

gpt2 == r50k (``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``):
    1. ``'`` + s/t/m/d (2 bytes) or re/ve/ll (3 bytes), case-sensitive.
    2. an optional U+0020 then an L, N or O run (the space is taken iff the next char is not S).
    3. whitespace at i, run i..k: the whole run if it ends the text, else the run minus its last
       character if that leaves >= 1 character (``\\s+(?!\\S)`` backtracks one), else the one
       character (``\\s+``). r50k's ``\\s++$`` matches only runs that end the text (a maximal
       run can't stop right before a final ``\\n``, so ``$``'s other position never applies),
       which rule 3 already gives them; its final ``\\s`` is only reached by a 1-character run:
       the two patterns split every text identically.
cl100k:
    1. ``'`` + (?i) s/d/m/t (also U+017F LONG S, which ``(?i)`` folds to s) or ll/ve/re.
    2. an L run; or one char that is not \\r, \\n, L, N followed by an L run (possessive ``?+``
       never gives the char back, but giving it back could not help either).
    3. 1-3 N.  4. optional U+0020 + O run + \\r/\\n run.
    5. whitespace run i..k: whole run if it ends the text (``\\s++$``); else up to and including
       its last \\r/\\n if any (``\\s*[\\r\\n]``); else as rule 3 of gpt2.
o200k (U = [Lu Lt Lm Lo M], W = [Ll Lm Lo M], P = [^\\r\\n\\p{L}\\p{N}], C = (?i) contraction):
    A1 ``P?U*W+C?``, A2 ``P?U+W*C?``: tried in regex's order A1 with P taken, A1 without, A2
    with, A2 without. From a start s: U run s..e. A1 succeeds iff the char at e is W (then W run
    from e) or some char in s..e is W (U* gives back to the *last* such char, which becomes a
    1-char W+: ``中文ABC`` -> ``中文``, ``ABC``); A2 succeeds iff e > s. Then C if present.
    A3 1-3 N.  A4 optional U+0020 + O run + [\\r\\n/] run.  A5 whitespace run up to and including
    its last \\r/\\n (before the end-of-text rule: o200k has no ``\\s++$``); A6/A7 as gpt2 rule 3.

Speed: every kernel keeps bit masks of a 64-byte window of text (a-z, A-Z, digits,
whitespace, non-ASCII, CR/LF, space, "/", "'": SIMD compares, ``_native.intrinsics.ascii_class_masks64``),
slid 32 bytes at a time (``_slide_window``), and cuts pieces three ways, fastest first, after
one test: a piece that starts with a non-ASCII character (``_nonascii_piece``: a non-ASCII
first letter after a space or not, a letter run after one non-ASCII mark or punctuation, a
run of marks and punctuation: most pieces of CJK, Hangul, Cyrillic and Devanagari text) is
measured straight away, without the masks (they would only say "not plain" for such a piece;
cl100k's Indic pieces by a state table, ``_cl100k_wide_run``), except (cl100k, o200k) one
that starts with a CJK or kana letter, or a Hangul word after a space: the window's masks
then take CJK, kana and Hangul letters as letters and 3-byte CJK and general punctuation as
"other" (``_letters3``), so way 1 below cuts Chinese, Japanese and Korean lines too;
and (cl100k, o200k) an ASCII piece more than a window past the last one, with non-ASCII text
within 8 bytes (a full stop between Hangul words), takes way 3 without loading a new window:

1. Plain text (``_plain_gpt2`` / ``_plain_cl100k`` / ``_plain_o200k``: ASCII letters, digits,
   spaces, CR/LF and punctuation, less each pattern's exceptions). There, whether byte p
   starts a piece depends only on bytes p-2 .. p+1 (p-4 .. p+1 after 3-byte punctuation),
   so the window's piece starts are one bit
   expression of its masks, and the pieces from the current one up to the first byte that is
   not plain are written from it with a count of trailing zeros each: no branch per piece to
   mispredict. Most pieces of English and code are cut this way.
2. One piece from the masks (o200k and cl100k): its end is the trailing zeros of a mask
   shifted to its start, with no byte loaded on the way from one piece to the next.
3. The general per-character code (``_gpt2_piece``, ``_cl100k_piece``, ``_o200k_piece``,
   with ASCII fast paths that measure letter runs 8 bytes at a time): non-ASCII text, the
   window's or the document's end, contractions.

The kernels allocate nothing and are compiled without Numba's reference counting (``_kernel``):
with it, each call of a helper taking the arrays cost an atomic incref/decref pair. Output
arrays are allocated by NumPy (huge pages). Step 2 chooses the run mask with branches: selects
make a longer dependency chain from one piece to the next, and the branches predict well.

Kernels take ``(data, docs, flags, out, n, d, i)``: they write pieces into ``out`` from row ``n``,
starting at byte ``i`` of document ``d``, and return the new ``(n, d, i)``; ``d == len(docs)``
means done, anything else that ``out`` is full (the caller grows it and calls again). They are
``nogil`` so several Python threads can run them at once; ``split_named`` runs them on one
thread or on a few.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from .._native.intrinsics import HIGH_BITS as _HI
from .._native.intrinsics import ascii_class_masks32 as _ascii_class_masks32
from .._native.intrinsics import ascii_class_masks64 as _ascii_class_masks64
from .._native.intrinsics import leading_zeros, read_only_view, trailing_zeros
from .._native.intrinsics import letter3_leads64 as _letter3_leads64
from .._native.intrinsics import load_u64 as _load_u64
from .._native.intrinsics import punct3_leads64 as _punct3_leads64
from .._native.jit import INLINE, cached_njit
from .._native.threads import usable_cores
from ._unicode import BIT_CRLF, BIT_L, BIT_N, BIT_O, BIT_S, BIT_U, BIT_W, class_table

__all__ = ["has_scanner", "split_named", "scan_into", "SCANNER_NAMES", "SCANNER_IDS", "SCANNER_KINDS"]

_L = np.uint8(BIT_L)
_N = np.uint8(BIT_N)
_S = np.uint8(BIT_S)
_U = np.uint8(BIT_U)
_W = np.uint8(BIT_W)
_O = np.uint8(BIT_O)
_CRLF = np.uint8(BIT_CRLF)
_UW = np.uint8(BIT_U | BIT_W)
_LNCRLF = np.uint8(BIT_L | BIT_N | BIT_CRLF)
_NOT_SPACE = np.uint8(BIT_L | BIT_N | BIT_O)
_INVALID = np.uint8(BIT_O)  # a byte that starts no valid UTF-8 character: "other", like U+FFFD

_jit = cached_njit(nogil=True)
# The scanning kernels allocate nothing, so they run without Numba's reference counting:
# with it, every call of a helper that takes the arrays (the general path of a piece) and
# every inlined one increfs and decrefs them, atomically, on the scan's hottest path.
_kernel = cached_njit(nogil=True, _nrt=False)
# Indexing with an unsigned integer spares Numba's negative-index handling (a compare and a
# select on every access, in the innermost loops); every index here is >= 0.
_u = np.uint64
_inline = njit(**INLINE)  # inlined by LLVM into its callers only: nothing to cache


# Bit-mask constants (uint64, so Numba keeps the masks unsigned).
_M0 = np.uint64(0)
_M1 = np.uint64(1)
_M2 = np.uint64(2)
_M3 = np.uint64(3)
_M32 = np.uint64(32)
_M_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)

_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_CASE = np.uint64(0x2020202020202020)


@_inline
def _ascii_letters8(data, p, lower_only):
    """How many of the 8 bytes at ``p`` are ASCII letters before the first that is not (0-8).

    With ``lower_only`` only a-z count. Bytes >= 0x80 stop the count (the caller decodes them).
    """
    w = _load_u64(data, p)
    y = w & _LOW7 if lower_only else (w | _CASE) & _LOW7
    # Per byte, y + (0x80 - lo) sets the top bit iff y >= lo (no carries: y < 0x80).
    ge_a = y + np.uint64(0x1F1F1F1F1F1F1F1F)
    ge_brace = y + np.uint64(0x0505050505050505)
    stop = ~(ge_a & ~ge_brace & ~w) & _HI
    if stop == 0:
        return 8
    return np.int64(trailing_zeros(stop)) >> 3


# ---------------------------------------------------------------------------------------------
# Characters


@_inline
def _valid3(cp):
    """Whether a 3-byte sequence's code point is one UTF-8 allows: not overlong (U+0800 up) and
    not a surrogate (U+D800-DFFF, the code points whose top five bits are 0xD800). Otherwise
    its lead byte is no character, as for Python's decoder, and each of its bytes is one
    "other" (an overlong space must not read as a space)."""
    top = cp & 0xF800
    return (top != 0) & (top != 0xD800)


@_inline
def _char_nonascii(data, p, end, flags):
    """(class, byte length) of the non-ASCII character starting at ``data[p]``. A 3-byte one
    (CJK, Hangul, Devanagari) is tested first, its checks in one branch. Inlined: as a function
    of its own, with the checks of overlong and surrogate forms, LLVM left it a call (one per
    2-byte character of Cyrillic or Greek text, on the scan's hottest path)."""
    b0 = np.int64(data[_u(p)])
    if b0 >= 0xE0 and b0 < 0xF0 and p + 2 < end:
        b1 = np.int64(data[_u(p + 1)])
        b2 = np.int64(data[_u(p + 2)])
        cp = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
        if ((b1 & 0xC0) == 0x80) & ((b2 & 0xC0) == 0x80) & _valid3(cp):  # one branch
            return flags[cp], 3
        return _INVALID, 1
    if b0 < 0xC2 or b0 >= 0xF5 or (b0 >= 0xE0 and b0 < 0xF0):  # no lead byte, or cut off
        return _INVALID, 1
    if b0 < 0xE0:
        if p + 1 >= end:
            return _INVALID, 1
        b1 = np.int64(data[_u(p + 1)])
        if (b1 & 0xC0) != 0x80:
            return _INVALID, 1
        return flags[((b0 & 0x1F) << 6) | (b1 & 0x3F)], 2
    if p + 3 >= end:
        return _INVALID, 1
    b1 = np.int64(data[_u(p + 1)])
    b2 = np.int64(data[_u(p + 2)])
    b3 = np.int64(data[_u(p + 3)])
    if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80 or (b3 & 0xC0) != 0x80:
        return _INVALID, 1
    cp = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
    if cp < 0x10000 or cp > 0x10FFFF:  # overlong, or past Unicode
        return _INVALID, 1
    return flags[cp], 4


@_inline
def _char_at(data, p, end, flags):
    """(class, byte length) of the character starting at ``data[p]``: an ASCII byte's from
    the table, any other's from ``_char_nonascii``."""
    b = data[_u(p)]
    if b < 0x80:
        return flags[b], 1
    return _char_nonascii(data, p, end, flags)


@_inline
def _contraction_ci(data, p, end):
    """Byte length of ``(?i:'s|'t|'re|'ve|'m|'ll|'d)`` at ``p`` (0 if none)."""
    if p + 1 >= end or data[p] != 0x27:
        return 0
    b1 = data[p + 1] | 0x20  # ASCII lower case (only letters are compared below)
    if b1 == 0x73 or b1 == 0x74 or b1 == 0x6D or b1 == 0x64:  # s t m d
        return 2
    if p + 2 >= end:
        return 0
    b2 = data[p + 2] | 0x20
    if data[p + 1] == 0xC5 and data[p + 2] == 0xBF:  # U+017F LONG S: (?i) folds it to s
        return 3
    if (b1 == 0x72 and b2 == 0x65) or (b1 == 0x76 and b2 == 0x65) or (b1 == 0x6C and b2 == 0x6C):
        return 3  # re ve ll
    return 0


# ---------------------------------------------------------------------------------------------
# Kernels: one per pattern family, each one loop over the pieces (see the module notes for
# its three ways of ending a piece). Helpers are inlined by LLVM (``_inline``, ``jit.INLINE``)
# and, like the kernels (``_kernel``), run without reference counting: with it, every call
# increfs and decrefs its array arguments. In every kernel ``i`` is the start of
# the current piece and ``e`` its end; ASCII bytes take the class table directly, others go
# through ``_char_nonascii``.


@_inline
def _slide_window(data, i, end, wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap):
    """The kernels' window of ASCII class masks, moved so that ``i`` is in its first half.

    The window holds the ``ascii_class_masks`` of bytes ``wb .. wb + 63``. It slides by 32
    bytes (classifying only the new half, at an address known before the pieces are) or is
    loaded at ``i``; within the last 64 bytes of ``data`` there is none (``fast`` False: the
    kernel takes its general path). Returns the new state and ``valid``, the bits of bytes
    inside the document, less the window's last byte: past those, a piece must not be ended
    from the masks.
    """
    if fast and i - wb < 64 and wb + 96 <= data.shape[0]:
        wb += 32
        lo2, up2, dg2, ws2, hi2, nl2, sp2, sl2, ap2 = _ascii_class_masks32(data, wb + 32)
        lo = (lo >> _M32) | (lo2 << _M32)
        up = (up >> _M32) | (up2 << _M32)
        dg = (dg >> _M32) | (dg2 << _M32)
        ws = (ws >> _M32) | (ws2 << _M32)
        hi = (hi >> _M32) | (hi2 << _M32)
        nl = (nl >> _M32) | (nl2 << _M32)
        sp = (sp >> _M32) | (sp2 << _M32)
        sl = (sl >> _M32) | (sl2 << _M32)
        ap = (ap >> _M32) | (ap2 << _M32)
    elif i + 64 <= data.shape[0]:
        wb = i
        lo, up, dg, ws, hi, nl, sp, sl, ap = _ascii_class_masks64(data, i)
        fast = True
    else:
        fast = False
    valid = _M_ALL >> _M1
    if end - wb < 63:
        valid = (_M1 << _u(max(0, end - wb))) - _M1
    return wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap, valid


@_inline
def _letters3(data, wb, lo, hi):
    """``lo`` of the window at ``wb`` with the bytes of its CJK, kana and Hangul letters
    (``letter3_leads64``) set, where the cl100k and o200k kernels' masks take them as small
    letters (``lo & hi``: a Hangul word was one piece each by the general path, at a branch
    mispredicted per piece), and the first bytes of its CJK and
    general punctuation (``punct3_leads64``), which the masks take as "other". Sliding
    shifts the letters with ``lo``; the punctuation is found again."""
    if hi == _M0:  # no byte of the window is one
        return lo, _M0
    q = _letter3_leads64(data, wb)
    lo |= q | (q << _M1) | (q << _M2)
    if hi & ~lo & (_M_ALL >> _M2) == _M0:  # all letters (Hangul words; the last two bytes may
        # start one that ends past the window): no punctuation to look for, a search spared
        return lo, _M0
    return lo, _punct3_leads64(data, wb)


@_inline
def _window_with_letters3(data, i, end, wb, fast, letters3, lo, up, dg, ws, hi, nl, sp, sl, ap, valid):
    """The cl100k and o200k kernels' window (``_slide_window``) when ``i`` is past its first
    half, with its CJK, kana and Hangul letters in ``lo`` and the first bytes of its 3-byte
    punctuation in ``p3`` (``_letters3``) from a CJK or Hangul word (``letters3``) on, while
    it holds such letters. Returns ``moved`` (the window or its ``lo`` changed: the masks made
    from them must be made again), then the state; ``p3`` only where ``moved`` (the masks keep
    what the kernels need of it: one mask more carried from piece to piece takes a register
    from every text's loop, ASCII's too)."""
    moved = not fast or i - wb >= 32
    p3 = _M0
    if moved or (letters3 and lo & hi == _M0):
        if moved:
            wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap, valid = _slide_window(
                data, i, end, wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap
            )
        if fast and (letters3 or lo & hi != _M0):  # only while such letters come
            lo, p3 = _letters3(data, wb, lo, hi)
        moved = True
    return moved, wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap, p3, valid


@_inline
def _plain_starts_after(starts, bad, off, absorbed):
    """The piece starts after window offset ``off`` (itself a piece start) that the
    plain-text rule decides: those before the byte ahead of the first "bad" one (a rule
    reads up to one byte on), less ``absorbed``: the start of the letter run that the piece
    at ``off`` takes as its prefix's whatever the rule says (a rule that reads back past
    ``off`` cannot know that it starts a piece; ``_absorbed_letter``)."""
    uoff = _u(off)
    b = _u(trailing_zeros(bad >> (uoff + _M1))) + uoff + _M1
    return starts & ~((_M2 << uoff) - _M1) & ((_M1 << (b - _M1)) - _M1) & ~absorbed


@_inline
def _absorbed_letter(om, hi, let, off):
    """The bit of the letter after the "other" character at window offset ``off`` (ASCII, or
    3-byte punctuation: its bytes are ``om & hi``), if one follows: that character is the
    letter run's prefix (cl100k and o200k)."""
    at = om & (_M1 << _u(off))
    return (((at & ~hi) << _M1) | ((at & hi) << _M3)) & let


@_inline
def _put_piece(flat, n, s, e):
    """Write the piece (s, e) as row n of the flattened output; return n + 1."""
    flat[_u(2 * n)] = s
    flat[_u(2 * n + 1)] = e
    return n + 1


@_inline
def _write_starts(flat, n, i, wb, m):
    """Write the pieces from ``i`` to each start in ``m`` (window bits from ``wb``)."""
    while m:
        e = wb + np.int64(trailing_zeros(m))
        n = _put_piece(flat, n, i, e)
        i = e
        m &= m - _M1
    return n, i


# Plain text (ASCII with some exceptions, each pattern's own): there, whether byte p starts a
# piece depends only on bytes p-2 .. p+1, so all piece starts of a window are one bit
# expression of its class masks. Each ``_plain_*`` takes the window's masks (``om``: ASCII
# "other") and returns (starts, bad): the starts, and the bytes that are not plain (or past
# the document or the window).


@_inline
def _plain_gpt2(dg, ws, sp, ap, om, let, valid):
    """gpt2: letters, digits, whitespace and "other", but no ' that may start a contraction
    (after a letter, digit or whitespace other than a space). A space's next letter, digit or
    "other" run is its piece (`` ?``); a whitespace run gives its last character to the next
    piece (``\\s+(?!\\S)``); runs of one class are one piece."""
    spv = sp & valid
    dgv = dg & valid
    wsv = ws & valid
    bad = ~(let | dgv | wsv | om) | (ap & ~((om | spv) << _M1))
    starts = (
        (wsv & (~(wsv << _M1) | ~(wsv >> _M1)))
        | (let & ~((let | spv) << _M1))
        | (dgv & ~((dgv | spv) << _M1))
        | (om & ~((om | spv) << _M1))
    )
    return starts, bad


@_inline
def _plain_split_digits(dg, nl, sp, om, let, valid, p3):
    """The rules cl100k and o200k share (each adds its own exceptions): letters, digit runs of
    at most 3, spaces (not right after CR/LF), CR/LF and "other" (ASCII, or 3-byte
    punctuation whose first bytes are ``p3``: its bytes are all "other" in ``om``).
    - a space starts a piece if it starts its run, or ends it before no space or CR/LF (a
      run of 3+ gives its last space to the next piece);
    - a digit after a non-digit; CR/LF after a letter or digit (after "other" it is that
      piece's tail, after a space part of the run);
    - an "other" after a letter, digit or CR/LF (after a space it is the space's piece,
      after an "other" the same run);
    - a letter after a digit or CR/LF, or after an "other" that does not start a piece (one
      that does is the letter's P: the byte before that character, 2 back for an ASCII one,
      4 for a 3-byte one, is no letter, digit or CR/LF); never after a space (its P).
    Returns (starts, bad, brk, nlv); ``brk``: the bytes after which an "other" starts a piece."""
    spv = sp & valid
    dgv = dg & valid
    nlv = nl & valid
    brk = let | nlv | dgv
    bad = (
        ~(let | spv | om | dgv | nlv)
        | (spv & (nlv << _M1))
        | (dgv & (dgv << _M1) & (dgv << _M2) & (dgv << _M3))
    )
    starts = (
        (spv & (~(spv << _M1) | ~((spv | nlv) >> _M1)))
        | (dgv & ~(dgv << _M1))
        | (nlv & ((let | dgv) << _M1))
        | (om & (brk << _M1))
        | (let & ((dgv | nlv) << _M1))
    )
    o3_last = p3 << _M2  # the last byte of a 3-byte "other"
    om1 = om & ~(p3 | (p3 << _M1) | o3_last)  # an ASCII one
    starts |= let & (((om1 << _M1) & ~(brk << _M2)) | ((o3_last << _M1) & ~(brk << np.uint64(4))))
    return starts, bad, brk, nlv


@_inline
def _plain_cl100k(dg, nl, sp, ap, om, let, valid, p3):
    """cl100k: the shared rules, a letter never starting a piece after a letter; no ' that may
    start a contraction (after a letter, digit or CR/LF)."""
    starts, bad, brk, _ = _plain_split_digits(dg, nl, sp, om, let, valid, p3)
    return starts, bad | (ap & (brk << _M1))


@_inline
def _plain_o200k(lo, up, dg, nl, sp, sl, ap, om, let, valid, p3):
    """o200k: the shared rules, and a capital after a small letter starts a piece; no ' after
    a letter (a contraction may end the letter piece), no / after CR/LF (an "other" piece's
    tail may take it)."""
    starts, bad, _, nlv = _plain_split_digits(dg, nl, sp, om, let, valid, p3)
    starts |= let & (lo << _M1) & up
    bad |= (ap & (let << _M1)) | (sl & (nlv << _M1))
    return starts, bad


# One piece from the masks (cl100k and o200k), at window offset ``uoff`` whose byte is ASCII;
# ``xstop`` = stop >> uoff. Each returns the piece's length, or -1 where the masks cannot tell
# (a non-ASCII byte, the window's or the document's end) and the general path decides.


@_inline
def _digits_from_masks(dg, valid, xstop, uoff):
    """``\\p{N}{1,3}``."""
    e = min(3, np.int64(trailing_zeros(~(dg & valid) >> uoff)))
    if e < 3 and (xstop >> _u(e)) & _M1:
        return -1
    return e


@_inline
def _other_from_masks(om, tail, valid, xstop, uoff):
    """``" ?"`` + "other" run + run of ``tail`` bytes (CR/LF, and / for o200k), where the byte
    at ``uoff`` starts one (``_other_starts``)."""
    xom = om >> uoff
    e = np.int64((xom & _M1) ^ _M1)  # 1 after a space
    e += np.int64(trailing_zeros(~(xom >> _u(e))))
    e += np.int64(trailing_zeros(~(tail & valid) >> (uoff + _u(e))))
    if (xstop >> _u(e)) & _M1:
        return -1
    return e


@_inline
def _other_starts(om, sp, uoff):
    """True if the byte at ``uoff`` starts ``" ?"`` + "other" run: an "other", or a space
    before one."""
    return ((om | (sp & (om >> _M1))) >> uoff) & _M1 != _M0


@_inline
def _space_from_masks(ws, nl, valid, xstop, uoff, to_end, dollar_first):
    """A whitespace run of ``r`` bytes, ``to_end`` if it reaches the document's end: up to its
    last CR/LF (``\\s*[\\r\\n]``), the whole run at the end, else all but its last byte
    (``\\s+(?!\\S)``) or one byte. ``dollar_first``: cl100k's ``\\s++$`` comes before the
    CR/LF rule."""
    r = np.int64(trailing_zeros(~(ws & valid) >> uoff))
    at_end = to_end == r
    if at_end and dollar_first:
        return r
    if not at_end and (xstop >> _u(r)) & _M1:
        return -1
    crlf = (nl >> uoff) & ((_M1 << _u(r)) - _M1)
    if crlf:
        return 64 - np.int64(leading_zeros(crlf))
    if at_end:
        return r
    return max(1, r - 1)


# The general path's runs, shared by the three piece functions.


@_inline
def _letter_run_on(data, p, end, flags, small):
    """End of the letter run (cl100k: ``\\p{L}``; o200k, ``small``: W) that goes on at byte
    ``p`` past a window's end: 64 bytes at a time from masks while its characters are ASCII
    (small) letters or CJK, kana and Hangul ones, then by the character loop (which alone
    measured a Chinese clause past a window's end one character at a time). ``p`` may be inside
    a letter the window had whole but for its last byte: the run starts again at its first."""
    while data[_u(p)] & 0xC0 == 0x80:
        p -= 1
    while p + 64 <= data.shape[0]:
        lo, up, dg, ws, hi, nl, sp, sl, ap = _ascii_class_masks64(data, p)
        q = _letter3_leads64(data, p)
        let = lo | q | (q << _M1) | (q << _M2)
        if not small:
            let |= up
        n = 64 if let == _M_ALL else np.int64(trailing_zeros(~let))
        if p + n > end:  # the character loop decides a character cut by the document's end
            break
        p += n
        if n < 62:  # else a letter may start at byte 62 or 63 of the 64
            break
    return _class_run(data, p, end, flags, _W if small else _L)


@_inline
def _class_run(data, p, end, flags, mask):
    """End of the run of characters with a class bit in ``mask`` from byte ``p``."""
    while p < end:
        b = data[_u(p)]
        if b < 0x80:
            if flags[b] & mask == 0:
                return p
            p += 1
        else:
            c, k = _char_nonascii(data, p, end, flags)
            if c & mask == 0:
                return p
            p += k
    return p


@_inline
def _two_byte_run(data, p, end, flags, mask):
    """Where the run of 2-byte characters (Cyrillic, Greek, ...) with a class bit in ``mask``
    from byte ``p`` stops: one branch a character, the bytes' checks and the class together
    (``_class_run`` takes over there; a byte it would not decode the same way stops it). It
    pays on Russian's long runs; the same for 3-byte letters did not on Hangul and Devanagari,
    whose runs of 2-4 letters end before its setup is earned back."""
    while p + 1 < end:
        b0 = np.int64(data[_u(p)])
        b1 = np.int64(data[_u(p + 1)])
        c = flags[_u(((b0 & 0x1F) << 6) | (b1 & 0x3F))]
        if (b0 >= 0xC2) & (b0 < 0xE0) & ((b1 & 0xC0) == 0x80) & (c & mask != 0):
            p += 2
        else:
            break
    return p


@_inline
def _digits_after(data, e, end, flags):
    """End of ``\\p{N}{1,3}`` whose first digit ends at ``e``: up to two more."""
    for _ in range(2):
        if e >= end:
            break
        c, k = _char_at(data, e, end, flags)
        if c & _N == 0:
            break
        e += k
    return e


@_inline
def _space_run(data, i, e, end, flags, crlf_end):
    """The whitespace run from ``i`` (its first character ends at ``e``): (its end, the start
    of its last character, the end of its last CR/LF or ``crlf_end``)."""
    last = i
    while e < end:
        b = data[_u(e)]
        if b < 0x80:
            c = flags[b]
            if c & _S == 0:
                break
            last = e
            e += 1
            if c & _CRLF:
                crlf_end = e
        else:
            c, k = _char_nonascii(data, e, end, flags)
            if c & _S == 0:
                break
            last = e
            e += k
    return e, last, crlf_end


@_inline
def _nonascii_piece(data, i, end, flags, pattern):
    """End of the piece at ``i`` if it starts with a non-ASCII character (after one space or
    not) and is a letter run or a run of marks and punctuation, else -1. Letter runs: one whose
    first letter is not ASCII, or (cl100k, o200k) any letter run after one non-ASCII character
    that is no letter, digit, CR or LF ("，中文", a Devanagari vowel sign and the next letter).
    Runs of "other" (`` ?[^\\s\\p{L}\\p{N}]+`` and the pattern's tail): a non-ASCII
    "other" that no letter follows (a Devanagari sign before a space, "。\\n"). Most pieces of
    CJK, Hangul, Cyrillic and Devanagari text are such; they skip the masks and the per-piece
    dispatch. ``pattern``: 0 gpt2 (`` ?\\p{L}+``, a space the only prefix), 1 cl100k
    (``[^\\r\\n\\p{L}\\p{N}]?\\p{L}+``), 2 o200k (A1 from the letter run, with the prefix
    as its P: a letter at ``i`` cannot be P; a small letter's W run, a capital's before a
    small letter, and a run of characters that are both U and W are measured here, others by
    ``_o200k_letters_from``; if A1 fails, -1 and the general path; marks are letters there, so
    a run of "other" must not start with or be followed by one). cl100k: -2 for a piece whose
    first character is in U+0900-0FFF, for ``_cl100k_wide_run``. -3 (cl100k, o200k) where
    the piece may start with a CJK or kana letter (lead byte E3-E9), or be a Hangul word after
    a space (EA-ED): the window's masks take it, and the pieces after it."""
    j = i + np.int64((data[_u(i)] == 0x20) & (i + 1 < end))  # no branch: spaces are half of English pieces
    b = data[_u(j)]
    if b < 0xC0:
        return -1
    if pattern != 0 and (b >= 0xE3) & (b <= 0xED) & ((j > i) | (b <= 0xE9)):  # one branch
        # CJK and kana (E3-E9) wherever they are: the masks take their letters and
        # punctuation, so most pieces after one are cut from them too. Hangul (EA-ED) only
        # after a space: a window's test on every piece of a word after no space costs more
        # than the masks save on such short runs.
        return -3
    if pattern == 1 and data[_u(j)] == 0xE0 and j + 1 < end and data[_u(j + 1)] >= 0xA4:
        return -2
    c, k = _char_nonascii(data, j, end, flags)
    if c & _L == 0:
        if j == i and pattern != 0 and c & _LNCRLF == 0 and j + k < end:
            c1, k1 = _char_at(data, j + k, end, flags)
            if c1 & _L:  # a prefix that is not a space, then the letter run
                j += k
                c = c1
                k = k1
            elif pattern == 2 and c1 & _UW:  # a mark after the prefix: A1/A2 decide
                return -1
        if c & _L == 0:
            # `` ?[^\s\p{L}\p{N}]+`` (then CR/LF, and / for o200k): no letter run follows,
            # so the alternatives before it fail (o200k: unless the character is a mark).
            if c & _O == 0 or (pattern == 2 and c & _UW):
                return -1
            e = _class_run(data, j + k, end, flags, _O)
            if pattern != 0:
                while e < end and (data[_u(e)] == 0x0A or data[_u(e)] == 0x0D or (pattern == 2 and data[_u(e)] == 0x2F)):
                    e += 1  # [\r\n]* (cl100k), [\r\n/]* (o200k)
            return e
    if pattern != 2:
        return _class_run(data, _two_byte_run(data, j + k, end, flags, _L) if k == 2 else j + k, end, flags, _L)
    if c & _UW == _W:
        # A small letter: A1 is its W run (U* matches nothing), then C.
        e = _class_run(data, _two_byte_run(data, j + k, end, flags, _W) if k == 2 else j + k, end, flags, _W)
        return e + _contraction_ci(data, e, end)
    if c & _UW == _U and j + k < end:
        # A capital (Lu, Lt) before a small letter (W, not U): U* is the capital alone, and A1
        # goes on with the W run from there (a fifth of Russian words start so).
        c1, k1 = _char_at(data, j + k, end, flags)
        if c1 & _UW == _W:
            e = _class_run(data, _two_byte_run(data, j + k, end, flags, _W) if k1 == 2 else j + k, end, flags, _W)
            return e + _contraction_ci(data, e, end)
    if c & _UW == _UW:
        # A run of characters that are both U and W (Lo, Lm, M: CJK, Hangul, Devanagari) that
        # no other U or W follows is A1 whole (U* gives back its last character to W+).
        e = j + k
        c = np.uint8(0)
        while e < end:
            if data[_u(e)] < 0x80:
                c = flags[data[_u(e)]]
                break
            c, k = _char_nonascii(data, e, end, flags)
            if c & _UW != _UW:
                break
            e += k
        if c & _UW == 0:
            return e + _contraction_ci(data, e, end)
    e, _ = _o200k_letters_from(data, j, end, flags)
    if e >= 0:
        e += _contraction_ci(data, e, end)
    return e


# cl100k over 3-byte characters (Devanagari and the other Indic scripts, with CJK and Hangul
# where they come among them) and single spaces: what ends a piece there depends only on the
# state below and the next character's kind (L, O), so a table says both, and a piece costs no
# branch to mispredict (the general path's per-piece decisions did: a Devanagari word is
# pieces of 1-3 letters cut at its vowel signs). States: 0 first character, 1 in an L run,
# 2 after a piece's first O (the prefix of a following L run), 3 in an O run. A space and the
# character after it are one step (a piece starts with the space). Each table is one uint64,
# a byte per state: the next state's byte offset (8 * state, so the next step shifts by it at
# once), | 1 if a piece ends before this step, | 2 to leave (a character of another kind).
# Tables by the character's class byte (L, O or neither), and the same after a space.


def _wide_table(rows):
    return sum((8 * nxt + cut) << (8 * st) for st, (nxt, cut) in enumerate(rows))


def _wide_tables():
    leave = _wide_table([(0, 2)] * 4)
    after_l = _wide_table([(1, 0), (1, 0), (1, 0), (1, 1)])  # the run goes on after a first O
    after_o = _wide_table([(2, 0), (2, 1), (3, 0), (3, 0)])  # O then O: an O run
    space_l = _wide_table([(1, 0), (1, 1), (1, 1), (1, 1)])  # " " + L run
    space_o = _wide_table([(3, 0), (3, 1), (3, 1), (3, 1)])  # " " + O run
    steps = np.full(512, leave, dtype=np.uint64)
    for c in range(256):
        if c & BIT_L:
            steps[c], steps[256 + c] = after_l, space_l
        elif c & BIT_O:
            steps[c], steps[256 + c] = after_o, space_o
    return steps


_WIDE_STEPS = _wide_tables()


@_kernel
def _cl100k_wide_run(data, i, end, flags, flat, n, cap):
    """Write the cl100k pieces from ``i`` (a 3-byte character, or a space before one) while the
    text is 3-byte letters and "other" (marks, punctuation) and single spaces; return (n, start
    of the next piece). Each step writes the current piece's end and the next one's start, and
    counts them only when the piece ends (room for it: ``lim``). Where another character comes,
    the current piece is ended here if that character cannot continue it, else left to the
    general path."""
    flat[_u(2 * n)] = i
    sh = np.uint64(0)
    p = i
    lim = min(end - 8, i + 3 * (cap - n - 2))
    while p <= lim:
        w = _load_u64(data, p)
        sp = (w & np.uint64(0xFF)) == np.uint64(0x20)
        w >>= np.uint64(8) * np.uint64(sp)
        cp = ((w & np.uint64(0x0F)) << np.uint64(12)) | ((w >> _M2) & np.uint64(0xFC0)) | ((w >> np.uint64(16)) & np.uint64(0x3F))
        ok = ((w & np.uint64(0xC0C0F0)) == np.uint64(0x8080E0)) & _valid3(np.int64(cp))
        row = np.uint64(flags[cp]) | (np.uint64(sp) << np.uint64(8))
        step = (_WIDE_STEPS[row if ok else np.uint64(0)] >> sh) & np.uint64(0xFF)  # class 0: leave
        if step & _M2:
            break
        flat[_u(2 * n + 1)] = p
        flat[_u(2 * n + 2)] = p
        n += np.int64(step & _M1)
        sh = step & np.uint64(0xF8)
        p += 3 + np.int64(sp)
    state = sh >> _M3
    if state >= 1 and n < cap:
        stop = True
        if p < end:
            c, _ = _char_at(data, p, end, flags)
            # an L run goes on with a letter, an O run with an O, a first O with either
            stop = c & _L == 0 if state == 1 else c & _O == 0 and (state == 3 or c & _L == 0)
        if stop:
            if state != 1:
                while p < end and (data[_u(p)] == 0x0A or data[_u(p)] == 0x0D):
                    p += 1  # [\r\n]*
            flat[_u(2 * n + 1)] = p
            return n + 1, p
    return n, flat[_u(2 * n)]


@_kernel
def _gpt2_piece(data, i, end, flags):
    """End of the gpt2/r50k piece that starts at byte ``i`` (any characters: the general path)."""
    b = data[_u(i)]
    e = -1
    if b == 0x27 and i + 1 < end:  # 's 't 're 've 'm 'll 'd
        b1 = data[_u(i + 1)]
        if b1 == 0x73 or b1 == 0x74 or b1 == 0x6D or b1 == 0x64:
            e = i + 2
        elif i + 2 < end:
            b2 = data[_u(i + 2)]
            if (b1 == 0x72 and b2 == 0x65) or (b1 == 0x76 and b2 == 0x65) or (b1 == 0x6C and b2 == 0x6C):
                e = i + 3
    if e < 0:
        j = i
        c, k = _char_at(data, i, end, flags)
        if b == 0x20 and i + 9 <= end and _ascii_letters8(data, i + 1, False):  # fast path
            j = i + 1
            c = _L
        elif b == 0x20 and i + 1 < end:  # " ?" before an L, N or O run
            c1, k1 = _char_at(data, i + 1, end, flags)
            if c1 & _NOT_SPACE:
                j = i + 1
                c = c1
                k = k1
        if c & _NOT_SPACE:  # the run of its class
            mask = c & _NOT_SPACE
            e = j + k
            if mask == _L:
                while e + 8 <= end:
                    m = _ascii_letters8(data, e, False)
                    e += m
                    if m < 8:
                        break
            e = _class_run(data, e, end, flags, mask)
        else:  # whitespace: \s+(?!\S) | \s+
            e, last, _ = _space_run(data, i, i + k, end, flags, -1)
            if e < end and last > i:
                e = last
    return e


@_kernel
def _cl100k_piece(data, i, end, flags):
    """End of the cl100k piece that starts at byte ``i`` (any characters: the general path)."""
    b = data[_u(i)]
    e = -1
    if b == 0x27:
        m = _contraction_ci(data, i, end)
        if m:
            e = i + m
    if e < 0:
        c, k = _char_at(data, i, end, flags)
        c1 = np.uint8(0)
        k1 = 0
        j = -1  # start of an L run, if the piece is one
        if b == 0x20 and i + 9 <= end and _ascii_letters8(data, i + 1, False):  # fast path
            j = i + 1
        elif c & _L:
            j = i + k
        elif c & _LNCRLF == 0 and i + k < end:
            c1, k1 = _char_at(data, i + k, end, flags)
            if c1 & _L:
                j = i + k + k1
        if j >= 0:  # [^\r\n\p{L}\p{N}]?+\p{L}++
            e = j
            while e + 8 <= end:
                m = _ascii_letters8(data, e, False)
                e += m
                if m < 8:
                    break
            e = _class_run(data, e, end, flags, _L)
        elif c & _N:  # \p{N}{1,3}+
            e = _digits_after(data, i + k, end, flags)
        elif c & _O or (b == 0x20 and c1 & _O):  # " ?[^\s\p{L}\p{N}]++[\r\n]*+"
            e = i + k if c & _O else i + 1 + k1
            e = _class_run(data, e, end, flags, _O)
            while e < end and (data[_u(e)] == 0x0A or data[_u(e)] == 0x0D):
                e += 1
        else:  # whitespace: \s++$ | \s*[\r\n] | \s+(?!\S) | \s
            e, last, crlf_end = _space_run(data, i, i + k, end, flags, i + 1 if c & _CRLF else -1)
            if e < end:
                if crlf_end > 0:
                    e = crlf_end
                elif last > i:
                    e = last
    return e


@_kernel
def _split_gpt2(data, docs, flags, out, n, d, i):
    ndocs = docs.shape[0]
    flat = out.reshape(-1)
    cap = out.shape[0]
    lo = up = dg = ws = hi = nl = sp = sl = ap = valid = starts = bad = _M0
    while d < ndocs:
        end = docs[d, 1]
        wb = np.int64(0)
        fast = np.bool_(False)  # not the literal False, for which the window helper would compile too
        while i < end:
            if n == cap:
                return n, d, i
            e = _nonascii_piece(data, i, end, flags, 0)
            if e >= 0:
                n = _put_piece(flat, n, i, e)
                i = e
                continue
            off = i - wb
            if not fast or off >= 32:
                wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap, valid = _slide_window(
                    data, i, end, wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap
                )
                off = i - wb
                let = (lo | up) & valid
                om = ~(let | dg | ws | hi | ~valid)  # ASCII "other"
                starts, bad = _plain_gpt2(dg, ws, sp, ap, om, let, valid)
            # (a ' that starts a piece may start a contraction: the per-piece code decides)
            if fast and n + 64 <= cap and ((bad | ap) >> _u(off)) & _M1 == _M0:
                m = _plain_starts_after(starts, bad, off, _M0)
                if m:
                    n, i = _write_starts(flat, n, i, wb, m)
                    continue
            e = _gpt2_piece(data, i, end, flags)
            n = _put_piece(flat, n, i, e)
            i = e
        d += 1
        if d < ndocs:
            i = docs[d, 0]
    return n, d, i


@_inline
def _cl100k_masks(lo, up, dg, ws, hi, nl, sp, ap, valid, p3):
    """The cl100k kernel's masks of a window: letters, bytes the masks cannot decide (``stop``:
    non-ASCII but the window's 3-byte letters and punctuation, and past the document),
    "other" (ASCII, and the 3-byte punctuation whose first bytes are ``p3``), the first byte of
    a character (ASCII or such punctuation) that is a letter run's prefix (``pl``), and the
    plain text's starts and bad bytes."""
    let = (lo | up) & valid
    stop = (hi & ~(lo | p3 | (p3 << _M1) | (p3 << _M2))) | ~valid
    om = ~(let | dg | ws | stop)
    starts, bad = _plain_cl100k(dg, nl, sp, ap, om, let, valid, p3)
    pl = (~(let | dg | nl | stop) & (let >> _M1)) | (p3 & (let >> _M3))  # not a CR, LF, letter or digit
    return let, stop, om, pl, starts, bad


@_kernel
def _split_cl100k(data, docs, flags, out, n, d, i):
    ndocs = docs.shape[0]
    flat = out.reshape(-1)
    cap = out.shape[0]
    lo = up = dg = ws = hi = nl = sp = sl = ap = valid = starts = bad = om = let = stop = pl = _M0
    while d < ndocs:
        end = docs[d, 1]
        wb = np.int64(0)
        fast = np.bool_(False)  # not the literal False, for which the window helper would compile too
        while i < end:
            if n == cap:
                return n, d, i
            e = _nonascii_piece(data, i, end, flags, 1)
            if e >= 0:
                n = _put_piece(flat, n, i, e)
                i = e
                continue
            if e == -2:  # an Indic letter or sign (U+0900-0FFF) first: the table's run
                n, i = _cl100k_wide_run(data, i, end, flags, flat, n, cap)
                if n == cap or i == end:
                    continue
                e = _cl100k_piece(data, i, end, flags)
                n = _put_piece(flat, n, i, e)
                i = e
                continue
            letters3 = e == -3  # a Hangul word: the masks take its letters as letters
            off = i - wb
            if not letters3 and (not fast or off >= 64) and i + 8 <= end and (_load_u64(data, i) & _HI) != _M0:
                # Far past the window, with non-ASCII text within 8 bytes (a full stop between
                # Cyrillic words): this piece alone by the general path, not a new window.
                e = _cl100k_piece(data, i, end, flags)
                n = _put_piece(flat, n, i, e)
                i = e
                continue
            moved, wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap, p3, valid = _window_with_letters3(
                data, i, end, wb, fast, letters3, lo, up, dg, ws, hi, nl, sp, sl, ap, valid
            )
            if moved:
                off = i - wb
                if p3 == _M0:  # the same masks with p3 a constant, which LLVM folds: ASCII text's
                    let, stop, om, pl, starts, bad = _cl100k_masks(lo, up, dg, ws, hi, nl, sp, ap, valid, _M0)
                else:
                    let, stop, om, pl, starts, bad = _cl100k_masks(lo, up, dg, ws, hi, nl, sp, ap, valid, p3)
            # (a ' that starts a piece may start a contraction: the per-piece code decides)
            if fast and n + 64 <= cap and ((bad | ap) >> _u(off)) & _M1 == _M0:
                # i's "other" before a letter is that letter's P
                m = _plain_starts_after(starts, bad, off, _absorbed_letter(om, hi, let, off))
                if m:
                    n, i = _write_starts(flat, n, i, wb, m)
                    continue
            e = np.int64(-1)
            if fast:  # one piece from the masks (ASCII), else the general path
                uoff = _u(off)
                xstop = stop >> uoff
                if xstop & _M1 == _M0 and (ap >> uoff) & _M1 == _M0:  # not a contraction's quote
                    if (let >> uoff) & _M1:
                        e = 1 + np.int64(trailing_zeros(~let >> (uoff + _M1)))
                    elif (pl >> uoff) & _M1:  # after a prefix of 1 or 3 bytes
                        e = np.int64(trailing_zeros(let >> uoff))
                        e += 1 + np.int64(trailing_zeros(~let >> (uoff + _u(e) + _M1)))
                    if e > 0:  # [^\r\n\p{L}\p{N}]?+\p{L}++
                        if (xstop >> _u(e)) & _M1:
                            if uoff + _u(e) >= 62:  # the window's end (or a letter cut by it)
                                e = _letter_run_on(data, i + e, end, flags, False) - i
                            else:
                                e = -1
                    elif (dg >> uoff) & _M1:  # \p{N}{1,3}+
                        e = _digits_from_masks(dg, valid, xstop, uoff)
                    elif _other_starts(om, sp, uoff):  # " ?O++[\r\n]*+"
                        e = _other_from_masks(om, nl, valid, xstop, uoff)
                    elif (xstop >> _M1) & _M1 == _M0:  # whitespace: \s++$ | \s*[\r\n] | \s+(?!\S) | \s
                        e = _space_from_masks(ws, nl, valid, xstop, uoff, end - i, True)
            if e < 0:
                e = _cl100k_piece(data, i, end, flags)
            else:
                e += i
            n = _put_piece(flat, n, i, e)
            i = e
        d += 1
        if d < ndocs:
            i = docs[d, 0]
    return n, d, i


@_kernel
def _o200k_letters_from(data, s, end, flags):
    """Ends of A1 (``U*W+``) and A2 (``U+W*``) matched from ``s`` (-1 where it fails)."""
    p = s
    last_w_end = -1
    while p < end:
        c, k = _char_at(data, p, end, flags)
        if c & _U == 0:
            break
        p += k
        if c & _W:
            last_w_end = p
    u_end = p
    if u_end < end:
        c, k = _char_at(data, u_end, end, flags)
        if c & _W:
            w_end = _class_run(data, _two_byte_run(data, u_end + k, end, flags, _W) if k == 2 else u_end + k, end, flags, _W)
            return w_end, (w_end if u_end > s else -1)
    return last_w_end, (u_end if u_end > s else -1)


@_kernel
def _o200k_piece(data, i, end, flags):
    """End of the o200k piece that starts at byte ``i`` (any characters: the general path)."""
    b = data[_u(i)]
    e = -1
    c, k = _char_at(data, i, end, flags)
    c1 = np.uint8(0)
    k1 = 0
    prefix = c & _LNCRLF == 0 and i + k < end  # P = [^\r\n\p{L}\p{N}] may start A1/A2
    if b == 0x20 and i + 9 <= end and _ascii_letters8(data, i + 1, True):
        c1 = _W  # fast path: " " + a-z, A1 is " " + the W run
        k1 = 1
    elif prefix:
        c1, k1 = _char_at(data, i + k, end, flags)
    # Fast paths for ASCII-like starts; anything else takes the general path.
    # Ll at the start: U* matches nothing and A1 is the W run. ASCII capitals: the U
    # run is ASCII capitals; then a-z means A1 (W run from there), an ASCII non-letter
    # or the end means A1 fails and A2 ends there (unless a mark at i could start A1
    # without the prefix).
    j = -1  # start of A1's W run, when known
    s0 = -1  # start of an ASCII capital run
    if prefix and c1 & _UW:
        if c1 & _U == 0:
            j = i + k + k1
        elif c & _UW == 0 and data[_u(i + k)] >= 0x41 and data[_u(i + k)] <= 0x5A:
            s0 = i + k
    elif c & _W and c & _U == 0 and c & _L:
        j = i + k
    elif b >= 0x41 and b <= 0x5A:
        s0 = i
    if s0 >= 0:
        p = s0 + 1
        while p < end and data[_u(p)] >= 0x41 and data[_u(p)] <= 0x5A:
            p += 1
        if p < end and data[_u(p)] >= 0x61 and data[_u(p)] <= 0x7A:
            j = p
        elif p >= end or data[_u(p)] < 0x80:
            e = p
    if j >= 0:
        e = j
        while e + 8 <= end:
            m = _ascii_letters8(data, e, True)
            e += m
            if m < 8:
                break
        e = _class_run(data, e, end, flags, _W)
    elif e < 0 and ((prefix and c1 & _UW) or c & _UW):
        # A1 with P, A1 without, A2 with, A2 without (regex's order).
        a1_with = -1
        a2_with = -1
        if prefix and c1 & _UW:
            a1_with, a2_with = _o200k_letters_from(data, i + k, end, flags)
        e = a1_with
        if e < 0:
            a2_without = -1
            if c & _UW:
                e, a2_without = _o200k_letters_from(data, i, end, flags)
            if e < 0:
                e = a2_with if a2_with >= 0 else a2_without
    if e >= 0:
        e += _contraction_ci(data, e, end)
    elif c & _N:  # \p{N}{1,3}
        e = _digits_after(data, i + k, end, flags)
    elif c & _O or (b == 0x20 and c1 & _O):  # " ?[^\s\p{L}\p{N}]+[\r\n/]*"
        e = i + k if c & _O else i + 1 + k1
        e = _class_run(data, e, end, flags, _O)
        while e < end and (data[_u(e)] == 0x0A or data[_u(e)] == 0x0D or data[_u(e)] == 0x2F):
            e += 1
    else:  # whitespace: \s*[\r\n]+ | \s+(?!\S) | \s+
        e, last, crlf_end = _space_run(data, i, i + k, end, flags, i + 1 if c & _CRLF else -1)
        if crlf_end > 0:
            e = crlf_end
        elif e < end and last > i:
            e = last
    return e


@_inline
def _o200k_masks(lo, up, dg, ws, hi, nl, sp, sl, ap, valid, p3):
    """The o200k kernel's masks of a window, as ``_cl100k_masks``, and ``bl``: where a letter
    piece (ASCII: U* then W*) ends, at a non-letter or a capital after a small letter. CJK,
    kana and Hangul letters are both U and W; as small letters (W) they split the same,
    except before a capital (U* may take both: "한Ab" is one piece), which is left to the
    general path."""
    let = (lo | up) & valid
    after3 = up & ((lo & hi) << _M1)
    stop = (hi & ~(lo | p3 | (p3 << _M1) | (p3 << _M2))) | ~valid | after3
    bl = ~let | (up & (lo << _M1))
    pl = (~(let | dg | nl | stop) & (let >> _M1)) | (p3 & (let >> _M3))  # P before a letter: A1/A2 with P
    om = ~(let | dg | ws | stop)
    starts, bad = _plain_o200k(lo, up, dg, nl, sp, sl, ap, om, let, valid, p3)
    return let, stop, om, pl, bl, starts, bad | after3


@_kernel
def _split_o200k(data, docs, flags, out, n, d, i):
    ndocs = docs.shape[0]
    flat = out.reshape(-1)
    cap = out.shape[0]
    lo = up = dg = ws = hi = nl = sp = sl = ap = valid = let = bl = pl = om = stop = starts = bad = _M0
    while d < ndocs:
        end = docs[d, 1]
        wb = np.int64(0)
        fast = np.bool_(False)  # not the literal False, for which the window helper would compile too
        while i < end:
            if n == cap:
                return n, d, i
            e = _nonascii_piece(data, i, end, flags, 2)
            letters3 = e == -3  # a Hangul word: the masks take its letters as letters
            if e >= 0:
                n = _put_piece(flat, n, i, e)
                i = e
                continue
            e = np.int64(-1)
            off = i - wb
            if not letters3 and (not fast or off >= 64) and i + 8 <= end and (_load_u64(data, i) & _HI) != _M0:
                # Far past the window, with non-ASCII text within 8 bytes (a full stop between
                # Cyrillic words): this piece alone by the general path, not a new window.
                e = _o200k_piece(data, i, end, flags)
                n = _put_piece(flat, n, i, e)
                i = e
                continue
            moved, wb, fast, lo, up, dg, ws, hi, nl, sp, sl, ap, p3, valid = _window_with_letters3(
                data, i, end, wb, fast, letters3, lo, up, dg, ws, hi, nl, sp, sl, ap, valid
            )
            if moved:
                off = i - wb
                if p3 == _M0:  # the same masks with p3 a constant, which LLVM folds: ASCII text's
                    let, stop, om, pl, bl, starts, bad = _o200k_masks(lo, up, dg, ws, hi, nl, sp, sl, ap, valid, _M0)
                else:
                    let, stop, om, pl, bl, starts, bad = _o200k_masks(lo, up, dg, ws, hi, nl, sp, sl, ap, valid, p3)
            if fast and n + 64 <= cap and (bad >> _u(off)) & _M1 == _M0:
                # i's "other" before a letter is that letter's P
                m = _plain_starts_after(starts, bad, off, _absorbed_letter(om, hi, let, off))
                if m:
                    n, i = _write_starts(flat, n, i, wb, m)
                    continue
            if fast:
                uoff = _u(off)
                xstop = stop >> uoff
                if xstop & _M1 == _M0:
                    if (let >> uoff) & _M1:
                        e = 1 + np.int64(trailing_zeros(bl >> (uoff + _M1)))
                    elif (pl >> uoff) & _M1:  # after a prefix of 1 or 3 bytes
                        e = np.int64(trailing_zeros(let >> uoff))
                        e += 1 + np.int64(trailing_zeros(bl >> (uoff + _u(e) + _M1)))
                    if e > 0:  # A1/A2 (ASCII letters), then C
                        if (xstop >> _u(e)) & _M1:
                            if uoff + _u(e) >= 62 and (lo >> (uoff + _u(e) - _M1)) & _M1:
                                # W+ goes on past the window's end; a capital after it is
                                # left to the general path (U* may have taken it)
                                e = _letter_run_on(data, i + e, end, flags, True)
                                if e < end and _char_at(data, e, end, flags)[0] & _U:
                                    e = -1
                                else:
                                    e += _contraction_ci(data, e, end) - i
                            else:
                                e = -1
                        elif data[_u(i + e)] == 0x27:
                            e += _contraction_ci(data, i + e, end)
                    elif (dg >> uoff) & _M1:  # A3 \p{N}{1,3}
                        e = _digits_from_masks(dg, valid, xstop, uoff)
                    elif _other_starts(om, sp, uoff):  # A4 " ?" + other run + [\r\n/]*
                        e = _other_from_masks(om, nl | sl, valid, xstop, uoff)
                    elif (xstop >> _M1) & _M1 == _M0:  # whitespace: A5, A6, A7
                        e = _space_from_masks(ws, nl, valid, xstop, uoff, end - i, False)
            if e < 0:
                e = _o200k_piece(data, i, end, flags)
            else:
                e += i
            n = _put_piece(flat, n, i, e)
            i = e
        d += 1
        if d < ndocs:
            i = docs[d, 0]
    return n, d, i


@_jit
def _move_rows_down(out, dst, src, n):
    """``out[dst:dst + n] = out[src:src + n]`` for ``dst <= src`` (overlap allowed; no temporary)."""
    for r in range(n):
        out[dst + r, 0] = out[src + r, 0]
        out[dst + r, 1] = out[src + r, 1]


@_inline
def is_cut(data, p):
    """Whether every named pattern starts a piece at p > 0: a U+0020 after an ASCII letter
    (see ``_cut_points``)."""
    c = data[p - 1] | 0x20
    return data[p] == 0x20 and c >= 0x61 and c <= 0x7A


@_jit
def last_cut(data, start, end):
    """The last p in (start, end) where :func:`is_cut`, or -1."""
    p = end - 1
    while p > start:
        if is_cut(data, p):
            return p
        p -= 1
    return -1


@_jit
def _cut_points(data, start, end, step, window):
    """Positions in (start, end) where every named pattern is sure to end a piece.

    After an ASCII letter, a U+0020 always starts a new piece in all four patterns (no
    alternative runs from a letter into a space, and none looks behind), so a document may be
    cut there and its halves scanned independently. One cut is looked for every ``step``
    bytes, within ``window`` bytes.
    """
    cuts = np.empty(max(0, (end - start) // step) + 1, dtype=np.int64)
    n = 0
    target = start + step
    while target < end:
        stop = min(end, target + window)
        p = target
        while p < stop:
            if is_cut(data, p):
                cuts[n] = p
                n += 1
                break
            p += 1
        target = max(p, target) + step
    return cuts[:n]


# The scanner of each named pattern, by number: kernels select one by its number (scan_into).
SCANNER_IDS = {"gpt2": 0, "r50k": 0, "cl100k": 1, "o200k": 2}
SCANNER_KINDS = ("gpt2", "cl100k", "o200k")  # by number
_KERNELS = {name: (_split_gpt2, _split_cl100k, _split_o200k)[i] for name, i in SCANNER_IDS.items()}
SCANNER_NAMES = tuple(_KERNELS)


@njit(inline="always")
def scan_into(scanner, data, docs, flags, out, d, i):
    """Run scanner number ``scanner`` (``SCANNER_IDS``) from byte ``i`` of document ``d``,
    writing pieces into ``out`` from its first row: ``(n, d, i)`` as the kernels return them
    (``d == len(docs)``: done; else ``out`` is full and the scan resumes at ``d``, ``i``). For
    kernels that scan and encode a batch of pieces at a time.

    ``scanner`` must be a constant of the calling kernel (a closure's cell): Numba then
    prunes the other branches before typing, and the caller compiles only that scanner
    (each is a large compile: its helpers are inlined into it)."""
    zero = np.int64(0)  # not the literal 0: the kernels keep the one signature Python calls
    if scanner == 0:
        return _split_gpt2(data, docs, flags, out, zero, d, i)
    if scanner == 1:
        return _split_cl100k(data, docs, flags, out, zero, d, i)
    return _split_o200k(data, docs, flags, out, zero, d, i)


# Below this many bytes a call stays on the calling thread whatever num_threads says.
_PARALLEL_MIN_BYTES = 1 << 20


def has_scanner(name: str) -> bool:
    """True if the named pattern has a Numba scanner."""
    return name in _KERNELS


def _initial_capacity(nbytes: int) -> int:
    # Real text averages 4-5 bytes a piece; a kernel that fills its output returns early and
    # is resumed on a bigger one.
    return nbytes // 3 + 64


def _run_kernel(kernel, data, docs, flags, out):
    """Scan the (non-empty) ``docs`` into ``out``, growing it if it fills up.

    Returns ``(array, n)``: ``array[:n]`` are the pieces; ``array`` is ``out`` unless it grew.
    """
    n, d, i = kernel(data, docs, flags, out, 0, 0, docs[0, 0])
    while d < len(docs):
        left = int(docs[d, 1] - i) + int((docs[d + 1 :, 1] - docs[d + 1 :, 0]).sum())
        grown = np.empty((n + left + 1, 2), dtype=np.int64)  # every piece has >= 1 byte
        grown[:n] = out[:n]
        out = grown
        n, d, i = kernel(data, docs, flags, out, n, d, i)
    return out, n


def _scan(kernel, data, docs, flags) -> np.ndarray:
    """Run ``kernel`` over ``docs`` on this thread; (n, 2) int64 spans."""
    if not len(docs):
        return np.zeros((0, 2), dtype=np.int64)
    nbytes = int((docs[:, 1] - docs[:, 0]).sum())
    # The output is allocated by NumPy, not inside the kernel: NumPy asks the kernel for huge
    # pages on big arrays: first touching them takes a fault per 2 MiB, not per 4 KiB.
    out, n = _run_kernel(kernel, data, docs, flags, np.empty((_initial_capacity(nbytes), 2), dtype=np.int64))
    return out[:n]


def _scan_parallel(kernel, data, groups, flags) -> np.ndarray:
    """Scan each group of documents on its own thread (the first on this one), into one array.

    Every group writes into its own slice of a shared output; the slices are then moved
    together, which copies less than concatenating separate arrays.
    """
    caps = [_initial_capacity(int((g[:, 1] - g[:, 0]).sum())) for g in groups]
    offsets = np.concatenate(([0], np.cumsum(caps)))
    out = np.empty((int(offsets[-1]), 2), dtype=np.int64)
    views = [out[offsets[k] : offsets[k + 1]] for k in range(len(groups))]
    # A pool per call: starting its threads is small next to a scan of 1 MiB or more, and callers on
    # several threads never share (or shut down) one.
    with ThreadPoolExecutor(max_workers=len(groups) - 1, thread_name_prefix="numtok-pretok") as pool:
        futures = [pool.submit(_run_kernel, kernel, data, groups[k], flags, views[k]) for k in range(1, len(groups))]
        results = [_run_kernel(kernel, data, groups[0], flags, views[0])] + [f.result() for f in futures]
    if any(array is not view for (array, _), view in zip(results, views)):
        return np.concatenate([array[:n] for array, n in results])
    pos = results[0][1]
    for k in range(1, len(groups)):
        n = results[k][1]
        _move_rows_down(out, pos, int(offsets[k]), n)
        pos += n
    return out[:pos]


def _work_ranges(data: np.ndarray, docs: np.ndarray, parts: int) -> list[np.ndarray]:
    """Split the document list into ``parts`` runs of about equal bytes, cutting big documents."""
    lengths = docs[:, 1] - docs[:, 0]
    total = int(lengths.sum())
    share = max(1, total // parts)
    big = np.flatnonzero(lengths > share)
    if len(big):
        pieces = []
        prev = 0
        for k in big.tolist():
            pieces.append(docs[prev:k])
            s, e = int(docs[k, 0]), int(docs[k, 1])
            cuts = _cut_points(data, s, e, max(1, share // 2), 1 << 16)
            bounds = np.concatenate(([s], cuts, [e]))
            pieces.append(np.stack([bounds[:-1], bounds[1:]], axis=1))
            prev = k + 1
        pieces.append(docs[prev:])
        docs = np.ascontiguousarray(np.concatenate(pieces), dtype=np.int64)
        lengths = docs[:, 1] - docs[:, 0]
    ends = np.cumsum(lengths)
    splits = np.searchsorted(ends, share * np.arange(1, parts), side="left") + 1
    groups = np.split(docs, np.unique(np.clip(splits, 0, len(docs))))
    return [g for g in groups if len(g)]


def split_named(data: np.ndarray, docs: np.ndarray, name: str, num_threads: int | None = None) -> np.ndarray:
    """Pieces of the documents ``docs`` of ``data`` for the named pattern (checked inputs).

    ``data`` is C-contiguous uint8, ``docs`` C-contiguous int64 (m, 2) within ``data``. With
    ``num_threads=1`` (or under 1 MiB of text) the kernel runs on the calling thread; otherwise
    the documents, big ones cut where every pattern ends a piece, are shared among that many
    threads (default: the cores this process may use).
    """
    kernel = _KERNELS[name]
    flags = class_table()
    data = read_only_view(data)  # one array type for every caller: each scanner compiles once
    threads = usable_cores() if num_threads is None else int(num_threads)
    if threads < 1:
        raise ValueError(f"num_threads must be >= 1, not {num_threads}")
    total = int((docs[:, 1] - docs[:, 0]).sum()) if len(docs) else 0
    if threads == 1 or total < _PARALLEL_MIN_BYTES:
        return _scan(kernel, data, docs, flags)
    groups = _work_ranges(data, docs, threads)
    if len(groups) <= 1:
        return _scan(kernel, data, docs, flags)
    return _scan_parallel(kernel, data, groups, flags)
