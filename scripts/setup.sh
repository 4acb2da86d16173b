#!/usr/bin/env bash
# Installs lowbit's build dependencies from Debian's packages. Idempotent:
# packages already present are not touched, and apt runs only when needed.
set -euo pipefail

packages=(
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libsqlite3-dev libfmt-dev libgtest-dev cmake ninja-build ccache lld
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev python3 g++
  clang libclang-rt-14-dev # the libFuzzer targets (scripts/fuzz.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "lowbit setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [[ ! -f "$cuda_root/include/nvrtc.h" ]]; then
  echo "lowbit setup: no CUDA Toolkit at $cuda_root (nvrtc.h missing)." >&2
  echo "Install the CUDA Toolkit 12.x/13.x there, or set CUDAToolkit_ROOT." >&2
  exit 1
fi
