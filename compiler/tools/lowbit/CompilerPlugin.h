// The compiler lives in liblowbit_compiler.so next to the `lowbit` binary,
// because it needs LLVM/MLIR and GPU hosts often lack them; the subcommands
// that compile (`compile`, `tune`) load it with dlopen, the rest never do.
#pragma once

#include <string>
#include <vector>

namespace lowbit::cli {

// `lowbit compile`'s body inside the plugin, called with argv.
using CompileMain = int (*)(int, const char *const *);

// The plugin's entry point, or null with the reason in `whyNot` when this
// machine has no compiler.
CompileMain loadCompilerPlugin(std::string &whyNot);

// Calls `compileMain` with argv = {program, args...}; returns its exit code.
int runCompileMain(CompileMain compileMain, const char *program,
                   const std::vector<std::string> &args);

} // namespace lowbit::cli
