#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .device/ carried
# there by scripts/device-stage.sh: every GPU test binary, then the
# benchmarks; logs go to $OUT (when set) and a short table is printed last.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.device/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/device.txt"

status=0
# The benchmark first, so its numbers come back even if a test runs long.
if [[ -x $root/.device/bin/lowbit && -d $root/.device/kernels/bench ]]; then
  timeout "${LOWBIT_BENCH_TIMEOUT:-240}" "$root/.device/bin/lowbit" bench \
    --kernels "$root/.device/kernels/bench" --csv "$out/bench.csv" ${LOWBIT_BENCH_ARGS:-} \
    >"$out/bench.txt" 2>"$out/bench.log" || { status=1; tail -5 "$out/bench.log"; }
fi

summary=()
for binary in "$root"/.device/bin/*_gpu_tests; do
  name=$(basename "$binary")
  log="$out/$name.log"
  timeout "${LOWBIT_TEST_TIMEOUT:-300}" "$binary" >"$log" 2>&1
  rc=$?
  passed=$(grep -c '^\[       OK \]' "$log")
  failed=$(grep -c '^\[  FAILED  \] [A-Za-z].*(' "$log")
  skipped=$(grep -c '^\[  SKIPPED \] [A-Za-z].*(' "$log")
  ((rc != 0)) && status=1
  summary+=("$(printf '%-40s %6s %6s %7s %4s' "$name" "$passed" "$failed" "$skipped" "$rc")")
  if ((rc != 0)); then
    grep -E '^\[  FAILED  \]|Failure|error' "$log" | head -20
    echo "$name exited $rc; its log ends:"
    tail -3 "$log"
  fi
done

# The C host app (examples/host_app), built against the installed package,
# on the runtime tests' database: it checks M = 1, 7, 64, 300 itself.
if [[ -x $root/.device/bin/lowbit_host_app && -f $root/.device/kernels/runtime-tests.db ]]; then
  timeout 120 "$root/.device/bin/lowbit_host_app" "$root/.device/kernels/runtime-tests.db" \
    >"$out/host_app.log" 2>&1
  rc=$?
  ((rc != 0)) && status=1
  summary+=("$(printf '%-40s %6s %6s %7s %4s' lowbit_host_app "$((rc == 0))" "$((rc != 0))" 0 "$rc")")
  cat "$out/host_app.log"
fi

echo
printf '%-40s %6s %6s %7s %4s\n' "gpu test binary" passed failed skipped rc
printf '%s\n' "${summary[@]}"
[[ -f $out/bench.txt ]] && { echo; tail -40 "$out/bench.txt"; }
# The device tool returns a handful of files: the logs travel as one archive.
(cd "$out" && tar czf logs.tgz ./*.log && rm -f ./*.log)
exit $status
