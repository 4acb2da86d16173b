// The whole path the runtime depends on: NVRTC cubin -> dlopen'd driver ->
// launch on real data -> check every element.
#include "codegen/nvrtc/NvrtcCompiler.h"
#include "tests/gpu/support/GpuTest.h"

#include <cmath>
#include <random>

namespace lowbit::testing {
namespace {

TEST(NvrtcLaunch, CubinRunsAndComputesTheRightValues) {
  LOWBIT_REQUIRE_GPU(api);
  Expected<nvrtc::Arch> arch = nvrtc::parseArch(deviceArchName(*api));
  ASSERT_TRUE(arch.ok()) << arch.error();

  nvrtc::CompileRequest request;
  request.source = R"(
extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
})";
  request.arch = *arch;
  Expected<nvrtc::CompileResult> compiled = nvrtc::compile(request);
  ASSERT_TRUE(compiled.ok()) << compiled.error();

  LoadedModule module(*api, compiled->cubin.data());
  LOWBIT_CU_ASSERT(api, module.loadResult());
  CUfunction axpy = module.function("axpy");
  ASSERT_NE(axpy, nullptr);

  const int n = 1000003; // not a multiple of the block size
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
  }
  DeviceBuffer dx(*api, n * sizeof(float)), dy(*api, n * sizeof(float));
  ASSERT_TRUE(dx.ok() && dy.ok());
  LOWBIT_CU_ASSERT(api, dx.upload(x.data(), n * sizeof(float)));
  LOWBIT_CU_ASSERT(api, dy.upload(y.data(), n * sizeof(float)));

  float a = 1.5f;
  int count = n;
  CUdeviceptr yPtr = dy.get(), xPtr = dx.get();
  void *args[] = {&yPtr, &xPtr, &a, &count};
  LOWBIT_CU_ASSERT(api, api->cuLaunchKernel(axpy, (n + 255) / 256, 1, 1, 256, 1, 1,
                                            0, nullptr, args, nullptr));
  LOWBIT_CU_ASSERT(api, api->cuCtxSynchronize());

  std::vector<float> out(n);
  LOWBIT_CU_ASSERT(api, dy.download(out.data(), n * sizeof(float)));
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[i], std::fma(a, x[i], y[i])) << "at " << i;
}

} // namespace
} // namespace lowbit::testing
