#!/usr/bin/env bash
# Builds everything the GPU machine runs and copies it into .device/ (ignored
# by git), to be carried to the GPU machine, which has no LLVM/MLIR and no
# sqlite3.h: the GPU binaries link no LLVM, and SQLite and GoogleTest are
# linked statically, so binaries built here run there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOWBIT_BUILD_DIR:-$root/build}
"$root/scripts/configure.sh"
rm -rf "$root/.device"
mkdir -p "$root/.device/bin"
for binary in "$build"/bin/*_gpu_tests "$build"/bin/lowbit-bench; do
  [[ -x $binary ]] && cp "$binary" "$root/.device/bin/"
done
if compgen -G "$build/bin/lowbit" >/dev/null; then cp "$build/bin/lowbit" "$root/.device/bin/"; fi
du -sh "$root/.device"
