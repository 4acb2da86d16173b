#!/usr/bin/env bash
# Makes .venv, the Python that builds and tests lowbit's Python package
# (python/requirements-test.txt, from PyPI). Idempotent: pip skips what is
# already installed. scripts/configure.sh builds the package with it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv
python=${LOWBIT_PYTHON:-python3}
if [[ ! -x $venv/bin/python ]]; then
  "$python" -m venv "$venv"
fi
stamp=$venv/.lowbit-requirements
if [[ ! -f $stamp ]] || ! cmp -s "$stamp" "$root/python/requirements-test.txt"; then
  "$venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check \
    -r "$root/python/requirements-test.txt"
  cp "$root/python/requirements-test.txt" "$stamp"
fi
