"""Low-level Numba intrinsics shared by the kernels.

Each has a pure-Python twin that computes the same result, used instead when the JIT is off
(``NUMBA_DISABLE_JIT=1``: kernels run as plain Python, to be stepped through or covered):
see :func:`python_twin`. The twins read and write the same memory the intrinsic does (through
``ctypes`` at the array's address), so a kernel that relies on padding past an array's end
behaves the same.
"""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np
from llvmlite import binding, ir
from numba import njit, types
from numba.core import cgutils, config
from numba.cpython.unsafe import numbers as _unsafe_numbers
from numba.extending import intrinsic

from .jit import INLINE

HIGH_BITS = np.uint64(0x8080808080808080)  # the top bit of each of 8 bytes: set for non-ASCII ones


def python_twin(twin):
    """Decorator over an ``@intrinsic`` (or a kernel-only ``njit`` helper): the compiled
    function, or ``twin`` when the JIT is off, where an intrinsic cannot be called."""

    def choose(compiled):
        if config.DISABLE_JIT:
            twin.__doc__ = twin.__doc__ or getattr(compiled, "__doc__", None)
            return twin
        return compiled

    return choose


# ---------------------------------------------------------------------------------------------
# The twins. They take NumPy arrays and integers and return NumPy scalars of the type the
# intrinsic returns (arithmetic on them then wraps as the compiled kernel's does).

def _address(arr, idx) -> int:
    return int(arr.ctypes.data) + int(idx) * arr.itemsize


def _read(address: int, n: int, dtype=np.uint8) -> np.ndarray:
    """A copy of ``n`` elements of ``dtype`` at memory ``address``."""
    return np.frombuffer(ctypes.string_at(address, n * np.dtype(dtype).itemsize), dtype)


def _mask(flags) -> int:
    """Bit k set where ``flags[k]`` is true."""
    return int.from_bytes(np.packbits(np.asarray(flags, bool), bitorder="little").tobytes(), "little")


def _py_prefetch(arr, idx):
    """Nothing: a prefetch changes no result."""


def _py_load_u64(arr, idx):
    return np.uint64(ctypes.c_uint64.from_address(_address(arr, idx)).value)


def _py_store_u64(arr, idx, value):
    ctypes.c_uint64.from_address(_address(arr, idx)).value = int(value) & 0xFFFFFFFFFFFFFFFF


def _py_store_u32(arr, idx, value):
    ctypes.c_uint32.from_address(_address(arr, idx)).value = int(value) & 0xFFFFFFFF


def _py_release_pages(arr, idx):
    if not sys.platform.startswith("linux"):
        return
    page = mmap.PAGESIZE
    first = (_address(arr, idx) + page - 1) & -page
    end = _address(arr, arr.shape[0]) & -page
    if end > first:
        madvise = ctypes.CDLL(None).madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        madvise(first, end - first, mmap.MADV_DONTNEED)


def _str_header(text: str) -> int:
    """Offset of the code units in a compact str object like ``text`` (as ``pystr._probe``
    measures it: a fresh str's size less its units and terminating NUL)."""
    if text.isascii():
        fresh = "".join(["ab", "c"])
        return sys.getsizeof(fresh) - len(fresh) - 1
    fresh = "".join(["ab", "\xe9"])
    return sys.getsizeof(fresh) - len(fresh) - 1


def _py_str_kind(s):
    top = max(map(ord, s), default=0)
    return 1 if top < 0x100 else 2 if top < 0x10000 else 4


def _py_str_is_ascii(s):
    return s.isascii()


def _py_str_data_address(s):
    return np.int64(id(s) + _str_header(s))


def _py_address_array(address, n, dtype):
    n = int(n)
    if n == 0:
        return np.empty(0, dtype)
    return np.frombuffer((ctypes.c_char * (n * np.dtype(dtype).itemsize)).from_address(int(address)), dtype)


def _py_address_view(address, n, dtype):
    view = _py_address_array(address, n, dtype)
    view.flags.writeable = False
    return view


def _py_address_rows(address, rows, cols, dtype):
    return _py_address_array(address, int(rows) * int(cols), dtype).reshape(int(rows), int(cols))


