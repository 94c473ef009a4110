#!/bin/bash
# First run of numtok as a new user gets it: a fresh venv, `pip install .`, then whole processes
# timed from the shell, with compiled kernels and table caches wiped before every "first ever".
#
#   bash benchmarks/cold_start.sh [VENV_DIR]      # default /tmp/numtok-cold-venv (re-created)
#
# Prints one line per run: seconds, exit code, load average. Numba's floor (import numba and call
# one trivial cached function) is printed for comparison.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${1:-/tmp/numtok-cold-venv}
rm -rf "$VENV" && python3 -m venv "$VENV"
V=$VENV/bin
t() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; local rc=$?; echo "$(echo "$(date +%s.%N) - $s" | bc) s rc=$rc load=$(cut -d' ' -f1 /proc/loadavg)"; }
echo "pip install: $(t $V/pip install -q "$REPO")"
SP=$($V/python -c "import numtok, os; print(os.path.dirname(numtok.__file__))")
WORK=$(mktemp -d)
export NUMTOK_CACHE_DIR=$WORK/tables
unset NUMBA_CACHE_DIR NUMTOK_JIT_CACHE
wipe() { find "$SP" -name "*.nbi" -delete; find "$SP" -name "*.nbc" -delete; rm -rf "$NUMTOK_CACHE_DIR"; }
ENCODE="import numtok; numtok.load('cl100k_base').encode('hello')"
TRAIN="import numtok; numtok.train_bpe(['low lower lowest newer wider'] * 50, 300)"
printf 'from numba import njit\n@njit(cache=True)\ndef f(x):\n    return x + 1\n' > "$WORK/trivial.py"
cd "$WORK"
wipe; echo "demo first ever: $(t $V/numtok demo)"; for i in 1 2; do echo "demo again: $(t $V/numtok demo)"; done
wipe; echo "load+encode first ever: $(t $V/python -c "$ENCODE")"
for i in 1 2 3; do echo "load+encode warm: $(t $V/python -c "$ENCODE")"; done
$V/python -c "import trivial; trivial.f(1)"
for i in 1 2 3; do echo "numba floor: $(t $V/python -c "import trivial; trivial.f(1)")"; done
wipe; echo "train first ever: $(t $V/python -c "$TRAIN")"
wipe; echo "warmup, all cores: $(t $V/numtok warmup)"
echo "demo after warmup: $(t $V/numtok demo)"
echo "load+encode after warmup: $(t $V/python -c "$ENCODE")"
echo "train after warmup: $(t $V/python -c "$TRAIN")"
rm -rf "$WORK"
