#!/usr/bin/env bash
# Line coverage of numtok's kernels, run as plain Python: NUMBA_DISABLE_JIT=1 makes every
# cached_njit kernel the function itself and every intrinsic its pure-Python twin
# (src/numtok/_native/intrinsics.py). tests/conftest.py then cuts the sample text and the
# hypothesis examples, and skips the tests marked jit_only (they check compiled kernels, or
# are too slow as Python). Prints the report for the kernel modules (tools/kernel_coverage.rc).
#
#   tools/kernel_coverage.sh                    # the kernel tests below (~15 min on one core)
#   tools/kernel_coverage.sh tests/test_train.py -k heap    # any pytest arguments instead
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=(
    tests/test_pretokenize.py tests/test_encode.py tests/test_count.py tests/test_offsets.py
    tests/test_train.py tests/test_word_counts.py tests/test_wordpiece.py tests/test_pystr.py
)
[ $# -gt 0 ] || set -- "${TESTS[@]}"
export NUMBA_DISABLE_JIT=1 NUMTOK_QUIET=1
# coverage run rather than pytest-cov: a run stopped with Ctrl-C still reports what it covered.
status=0
python -m coverage run --rcfile=tools/kernel_coverage.rc -m pytest -q -p no:cacheprovider "$@" || status=$?
python -m coverage report --rcfile=tools/kernel_coverage.rc
exit $status
