// spec -> IR -> passes -> CUDA -> NVRTC, for every problem x schedule x arch.
#pragma once

#include "compiler/KernelSetOutput.h"
#include "compiler/spec/KernelSetSpec.h"
#include "core/support/Expected.h"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace lowbit::compiler {

struct KernelSetOptions {
  // Either a directory (kernels.json, cubins, sources) or, when it ends in
  // ".db", a kernel database that gains the problems and kernels.
  std::string output;
  // Schedules per family; empty means the built-in defaults.
  std::vector<std::string> schedules;
  // NVRTC threads; 0 means one per hardware thread.
  int jobs = 0;
  // Compiles one kernel's CUDA: nvrtc::compile unless set (tests stand in a
  // compile that fails for a chosen kernel). Called from several threads.
  std::function<Expected<nvrtc::CompileResult>(const nvrtc::CompileRequest &)> compile;
};

// The built-in schedules lb-tile can instantiate, as #lb.schedule text.
std::vector<std::string> defaultSchedules();

Expected<KernelSetReport> compileKernelSet(const spec::KernelSetSpec &spec,
                                           const KernelSetOptions &options,
                                           std::ostream &diagnostics);

} // namespace lowbit::compiler
