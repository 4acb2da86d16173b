// `lowbit bench`: lowbit's kernels next to cuBLAS, measured as
// docs/architecture.md describes, in one run, with the copy bandwidth (the
// memory roof) measured by a copy kernel in the same run.
//
// --db FILE: for each problem in the database, the kernel the runtime would
//   dispatch on this device at each M (DispatchBench.h), with the lookup
//   tier and the M range it serves.
// --kernels DIR: the fastest correct kernel of a compiled kernel set at each
//   M (KernelBench.h).
#include "compiler/tools/lowbit/Command.h"

#include "compiler/measure/BenchReport.h"
#include "compiler/measure/CopyBandwidth.h"
#include "compiler/measure/DispatchBench.h"
#include "compiler/measure/KernelBench.h"
#include "runtime/cuda/Driver.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <memory>

namespace lowbit::cli {
namespace {

struct BenchArgs {
  bool device = false;
  std::string kernels, db;
  std::vector<int64_t> rowCounts = {1, 16, 64, 256};
  std::string problem;
  std::string csv, json, svg;
  double budget = 0;
};

// Writes one output file through `write`; false (with a message) on failure.
template <typename Write>
bool writeFile(const std::string &path, const char *what, Write &&write) {
  if (path.empty())
    return true;
  std::ofstream out(path);
  write(out);
  out.close();
  if (!out) {
    std::cerr << "lowbit bench: cannot write the " << what << " to " << path << "\n";
    return false;
  }
  return true;
}

// The rows of --kernels mode: the kernel set's kernels for this device.
Expected<std::vector<measure::BenchRow>> benchKernelSet(const cuda::DriverApi &api,
                                                        const BenchArgs &args,
                                                        const std::string &arch, int64_t smCount,
                                                        double copyGBs,
                                                        const measure::Cublas *cublas) {
  Expected<std::vector<kernels::KernelEntry>> set = kernels::readKernelSet(args.kernels);
  if (!set.ok())
    return makeError(set.error());
  std::vector<kernels::KernelEntry> runnable;
  for (const kernels::KernelEntry &entry : *set)
    if (entry.arch == arch)
      runnable.push_back(entry);
  if (runnable.empty())
    return makeError(args.kernels + " has no kernels for " + arch);
  measure::BenchOptions options;
  options.rowCounts = args.rowCounts;
  options.problemFilter = args.problem;
  options.smCount = smCount;
  return measure::benchKernelSet(api, runnable, options, copyGBs, cublas, std::cerr);
}

// `--device`: the fingerprint the tuning database keys this GPU by.
int printDevice() {
  Expected<db::DeviceFingerprint> fingerprint = db::readFingerprint(0);
  if (!fingerprint.ok()) {
    std::cerr << "lowbit bench: " << fingerprint.error() << "\n";
    return 2;
  }
  const db::DeviceFingerprint &f = *fingerprint;
  std::cout << "device: " << f.name << "\ncompute capability: " << f.ccMajor << "." << f.ccMinor
            << "\nSMs: " << f.smCount << "\nL2 bytes: " << f.l2Bytes
            << "\nshared memory per block (opt-in) bytes: " << f.sharedMemPerBlockOptinBytes
            << "\nmemory clock kHz: " << f.memoryClockKhz
            << "\nmemory bus width bits: " << f.memoryBusWidthBits
            << "\ndriver: " << f.driverVersion << "\nCUDA driver API: " << f.cudaVersion
            << "\nfingerprint id: " << f.id() << "\n";
  return 0;
}

int runBench(const BenchArgs &args) {
  const char *me = "lowbit bench: ";
  if (args.device)
    return printDevice();
  if (args.kernels.empty() == args.db.empty()) {
    std::cerr << me << "give exactly one of --db and --kernels\n";
    return 2;
  }
  std::string whyNot;
  if (cuda::deviceCount(&whyNot) == 0) {
    std::cerr << me << "no GPU: " << whyNot << "\n";
    return 2;
  }
  const cuda::DriverApi &api = *cuda::loadDriver();
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (api.cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      api.cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      api.cuCtxSetCurrent(context) != CUDA_SUCCESS) {
    std::cerr << me << "cannot use device 0\n";
    return 2;
  }
  Expected<db::DeviceFingerprint> fingerprint = db::readFingerprint(0);
  if (!fingerprint.ok()) {
    std::cerr << me << fingerprint.error() << "\n";
    return 2;
  }
  const db::DeviceFingerprint &f = *fingerprint;
  // The spec's arch names: Hopper kernels are built for sm_90a (wgmma).
  std::string arch = "sm_" + std::to_string(f.ccMajor) + std::to_string(f.ccMinor) +
                     (f.ccMajor == 9 ? "a" : "");
  std::cerr << me << f.name << " (" << arch << ", " << f.smCount << " SMs), device id "
            << f.id().substr(0, 12) << "\n";

  Expected<measure::CopyBandwidth> copy = measure::measureCopyBandwidth(api, device);
  if (!copy.ok()) {
    std::cerr << me << copy.error() << "\n";
    return 1;
  }
  Expected<std::unique_ptr<measure::Cublas>> cublas = measure::Cublas::load(api);
  if (!cublas.ok())
    std::cerr << me << "no cuBLAS baseline: " << cublas.error() << "\n";
  const measure::Cublas *baseline = cublas.ok() ? cublas->get() : nullptr;

  measure::BenchContext report;
  report.device = f;
  report.copyGBs = copy->gbps;
  report.copyBufferBytes = copy->bufferBytes;
  std::vector<measure::BenchRow> rows;
  if (!args.db.empty()) {
    db::OpenOptions readOnly;
    readOnly.mode = db::OpenMode::ReadOnly;
    Expected<db::Database> database = db::Database::open(args.db, readOnly);
    if (!database.ok()) {
      std::cerr << me << database.error() << "\n";
      return 1;
    }
    measure::DispatchBenchOptions options;
    options.rowCounts = args.rowCounts;
    options.problemFilter = args.problem;
    options.budgetSeconds = args.budget;
    Expected<measure::DispatchBenchResult> result =
        measure::benchDispatched(api, *database, f, options, copy->gbps, baseline, std::cerr);
    if (!result.ok()) {
      std::cerr << me << result.error() << "\n";
      return 1;
    }
    if (result->rows.empty()) {
      std::cerr << me << args.db << " has no problems"
                << (args.problem.empty() ? "" : " matching '" + args.problem + "'") << "\n";
      return 1;
    }
    if (result->budgetSpent)
      std::cerr << me << "time budget spent; the rows measured so far follow\n";
    report.mode = "db";
    report.source = args.db;
    report.notes = result->notes;
    report.budgetSpent = result->budgetSpent;
    rows = std::move(result->rows);
  } else {
    Expected<std::vector<measure::BenchRow>> measured =
        benchKernelSet(api, args, arch, f.smCount, copy->gbps, baseline);
    if (!measured.ok()) {
      std::cerr << me << measured.error() << "\n";
      return 1;
    }
    report.mode = "kernels";
    report.source = args.kernels;
    rows = std::move(*measured);
  }

  measure::printBenchTable(rows, copy->gbps, std::cout);
  // Every file is attempted even when an earlier one fails.
  bool written =
      writeFile(args.csv, "CSV", [&](std::ostream &out) { measure::writeBenchCsv(rows, out); });
  written = writeFile(args.json, "JSON", [&](std::ostream &out) {
              measure::writeBenchJson(rows, report, out);
            }) && written;
  written = writeFile(args.svg, "SVG", [&](std::ostream &out) {
              measure::writeBenchSvg(rows, report, out);
            }) && written;
  return written ? 0 : 1;
}

} // namespace

void addBenchCommand(CLI::App &app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App *bench = app.add_subcommand(
      "bench", "time lowbit's kernels against cuBLAS, with the copy bandwidth as the roof");
  auto *db = bench->add_option("--db", args->db,
                               "kernel database: bench the kernel dispatched at each M");
  auto *set = bench->add_option("--kernels", args->kernels,
                                "kernel-set directory from lowbit compile: bench the best kernel");
  db->excludes(set);
  bench->add_option("--m", args->rowCounts, "row counts M")->delimiter(',');
  bench->add_option("--problem", args->problem, "only problems whose name contains this");
  bench->add_option("--csv", args->csv, "also write the rows as CSV");
  bench->add_option("--json", args->json, "also write the rows and the device as JSON");
  bench->add_option("--svg", args->svg,
                    "also write a plot: speedup over cuBLAS per M, and a bandwidth roofline");
  bench->add_flag("--device", args->device,
                  "print this GPU's fingerprint (what tuning results are keyed by) and exit");
  bench->add_option("--budget", args->budget,
                    "--db: start no new measurement after this many seconds");
  bench->callback([args] { setExitCode(runBench(*args)); });
}

} // namespace lowbit::cli
