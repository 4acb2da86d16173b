#!/usr/bin/env bash
# Stages the compiler for a GPU host that has no LLVM/MLIR (docs/architecture.md,
# "Layers"), so that `lowbit tune` can compile and measure there in one
# command (scripts/device-tune-overlap.sh). Into .device-compiler/ (ignored by
# git) it puts
#   bin/lowbit                   the CLI (links no LLVM),
#   lib/liblowbit_compiler.so    the compiler, where lowbit dlopens it
#                                (<dir of lowbit>/../lib/liblowbit_compiler.so),
#   libs.tar.xz                  the compiler's shared libraries that the GPU
#                                host lacks: every library it needs,
#                                transitively, less glibc, libstdc++, libgcc_s,
#                                libsqlite3, NVRTC and the CUDA driver, which
#                                the host has,
#   libs.txt, staged.txt         what is in the archive; the commit staged.
# The binaries are stripped copies of $LOWBIT_BUILD_DIR's (default build/),
# which is brought up to date first for those two targets only
# (LOWBIT_STAGE_BUILD=0: use it as it is). The archive is cached in
# $LOWBIT_BUILD_DIR/device-compiler/ while the libraries do not change:
# compressing them takes minutes. Fails if .device-compiler/ exceeds
# $LOWBIT_STAGE_LIMIT_MIB (default 62) MiB, as everything carried to the GPU
# host must stay under 64 MiB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOWBIT_BUILD_DIR:-$root/build}
stage=$root/.device-compiler
cache=$build/device-compiler
limit_mib=${LOWBIT_STAGE_LIMIT_MIB:-62}
# BCJ for x86 code, then LZMA2 at its strongest: 49 MB for LLVM 19 + MLIR 19
# and their dependencies, against 54 MB for plain `xz -6`.
xz_options=(-T1 --x86 --lzma2=preset=9e)

if [[ ${LOWBIT_STAGE_BUILD:-1} != 0 ]]; then
  cmake --build "$build" --target lowbit lowbit_compiler
fi
lowbit=$build/bin/lowbit
compiler=$build/lib/liblowbit_compiler.so
for file in "$lowbit" "$compiler"; do
  if [[ ! -f $file ]]; then
    echo "no $file: build it with the compiler (scripts/configure.sh, or LOWBIT_BUILD_DIR)" >&2
    exit 1
  fi
done

# Libraries the GPU host has (docs/architecture.md, "Layers": Ubuntu 24.04 with
# glibc, g++ 13, the CUDA 13 toolkit and driver, and libsqlite3.so.0).
on_host() {
  case $1 in
    ld-linux*.so* | linux-vdso.so* | libc.so* | libm.so* | libmvec.so* | libpthread.so* | \
      librt.so* | libdl.so* | libutil.so* | libresolv.so* | libanl.so* | libstdc++.so* | \
      libgcc_s.so* | libsqlite3.so* | libnvrtc*.so* | libcuda.so* | libcudart.so*)
      return 0 ;;
  esac
  return 1
}

# Where this machine's loader finds each library the compiler loads.
declare -A path_of
while read -r name arrow path _; do
  [[ $arrow == "=>" ]] || continue
  if [[ $path == not ]]; then
    echo "ldd $compiler: $name not found here" >&2
    exit 1
  fi
  path_of[$name]=$path
done < <(ldd "$compiler")

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# The closure of DT_NEEDED from the compiler, not descending into libraries
# the host has (their own dependencies are the host's business).
declare -A bundled
queue=("$compiler")
while ((${#queue[@]})); do
  file=${queue[0]}
  queue=("${queue[@]:1}")
  for name in $(needed "$file"); do
    on_host "$name" && continue
    [[ -n ${bundled[$name]:-} ]] && continue
    if [[ -z ${path_of[$name]:-} ]]; then
      echo "$file needs $name, which ldd did not resolve" >&2
      exit 1
    fi
    bundled[$name]=$(readlink -f "${path_of[$name]}")
    queue+=("${bundled[$name]}")
  done
done
mapfile -t names < <(printf '%s\n' "${!bundled[@]}" | sort)

rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$cache"
strip --strip-unneeded -o "$stage/bin/lowbit" "$lowbit"
strip --strip-unneeded -o "$stage/lib/liblowbit_compiler.so" "$compiler"
for name in "${names[@]}"; do
  printf '%-22s %10s  %s\n' "$name" "$(stat -c %s "${bundled[$name]}")" "${bundled[$name]}"
done >"$stage/libs.txt"

# The archive, unless the cached one was made from the same files.
key=$(for name in "${names[@]}"; do stat -c '%n %s %Y' "${bundled[$name]}"; done
  echo "${xz_options[*]}")
if [[ -f $cache/libs.tar.xz && -f $cache/libs.key && $(cat "$cache/libs.key") == "$key" ]]; then
  echo "libs.tar.xz: cached in $cache"
else
  echo "libs.tar.xz: compressing ${#names[@]} libraries ($(du -shcL "${bundled[@]}" | tail -1 | cut -f1)); this takes minutes"
  files=$(mktemp -d)
  trap 'rm -rf "$files"' EXIT
  for name in "${names[@]}"; do
    cp -L "${bundled[$name]}" "$files/$name"
  done
  rm -f "$cache/libs.key"
  tar -C "$files" --sort=name --owner=0 --group=0 --numeric-owner -cf - "${names[@]}" |
    xz "${xz_options[@]}" >"$cache/libs.tar.xz.part"
  mv "$cache/libs.tar.xz.part" "$cache/libs.tar.xz"
  echo "$key" >"$cache/libs.key"
fi
cp "$cache/libs.tar.xz" "$stage/libs.tar.xz"

{
  echo "commit $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "build $build"
  echo "staged $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$stage/staged.txt"

cat "$stage/libs.txt"
du -b "$stage/bin/lowbit" "$stage/lib/liblowbit_compiler.so" "$stage/libs.tar.xz"
bytes=$(du -sb "$stage" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
if ((bytes > limit_mib * 1048576)); then
  echo "$stage is $mib MiB, over the $limit_mib MiB limit: it cannot be carried to the GPU host" >&2
  exit 1
fi
echo "$stage: $mib MiB (limit $limit_mib MiB)"
