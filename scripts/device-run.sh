#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .device/ carried
# there by scripts/device-stage.sh: every GPU test binary, then the
# benchmarks; logs go to $OUT (when set) and a short table is printed last.
# LOWBIT_DEVICE_PARTS picks parts: bench tests tune (default), sanitize, and
# python (scripts/device-stage-python.sh stages it).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.device/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# The kernel sets travel compressed (device-stage.sh).
if [[ -f $root/.device/kernels.tar.xz && ! -d $root/.device/kernels ]]; then
  (cd "$root/.device" && tar xJf kernels.tar.xz)
fi
for db in "$root"/.device/tune/tuned.db.xz "$root"/.device/sweep/sweep.db.xz; do
  [[ -f $db && ! -f ${db%.xz} ]] && xz -dk "$db"
done

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/device.txt"

status=0
# Which parts run (a device call is limited to 10 minutes, so a full run may
# take two calls): bench (the kernel sets' benchmarks), tests (every GPU
# test binary and the host app), sanitize (compute-sanitizer memcheck and
# racecheck, asked for by name only), tune (lowbit tune --measure-only on the
# staged tuning database, then lowbit bench --db on what it dispatches), and
# profile (Nsight Compute, by name only).
parts=" ${LOWBIT_DEVICE_PARTS:-bench tests tune} "
summary=()
# The benchmark first, so its numbers come back even if a test runs long.
if [[ $parts == *" bench "* && -x $root/.device/bin/lowbit && -d $root/.device/kernels/perf-widths ]]; then
  timeout "${LOWBIT_BENCH_TIMEOUT:-240}" "$root/.device/bin/lowbit" bench \
    --kernels "$root/.device/kernels/perf-widths" --m 1,16 --csv "$out/bench-widths.csv" \
    >"$out/bench-widths.txt" 2>"$out/bench-widths.log" || { status=1; tail -5 "$out/bench-widths.log"; }
fi
# LOWBIT_BENCH_KERNELS: another staged set (a directory under .device/kernels).
bench_kernels=$root/.device/kernels/${LOWBIT_BENCH_KERNELS:-bench}
if [[ $parts == *" bench "* && -x $root/.device/bin/lowbit && -d $bench_kernels ]]; then
  timeout "${LOWBIT_BENCH_TIMEOUT:-240}" "$root/.device/bin/lowbit" bench \
    --kernels "$bench_kernels" --csv "$out/bench.csv" ${LOWBIT_BENCH_ARGS:-} \
    >"$out/bench.txt" 2>"$out/bench.log" || { status=1; tail -5 "$out/bench.log"; }
fi

