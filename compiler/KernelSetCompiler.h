// spec -> IR -> passes -> CUDA -> NVRTC, for every problem x schedule x arch.
#pragma once

#include "compiler/spec/KernelSetSpec.h"
#include "runtime/support/Expected.h"

#include <ostream>
#include <string>
#include <vector>

namespace lowbit::compiler {

struct CompiledKernel {
  spec::ProblemSpec spec;
  std::string problem;   // spec name
  std::string name;      // entry point
  std::string arch;
  std::string family;
  std::string schedule;  // #lb.schedule, printed
  std::string weightLayout;
  int64_t blockThreads = 0;
  std::vector<int64_t> gridTile;
  int registers = 0, sharedBytes = 0, spillBytes = 0, stackBytes = 0;
  std::vector<char> cubin;
  std::string ptx;
  std::string source;
};

struct KernelSetOptions {
  // Either a directory (kernels.json, cubins, sources) or, when it ends in
  // ".db", a kernel database that gains the problems and kernels.
  std::string output;
  // Schedules per family; empty means the built-in defaults.
  std::vector<std::string> schedules;
  // NVRTC threads; 0 means one per hardware thread.
  int jobs = 0;
};

struct KernelSetReport {
  std::vector<CompiledKernel> kernels;
  std::vector<std::string> problems;
  int failures = 0;
};

// The built-in schedules lb-tile can instantiate, as #lb.schedule text.
std::vector<std::string> defaultSchedules();

Expected<KernelSetReport> compileKernelSet(const spec::KernelSetSpec &spec,
                                           const KernelSetOptions &options,
                                           std::ostream &diagnostics);

void printKernelSetReport(const KernelSetReport &report, std::ostream &os);

} // namespace lowbit::compiler
