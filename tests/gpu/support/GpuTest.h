// Shared pieces of the GPU tests: a device context through the dlopen'd driver,
// RAII device buffers and modules, and a skip (never a pass) without a GPU.
#pragma once

#include "runtime/cuda/Driver.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace lowbit::testing {

// The primary context of device 0, made current on the calling thread; null
// when there is no usable GPU, with the reason in `whyNot`.
const cuda::DriverApi *gpuOrNull(std::string *whyNot);

// Skips the test (reported as skipped by ctest) when no GPU is usable.
#define LOWBIT_REQUIRE_GPU(api)                                                \
  std::string lowbitWhyNoGpu;                                                  \
  const ::lowbit::cuda::DriverApi *api =                                       \
      ::lowbit::testing::gpuOrNull(&lowbitWhyNoGpu);                           \
  if (!api)                                                                    \
  GTEST_SKIP() << "no GPU: " << lowbitWhyNoGpu

// Asserts a driver call succeeded, printing the driver's own error text.
#define LOWBIT_CU_ASSERT(api, call)                                            \
  do {                                                                         \
    CUresult lowbitResult = (call);                                            \
    ASSERT_EQ(lowbitResult, CUDA_SUCCESS)                                      \
        << #call << ": " << ::lowbit::cuda::describe(*(api), lowbitResult);    \
  } while (0)

class DeviceBuffer {
public:
  DeviceBuffer(const cuda::DriverApi &api, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  bool ok() const { return pointer_ != 0; }
  CUdeviceptr get() const { return pointer_; }
  size_t bytes() const { return bytes_; }
  CUresult upload(const void *host, size_t bytes);
  CUresult download(void *host, size_t bytes) const;
  // Fills with a byte pattern, so unwritten outputs are caught.
  CUresult poison(unsigned char byte = 0xFF);

private:
  const cuda::DriverApi &api_;
  CUdeviceptr pointer_ = 0;
  size_t bytes_ = 0;
};

class LoadedModule {
public:
  LoadedModule(const cuda::DriverApi &api, const void *image);
  ~LoadedModule();
  LoadedModule(const LoadedModule &) = delete;
  LoadedModule &operator=(const LoadedModule &) = delete;

  CUresult loadResult() const { return loadResult_; }
  CUfunction function(const char *name) const; // null if missing

private:
  const cuda::DriverApi &api_;
  CUmodule module_ = nullptr;
  CUresult loadResult_ = CUDA_SUCCESS;
};

// A file the build wrote under build/kernels/ for the GPU tests: the
// environment variable `env` when set, else <test binary's dir>/../kernels/
// `name`, so a build tree carried to a GPU host finds its kernels.
std::string testKernelsPath(const char *env, const std::string &name);

// The `sm_XY` name of device 0's arch, with `a` for sm_90 (wgmma needs it).
std::string deviceArchName(const cuda::DriverApi &api);

} // namespace lowbit::testing