# LOWBIT_TEST_SKIP: test binaries to leave out (names, space separated), e.g.
# lowbit_w4a16_gpu_tests in a call of its own. LOWBIT_TEST_ARGS: arguments
# for every test binary (a --gtest_filter, say).
for binary in "$root"/.device/bin/*_gpu_tests; do
  [[ $parts == *" tests "* ]] || break
  name=$(basename "$binary")
  [[ " ${LOWBIT_TEST_SKIP:-} " == *" $name "* ]] && continue
  log="$out/$name.log"
  # lowbit_w4a16_gpu_tests alone took 8.5 minutes on the H200 once its
  # dequant kernels were checked too (4 + 4, 2026-12-02): run the tests part
  # with LOWBIT_TEST_TIMEOUT up to 560, or that binary by itself.
  timeout "${LOWBIT_TEST_TIMEOUT:-300}" "$binary" ${LOWBIT_TEST_ARGS:-} >"$log" 2>&1
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
if [[ $parts == *" tests "* && -x $root/.device/bin/lowbit_host_app && -f $root/.device/kernels/runtime-tests.db ]]; then
  timeout 120 "$root/.device/bin/lowbit_host_app" "$root/.device/kernels/runtime-tests.db" \
    >"$out/host_app.log" 2>&1
  rc=$?
  ((rc != 0)) && status=1
  summary+=("$(printf '%-40s %6s %6s %7s %4s' lowbit_host_app "$((rc == 0))" "$((rc != 0))" 0 "$rc")")
  cat "$out/host_app.log"
fi

# compute-sanitizer's memcheck and racecheck over the W4A16 test on the small
# kernel set that reaches every family (tests/gpu/kernels), and over the
# runtime's GPU tests. A tool's report that is not clean fails the run.
# The Python package, built there by pip from ./python for the image's
# python3 (scikit-build-core and nanobind are in the image; the headers it
# lacks come from scripts/device-stage-python.sh), then its GPU tests and the
# two examples.
if [[ $parts == *" python "* && -d $root/.device/python ]]; then
  py=$root/.device/python
  for db in "$py"/kernels/*.xz; do [[ -f ${db%.xz} ]] || xz -dk "$db"; done
  [[ -d $py/minilm-f16 ]] || (cd "$py" && tar xJf minilm-f16.tar.xz)
  site=/tmp/lowbit-site
  sqlite=$(ldconfig -p | awk '/libsqlite3\.so\.0 /{print $NF; exit}')
  rm -rf "$site"
  timeout 300 python3 -m pip install --no-build-isolation --no-deps --no-index --target "$site" \
    --config-settings=cmake.define.SQLite3_INCLUDE_DIR="$py/include" \
    --config-settings=cmake.define.SQLite3_LIBRARY="$sqlite" \
    --config-settings=cmake.define.nlohmann_json_DIR="$py/share/cmake/nlohmann_json" \
    --config-settings=cmake.define.CMAKE_CXX_FLAGS="-isystem $py/include" \
    --config-settings=build-dir=/tmp/lowbit-python-build \
    "$root/python" >"$out/python-build.log" 2>&1 || { status=1; tail -30 "$out/python-build.log"; }
  export PYTHONPATH=$site
  run=" ${LOWBIT_PYTHON_RUN:-tests minilm llama} "
  if [[ $run == *" tests "* ]]; then
    LOWBIT_PYTHON_TEST_DB=$py/kernels/python-tests.db LOWBIT_MINILM_DIR=$py/minilm-f16 \
      HF_HUB_OFFLINE=1 timeout 300 python3 -m pytest -q \
      -p no:cacheprovider "$root/tests/python" -m gpu >"$out/python-gpu-tests.log" 2>&1
    rc=$?
    ((rc != 0)) && { status=1; tail -30 "$out/python-gpu-tests.log"; }
    count() { grep -oE "[0-9]+ $1" "$out/python-gpu-tests.log" | grep -oE '[0-9]+' || echo 0; }
    summary+=("$(printf '%-40s %6s %6s %7s %4s' python_gpu_tests "$(count passed)" \
      "$(count failed)" "$(count skipped)" "$rc")")
  fi
  if [[ $run == *" minilm "* ]]; then
    HF_HUB_OFFLINE=1 timeout 300 python3 -X faulthandler "$root/examples/python/minilm_w4.py" \
      --db "$py/kernels/python-tests.db" --model-dir "$py/minilm-f16" >"$out/minilm.txt" 2>&1
    echo "minilm_w4.py exited $?"; grep -E '^\| \*\*mean|^(PASS|FAIL)|^all-MiniLM' "$out/minilm.txt"
  fi
  if [[ $run == *" llama "* ]]; then
    timeout 300 python3 -X faulthandler "$root/examples/python/llama_decoder_stack.py" \
      --db "$py/kernels/llama3-8b-sm90a.db" >"$out/llama-stack.txt" 2>&1 || status=1
    cat "$out/llama-stack.txt"
  fi
fi

if [[ $parts == *" sanitize "* && -d $root/.device/kernels/sanitizer ]]; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    for binary in lowbit_w4a16_gpu_tests lowbit_runtime_gpu_tests; do
      filter=$([[ $binary == lowbit_w4a16_gpu_tests ]] && echo 'W4A16Kernels.*' || echo '*')
      log="$out/sanitize-$tool-$binary.log"
      LOWBIT_GPU_TEST_KERNELS=$root/.device/kernels/sanitizer \
        timeout "${LOWBIT_SANITIZE_TIMEOUT:-240}" "$sanitizer" --tool "$tool" --error-exitcode 3 \
        "$root/.device/bin/$binary" --gtest_filter="$filter" >"$log" 2>&1
      rc=$?
      ((rc != 0)) && status=1
      errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard' "$log" | tail -1)
      summary+=("$(printf '%-40s %6s %6s %7s %4s  %s' "$tool $binary" \
        "$(grep -c '^\[       OK \]' "$log")" "$(grep -c '^\[  FAILED  \] [A-Za-z].*(' "$log")" 0 "$rc" "$errors")")
      ((rc != 0)) && tail -5 "$log"
    done
  done
fi

# What a user gets: tune the staged database's candidates on this GPU, then
# bench what the runtime dispatches from it.
if [[ $parts == *" tune "* && -x $root/.device/bin/lowbit && -f $root/.device/tune/tuned.db ]]; then
  cp "$root/.device/tune/tuned.db" "$out/tuned.db"
  # LOWBIT_TUNE_SPEC: one spec or several, separated by spaces, each
  # measured in turn with its own budget, into the one database.
  for spec in ${LOWBIT_TUNE_SPEC:-$root/examples/specs/untuned-widths.toml}; do
    timeout "${LOWBIT_TUNE_TIMEOUT:-240}" "$root/.device/bin/lowbit" tune --db "$out/tuned.db" \
      --spec "$spec" --measure-only \
      --budget "${LOWBIT_TUNE_BUDGET:-150}" --m "${LOWBIT_TUNE_M:-1,16,64}" \
      >>"$out/tune.txt" 2>&1 || { status=1; tail -5 "$out/tune.txt"; }
  done
  timeout 120 "$root/.device/bin/lowbit" bench --db "$out/tuned.db" --m "${LOWBIT_TUNE_M:-1,16,64}" \
    --csv "$out/bench-db.csv" >"$out/bench-db.txt" 2>&1 || { status=1; tail -5 "$out/bench-db.txt"; }
fi

# Nsight Compute on one kernel of a staged bench set's problem, for each
# PROBLEM=KERNEL in LOWBIT_PROFILE (a problem name, then the start of its
# kernel's schedule part, e.g. q4_k.28672x8192=gemv_t1x4x4096), at
# LOWBIT_PROFILE_M (1): throughput, occupancy and where warps stall.
if [[ $parts == *" profile "* && -x $root/.device/bin/lowbit && -d $bench_kernels ]]; then
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for item in ${LOWBIT_PROFILE:-}; do
    problem=${item%%=*}
    timeout 150 "$ncu" --kernel-name "regex:^${problem//./_}__${item#*=}" --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
      "$root/.device/bin/lowbit" bench --kernels "$bench_kernels" --problem "$problem" \
      --m "${LOWBIT_PROFILE_M:-1}" >"$out/ncu-$problem.txt" 2>&1 || status=1
    grep -E '__[a-z_]+_t[0-9]|Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occ|Theoretical Occ|Issued Ipc|No Eligible|Warp Cycles Per Issued|stall' \
      "$out/ncu-$problem.txt" | head -24
  done
fi

echo
printf '%-40s %6s %6s %7s %4s\n' "gpu test binary" passed failed skipped rc
printf '%s\n' "${summary[@]}"
[[ -f $out/bench-widths.txt ]] && { echo; tail -40 "$out/bench-widths.txt"; }
[[ -f $out/bench.txt ]] && { echo; tail -40 "$out/bench.txt"; }
[[ -f $out/bench-db.txt ]] && { echo; tail -30 "$out/bench-db.txt"; }
# The device tool returns a handful of files: the logs travel as one archive.
(cd "$out" && tar czf logs.tgz ./*.log && rm -f ./*.log) 2>/dev/null
exit $status
