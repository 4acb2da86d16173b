#!/usr/bin/env bash
# Runs on the GPU machine: Nsight Compute over `lowbit bench` for the kernels
# whose names match $1 (a regex), at the problems and M values given after it
# (passed to `lowbit bench`). Prints the speed-of-light, occupancy and
# warp-stall sections, and the SASS of the matching cubins, into $OUT.
# LOWBIT_PROFILE_KERNELS names the kernel set (default .device/kernels/bench).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/.device/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
regex=$1
shift
kernels=${LOWBIT_PROFILE_KERNELS:-$root/.device/kernels/bench}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$ncu" -k "regex:$regex" -c "${LOWBIT_PROFILE_COUNT:-4}" \
  --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --section MemoryWorkloadAnalysis --section LaunchStats --section SchedulerStats \
  "$root/.device/bin/lowbit" bench --kernels "$kernels" "$@" \
  >"$out/ncu.txt" 2>&1
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for cubin in "$kernels"/*.cubin; do
  if [[ $(basename "$cubin") =~ $regex ]]; then
    "$cuobjdump" -sass "$cubin" >"$out/$(basename "$cubin" .sm_90a.cubin).sass" 2>&1
  fi
done
grep -E "^  [a-z_0-9]+.*\(|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Issue Slots Busy|Stall|No Eligible|Warp Cycles Per Issued" "$out/ncu.txt" | head -120