def _py_read_only(arr):
    return read_only_view(arr)


def _py_trailing_zeros(x):
    kind = x.dtype.type if isinstance(x, np.generic) else np.int64
    width = 8 * np.dtype(kind).itemsize
    v = int(x) & ((1 << width) - 1)
    return kind(width if v == 0 else (v & -v).bit_length() - 1)


def _py_leading_zeros(x):
    kind = x.dtype.type if isinstance(x, np.generic) else np.int64
    width = 8 * np.dtype(kind).itemsize
    return kind(width - (int(x) & ((1 << width) - 1)).bit_length())


trailing_zeros = python_twin(_py_trailing_zeros)(_unsafe_numbers.trailing_zeros)
leading_zeros = python_twin(_py_leading_zeros)(_unsafe_numbers.leading_zeros)


@python_twin(_py_prefetch)
@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the CPU to fetch ``arr[idx]`` into cache (no effect on results, no bounds check).

    Worth it where a loop chases indices into big arrays: the merge loop reads a word's row,
    then its symbols, for every posting; prefetching a few postings ahead overlaps those misses.
    """
    if not isinstance(arr, types.Array):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", fnty=fnty)
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@python_twin(_py_load_u64)
@intrinsic
def load_u64(typingctx, arr, idx):
    """The 8 bytes that start at element ``idx`` of a 1-D C array, as a little-endian uint64
    (unaligned load, no checks): 8, 4 or 2 elements of 1, 2 or 4 bytes."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"):
        return None
    sig = types.uint64(arr, idx)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@python_twin(_py_store_u64)
@intrinsic
def store_u64(typingctx, arr, idx, value):
    """Store the 8 bytes of the integer ``value`` at element ``idx`` of a 1-D C array,
    little-endian (unaligned store, no checks): two int32 ids packed in one word are written
    with one store."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C" and isinstance(value, types.Integer) and value.bitwidth == 64):
        return None
    sig = types.void(arr, idx, value)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(64).as_pointer())
        builder.store(args[2], ptr, align=1)
        return context.get_dummy_value()

    return sig, codegen


@python_twin(_py_store_u32)
@intrinsic
def store_u32(typingctx, arr, idx, value):
    """Store the low 4 bytes of the integer ``value`` at element ``idx`` of a 1-D C uint8
    array, little-endian (unaligned store, no checks): how a character's whole UTF-8 (1 to 4
    bytes) is written at once; bytes past its length are overwritten by the next one."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C" and arr.dtype == types.uint8):
        return None
    if not isinstance(value, types.Integer):
        return None
    sig = types.void(arr, idx, value)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(32).as_pointer())
        v = args[2]
        v = builder.trunc(v, ir.IntType(32)) if v.type.width > 32 else builder.zext(v, ir.IntType(32)) if v.type.width < 32 else v
        builder.store(v, ptr, align=1)
        return context.get_dummy_value()

    return sig, codegen


