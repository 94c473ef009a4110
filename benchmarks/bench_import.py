"""asv: cold start, each in a fresh interpreter (``timeraw_``).

``timeraw_import`` is ``import numtok`` alone (lazy: no Numba); ``timeraw_load_and_encode``
is import + ``numtok.load(name)`` + the first ``encode`` with a warm Numba cache (asv's first
run of it fills the cache). The first-ever compile is timed by running the same code with an
empty ``NUMBA_CACHE_DIR``, e.g.::

    NUMBA_CACHE_DIR=$(mktemp -d) python -c "import numtok; numtok.load('cl100k_base').encode('hi')"

Numba's own floor is in ``timeraw_numba_floor``: import numba and call one cached function.
"""

from __future__ import annotations

ENCODINGS = ["r50k_base", "cl100k_base", "o200k_base"]


def timeraw_import():
    return "import numtok"


def timeraw_load_and_encode(encoding):
    return f"""
import numtok
enc = numtok.load({encoding!r})
enc.encode("hello world, this is the first call")
"""


timeraw_load_and_encode.params = ENCODINGS
timeraw_load_and_encode.param_names = ["encoding"]
timeraw_load_and_encode.repeat = 5


def timeraw_load_encode_decode(encoding):
    return f"""
import numtok
enc = numtok.load({encoding!r})
enc.decode(enc.encode("hello world"))
enc.encode_batch(["a", "b"], num_threads=2)
"""


timeraw_load_encode_decode.params = ENCODINGS
timeraw_load_encode_decode.param_names = ["encoding"]


def timeraw_numba_floor():
    # The cost of Numba itself: import, target initialisation, one function loaded from cache.
    return """
from numtok.encode import _kernels as _encode_kernels
import numpy as np
_encode_kernels.decode_ids(np.zeros(0, np.int64), np.zeros(2, np.int64), np.zeros(1, np.uint8), np.zeros(2, np.int64))
"""
