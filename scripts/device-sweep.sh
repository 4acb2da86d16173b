#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .device/ staged by
# scripts/device-stage.sh (binaries in .device/bin, the compile-only tuning
# database in .device/sweep/sweep.db; docs/sweeps/README.md says how to make
# it). It
#   1. prints the device fingerprint,
#   2. tunes Llama-3-8B and Llama-3-70B (W4A16, group 128, f16) on a copy of
#      that database: `lowbit tune --measure-only`, each within a time budget,
#   3. benches the dispatched kernels against cuBLAS: `lowbit bench --db`.
# Outputs go to $OUT (default .device/out), at most 8 files, as the device
# tool returns: device.txt, sweep.log, bench.txt, bench.csv, bench.json,
# bench.svg, dispatch.txt and tuned.db.
#
# The defaults keep the whole script under ~8 minutes on an H200. Each step
# also has a hard timeout (its budget plus a minute of setup), cut short so
# that the script ends by $LOWBIT_SWEEP_DEADLINE seconds, inside the device
# tool's 10 minutes per command. Override with the variables below.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.device/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

lowbit=$root/.device/bin/lowbit
source_db=${LOWBIT_SWEEP_STAGED_DB:-$root/.device/sweep/sweep.db}
# device-stage.sh stages it compressed.
[[ -f $source_db.xz && ! -f $source_db ]] && xz -dk "$source_db.xz"
budget_8b=${LOWBIT_SWEEP_BUDGET_8B:-100}   # seconds of measuring for Llama-3-8B
budget_70b=${LOWBIT_SWEEP_BUDGET_70B:-150} # and for Llama-3-70B
bench_budget=${LOWBIT_BENCH_BUDGET:-100}
max_candidates=${LOWBIT_SWEEP_MAX_CANDIDATES:-20}
bench_m=${LOWBIT_BENCH_M:-1,2,4,8,16,32,64,128,256,512,1024,2048,4096}
run_id=${LOWBIT_SWEEP_RUN_ID:-sweep-$(date -u +%Y%m%dT%H%M%SZ)}
deadline=${LOWBIT_SWEEP_DEADLINE:-560}

# Seconds a step may take: its budget plus a minute, but no later than the
# deadline (less a few seconds to write the outputs).
step_limit() {
  local limit=$(($1 + 60)) left=$((deadline - SECONDS - 15))
  ((left < limit)) && limit=$left
  ((limit < 1)) && limit=1
  echo "$limit"
}

if [[ ! -x $lowbit ]]; then
  echo "no $lowbit: stage the binaries with scripts/device-stage.sh" >&2
  exit 2
fi
if [[ ! -f $source_db ]]; then
  echo "no $source_db: compile it with lowbit tune --compile-only (docs/sweeps/README.md)," \
    "then stage it with scripts/device-stage.sh" >&2
  exit 2
fi

# 1. The device: the driver's view, then the fingerprint lowbit keys tuning by
# (it is in bench.json too).
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv 2>&1
  "$lowbit" bench --device 2>&1
  echo "run id: $run_id"
} | tee "$out/device.txt"

# 2. Tune a copy (the staged database stays as compiled), kept out of $OUT
# until the end: SQLite's -wal/-shm files beside it would count as files.
db=$root/.device/sweep/tuned.db
rm -f "$db" "$db-wal" "$db-shm"
cp "$source_db" "$db"
log=$out/sweep.log
: >"$log"
status=0
step=$(mktemp)
trap 'rm -f "$step"' EXIT
tune() { # preset, budget
  echo "== lowbit tune --model $1 (budget $2 s)" | tee -a "$log"
  # SIGINT: the sweep stops before its next measurement and still commits
  # the dispatch ranges of what it measured.
  timeout -s INT -k 30 "$(step_limit "$2")" "$lowbit" tune --measure-only --db "$db" --model "$1" \
    --format w4a16-g128 --run-id "$run_id" --budget "$2" --max-candidates "$max_candidates" \
    >"$step" 2>&1
  local rc=$?
  cat "$step" >>"$log"
  grep -E "^lowbit tune: " "$step" | tail -n 14
  # 0: complete or budget spent (the dispatch table holds what was measured);
  # 2: nothing to measure with (no GPU, no kernels), so nothing after can run.
  if ((rc == 2)); then
    echo "lowbit tune --model $1 exited 2; stopping" | tee -a "$log"
    exit 2
  fi
  ((rc != 0)) && { status=1; echo "lowbit tune --model $1 exited $rc" | tee -a "$log"; }
}
tune Llama-3-8B "$budget_8b"
tune Llama-3-70B "$budget_70b"
"$lowbit" db ls "$db" >"$out/dispatch.txt" 2>&1

# 3. What the runtime dispatches from the tuned database, next to cuBLAS.
echo "== lowbit bench --db (budget $bench_budget s)" | tee -a "$log"
timeout "$(step_limit "$bench_budget")" "$lowbit" bench --db "$db" --m "$bench_m" \
  --budget "$bench_budget" --csv "$out/bench.csv" --json "$out/bench.json" \
  --svg "$out/bench.svg" >"$out/bench.txt" 2>>"$log"
rc=$?
((rc != 0)) && { status=1; echo "lowbit bench exited $rc" | tee -a "$log"; }
# One consistent file (VACUUM INTO) for $OUT: results, dispatch tables, cubins.
rm -f "$out/tuned.db"
"$lowbit" db export "$db" "$out/tuned.db" >>"$log" 2>&1 || status=1
cat "$out/bench.txt"
exit $status