@python_twin(_py_release_pages)
@intrinsic
def release_pages(typingctx, arr, idx):
    """Give the memory pages wholly inside ``arr[idx:]`` back to the system (Linux
    ``madvise(MADV_DONTNEED)``; elsewhere nothing): their contents are lost, and a page is
    mapped again, zero-filled, when next written. For an array that keeps its length but whose
    tail will not be read before it is written again: a compacted pool that would otherwise
    have to be copied into a smaller one, two arrays alive at once."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C" and isinstance(idx, types.Integer)):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        if not sys.platform.startswith("linux"):
            return context.get_dummy_value()
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i64 = ir.IntType(64)
        page = ir.Constant(i64, mmap.PAGESIZE)
        first = builder.ptrtoint(builder.gep(ary.data, [args[1]]), i64)
        first = builder.and_(builder.add(first, ir.Constant(i64, mmap.PAGESIZE - 1)), builder.neg(page))
        end = builder.ptrtoint(builder.gep(ary.data, [cgutils.unpack_tuple(builder, ary.shape, 1)[0]]), i64)
        end = builder.and_(end, builder.neg(page))
        with builder.if_then(builder.icmp_unsigned(">", end, first)):
            fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(8).as_pointer(), i64, ir.IntType(32)])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
            builder.call(fn, [builder.inttoptr(first, ir.IntType(8).as_pointer()), builder.sub(end, first), ir.Constant(ir.IntType(32), mmap.MADV_DONTNEED)])
        return context.get_dummy_value()

    return sig, codegen


@python_twin(_py_str_data_address)
@intrinsic
def str_data_address(typingctx, s):
    """The address of a str's code units (``s._kind`` bytes each: 1, 2 or 4), in CPython's
    own buffer; read them with :func:`address_view` while the str is alive."""
    if not isinstance(s, types.UnicodeType):
        return None
    sig = types.int64(s)

    def codegen(context, builder, signature, args):
        string = cgutils.create_struct_proxy(signature.args[0])(context, builder, value=args[0])
        return builder.ptrtoint(string.data, ir.IntType(64))

    return sig, codegen


@python_twin(_py_str_kind)
@njit(**INLINE)
def str_kind(s):
    """Bytes per code unit of a str (1, 2 or 4)."""
    return s._kind


@python_twin(_py_str_is_ascii)
@njit(**INLINE)
def str_is_ascii(s):
    """Whether a str is all ASCII."""
    return s._is_ascii


def _address_array(address, dims, dtype, readonly):
    """Typing and code of an array of ``dtype`` over the memory at ``address``, C-contiguous,
    of the shape the integers ``dims`` give (no copy, no checks, no owner)."""
    if not (isinstance(address, types.Integer) and all(isinstance(d, types.Integer) for d in dims) and isinstance(dtype, types.NumberClass)):
        return None
    unit = dtype.instance_type
    arrty = types.Array(unit, len(dims), "C", readonly=readonly)
    sig = arrty(address, *dims, dtype)

    def codegen(context, builder, signature, args):
        from numba.np.arrayobj import make_array, populate_array

        ary = make_array(arrty)(context, builder)
        unit_type = context.get_data_type(unit)
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(unit_type))
        data = builder.inttoptr(args[0], unit_type.as_pointer())
        shape = [context.cast(builder, args[1 + i], signature.args[1 + i], types.intp) for i in range(len(dims))]
        strides = [itemsize]
        for size in reversed(shape[1:]):
            strides.insert(0, builder.mul(strides[0], size))
        populate_array(ary, data=data, shape=shape, strides=strides, itemsize=itemsize, meminfo=None)
        return ary._getvalue()

    return sig, codegen


@python_twin(_py_address_view)
@intrinsic
def address_view(typingctx, address, n, dtype):
    """The ``n`` elements of ``dtype`` at memory ``address`` as a read-only 1-D array (no
    copy, no checks): how kernels read a str's buffer (``str_data_address``) or objects whose
    address Python gave them (``pystr``). Valid only while the owner of that memory keeps it
    alive and unchanged."""
    return _address_array(address, (n,), dtype, True)


@python_twin(_py_address_array)
@intrinsic
def address_array(typingctx, address, n, dtype):
    """:func:`address_view`, writable: an array whose address Python passed as an int (a
    kernel called with ints only is entered without typing or unboxing arrays)."""
    return _address_array(address, (n,), dtype, False)


@python_twin(_py_address_rows)
@intrinsic
def address_rows(typingctx, address, rows, cols, dtype):
    """:func:`address_array` as a C-contiguous ``(rows, cols)`` array (a reshape would call
    into Numba's helper library on every call)."""
    return _address_array(address, (rows, cols), dtype, False)


@python_twin(_py_read_only)
@intrinsic
def read_only(typingctx, arr):
    """``arr`` typed as a read-only array: the same memory, no copy. Numba compiles a kernel
    once per argument type, and read-only is a type of its own; kernels that only read text
    (the scanners, the word counter) take it read-only from every caller, so that an encoder
    kernel's call does not compile another specialisation of a scanner (a large compile)."""
    if not isinstance(arr, types.Array):
        return None
    ro = arr.copy(readonly=True)

    def codegen(context, builder, signature, args):
        from numba.core.imputils import impl_ret_borrowed

        return impl_ret_borrowed(context, builder, ro, args[0])

    return ro(arr), codegen


def read_only_view(data: np.ndarray) -> np.ndarray:
    """``data``, or a read-only view of it (no copy): what Python callers of the kernels that
    ``read_only`` is for pass them, whether the text came as bytes, Arrow memory or a
    writable buffer."""
    if not data.flags.writeable:
        return data
    view = data.view()
    view.flags.writeable = False
    return view


def _ascii_class_masks(width):
    def typer(typingctx, arr, idx):
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C" and arr.dtype == types.uint8):
            return None
        sig = types.UniTuple(types.uint64, 9)(arr, idx)

        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            vector = ir.VectorType(ir.IntType(8), width)
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), vector.as_pointer())
            v = builder.load(ptr, align=1)

            def splat(x):
                return ir.Constant(vector, [x] * width)

            def bits(flags):  # <width x i1> -> one bit per byte (LLVM emits pmovmskb)
                m = builder.bitcast(flags, ir.IntType(width))
                return m if width == 64 else builder.zext(m, ir.IntType(64))

            def in_range(lo, n):  # lo <= byte < lo + n, as one unsigned compare
                return builder.icmp_unsigned("<", builder.sub(v, splat(lo)), splat(n))

            def equal(x):
                return builder.icmp_unsigned("==", v, splat(x))

            masks = [
                bits(in_range(0x61, 26)),  # a-z
                bits(in_range(0x41, 26)),  # A-Z
                bits(in_range(0x30, 10)),  # 0-9
                bits(builder.or_(in_range(0x09, 5), equal(0x20))),  # \t \n \v \f \r and space
                bits(builder.icmp_signed("<", v, splat(0))),  # >= 0x80: part of a non-ASCII character
                bits(builder.or_(equal(0x0A), equal(0x0D))),  # \r \n
                bits(equal(0x20)),  # space
                bits(equal(0x2F)),  # /
                bits(equal(0x27)),  # '
            ]
            return context.make_tuple(builder, signature.return_type, masks)

        return sig, codegen

    typer.__name__ = f"ascii_class_masks{width}"
    typer.__doc__ = f"""Nine bit masks of the {width} bytes at ``arr[idx]`` (bit k: byte ``idx + k``), as
    uint64: a-z, A-Z, 0-9, ASCII whitespace (``\\s``: \\t-\\r and space), non-ASCII (>= 0x80),
    \\r/\\n, space, "/", "'". No bounds check: the caller keeps ``idx + {width} <= len(arr)``.

    Written as vector compares whose <{width} x i1> results are bitcast to integers, which LLVM
    lowers to SIMD compares and ``pmovmskb`` (AVX2 or SSE2): the scanners classify a window of
    text in a few instructions instead of a table lookup per byte."""
    return python_twin(_ascii_class_masks_twin(width))(intrinsic(typer))


