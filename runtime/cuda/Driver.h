// The CUDA driver API, resolved at run time from libcuda.so.1.
//
// Every lowbit binary must start on a machine without a GPU or driver and
// report that as a status. Linking libcuda would make the dynamic loader fail
// first, so the entry points are looked up with dlopen/dlsym instead.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace lowbit::cuda {

// cuda.h maps many names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2);
// the list below goes through the same macros, so each member has the
// versioned symbol's type and is looked up under the versioned name.
#define LOWBIT_CUDA_DRIVER_FUNCTIONS(X)                                        \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDeviceGetUuid)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyDtoD)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemsetD8)                                                                \
  X(cuMemsetD32)                                                               \
  X(cuMemsetD32Async)                                                          \
  X(cuMemsetD8Async)                                                           \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuStreamIsCapturing)                                                       \
  X(cuGraphInstantiate)                                                        \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)                                                            \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuEventDestroy)                                                            \
  X(cuPointerGetAttribute)

struct DriverApi {
#define LOWBIT_DECLARE_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  LOWBIT_CUDA_DRIVER_FUNCTIONS(LOWBIT_DECLARE_DRIVER_MEMBER)
#undef LOWBIT_DECLARE_DRIVER_MEMBER
};

// The process-wide driver table, loaded and cuInit'ed once. Returns null when
// no usable driver exists; `whyNot` (if given) then says why: library not
// found, a symbol missing (driver too old), or cuInit failing.
const DriverApi *loadDriver(std::string *whyNot = nullptr);

// "CUDA_ERROR_X: description" for a driver result code.
std::string describe(const DriverApi &api, CUresult result);

// Shared memory (static + dynamic) a block may use without its function
// opting in, on every arch.
constexpr int64_t kSharedWithoutOptIn = 48 * 1024;

// Lets `function` be launched with `bytes` of dynamic shared memory. The
// 48 KiB default limit is on static + dynamic, so a kernel with 16 KiB of
// static shared memory needs the opt-in from 32 KiB of dynamic on: this asks
// the driver for the function's static bytes (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
// the loaded image's own figure, which a PTX JIT may make differ from the
// ptxas report) and, when the sum passes kSharedWithoutOptIn, sets
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to `bytes` (without it the
// launch fails with CUDA_ERROR_INVALID_VALUE). The driver itself refuses an
// opt-in whose static + dynamic exceeds the device's opt-in maximum.
CUresult allowDynamicSharedBytes(const DriverApi &api, CUfunction function, int64_t bytes);

// The number of CUDA devices, 0 when there is no driver or no device; `whyNot`
// says which.
int deviceCount(std::string *whyNot = nullptr);

} // namespace lowbit::cuda
