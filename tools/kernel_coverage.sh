#!/usr/bin/env bash
# Line coverage of numtok's kernels, run as plain Python: NUMBA_DISABLE_JIT=1 makes every
# cached_njit kernel the function itself and every intrinsic its pure-Python twin
# (src/numtok/_native/intrinsics.py). tests/conftest.py then cuts the sample text and the
# hypothesis examples, and skips the tests marked jit_only (they check compiled kernels, or
# are too slow as Python). Then, with the JIT on and an empty kernel cache, every warmup job
# compiles in one process under coverage too: the intrinsics' code generators and the kernel
# cache's Python run only while Numba compiles. Prints the combined report for the kernel
# modules (tools/kernel_coverage.rc).
#
#   tools/kernel_coverage.sh                    # the kernel tests below (~20 min on one core)
#   tools/kernel_coverage.sh tests/test_train.py -k heap    # any pytest arguments instead
#   NO_COMPILE_PASS=1 tools/kernel_coverage.sh ...          # the JIT-off tests alone
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=(
    tests/test_pretokenize.py tests/test_encode.py tests/test_count.py tests/test_offsets.py
    tests/test_train.py tests/test_word_counts.py tests/test_wordpiece.py tests/test_pystr.py tests/test_short_calls.py
)
# Left out by default: tests that take minutes as Python (whole-vocabulary loads, processes,
# threads) and the cl100k/o200k cases of encoder tests whose r50k case runs the same kernel lines.
SLOW="not test_list_and_load and not test_table_cache and not test_processes and not many_threads and not test_threads_share
 and not test_docs_and_examples and not test_sample_text_identical_to_tiktoken and not test_piece_cache_hits_equal
 and not o200k_base] and not cl100k_base] and not test_one_kernel_path_on_real_text and not gpt2_merges
 and not merge_mode_from_derived and not test_threads_give_the_same_pieces[3 and not test_threads_give_the_same_pieces[7"
[ $# -gt 0 ] || set -- "${TESTS[@]}" -k "${SLOW//$'\n'/}"
export NUMTOK_QUIET=1
RC=tools/kernel_coverage.rc
python -m coverage erase --rcfile=$RC
# coverage run rather than pytest-cov: a run stopped with Ctrl-C still reports what it covered.
status=0
NUMBA_DISABLE_JIT=1 python -m coverage run -p --rcfile=$RC -m pytest -q -p no:cacheprovider "$@" || status=$?
if [ -z "${NO_COMPILE_PASS:-}" ]; then
    # A copy of the package: its __pycache__ holds no compiled kernel (kernels there are read
    # whatever NUMTOK_JIT_CACHE says), so every kernel compiles; [paths] maps it back to src/.
    cache=$(mktemp -d)
    mkdir -p "$cache/numtok-compile-pass"
    cp -r src/numtok "$cache/numtok-compile-pass/numtok"
    find "$cache/numtok-compile-pass" -name __pycache__ -prune -exec rm -rf {} +
    cat > "$cache/compile_all.py" <<'PY'
from numtok import precompile
for job in precompile.JOBS.values():  # in order, in this process (warmup() spawns workers)
    job.run()
PY
    PYTHONPATH="$cache/numtok-compile-pass" NUMTOK_JIT_CACHE=$cache/jit NUMTOK_CACHE_DIR=$cache/tables \
        python -m coverage run -p --rcfile=$RC "$cache/compile_all.py" || status=$?
    rm -rf "$cache"
fi
python -m coverage combine --append --rcfile=$RC -q
python -m coverage report --rcfile=$RC
exit $status