def _ascii_class_masks_twin(width):
    def twin(arr, idx):
        v = _read(_address(arr, idx), width)
        classes = [
            (v >= 0x61) & (v <= 0x7A),
            (v >= 0x41) & (v <= 0x5A),
            (v >= 0x30) & (v <= 0x39),
            ((v >= 0x09) & (v <= 0x0D)) | (v == 0x20),
            v >= 0x80,
            (v == 0x0A) | (v == 0x0D),
            v == 0x20,
            v == 0x2F,
            v == 0x27,
        ]
        return tuple(np.uint64(_mask(c)) for c in classes)

    return twin


ascii_class_masks64 = _ascii_class_masks(64)
ascii_class_masks32 = _ascii_class_masks(32)


def _three_byte_lanes(context, builder, signature, args):
    """Lane k of three <64 x i8> vectors: bytes ``idx + k``, ``idx + k + 1`` and ``idx + k + 2``
    (zero past the 64: no continuation byte there), the compare helpers, and whether lane k's
    next two bytes are continuation bytes."""
    ary = context.make_array(signature.args[0])(context, builder, args[0])
    vector = ir.VectorType(ir.IntType(8), 64)
    v0 = builder.load(builder.bitcast(builder.gep(ary.data, [args[1]]), vector.as_pointer()), align=1)
    zero = ir.Constant(vector, [0] * 64)
    v1 = builder.shuffle_vector(v0, zero, ir.Constant(ir.VectorType(ir.IntType(32), 64), [k + 1 for k in range(64)]))
    v2 = builder.shuffle_vector(v0, zero, ir.Constant(ir.VectorType(ir.IntType(32), 64), [k + 2 for k in range(64)]))

    def splat(x):
        return ir.Constant(vector, [x] * 64)

    def cmp(op):
        return lambda v, x: builder.icmp_unsigned(op, v, splat(x))

    mask = splat(0xC0)
    conts = builder.and_(cmp("==")(builder.and_(v1, mask), 0x80), cmp("==")(builder.and_(v2, mask), 0x80))
    return v0, v1, v2, cmp("=="), cmp("!="), cmp(">="), cmp("<="), conts


