#!/usr/bin/env bash
# The test suite on the lowest NumPy and Numba that pyproject.toml accepts, in a fresh venv:
# their lower bounds (and pyarrow's) become pins (the newest patch release of that
# minor version, in a constraints file), and the test extra is resolved around them. Arguments go to pytest (default: the default suite).
#   bash tools/test_lowest.sh                      # the whole default suite
#   bash tools/test_lowest.sh tests/test_encode.py # a part of it
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NUMTOK_LOWEST_VENV:-${TMPDIR:-/tmp}/numtok-lowest}
python3 -m venv --clear "$venv"
constraints="$venv/lowest.txt"
python3 - > "$constraints" <<'PY'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
# pyarrow too: its newest releases need NumPy 2, its lowest supported one (the arrow extra's) does not.
for dep in project["dependencies"] + project["optional-dependencies"]["arrow"]:
    if not dep.startswith(("numpy", "numba", "pyarrow")):
        continue
    name, low = re.match(r"([A-Za-z0-9_.-]+).*?>=\s*([0-9][^,;\s]*)", dep).groups()
    print(f"{name}=={low}.*" if low.count(".") < 2 else f"{name}=={low}")
PY
echo "== pins: $(tr '\n' ' ' < "$constraints")"
"$venv/bin/pip" install -q --disable-pip-version-check -c "$constraints" -e ".[test]"
"$venv/bin/python" -c "import numba, numpy; print(f'== numba {numba.__version__}, numpy {numpy.__version__}')"
# Kernels compiled by another Numba must not be reused: a cache of their own.
export NUMTOK_JIT_CACHE="$venv/jit-cache" NUMTOK_CACHE_DIR="$venv/table-cache"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
