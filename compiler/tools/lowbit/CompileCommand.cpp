// `lowbit compile`: the compiler plugin's own command line (CompilerPlugin.h).
#include "compiler/tools/lowbit/Command.h"
#include "compiler/tools/lowbit/CompilerPlugin.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace lowbit::cli {
namespace {

int runCompiler(const std::vector<std::string> &args) {
  std::string whyNot;
  CompileMain compileMain = loadCompilerPlugin(whyNot);
  if (!compileMain) {
    std::cerr << "lowbit compile: the compiler is not available on this machine (" << whyNot
              << ").\n"
              << "It needs LLVM/MLIR 19; compile on a machine that has them and "
                 "copy the kernel database here.\n";
    return 2;
  }
  return runCompileMain(compileMain, "lowbit compile", args);
}

} // namespace

void addCompileCommand(CLI::App &app) {
  CLI::App *compile = app.add_subcommand(
      "compile", "compile a kernel set from a spec (loads the MLIR compiler)");
  compile->prefix_command();
  compile->set_help_flag();
  compile->callback([compile] {
    std::vector<std::string> args = compile->remaining();
    setExitCode(runCompiler(args));
  });
}

} // namespace lowbit::cli