def _three_byte_leads64(leads, doc):
    """An intrinsic ``(arr, idx) -> uint64``: bit k set where byte ``idx + k`` starts a 3-byte
    character that ``leads(builder, v0, v1, v2, eq, ne, ge, le)`` picks (a <64 x i1> of its
    lanes, ``_three_byte_lanes``), with both continuation bytes among the 64 (so k <= 61)."""

    def typer(typingctx, arr, idx):
        if not (_is_bytes(arr) and isinstance(idx, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            v0, v1, v2, eq, ne, ge, le, conts = _three_byte_lanes(context, builder, signature, args)
            return builder.bitcast(builder.and_(leads(builder, v0, v1, v2, eq, ne, ge, le), conts), ir.IntType(64))

        return types.uint64(arr, idx), codegen

    typer.__doc__ = doc
    return python_twin(_three_byte_twin(leads))(intrinsic(typer))


def _three_byte_twin(leads):
    def twin(arr, idx):
        v0 = _read(_address(arr, idx), 64)
        v1 = np.concatenate([v0[1:], np.zeros(1, np.uint8)])
        v2 = np.concatenate([v0[2:], np.zeros(2, np.uint8)])
        conts = ((v1 & 0xC0) == 0x80) & ((v2 & 0xC0) == 0x80)
        lanes = leads(_NumpyLanes, v0, v1, v2, np.equal, np.not_equal, np.greater_equal, np.less_equal)
        return np.uint64(_mask(lanes & conts))

    return twin


class _NumpyLanes:
    """What the lane functions below call on an LLVM IR builder, on NumPy bool arrays: the
    twins of the intrinsics run the very same expressions."""

    and_ = staticmethod(np.logical_and)
    or_ = staticmethod(np.logical_or)


def _letter3_lanes(builder, v0, v1, v2, eq, ne, ge, le):
    a, o = builder.and_, builder.or_
    kana = o(o(a(eq(v1, 0x81), ne(v2, 0x80)), a(eq(v1, 0x82), o(le(v2, 0x96), ge(v2, 0xA1)))), o(a(eq(v1, 0x83), ne(v2, 0xBB)), ge(v1, 0x90)))
    return o(
        o(o(a(ge(v0, 0xE5), le(v0, 0xE9)), o(eq(v0, 0xEB), eq(v0, 0xEC))), a(eq(v0, 0xE4), ne(v1, 0xB7))),
        o(o(a(eq(v0, 0xEA), ge(v1, 0xB0)), a(eq(v0, 0xED), le(v1, 0x9D))), a(eq(v0, 0xE3), kana)),
    )


def _punct3_lanes(builder, v0, v1, v2, eq, ne, ge, le):
    a, o = builder.and_, builder.or_

    def within(v, lo, hi):
        return a(ge(v, lo), le(v, hi))

    e2 = a(eq(v0, 0xE2), o(a(eq(v1, 0x80), o(within(v2, 0x90, 0xA7), ge(v2, 0xB0))), a(eq(v1, 0x81), le(v2, 0x9E))))
    e3 = a(eq(v0, 0xE3), o(a(eq(v1, 0x80), o(within(v2, 0x81, 0x84), within(v2, 0x88, 0x9F))), a(eq(v1, 0x83), eq(v2, 0xBB))))
    ff_bc = a(eq(v1, 0xBC), o(o(within(v2, 0x81, 0x8F), within(v2, 0x9A, 0xA0)), ge(v2, 0xBB)))
    ff_bd = a(eq(v1, 0xBD), o(eq(v2, 0x80), within(v2, 0x9B, 0xA5)))
    return o(o(e2, e3), a(eq(v0, 0xEF), o(ff_bc, ff_bd)))


letter3_leads64 = _three_byte_leads64(
    _letter3_lanes,
    """Bit k set where byte ``idx + k`` starts a 3-byte character that is a letter to every
    named pattern and both "upper" and "lower" to o200k (Lo or Lm): most CJK ideographs, kana
    and Hangul syllables, with both continuation bytes among the 64 (so k <= 61). Ranges:
    U+3041-307F, U+3080-3096, U+30A1-30FA, U+30FC-30FF, U+3400-4DBF, U+4E00-9FFF, U+AC00-D77F.
    Characters around them in those blocks that are not such letters (kana voicing marks,
    U+30FB, U+4DC0-4DFF, U+D780 on) are left out, so a scanner that takes these bytes as
    letters is exact (tested against the class table for every code point). No bounds check:
    the caller keeps ``idx + 64 <= len(arr)``.""",
)
punct3_leads64 = _three_byte_leads64(
    _punct3_lanes,
    """Bit k set where byte ``idx + k`` starts a 3-byte character that is punctuation or a
    symbol to every named pattern (only "other": no letter, digit, space or mark), with both
    continuation bytes among the 64: the punctuation of CJK and mixed-script text. Ranges:
    U+2010-2027, U+2030-205E (dashes, quotes, ellipsis), U+3001-3004, U+3008-301F (CJK
    commas, stops, brackets), U+30FB, U+FF01-FF0F, U+FF1A-FF20, U+FF3B-FF40, U+FF5B-FF65
    (full-width forms). Tested against the class table for every code point. No bounds check:
    the caller keeps ``idx + 64 <= len(arr)``.""",
)


def _is_code_units(t) -> bool:
    """Whether Numba type ``t`` is a 1-D C array of a str's code units (1, 2 or 4 bytes)."""
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype in (types.uint8, types.uint16, types.uint32)


def _is_bytes(t) -> bool:
    """Whether Numba type ``t`` is a 1-D C uint8 array."""
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype == types.uint8


def _py_narrow_ascii32(units, i, out, o):
    v = _read(_address(units, i), 32, units.dtype)
    ctypes.memmove(_address(out, o), (v & 0xFF).astype(np.uint8).tobytes(), 32)
    return np.uint32(_mask(v >= 0x80))


def _py_utf8_widths32(units, i):
    v = _read(_address(units, i), 32, units.dtype).astype(np.int64)
    if units.itemsize == 1:
        return np.uint64(_mask(v >= 0x80))
    two = (v >= 0x80) & (v < 0x800)
    three = (v >= 0x800) & ((v & 0xF800) != 0xD800) & (v < 0x10000)
    return np.uint64(_mask(two) | (_mask(three) << 32))


def _py_utf8_of16(units, i, out, o):
    v = _read(_address(units, i), 16, units.dtype)
    if units.itemsize > 1 and any((int(c) & 0xFFFFF800) == 0xD800 for c in v):
        return np.int64(-1)
    data = "".join(map(chr, v.tolist())).encode("utf-8")
    ctypes.memmove(_address(out, o), data, len(data))
    return np.int64(int(o) + len(data))


@python_twin(_py_narrow_ascii32)
@intrinsic
def narrow_ascii32(typingctx, units, i, out, o):
    """Store the low bytes of the 32 code units at ``units[i]`` (uint8, uint16 or uint32) as 32
    bytes at ``out[o]`` and return a uint32 mask of the units >= 0x80 (bit k: unit ``i + k``):
    where it is 0 the 32 bytes are their UTF-8; otherwise the bytes below its lowest set bit
    are. No bounds checks: the caller keeps ``i + 32 <= len(units)`` and ``o + 32 <= len(out)``.

    One vector load, compare and narrowing store per 32 characters (LLVM emits ``vpackuswb``
    and friends), where a str's code units are written to UTF-8."""
    if not (_is_code_units(units) and _is_bytes(out)):
        return None
    sig = types.uint32(units, i, out, o)

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        dst = context.make_array(signature.args[2])(context, builder, args[2])
        unit = ir.IntType(8 * signature.args[0].dtype.bitwidth // 8)
        vector = ir.VectorType(unit, 32)
        v = builder.load(builder.bitcast(builder.gep(src.data, [args[1]]), vector.as_pointer()), align=1)
        wide = builder.icmp_unsigned(">=", v, ir.Constant(vector, [0x80] * 32))
        narrow = v if unit.width == 8 else builder.trunc(v, ir.VectorType(ir.IntType(8), 32))
        ptr = builder.bitcast(builder.gep(dst.data, [args[3]]), ir.VectorType(ir.IntType(8), 32).as_pointer())
        builder.store(narrow, ptr, align=1)
        return builder.bitcast(wide, ir.IntType(32))

    return sig, codegen


@python_twin(_py_utf8_widths32)
@intrinsic
def utf8_widths32(typingctx, units, i):
    """For the 32 code units at ``units[i]`` (uint8, uint16 or uint32), a uint64 whose low 32
    bits mark the units whose UTF-8 is 2 bytes (U+0080..U+07FF) and whose high 32 bits mark
    those whose UTF-8 is 3 bytes (U+0800..U+FFFF but surrogates). No bounds checks: the caller
    keeps ``i + 32 <= len(units)``.

    Compared with :func:`narrow_ascii32`'s mask, it tells a block of Russian (ASCII and 2-byte
    characters) or of Chinese, Korean, Hindi (ASCII and 3-byte) from one that needs the
    general per-character path."""
    if not _is_code_units(units):
        return None
    sig = types.uint64(units, i)

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        bits = signature.args[0].dtype.bitwidth
        vector = ir.VectorType(ir.IntType(bits), 32)
        v = builder.load(builder.bitcast(builder.gep(src.data, [args[1]]), vector.as_pointer()), align=1)
        i32, i64 = ir.IntType(32), ir.IntType(64)

        def splat(value):
            return ir.Constant(vector, [value] * 32)

        if bits == 8:  # Latin-1: every non-ASCII unit is 2 bytes
            return builder.zext(builder.bitcast(builder.icmp_unsigned(">=", v, splat(0x80)), i32), i64)
        two = builder.icmp_unsigned("<", builder.sub(v, splat(0x80)), splat(0x780))
        three = builder.and_(
            builder.icmp_unsigned(">=", v, splat(0x800)),
            builder.icmp_unsigned("!=", builder.and_(v, splat(0xF800)), splat(0xD800)),
        )
        if bits == 32:
            three = builder.and_(three, builder.icmp_unsigned("<", v, splat(0x10000)))
        low = builder.zext(builder.bitcast(two, i32), i64)
        high = builder.zext(builder.bitcast(three, i32), i64)
        return builder.or_(low, builder.shl(high, ir.Constant(i64, 32)))

    return sig, codegen


def _target_features() -> str:
    """The CPU features Numba compiles for, as LLVM's "+feature,-feature" string: as Numba
    chooses them (``NUMBA_CPU_FEATURES``, empty for ``NUMBA_CPU_NAME=generic``, else the host's
    less AVX if ``NUMBA_ENABLE_AVX=0``)."""
    from numba.core import codegen, config

    return config.CPU_FEATURES if config.CPU_FEATURES is not None else codegen.get_host_cpu_features()


# vpcompressb (AVX-512 VBMI2 with VL): where LLVM lowers a byte compress to one instruction.
# Elsewhere it would lower to 64 conditional moves, slower than the scalar loop. LLVM 19 is the
# first with a compress in a register (``llvm.experimental.vector.compress``); older ones have
# only the compress-store, whose memory form of vpcompressb AMD Zen 4 runs microcoded, far
# slower than the register form.
HAS_BYTE_COMPRESS = tuple(binding.llvm_version_info) >= (19,) and all(
    f"+{f}" in _target_features().split(",") for f in ("avx512vbmi2", "avx512bw", "avx512vl")
)


@python_twin(_py_utf8_of16)
@intrinsic
def utf8_of16(typingctx, units, i, out, o):
    """Write the UTF-8 of the 16 code units at ``units[i]`` (uint8, uint16 or uint32) at
    ``out[o]`` and return where it ends, or -1 if one is a surrogate (nothing useful is
    written then). Bytes past the end, up to ``out[o + 63]``, may be overwritten. No bounds
    checks: the caller keeps ``i + 16 <= len(units)`` and ``o + 64 <= len(out)``.

    Each unit's UTF-8 is made as a 4-byte word in one vector lane and the bytes past each
    character's length are squeezed out by a vector compress: branch-free for any mix of
    widths. Use it only where ``HAS_BYTE_COMPRESS`` (it needs LLVM 19 or later)."""
    if not (_is_code_units(units) and _is_bytes(out)):
        return None
    sig = types.int64(units, i, out, o)

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        dst = context.make_array(signature.args[2])(context, builder, args[2])
        bits = signature.args[0].dtype.bitwidth
        i1, i8, i16, i32, i64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
        lanes = ir.VectorType(i32, 16)

        def splat(value):
            return ir.Constant(lanes, [value] * 16)

        v = builder.load(builder.bitcast(builder.gep(src.data, [args[1]]), ir.VectorType(ir.IntType(bits), 16).as_pointer()), align=1)
        c = v if bits == 32 else builder.zext(v, lanes)

        def cont(shift):  # a continuation byte: 0x80 | six bits of c from bit ``shift``
            part = builder.lshr(c, splat(shift)) if shift else c
            return builder.or_(builder.and_(part, splat(0x3F)), splat(0x80))

        def lead(shift, marker):
            return builder.or_(builder.lshr(c, splat(shift)), splat(marker))

        def at(value, byte):
            return builder.shl(value, splat(8 * byte))

        w2 = builder.or_(lead(6, 0xC0), at(cont(0), 1))
        w3 = builder.or_(builder.or_(lead(12, 0xE0), at(cont(6), 1)), at(cont(0), 2))
        is2 = builder.icmp_unsigned(">=", c, splat(0x80))
        is3 = builder.icmp_unsigned(">=", c, splat(0x800))
        word = builder.select(is3, w3, builder.select(is2, w2, c))
        keep = builder.select(is3, splat(0xFFFFFF), builder.select(is2, splat(0xFFFF), splat(0xFF)))
        if bits == 32:
            w4 = builder.or_(builder.or_(lead(18, 0xF0), at(cont(12), 1)), builder.or_(at(cont(6), 2), at(cont(0), 3)))
            is4 = builder.icmp_unsigned(">=", c, splat(0x10000))
            word = builder.select(is4, w4, word)
            keep = builder.select(is4, splat(0xFFFFFFFF), keep)
        bytes64 = ir.VectorType(i8, 64)
        mask = builder.icmp_unsigned("!=", builder.bitcast(keep, bytes64), ir.Constant(bytes64, [0] * 64))
        ptr = builder.bitcast(builder.gep(dst.data, [args[3]]), i8.as_pointer())
        # Compressed in a register, then one plain store (see HAS_BYTE_COMPRESS).
        fnty = ir.FunctionType(bytes64, [bytes64, ir.VectorType(i1, 64), bytes64])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.experimental.vector.compress.v64i8")
        packed = builder.call(fn, [builder.bitcast(word, bytes64), mask, ir.Constant(bytes64, ir.Undefined)])
        builder.store(packed, builder.bitcast(ptr, bytes64.as_pointer()), align=1)
        ctpop = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64]), "llvm.ctpop.i64")
        end = builder.add(args[3], builder.call(ctpop, [builder.bitcast(mask, i64)]))
        if bits == 8:
            return end
        surrogate = builder.icmp_unsigned("==", builder.and_(c, splat(0xFFFFF800)), splat(0xD800))
        bad = builder.icmp_unsigned("!=", builder.bitcast(surrogate, i16), ir.Constant(i16, 0))
        return builder.select(bad, ir.Constant(i64, -1), end)

    return sig, codegen
