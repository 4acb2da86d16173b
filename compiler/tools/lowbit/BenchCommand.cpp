// `lowbit bench`: the kernels of a compiled set next to cuBLAS, measured as
// ../shared/PERF.md describes, in one run.
#include "compiler/tools/lowbit/Command.h"

#include "compiler/measure/GraphTimer.h"
#include "compiler/measure/KernelBench.h"
#include "runtime/cuda/Driver.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <memory>

namespace lowbit::cli {
namespace {

struct BenchArgs {
  std::string kernels;
  std::vector<int64_t> rowCounts = {1, 16, 64, 256};
  std::string problem;
  std::string csv;
};

int runBench(const BenchArgs &args) {
  std::string whyNot;
  if (cuda::deviceCount(&whyNot) == 0) {
    std::cerr << "lowbit bench: no GPU: " << whyNot << "\n";
    return 2;
  }
  const cuda::DriverApi &api = *cuda::loadDriver();
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (api.cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      api.cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      api.cuCtxSetCurrent(context) != CUDA_SUCCESS) {
    std::cerr << "lowbit bench: cannot use device 0\n";
    return 2;
  }
  Expected<std::vector<kernels::KernelEntry>> set = kernels::readKernelSet(args.kernels);
  if (!set.ok()) {
    std::cerr << "lowbit bench: " << set.error() << "\n";
    return 1;
  }
  int major = 0, minor = 0;
  api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor) + (major == 9 ? "a" : "");
  std::vector<kernels::KernelEntry> runnable;
  for (const kernels::KernelEntry &entry : *set)
    if (entry.arch == arch)
      runnable.push_back(entry);
  if (runnable.empty()) {
    std::cerr << "lowbit bench: " << args.kernels << " has no kernels for " << arch << "\n";
    return 1;
  }
  Expected<double> copy = measure::copyBandwidthGBs(api, size_t{1} << 30);
  if (!copy.ok()) {
    std::cerr << "lowbit bench: copy bandwidth: " << copy.error() << "\n";
    return 1;
  }
  Expected<std::unique_ptr<measure::Cublas>> cublas = measure::Cublas::load(api);
  if (!cublas.ok())
    std::cerr << "lowbit bench: no cuBLAS baseline: " << cublas.error() << "\n";
  measure::BenchOptions options;
  options.rowCounts = args.rowCounts;
  options.problemFilter = args.problem;
  Expected<std::vector<measure::BenchRow>> rows = measure::benchKernelSet(
      api, runnable, options, *copy, cublas.ok() ? cublas->get() : nullptr, std::cerr);
  if (!rows.ok()) {
    std::cerr << "lowbit bench: " << rows.error() << "\n";
    return 1;
  }
  measure::printBenchTable(*rows, *copy, std::cout);
  if (!args.csv.empty()) {
    std::ofstream csv(args.csv);
    measure::writeBenchCsv(*rows, csv);
  }
  return 0;
}

} // namespace

void addBenchCommand(CLI::App &app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App *bench = app.add_subcommand("bench", "time a compiled kernel set against cuBLAS");
  bench->add_option("--kernels", args->kernels, "kernel-set directory from lowbit compile")
      ->required();
  bench->add_option("--m", args->rowCounts, "row counts M")->delimiter(',');
  bench->add_option("--problem", args->problem, "only problems whose name contains this");
  bench->add_option("--csv", args->csv, "also write the rows as CSV");
  bench->callback([args] { setExitCode(runBench(*args)); });
}

} // namespace lowbit::cli
