#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs each for SECONDS (default 600) from
# its seed corpus. Any crash, leak, sanitizer report or timeout fails it;
# the input that did it is left in the build directory (crash-*, leak-*,
# timeout-*). CI runs it with 30 seconds a target (scripts/test.sh).
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
build=${LOWBIT_FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=(spec gguf gguf_file safetensors gptq layout database)

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DLOWBIT_BUILD_COMPILER=OFF -DLOWBIT_BUILD_TESTS=OFF -DLOWBIT_FUZZ=ON >/dev/null
ninja -C "$build" lowbit_fuzz_database_seed "${targets[@]/#/lowbit_fuzz_}"

# A scratch corpus per target, so what the fuzzer adds stays out of the tree.
work=$build/fuzz-work
rm -rf "$work"
for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  [[ -d $root/tests/fuzz/corpus/$t ]] && cp "$root/tests/fuzz/corpus/$t"/* "$work/$t/"
done
cp "$root"/examples/specs/*.toml "$work/spec/"
"$build/bin/lowbit_fuzz_database_seed" "$work/database/seed.db"

status=0
cd "$build"
for t in "${targets[@]}"; do
  echo "== lowbit_fuzz_$t: $seconds s"
  if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/bin/lowbit_fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
    -print_final_stats=1 "$work/$t" 2>"$build/fuzz-$t.log"; then
    echo "lowbit_fuzz_$t FAILED; its log ends:"
    tail -40 "$build/fuzz-$t.log"
    status=1
  else
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$build/fuzz-$t.log" | tail -2
  fi
done
exit $status
