// lowbit: the command-line front end. It links no LLVM/MLIR so that it starts
// on GPU hosts that have none; `lowbit compile` loads the compiler library on
// demand (see CompileCommand.cpp).
#include "compiler/tools/lowbit/Command.h"

#include <CLI/CLI.hpp>

int main(int argc, char **argv) {
  CLI::App app{"lowbit: low-bit mixed-precision matmul compiler, tuner and kernel database"};
  app.require_subcommand(1);
  app.set_version_flag("--version", LOWBIT_VERSION_STRING);
  lowbit::cli::addCompileCommand(app);
  lowbit::cli::addFormatsCommand(app);
  lowbit::cli::addImportCommand(app);
  lowbit::cli::addDbCommand(app);
  lowbit::cli::addBenchCommand(app);
  lowbit::cli::addTuneCommand(app);
  CLI11_PARSE(app, argc, argv);
  return lowbit::cli::exitCode();
}
