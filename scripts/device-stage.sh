#!/usr/bin/env bash
# Builds everything the GPU machine runs and copies it into .device/ (ignored
# by git), to be carried to the GPU machine, which has no LLVM/MLIR and no
# sqlite3.h: the GPU binaries link no LLVM, and SQLite and GoogleTest are
# linked statically, so binaries built here run there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOWBIT_BUILD_DIR:-$root/build}
[[ ${LOWBIT_STAGE_NO_BUILD:-0} == 1 ]] || "$root/scripts/configure.sh"
rm -rf "$root/.device"
mkdir -p "$root/.device/bin" "$root/.device/lib"
for binary in "$build"/bin/*_gpu_tests "$build"/bin/lowbit; do
  [[ -x $binary ]] && cp "$binary" "$root/.device/bin/"
done
# The host app as the install test built it against the installed package.
app=$build/tests/unit/runtime/api/install-test/app/lowbit_host_app
[[ -x $app ]] && cp "$app" "$root/.device/bin/"
# The runtime GPU tests and the host app link the C API's shared library.
cp -P "$build"/lib/liblowbit_runtime.so* "$root/.device/lib/" 2>/dev/null || true
# The widths benchmark's kernel set (device-run.sh), compiled by the lowbit
# just built whenever it is older than that binary.
widths=$build/kernels/perf-widths
if [[ -x $build/bin/lowbit && ( ! -f $widths/kernels.json || $build/bin/lowbit -nt $widths/kernels.json ) ]]; then
  rm -rf "$widths"
  "$build/bin/lowbit" compile "$root/examples/specs/perf-widths-g128.toml" -o "$widths" >/dev/null
fi
# Kernel sets travel as manifests and cubins; their sources and PTX stay here.
# Compressed with xz: cubins and SQLite files shrink more than 10x, and a
# device call carries at most 64 MiB. device-run.sh unpacks it.
if [[ -d $build/kernels ]]; then
  (cd "$build" && tar cf - --exclude='*.cu' --exclude='*.ptx' \
  --exclude='example-check*' --exclude='*.db-shm' --exclude='*.db-wal' kernels) |
    xz -T0 >"$root/.device/kernels.tar.xz"
fi
# The compile-only tuning database scripts/device-sweep.sh measures, when one
# was made (docs/sweeps/README.md).
sweep_db=${LOWBIT_SWEEP_DB:-$build/sweep/sweep.db}
if [[ -f $sweep_db ]]; then
  mkdir -p "$root/.device/sweep"
  xz -T0 -c "$sweep_db" >"$root/.device/sweep/sweep.db.xz"
fi
# A compile-only tuning database of candidates (lowbit tune --compile-only),
# which device-run.sh measures and then benches through the dispatcher.
tune_db=${LOWBIT_TUNE_DB:-$build/tune/tuned.db}
if [[ -f $tune_db ]]; then
  mkdir -p "$root/.device/tune"
  xz -T0 -c "$tune_db" >"$root/.device/tune/tuned.db.xz" # 38 MB of cubins: 3 MB
fi
du -sh "$root/.device"
