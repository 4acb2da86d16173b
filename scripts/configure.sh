#!/usr/bin/env bash
# Configures and builds lowbit in build/ (Release, Ninja). Extra arguments go to cmake.
# With .venv (scripts/setup-python.sh) it also builds the Python package.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOWBIT_BUILD_DIR:-$root/build}
python_args=()
if [[ -x $root/.venv/bin/python ]] && "$root/.venv/bin/python" -c "import nanobind" 2>/dev/null; then
  python_args=(-DLOWBIT_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$root/.venv/bin/python")
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${python_args[@]}" "$@" >/dev/null
cmake --build "$build"
