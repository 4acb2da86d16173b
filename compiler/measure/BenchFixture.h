// What measuring one problem's kernels needs, prepared once per problem and
// shared by `lowbit bench` (KernelBench.cpp) and `lowbit tune`
// (KernelMeasurer.cpp), so both measure the same way:
// - real weights quantized by the formats library in the problem's own
//   format (ProblemInputs.h: codes of any width, scales, zero points), packed
//   once per weight layout and rotated over more than 512 MB so every timed
//   launch reads its weights from DRAM, not from the L2;
// - x and y buffers, grown to the largest M asked for (s8 activations with
//   their f32 scales, y in the problem's output type);
// - per kernel and M: a check of rows 0 and M - 1 on fresh random
//   activations against the formats library's f64 dequantize and an f64
//   matmul, on a poisoned y, then graph timing (GraphTimer.h).
#pragma once

#include "compiler/measure/Cublas.h"
#include "compiler/measure/GraphTimer.h"
#include "compiler/measure/ProblemInputs.h"
#include "core/KernelArguments.h"
#include "runtime/kernels/KernelSet.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace lowbit::measure {

// A kernel's module loaded into the current context; unloaded on destruction.
class LoadedKernel {
public:
  static Expected<std::unique_ptr<LoadedKernel>> load(const cuda::DriverApi &api,
                                                      const kernels::KernelEntry &entry,
                                                      const std::vector<char> &cubin);
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel &) = delete;
  LoadedKernel &operator=(const LoadedKernel &) = delete;
  const kernels::KernelEntry &entry() const { return entry_; }
  CUfunction function() const { return function_; }

private:
  LoadedKernel(const cuda::DriverApi &api, kernels::KernelEntry entry)
      : api_(api), entry_(std::move(entry)) {}
  const cuda::DriverApi &api_;
  kernels::KernelEntry entry_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

struct FixtureOptions {
  size_t rotationBytes = 512u << 20;
  int replays = 9; // GraphTimer insists on at least 7
  // Relative L2 error a kernel may have against the f64 reference; <= 0
  // picks the default for the activation type (defaultTolerance).
  double tolerance = 0;
  uint64_t seed = 0x1b17;
  // The dense path's second half: a "dequant" kernel is measured as the
  // runtime runs it, its launch then cuBLASLt on what it wrote. Without it
  // such a kernel fails to measure, saying why.
  const Cublas *cublas = nullptr;
  // The device's SM count: the blocks a persistent kernel launches
  // (kernels::launchShape); 0 gives it a block a tile.
  int64_t smCount = 0;
};

struct KernelTiming {
  bool passed = false;
  double relativeError = 0; // sqrt(sum err² / sum ref²) over the checked outputs
  Timing timing;            // zero when the check failed (a failing kernel is not timed)
};

class BenchFixture {
public:
  // Fails for problems the formats library cannot quantize for (a scheme it
  // has no quantizer for, act-order); the message names the problem.
  static Expected<std::unique_ptr<BenchFixture>> create(const cuda::DriverApi &api,
                                                        const kernels::ProblemDesc &problem,
                                                        const FixtureOptions &options);

  const kernels::ProblemDesc &problem() const { return problem_; }
  // Bytes of one packed weight copy plus its scales and zeros, for GB/s.
  size_t weightCopyBytes() const { return perCopy_; }

  // Checks then times `kernel` at M rows; a "dequant" kernel with cuBLASLt
  // after it (the dense path). Errors are for the device (launch failures,
  // out of memory); a wrong result is passed = false.
  Expected<KernelTiming> measure(const LoadedKernel &kernel, int64_t m) {
    return measure(kernel.entry(), kernel.function(), m);
  }
  // The same for `function` launched as `entry` describes it: the weights
  // are packed for entry.weightLayout and the grid comes from entry, whatever
  // entry the function's module was loaded with. A caller that caches
  // modules (KernelMeasurer) passes the entry it was asked to measure, so a
  // cached module never decides which packing a kernel is checked against.
  Expected<KernelTiming> measure(const kernels::KernelEntry &entry, CUfunction function,
                                 int64_t m);

  // cuBLASLt (Cublas.h) at the same shape on dense random weights, rotated
  // the same way. A failure names the cuBLASLt call and its status.
  Expected<Timing> cublasTiming(const Cublas &cublas, int64_t m);
  // Its median, or 0 without cuBLAS or when it fails (the reason goes to
  // `log`): a benchmark row is still worth printing without its baseline.
  double cublasUsOrZero(const Cublas *cublas, int64_t m, std::ostream &log);

private:
  struct Rotation {
    std::vector<DeviceMemory> weights, scales, zeros; // zeros: empty without zero points
    int copies = 0;
  };
  BenchFixture(const cuda::DriverApi &api, kernels::ProblemDesc problem, FixtureOptions options)
      : api_(api), problem_(std::move(problem)), options_(options), seed_(options.seed) {}
  Expected<DeviceMemory> upload(const std::vector<uint8_t> &bytes, const char *what);
  Expected<const Rotation *> rotationFor(const std::string &layoutText);
  Status ensureRows(int64_t m);
  // Host wall time of one launch and a synchronize: only to size a graph
  // (a launch past a millisecond needs no averaging over many).
  Expected<double> wallMicroseconds(const std::function<CUresult()> &launch);
  // Fills x's first M rows with fresh random values; returns their bytes
  // (f16 / bf16 bit patterns, or s8 codes whose scales tokenScale gives).
  Expected<std::vector<uint8_t>> uploadRandomRows(int64_t m);
  // Relative error of rows 0 and M - 1 of y (`yRows`: the bytes of those two
  // rows, N values of the output type each) against the f64 reference.
  double checkRows(const std::vector<uint8_t> &x, const std::vector<uint8_t> &yRows,
                   int64_t m) const;
  // x's value at element `index` of row `row` (s8 codes times their scale).
  double activationAt(const std::vector<uint8_t> &x, int64_t row, int64_t index) const;
  // A launch's parameters in the kernel ABI's order (core::kernelArguments).
  struct LaunchArgs {
    core::KernelParameterValues values;
    void *params[core::kMaxKernelArguments] = {};
  };
  void bindArgs(LaunchArgs &args, const kernels::LaunchShape &shape, const Rotation &rotation,
                int copy, int64_t m) const;

  const cuda::DriverApi &api_;
  kernels::ProblemDesc problem_;
  FixtureOptions options_;
  uint64_t seed_;
  ProblemInputs inputs_;                 // codes, scales, zeros and the reference weights
  std::vector<uint16_t> activationBits_; // the values x is drawn from, as f16/bf16 bits
  std::map<std::string, Rotation> rotations_;
  size_t perCopy_ = 0;
  int64_t rowCapacity_ = 0;
  DeviceMemory x_, y_;
  DeviceMemory xScales_; // quantized activations' f32 scales (tokenScale), per row or one
  std::vector<DeviceMemory> dense_; // cuBLAS weights, made on first use
  // The dense path's dequant(W), one buffer as a plan's workspace is: every
  // launch rewrites it before cuBLASLt reads it. Made on first use.
  DeviceMemory denseWeights_;
  // Stream-K's partial sums and flags (kernels::LaunchShape::workspaceBytes),
  // grown to the largest launch's.
  DeviceMemory workspace_;
  size_t workspaceCapacity_ = 0;
};

} // namespace lowbit::measure
