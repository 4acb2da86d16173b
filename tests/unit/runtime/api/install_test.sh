#!/usr/bin/env bash
# Installs liblowbit_runtime into a scratch prefix, builds examples/host_app
# against the installed package (find_package(lowbit); also pkg-config when
# it is installed) and runs it on the test kernel database.
#
# Exit codes: 0 pass; 77 skipped (no GPU here, or no kernel database was
# compiled, so the app could only be built); anything else fails.
set -euo pipefail

: "${LOWBIT_BUILD_DIR:?}" "${LOWBIT_SOURCE_DIR:?}" "${LOWBIT_SCRATCH:?}"
generator="${LOWBIT_GENERATOR:-Ninja}"
prefix="$LOWBIT_SCRATCH/prefix"
rm -rf "$LOWBIT_SCRATCH"
mkdir -p "$LOWBIT_SCRATCH"

echo "== cmake --install (component lowbit_runtime) into $prefix"
cmake --install "$LOWBIT_BUILD_DIR" --component lowbit_runtime --prefix "$prefix"
test -f "$prefix/include/lowbit/lowbit.h"

echo "== configure + build examples/host_app with find_package(lowbit)"
cmake -S "$LOWBIT_SOURCE_DIR/examples/host_app" -B "$LOWBIT_SCRATCH/app" -G "$generator" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  ${LOWBIT_C_COMPILER:+-DCMAKE_C_COMPILER="$LOWBIT_C_COMPILER"}
cmake --build "$LOWBIT_SCRATCH/app"
app="$LOWBIT_SCRATCH/app/lowbit_host_app"
test -x "$app"

pc_app=""
if [[ -n "${LOWBIT_PKG_CONFIG:-}" ]] && command -v "$LOWBIT_PKG_CONFIG" >/dev/null; then
  echo "== build examples/host_app with pkg-config"
  pcdir="$(dirname "$(find "$prefix" -name lowbit.pc | head -n 1)")"
  flags="$(PKG_CONFIG_PATH="$pcdir" "$LOWBIT_PKG_CONFIG" --cflags --libs lowbit)"
  echo "pkg-config --cflags --libs lowbit: $flags"
  pc_app="$LOWBIT_SCRATCH/lowbit_host_app_pc"
  # shellcheck disable=SC2086 # the flags are a word list
  "${LOWBIT_C_COMPILER:-cc}" -std=c99 -Wall -Wextra -Werror -pedantic -O2 \
    "$LOWBIT_SOURCE_DIR/examples/host_app/main.c" -o "$pc_app" $flags -lm
  libdir="$(PKG_CONFIG_PATH="$pcdir" "$LOWBIT_PKG_CONFIG" --variable=libdir lowbit)"
else
  echo "== pkg-config not installed; the pkg-config build is not checked"
fi

run() { # app [env...]: runs the app, returns its exit code
  local status=0
  "$@" "${LOWBIT_TEST_DB:-/nonexistent/runtime-tests.db}" || status=$?
  return "$status"
}

echo "== run (find_package build)"
status=0
run "$app" || status=$?
if [[ -n "$pc_app" ]]; then
  echo "== run (pkg-config build)"
  pc_status=0
  LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run "$pc_app" || pc_status=$?
  if [[ $pc_status -ne $status ]]; then
    echo "the two builds disagree: exit $status vs $pc_status"
    exit 1
  fi
fi
if [[ $status -ne 0 && $status -ne 77 && ! -f "${LOWBIT_TEST_DB:-/nonexistent}" ]]; then
  echo "no test kernel database at ${LOWBIT_TEST_DB:-<unset>} (built without the compiler);"
  echo "the app was installed and built, but could not be run: skipped"
  exit 77
fi
exit "$status"
