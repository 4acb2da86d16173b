// Benchmarks the kernels of a compiled kernel set against cuBLAS at the same
// shape, in one run: for each problem and M, every kernel that serves M is
// checked against an f64 reference and timed; the best is reported.
#pragma once

#include "compiler/measure/Cublas.h"
#include "runtime/kernels/KernelSet.h"

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace lowbit::measure {

struct BenchRow {
  std::string problem;
  int64_t n = 0, k = 0, m = 0;
  std::string kernel; // --kernels: the fastest correct kernel; --db: the dispatched one
  double medianUs = 0, p10Us = 0, p90Us = 0;
  double cublasUs = 0; // 0 when cuBLAS was not available
  double gbps = 0, copyFraction = 0, tflops = 0;
  double maxRelativeError = 0;
  int kernelsTried = 0;
  // Filled by benchDispatched (DispatchBench.h) only: which kernel the
  // runtime's plan dispatches at this M, and why.
  std::string kernelId, family;
  std::string tier;          // db::tierName of the lookup that answered
  int64_t rangeLo = 0;       // the dispatch range [rangeLo, rangeHi) holding M
  int64_t rangeHi = -1;      // -1: open-ended
  bool jit = false;          // the plan loads PTX for this kernel (no runnable cubin)
  bool failed = false;       // the dispatched kernel failed the reference check
  std::string note;          // why a row has no timing, when it has none
};

struct BenchOptions {
  std::vector<int64_t> rowCounts = {1, 16, 64, 256};
  std::string problemFilter; // substring of the problem name
  size_t rotationBytes = 512u << 20;
  int replays = 9;
  int64_t smCount = 0; // the device's: a persistent kernel's blocks
};

Expected<std::vector<BenchRow>> benchKernelSet(const cuda::DriverApi &api,
                                               const std::vector<kernels::KernelEntry> &kernels,
                                               const BenchOptions &options, double copyGBs,
                                               const Cublas *cublas, std::ostream &progress);

// GB/s (of the bytes an ideal kernel moves: `weightBytes` of packed weights
// and scales, X and Y once), its fraction of `copyGBs`, and TFLOP/s, from
// the row's shape and median; left at zero for a row without a median.
void setRates(BenchRow &row, double weightBytes, double copyGBs);

// The families' M ranges (docs/architecture.md, "Kernel families"): gemv
// re-reads the weights for every tile M rows and mma pads M to its tile, so
// kernels far outside their range are not worth timing. An 8-row tile
// (split-K mma, M on the n8 side) wastes little even at M = 1.
// The dense path (a dequant kernel, then cuBLASLt) only from kDenseMinRows.
constexpr int64_t kDenseMinRows = 64;
bool worthBenchmarking(const kernels::KernelEntry &entry, int64_t m);
// The kernels (indices) the bench times at M: those worth it or, when none
// is (a problem whose only kernels are gemv, at M = 16), every one that
// launches, so that no row is left without a number. (NVFP4's groups of 16
// have only gemv kernels; the first H200 bench printed 0 us for them at
// M >= 16 and said nothing.)
std::vector<size_t> kernelsToTime(const std::vector<const kernels::KernelEntry *> &kernels,
                                  int64_t m);

// The kernels of one problem grouped by the weight layout they read: each
// group needs its own packing of the same weights.
std::map<std::string, std::vector<const kernels::KernelEntry *>>
groupByWeightLayout(const std::vector<const kernels::KernelEntry *> &kernels);

void printBenchTable(const std::vector<BenchRow> &rows, double copyGBs, std::ostream &os);
void writeBenchCsv(const std::vector<BenchRow> &rows, std::ostream &os);

} // namespace lowbit::measure
