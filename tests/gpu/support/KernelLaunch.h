// Loading and launching kernels of a kernel set compiled at build time, as
// the kernel ABI says (core::kernelArguments), for the GPU tests that
// run the real compiled kernels. Failures are gtest assertions: callers
// check HasFatalFailure() after each call.
#pragma once

#include "runtime/kernels/KernelSet.h"
#include "tests/gpu/support/GpuTest.h"

#include <memory>
#include <string>
#include <vector>

namespace lowbit::testing {

// A test over the kernels of one test kernel set (compiled at build time)
// that are for this GPU's arch. loadKernelSet, called from SetUp, skips the
// test without a GPU or without kernels for the arch.
class KernelSetTest : public ::testing::Test {
protected:
  // The set at testKernelsPath(env, name).
  void loadKernelSet(const char *env, const std::string &name);

  const cuda::DriverApi *api = nullptr;
  std::string arch;
  std::vector<kernels::KernelEntry> entries;
};

// One kernel's module, loaded from its cubin, and its entry point, opted in
// to the dynamic shared memory its launches pass.
struct CompiledKernel {
  const kernels::KernelEntry *entry = nullptr;
  std::unique_ptr<LoadedModule> module;
  CUfunction function = nullptr;
};
void loadCompiledKernel(const cuda::DriverApi &api, const kernels::KernelEntry &entry,
                        CompiledKernel &out);

// The kernel ABI's operands (core::kernelArguments); zeros is 0 for a
// problem without zero points, xScales 0 for f16 and bf16 activations.
struct KernelOperands {
  CUdeviceptr x = 0, xScales = 0, w = 0, scales = 0, zeros = 0, y = 0;
};
// Launches `kernel` over `m` rows with its entry's grid, then synchronizes.
// A persistent kernel gets 3 blocks, not one an SM, so that at every M of
// the tests its blocks walk several tiles, and unequal numbers of them. A
// stream-K kernel gets 8, so that the wgmma tests' 6 column tiles (N 1536)
// give fewer tiles than blocks at small M (every tile split), a split tail
// after whole waves at larger M, and even waves with none; and a fresh
// workspace, poisoned but for its cleared flags.
void launchCompiledKernel(const cuda::DriverApi &api, const CompiledKernel &kernel, int64_t m,
                          const KernelOperands &operands);

} // namespace lowbit::testing
