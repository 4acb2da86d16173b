#!/usr/bin/env bash
# Runs on the GPU host, from the repository root, with .device-compiler/
# carried there by scripts/device-stage-compiler.sh: compiles and measures in
# one `lowbit tune` (no --compile-only, --measure-only or --no-ptx), so the
# candidates of each problem after the first compile on a background thread
# while the GPU measures earlier problems. Then benches what the tuned
# database dispatches against cuBLAS (`lowbit bench --db`). It
#   1. unpacks the compiler's libraries (libs.tar.xz) into a temporary folder
#      and checks that the loader finds everything liblowbit_compiler.so needs
#      there (exit 1 with the missing ones otherwise),
#   2. prints the device (device.txt),
#   3. tunes, logging to overlap.log: the lines "compiled problem i/n in S s,
#      while measuring problem j" are the overlap,
#   4. benches (bench.txt, bench.csv), lists the dispatch (dispatch.txt),
#   5. prints a summary (summary.txt).
# Outputs go to $OUT (default .device-compiler/out), at most 8 files:
# device.txt, overlap.log, summary.txt, bench.txt, bench.csv, dispatch.txt and
# tuned.db (tuned.db.gz when over 15 MiB). The defaults take about three
# minutes on an H200; the settings are the variables below.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$root/.device-compiler
out=${OUT:-$stage/out}
mkdir -p "$out"

model=${LOWBIT_OVERLAP_MODEL:-Llama-3-8B}   # a preset of lowbit tune --model,
shapes=${LOWBIT_OVERLAP_SHAPES:-}           # or problems as NxK,NxK (wins when set)
max_candidates=${LOWBIT_OVERLAP_MAX_CANDIDATES:-8}
budget=${LOWBIT_OVERLAP_BUDGET:-90}         # seconds of measuring, shared by the problems
m_points=${LOWBIT_OVERLAP_M:-}              # lowbit tune --m (default: the tuner's, 1..4096)
bench_budget=${LOWBIT_BENCH_BUDGET:-40}
bench_m=${LOWBIT_BENCH_M:-1,16,64,256}
run_id=${LOWBIT_OVERLAP_RUN_ID:-overlap-$(date -u +%Y%m%dT%H%M%SZ)}

lowbit=$stage/bin/lowbit
compiler=$stage/lib/liblowbit_compiler.so
for file in "$lowbit" "$compiler" "$stage/libs.tar.xz"; do
  if [[ ! -f $file ]]; then
    echo "no $file: stage it with scripts/device-stage-compiler.sh and carry .device-compiler" >&2
    exit 2
  fi
done
log=$out/overlap.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }

# 1. The libraries, used by lowbit alone: this shell's tools keep the host's.
work=$(mktemp -d "${TMPDIR:-/tmp}/lowbit-overlap.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/libs"
started=$SECONDS
if ! tar -C "$work/libs" -xJf "$stage/libs.tar.xz"; then
  say "cannot unpack $stage/libs.tar.xz"
  exit 1
fi
say "unpacked $(find "$work/libs" -type f | wc -l) libraries ($(du -sh "$work/libs" | cut -f1)) in $((SECONDS - started)) s"
libpath=$work/libs:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
with_libs=(env "LD_LIBRARY_PATH=$libpath")
ldd_out=$("${with_libs[@]}" ldd "$compiler" "$lowbit" 2>&1)
ldd_rc=$?
missing=$(grep -E 'not found|error|not a dynamic' <<<"$ldd_out")
if ((ldd_rc != 0)) || [[ -n $missing ]]; then
  say "the loader cannot find what the compiler needs (ldd exited $ldd_rc):"
  say "${missing:-$ldd_out}"
  exit 1
fi
"${with_libs[@]}" ldd "$compiler" | awk -v libs="$work/libs/" \
  'index($3, libs) == 1 { n++ } END { printf "ldd: every library found, %d of them from libs.tar.xz\n", n }' |
  tee -a "$log"
# dlopen with RTLD_NOW, as lowbit tune does: every symbol must resolve.
if ! why=$("${with_libs[@]}" "$lowbit" compile --help 2>&1 >/dev/null); then
  say "lowbit cannot load $compiler:"
  say "$why"
  exit 1
fi
say "lowbit loads the compiler"

# 2. The device.
{
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
      --format=csv 2>&1
  fi
  "${with_libs[@]}" "$lowbit" bench --device 2>&1
  echo "cores $(nproc)"
  echo "run id $run_id"
  cat "$stage/staged.txt" 2>/dev/null
} >"$out/device.txt"
cat "$out/device.txt"

# 3. Compile and measure. SIGINT at the limit: the sweep stops before its next
# measurement and still commits the dispatch of what it measured.
db=$work/tuned.db
if [[ -n $shapes ]]; then problems=(--shapes "$shapes"); else problems=(--model "$model"); fi
tune=("$lowbit" tune --db "$db" "${problems[@]}" --format w4a16-g128 --run-id "$run_id"
  --max-candidates "$max_candidates" --budget "$budget")
[[ -n $m_points ]] && tune+=(--m "$m_points")
say "== lowbit ${tune[*]:1}"
started=$SECONDS
from=$(wc -l <"$log")
# stdbuf: the compiler's tables (stdout) and the tuner's log (stderr) in the
# order they happened.
timeout -s INT -k 30 $((budget + 150)) "${with_libs[@]}" stdbuf -oL -eL "${tune[@]}" >>"$log" 2>&1
tune_rc=$?
tune_seconds=$((SECONDS - started))
say "lowbit tune exited $tune_rc after $tune_seconds s"
if ((tune_rc == 0)); then
  grep -E '^lowbit tune: (compiled|no compiler)|^compiling ' "$log"
else
  tail -n +$((from + 1)) "$log" | tail -n 15
fi
if ((tune_rc == 2)); then
  say "lowbit tune could not start measuring (exit 2; overlap.log says why)"
  exit 2
fi
status=0
((tune_rc != 0)) && status=1

# 4. What the runtime now dispatches, next to cuBLAS (cublasLt, loaded by lowbit).
"${with_libs[@]}" "$lowbit" db ls "$db" >"$out/dispatch.txt" 2>&1 || status=1
say "== lowbit bench --db tuned.db --m $bench_m --budget $bench_budget"
timeout $((bench_budget + 90)) "${with_libs[@]}" "$lowbit" bench --db "$db" --m "$bench_m" \
  --budget "$bench_budget" --csv "$out/bench.csv" >"$out/bench.txt" 2>>"$log"
bench_rc=$?
((bench_rc != 0)) && { status=1; say "lowbit bench exited $bench_rc"; }

# One consistent file for $OUT (SQLite's -wal/-shm files would count as files).
rm -f "$out/tuned.db" "$out/tuned.db.gz"
if "${with_libs[@]}" "$lowbit" db export "$db" "$out/tuned.db" >>"$log" 2>&1; then
  (($(stat -c %s "$out/tuned.db") > 15 * 1048576)) && gzip -9 "$out/tuned.db"
else
  status=1
fi

# 5. Summary: per problem, the candidates compiled and measured; the overlap;
# the best median µs per M (and x cuBLAS); then the bench.
{
  echo
  echo "== summary (run $run_id, lowbit tune exited $tune_rc after $tune_seconds s)"
  awk '
    /^compiling / { name = $2; order[++n] = name; asked[name] = $4 " of " $6; next }
    /^[0-9]+ kernels for 1 problems, [0-9]+ failures/ { compiled[name] = $1; failed[name] = $6 }
    /^  [^ ]+ +[0-9]+ candidates, +[0-9]+ measurements, [0-9]+ pruned/ {
      measured[$1] = $2; points[$1] = $4; pruned[$1] = $6 }
    /^lowbit tune: compiled problem / { how[$5] = substr($0, index($0, " in ") + 4) }
    END {
      printf "%-28s %-16s %8s %6s %10s %7s %7s  %s\n", "problem", "schedules", "compiled",
        "failed", "candidates", "points", "pruned", "compiled"
      for (i = 1; i <= n; i++) {
        p = order[i]
        printf "%-28s %-16s %8s %6s %10s %7s %7s  %s\n", p, asked[p], compiled[p], failed[p],
          measured[p], points[p], pruned[p],
          (i == 1 ? "first, before measuring" : how[i "/" n])
      }
    }' "$log"
  echo "(schedules: compiled of those the search space accepts; candidates and points: planned"
  echo " for measuring, the (kernel, M) points the cost model pruned left out)"
  grep -E '^lowbit tune: (compiled [0-9]+ problem|.*; measured [0-9]+, skipped)' "$log"
  echo
  echo "best median us per M (speedup over cuBLAS), from lowbit tune:"
  awk '
    $1 == "problem" && $2 == "M" { table = 1; next }
    table && /^lowbit tune: / { table = 0 }
    table && NF >= 5 {
      if (!($1 in seen)) { seen[$1] = 1; problems[++np] = $1 }
      if (!($2 in mseen)) { mseen[$2] = 1; ms[++nm] = $2 }
      cell[$1, $2] = $3 ($5 == "-" ? "" : " (" $5 "x)")
    }
    END {
      if (!np) { print "  (no best table: see overlap.log)"; exit }
      printf "%6s", "M"
      for (i = 1; i <= np; i++) printf "  %-22s", substr(problems[i], 1, 22)
      printf "\n"
      for (j = 1; j <= nm; j++) {
        printf "%6s", ms[j]
        for (i = 1; i <= np; i++) printf "  %-22s", cell[problems[i], ms[j]]
        printf "\n"
      }
    }' "$log"
  if [[ -s $out/bench.txt ]]; then
    echo
    echo "lowbit bench --db (the dispatched kernel next to cuBLAS):"
    cat "$out/bench.txt"
  fi
  if grep -q '^lowbit tune: compiled problem .* while measuring problem' "$log"; then
    echo "overlap: yes (compiled while the GPU measured)"
  else
    echo "overlap: NOT seen (no 'compiled problem i/n ... while measuring' line in overlap.log)"
  fi
} >"$out/summary.txt"
cat "$out/summary.txt"
exit $status
