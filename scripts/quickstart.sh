#!/usr/bin/env bash
# Sets up, builds, and compiles lowbit's built-in kernel set, printing what was produced.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/configure.sh"
build=${LOWBIT_BUILD_DIR:-$root/build}
"$build/bin/lowbit" compile --builtin -o "$build/kernels"
