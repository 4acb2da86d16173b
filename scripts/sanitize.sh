#!/usr/bin/env bash
# Builds lowbit (core, the runtime and its C API, the kernel database, the
# tuner, the benchmark support, and the compiler: the MLIR passes, the
# emitter, lowbit-opt and lowbit-translate) and its unit and lit tests with
# AddressSanitizer and UndefinedBehaviorSanitizer (g++), in build-asan/, and
# runs them. LLVM/MLIR's own shared libraries are Debian's, uninstrumented:
# the checks cover lowbit's code and every allocation. Any sanitizer report
# fails the run: UBSan does not recover, and ASan's leak check is on. The GPU
# tests and their kernel sets are left out (they only skip without a GPU).
# CI runs it (scripts/test.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOWBIT_SANITIZE_BUILD_DIR:-$root/build-asan}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

# -O1 -g1: ASan's advice, line tables enough for its stacks, and the MLIR
# half's build fits CI's time.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined -Wl,--as-needed" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined -Wl,--as-needed" \
  -DLOWBIT_BUILD_COMPILER=ON -DLOWBIT_BUILD_TESTS=ON -DLOWBIT_BUILD_GPU_TESTS=OFF >/dev/null
cmake --build "$build"
# halt_on_error: the first report fails the test that made it. lit passes
# these variables through to the tools its RUN lines start.
# allow_user_poisoning=0: LLVM's headers poison and unpoison their bump
# allocators' memory when they see ASan, so our instrumented copies of those
# inline functions poison slabs that Debian's uninstrumented libMLIR then
# writes (a false use-after-poison in StringAttr::get). Heap, stack and
# global checks are unaffected; only those manual annotations are ignored.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# kernel_sets: the tests that compile whole kernel sets with NVRTC, which
# the regular build runs (tests/unit/compiler/CMakeLists.txt says why).
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -LE "gpu|kernel_sets"
