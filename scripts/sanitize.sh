#!/usr/bin/env bash
# Builds the MLIR-free half of lowbit (core, the runtime and its C API, the
# kernel database, the tuner's database side, the benchmark support) and its
# unit tests with AddressSanitizer and UndefinedBehaviorSanitizer (g++), in
# build-asan/, and runs them. Any sanitizer report fails the run: UBSan does
# not recover, and ASan's leak check is on. CI runs it (scripts/test.sh).
# The compiler half (MLIR passes, the lit tests) is not built here yet.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOWBIT_SANITIZE_BUILD_DIR:-$root/build-asan}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined -Wl,--as-needed" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DLOWBIT_BUILD_COMPILER=OFF -DLOWBIT_BUILD_TESTS=ON >/dev/null
cmake --build "$build"
# halt_on_error: the first report fails the test that made it.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -LE gpu
