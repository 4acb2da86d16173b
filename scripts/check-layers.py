#!/usr/bin/env python3
"""Fails when a source file includes a header of a layer it may not use.

The layers and their arrows are docs/architecture.md's ("Layers"):
core -> ir -> passes -> codegen -> compiler, and core -> tuning_db -> runtime,
and nothing that runs on a GPU host includes MLIR or LLVM. The include paths
hold the arrows too (cmake/LowbitLayers.cmake: a target sees only what it
links); this check also catches a target that links a layer it should not,
and states the rules as data. ctest runs it as `layers`.

Usage: check-layers.py [SOURCE_ROOT]
"""
import os
import re
import sys

# Folder (longest prefix wins) -> the include prefixes its files may use.
# "lowbit/" is the C ABI header (runtime/include) and the embedded device
# headers' own spelling.
NO_LLVM = ["core/", "lowbit/"]
ALLOWED = {
    "core": NO_LLVM,
    "codegen/device": NO_LLVM + ["codegen/device/"],
    "codegen/nvrtc": NO_LLVM + ["codegen/device/", "codegen/nvrtc/"],
    "tuning_db": NO_LLVM + ["tuning_db/", "runtime/cuda/"],
    "runtime": NO_LLVM + ["tuning_db/", "runtime/"],
    "ir": NO_LLVM + ["ir/", "mlir/", "llvm/"],
    "passes": NO_LLVM + ["ir/", "passes/", "mlir/", "llvm/"],
    "codegen/emit": NO_LLVM + ["ir/", "codegen/", "mlir/", "llvm/"],
}
# The halves of compiler/ that run on GPU hosts: no MLIR, no LLVM, and none
# of the layers that bring them.
GPU_HOST = NO_LLVM + ["codegen/nvrtc/", "codegen/device/", "tuning_db/", "runtime/",
                      "compiler/spec/", "compiler/measure/", "compiler/tuner/",
                      "compiler/tools/lowbit/", "compiler/KernelSetOutput.h", "compiler/import/"]
# The Python extension binds the runtime's C ABI and the formats library.
ALLOWED["python"] = NO_LLVM + ["compiler/spec/"]
for folder in ["compiler/spec", "compiler/measure", "compiler/tuner", "compiler/tools/lowbit",
               "compiler/KernelSetOutput", "compiler/import"]:
    ALLOWED[folder] = GPU_HOST

INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')
SOURCES = (".c", ".h", ".cpp", ".cu", ".cuh")


def layer_of(path):
    best = None
    for folder in ALLOWED:
        if path == folder or path.startswith(folder + "/") or path.startswith(folder + "."):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.getcwd())
    violations = []
    for folder in sorted({f.split("/")[0] for f in ALLOWED}):
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if not name.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root)
                layer = layer_of(path)
                if layer is None:
                    continue
                with open(os.path.join(root, path), errors="replace") as source:
                    for number, line in enumerate(source, 1):
                        match = INCLUDE.match(line)
                        # Same-folder includes ("Foo.h", "Foo.h.inc") are fine.
                        if not match or "/" not in match.group(1):
                            continue
                        header = match.group(1)
                        if not any(header.startswith(p) for p in ALLOWED[layer]):
                            violations.append(f"{path}:{number}: {layer} includes {header}")
    for violation in violations:
        print(violation)
    if violations:
        print(f"{len(violations)} includes cross a layer the wrong way (docs/architecture.md)")
        return 1
    print("every include keeps to its layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
