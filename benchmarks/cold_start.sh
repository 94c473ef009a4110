#!/bin/bash
# First run of numtok as a new user gets it: a fresh venv, `pip install` of the source tree or of a
# wheel, then whole processes timed from the shell, with JIT-compiled kernels and table caches
# wiped before every "first ever" (a wheel's precompiled kernels stay: they are what it ships).
#
#   bash benchmarks/cold_start.sh [VENV_DIR] [WHEEL]   # default /tmp/numtok-cold-venv (re-created), the source tree
#   NUMTOK_PRECOMPILE=x86-64-v2,x86-64-v3,x86-64-v4,x86-64-v4+avx512vbmi2 pip wheel --no-deps . -w dist && bash benchmarks/cold_start.sh /tmp/v dist/numtok-*.whl
#
# Prints one line per run: seconds, exit code, load average; "first ever" runs three times
# (median them). Numba's floor (import numba and call one trivial cached function) is printed for
# comparison. RUNS=1 for one run of each.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${1:-/tmp/numtok-cold-venv}
WHAT=${2:-$REPO}
RUNS=${RUNS:-3}
rm -rf "$VENV" && python3 -m venv "$VENV"
V=$VENV/bin
t() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; local rc=$?; echo "$(echo "$(date +%s.%N) - $s" | bc) s rc=$rc load=$(cut -d' ' -f1 /proc/loadavg)"; }
echo "pip install $(basename "$WHAT"): $(t $V/pip install -q "$WHAT")"
SP=$($V/python -c "import numtok, os; print(os.path.dirname(numtok.__file__))")
echo "kernels: $($V/numtok --version | tail -1)"
WORK=$(mktemp -d)
export NUMTOK_CACHE_DIR=$WORK/tables
unset NUMBA_CACHE_DIR NUMTOK_JIT_CACHE NUMBA_CPU_NAME NUMBA_CPU_FEATURES
wipe() { find "$SP" -path "$SP/_precompiled" -prune -o \( -name "*.nbi" -o -name "*.nbc" \) -exec rm -f {} +; rm -rf "$NUMTOK_CACHE_DIR"; }
ENCODE="import numtok; numtok.load('cl100k_base').encode('hello')"
TRAIN="import numtok; numtok.train_bpe(['low lower lowest newer wider'] * 50, 300)"
printf 'from numba import njit\n@njit(cache=True)\ndef f(x):\n    return x + 1\n' > "$WORK/trivial.py"
cd "$WORK"
for i in $(seq $RUNS); do wipe; echo "demo first ever: $(t $V/numtok demo)"; done
for i in 1 2; do echo "demo again: $(t $V/numtok demo)"; done
for i in $(seq $RUNS); do wipe; echo "load+encode first ever: $(t $V/python -c "$ENCODE")"; done
for i in 1 2 3; do echo "load+encode warm: $(t $V/python -c "$ENCODE")"; done
$V/python -c "import trivial; trivial.f(1)"
for i in 1 2 3; do echo "numba floor: $(t $V/python -c "import trivial; trivial.f(1)")"; done
for i in $(seq $RUNS); do wipe; echo "train first ever: $(t $V/python -c "$TRAIN")"; done
wipe; echo "warmup, all cores: $(t $V/numtok warmup)"
echo "demo after warmup: $(t $V/numtok demo)"
echo "load+encode after warmup: $(t $V/python -c "$ENCODE")"
echo "train after warmup: $(t $V/python -c "$TRAIN")"
rm -rf "$WORK"
