// The kernel ABI: the parameters every compiled matmul kernel takes, in
// order. The runtime's launch, the benchmark and the GPU tests all build
// their parameter arrays from this one list, so a kernel and its callers
// cannot disagree about where an argument goes.
#pragma once

#include "core/Problem.h"
#include "core/Schedule.h"

#include <vector>

namespace lowbit::core {

enum class KernelArgument {
  Activations,      // x: [M, K] in the activation type
  ActivationScales, // x's f32 scales: [M] per token, [1] per tensor
  Weights,          // the packed weight codes
  Scales,           // the weight scales (and a tensor scale after them)
  Zeros,            // the weight zero points
  Output,           // y: [M, N] in outputType
  Rows,             // M, a long long
  Workspace,        // stream-K's partial sums and flags (core::streamKWorkspaceBytes)
};

// The most arguments a kernel takes: every KernelArgument once.
constexpr int kMaxKernelArguments = 8;

// (x, [x_scales,] packed_w, scales, [zeros,] y, M, [workspace]): x_scales
// only with quantized activations' scales, zeros only when the scheme has
// zero points, the workspace only for scheduler = stream_k.
std::vector<KernelArgument> kernelArguments(const Problem &problem, const Schedule &schedule);

// The values a kernel's parameters point at: device addresses (a
// CUdeviceptr each) and M. The runtime's launch, the benchmark and the GPU
// tests fill one and hand cuLaunchKernel `address(a)` for each argument a
// of kernelArguments, in order.
struct KernelParameterValues {
  unsigned long long x = 0, xScales = 0, w = 0, scales = 0, zeros = 0, y = 0, workspace = 0;
  long long rows = 0;
  void *address(KernelArgument argument);
};

// The parameter's name in the emitted kernel: "x", "x_scales", "packed_w",
// "scales", "zeros", "y", "M", "workspace".
const char *kernelArgumentName(KernelArgument argument);

} // namespace lowbit::core
