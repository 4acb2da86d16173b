#!/usr/bin/env bash
# Sets up (Debian's packages, and .venv from PyPI for the Python package),
# builds and runs every test (unit, lit, python, and gpu: these skip without a
# GPU), then the MLIR-free unit tests under ASan and UBSan (sanitize.sh), then
# every libFuzzer target for LOWBIT_FUZZ_SECONDS (30) each.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/setup-python.sh"
"$root/scripts/configure.sh"
ctest --test-dir "${LOWBIT_BUILD_DIR:-$root/build}" --output-on-failure -j "$(nproc)"
"$root/scripts/sanitize.sh"
"$root/scripts/fuzz.sh" "${LOWBIT_FUZZ_SECONDS:-30}"
