#include "compiler/tools/lowbit/CompilerPlugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

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

} // namespace

CompileMain loadCompilerPlugin(std::string &whyNot) {
  std::string library = executableDir() + "/../lib/liblowbit_compiler.so";
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    whyNot = why ? why : library;
    return nullptr;
  }
  auto main = reinterpret_cast<CompileMain>(dlsym(handle, "lowbit_compile_main"));
  if (!main)
    whyNot = library + " lacks lowbit_compile_main";
  return main;
}

int runCompileMain(CompileMain compileMain, const char *program,
                   const std::vector<std::string> &args) {
  std::vector<const char *> argv = {program};
  for (const std::string &arg : args)
    argv.push_back(arg.c_str());
  return compileMain(static_cast<int>(argv.size()), argv.data());
}

} // namespace lowbit::cli
