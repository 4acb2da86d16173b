// `lowbit compile` needs LLVM/MLIR, which GPU hosts often lack, so the
// compiler lives in liblowbit_compiler.so next to this binary and is loaded
// only when this subcommand runs.
#include "compiler/tools/lowbit/Command.h"

#include <CLI/CLI.hpp>

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

namespace lowbit::cli {
namespace {

std::string executableDir() {
  char path[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0)
    return ".";
  std::string full(path, static_cast<size_t>(length));
  return full.substr(0, full.find_last_of('/'));
}

int runCompiler(const std::vector<std::string> &args) {
  std::string library = executableDir() + "/../lib/liblowbit_compiler.so";
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    std::cerr << "lowbit compile: the compiler is not available on this machine ("
              << (why ? why : library) << ").\n"
              << "It needs LLVM/MLIR 19; compile on a machine that has them and "
                 "copy the kernel database here.\n";
    return 2;
  }
  using CompileMain = int (*)(int, const char *const *);
  auto compileMain = reinterpret_cast<CompileMain>(dlsym(handle, "lowbit_compile_main"));
  if (!compileMain) {
    std::cerr << "lowbit compile: " << library << " lacks lowbit_compile_main\n";
    return 2;
  }
  std::vector<const char *> argv = {"lowbit compile"};
  for (const std::string &arg : args)
    argv.push_back(arg.c_str());
  return compileMain(static_cast<int>(argv.size()), argv.data());
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
