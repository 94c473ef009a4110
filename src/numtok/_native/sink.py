"""A count sink: what an encoder kernel writes its ids to when only their number is wanted.

The encoder's loop writes ids with ``out[k] = v`` and checks ``out.shape[0]`` for room. Given a
:class:`CountSink` instead of an array, Numba compiles a specialisation of the same source in
which every write is nothing and the room is the sink's length: the ids are counted, not kept,
and the encoding specialisation (for an int32 array) is compiled from unchanged source, so it
is exactly what it was. (Branches on ``out is None`` in the loop did the same for counting but
moved the encoding loop's registers around, and encoding came out slower.)
"""

from __future__ import annotations

import operator

from numba import types
from numba.core import cgutils
from numba.extending import (
    NativeValue,
    make_attribute_wrapper,
    models,
    overload,
    overload_attribute,
    register_model,
    typeof_impl,
    unbox,
)

from .intrinsics import store_u64
from .jit import INLINE


class CountSink:
    """``n`` slots that keep nothing, for a kernel that writes ids (see the module's doc).

    >>> sink = CountSink(10)
    >>> len(sink), len(sink[3:])
    (10, 7)
    """

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, part: slice) -> CountSink:
        """The slots from ``part.start`` on (what ``out[k:]`` gives an array's caller)."""
        if not isinstance(part, slice) or part.step not in (None, 1) or part.stop is not None:
            raise TypeError("a CountSink only takes a slice [start:]")
        return CountSink(self.n - min(max(part.start or 0, 0), self.n))

    # What a kernel run as plain Python (the JIT off) does with a sink; compiled kernels use
    # the overloads below instead.
    def __setitem__(self, index: int, value) -> None:
        pass

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)


class CountSinkType(types.Type):
    def __init__(self) -> None:
        super().__init__(name="CountSink")


count_sink_type = CountSinkType()


@typeof_impl.register(CountSink)
def _typeof(value, context):
    return count_sink_type


@register_model(CountSinkType)
class _CountSinkModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("n", types.int64)])


make_attribute_wrapper(CountSinkType, "n", "n")


@unbox(CountSinkType)
def _unbox(typ, obj, c):
    n = c.pyapi.object_getattr_string(obj, "n")
    sink = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    sink.n = c.pyapi.long_as_longlong(n)
    c.pyapi.decref(n)
    return NativeValue(sink._getvalue(), is_error=cgutils.is_not_null(c.builder, c.pyapi.err_occurred()))


@overload(operator.setitem)
def _setitem(sink, index, value):
    if isinstance(sink, CountSinkType):

        def write_nothing(sink, index, value):
            pass

        return write_nothing
    return None


@overload_attribute(CountSinkType, "shape")
def _shape(sink):
    def shape(sink):
        return (sink.n,)

    return shape


def store_id_pair(out, k, pair):
    """Write the two int32 ids packed in the uint64 ``pair`` (first in the low half) at
    ``out[k]`` and ``out[k + 1]`` with one store; nothing for a sink. No bounds check.
    (This body runs only with the JIT off; kernels use the overload below.)"""
    if not isinstance(out, CountSink):
        store_u64(out, k, pair)


@overload(store_id_pair, jit_options=INLINE)
def _store_id_pair(out, k, pair):
    if isinstance(out, CountSinkType):

        def store_nothing(out, k, pair):
            pass

        return store_nothing
    if isinstance(out, types.Array) and out.dtype == types.int32:

        def store(out, k, pair):
            store_u64(out, k, pair)

        return store
    return None


# Read by Numba's typeof before anything else: a call with a sink costs what one with an array
# does (through the registered typeof above alone, every call fell back to typing it in Python).
CountSink._numba_type_ = count_sink_type  # type: ignore[attr-defined]
