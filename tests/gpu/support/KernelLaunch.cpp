#include "tests/gpu/support/KernelLaunch.h"

#include "core/KernelArguments.h"

#include <vector>

namespace lowbit::testing {

void KernelSetTest::loadKernelSet(const char *env, const std::string &name) {
  std::string whyNot;
  api = gpuOrNull(&whyNot);
  if (!api)
    GTEST_SKIP() << "no GPU: " << whyNot;
  Expected<std::vector<kernels::KernelEntry>> set =
      kernels::readKernelSet(testKernelsPath(env, name));
  ASSERT_TRUE(set.ok()) << set.error();
  arch = deviceArchName(*api);
  for (kernels::KernelEntry &entry : *set)
    if (entry.arch == arch)
      entries.push_back(entry);
  if (entries.empty())
    GTEST_SKIP() << "the test kernel set " << name << " has no kernels for " << arch;
}

void loadCompiledKernel(const cuda::DriverApi &api, const kernels::KernelEntry &entry,
                        CompiledKernel &out) {
  out.entry = &entry;
  Expected<std::vector<char>> cubin = kernels::readCubin(entry);
  ASSERT_TRUE(cubin.ok()) << cubin.error();
  out.module = std::make_unique<LoadedModule>(api, cubin->data());
  LOWBIT_CU_ASSERT(&api, out.module->loadResult());
  out.function = out.module->function(entry.name.c_str());
  ASSERT_NE(out.function, nullptr) << entry.name;
  // A split-K ring past 48 KiB of dynamic shared memory must opt in.
  LOWBIT_CU_ASSERT(&api, cuda::allowDynamicSharedBytes(api, out.function,
                                                       entry.dynamicSharedBytes));
}

void launchCompiledKernel(const cuda::DriverApi &api, const CompiledKernel &kernel, int64_t m,
                          const KernelOperands &operands) {
  constexpr int64_t persistentBlocks = 3, streamKBlocks = 8;
  Expected<kernels::LaunchShape> shape = kernels::launchShape(*kernel.entry, m, persistentBlocks);
  ASSERT_TRUE(shape.ok()) << shape.error();
  if (shape->schedule.streamK())
    shape = kernels::launchShape(*kernel.entry, m, streamKBlocks);
  ASSERT_TRUE(shape.ok()) << shape.error();
  core::KernelParameterValues values;
  values.x = operands.x;
  values.xScales = operands.xScales;
  values.w = operands.w;
  values.scales = operands.scales;
  values.zeros = operands.zeros;
  values.y = operands.y;
  values.rows = m;
  // Stream-K's workspace starts as garbage, as a caller's does before its
  // first call; only its flags are cleared, on the launch's stream.
  std::unique_ptr<DeviceBuffer> workspace;
  if (shape->workspaceBytes > 0) {
    workspace = std::make_unique<DeviceBuffer>(api, static_cast<size_t>(shape->workspaceBytes));
    ASSERT_TRUE(workspace->ok()) << "the stream-K workspace";
    LOWBIT_CU_ASSERT(&api, workspace->poison());
    values.workspace = workspace->get();
    LOWBIT_CU_ASSERT(
        &api, api.cuMemsetD32Async(workspace->get() + static_cast<CUdeviceptr>(shape->flagOffset),
                                   0, static_cast<size_t>(shape->flagBytes / 4), nullptr));
  }
  std::vector<void *> args;
  for (core::KernelArgument argument :
       core::kernelArguments(kernel.entry->problem, shape->schedule))
    args.push_back(values.address(argument));
  LOWBIT_CU_ASSERT(&api, api.cuLaunchKernel(kernel.function, shape->grid[0], shape->grid[1],
                                            shape->grid[2], shape->block, 1, 1,
                                            shape->dynamicSharedBytes, nullptr, args.data(),
                                            nullptr));
  LOWBIT_CU_ASSERT(&api, api.cuCtxSynchronize());
}

} // namespace lowbit::testing
