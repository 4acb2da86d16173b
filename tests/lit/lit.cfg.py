import os

import lit.formats

config.name = "lowbit"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".toml"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.lowbit_obj_root
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]

# lowbit's tools first, then FileCheck and `not` from LLVM.
config.environment["PATH"] = os.pathsep.join(
    [config.lowbit_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
