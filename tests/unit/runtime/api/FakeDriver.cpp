// A stand-in libcuda.so.1 for the runtime's device-path tests on machines
// without a GPU: one device that looks like an H100, "device memory" that is
// host memory, modules that only check their image, and launches that are
// recorded (not run). The test finds it through LD_LIBRARY_PATH.
//
// Every entry point Driver.h resolves exists: the ones the runtime's device
// path uses are implemented here, the rest are weak stubs returning
// CUDA_SUCCESS (FakeDriverStubs.cpp), generated from Driver.h's own list.
#include "tests/unit/runtime/api/FakeDriverLaunch.h"
#include "runtime/cuda/Driver.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace {
CUcontext const kPrimary = reinterpret_cast<CUcontext>(0x1234);
thread_local CUcontext current = nullptr;
std::mutex mutex;
int modulesLoaded = 0;
std::map<std::string, int> optIns; // function name -> opted-in dynamic shared bytes
std::map<std::string, int> staticShared; // function name -> its module's static shared bytes
constexpr int kSharedWithoutOptIn = 48 * 1024;
constexpr int kSharedOptInMax = 227 * 1024; // the device's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN

// A fake image's static shared memory: "static_shared=N" in its text (the
// cubin's tag or a PTX comment, RuntimeTestSupport.cpp); 0 without.
int staticSharedOf(const char *text) {
  const char *found = std::strstr(text, "static_shared=");
  return found ? std::atoi(found + 14) : 0;
}
} // namespace

static LowbitFakeLaunch lastLaunch;

// LowbitFakeLaunch::history += name + ";" (under `mutex`).
static void appendHistory(const char *name) {
  const size_t used = std::strlen(lastLaunch.history);
  std::snprintf(lastLaunch.history + used, sizeof(lastLaunch.history) - used, "%s;", name);
}

extern "C" {
#define LOWBIT_FAKE_API __attribute__((visibility("default")))

LOWBIT_FAKE_API const LowbitFakeLaunch *lowbit_fake_cuda_last_launch(void) { return &lastLaunch; }

LOWBIT_FAKE_API CUresult cuInit(unsigned) { return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuGetErrorName(CUresult, const char **s) { *s = "CUDA_ERROR_FAKE"; return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuGetErrorString(CUresult, const char **s) { *s = "fake driver"; return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuDeviceGet(CUdevice *d, int ordinal) { *d = ordinal; return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuDeviceGetCount(int *count) { *count = 1; return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::snprintf(name, static_cast<size_t>(length), "Fake H100");
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
  default: *v = 1024;
  }
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice) {
  std::memset(uuid, 7, sizeof(*uuid));
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice) { *c = kPrimary; return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned, CUjit_option *, void **) {
  if (current != kPrimary)
    return CUDA_ERROR_INVALID_CONTEXT;
  const unsigned char *bytes = static_cast<const unsigned char *>(image);
  bool cubin = bytes[0] == 0x7f && bytes[1] == 'E';
  if (!cubin && !std::strstr(static_cast<const char *>(image), ".target"))
    return CUDA_ERROR_INVALID_IMAGE;
  std::lock_guard<std::mutex> lock(mutex);
  ++modulesLoaded;
  lastLaunch.modulesLoaded = modulesLoaded;
  lastLaunch.ptxLoads += cubin ? 0 : 1;
  *module = reinterpret_cast<CUmodule>(
      new int(staticSharedOf(static_cast<const char *>(image) + (cubin ? 64 : 0))));
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuModuleUnload(CUmodule module) {
  delete reinterpret_cast<int *>(module);
  std::lock_guard<std::mutex> lock(mutex);
  lastLaunch.modulesLoaded = --modulesLoaded;
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuModuleGetFunction(CUfunction *f, CUmodule module, const char *name) {
  std::lock_guard<std::mutex> lock(mutex);
  // A function is its interned name: set nodes never move, and nothing
  // leaks (LeakSanitizer, scripts/sanitize.sh).
  static std::set<std::string> functionNames;
  *f = reinterpret_cast<CUfunction>(
      const_cast<char *>(functionNames.insert(name).first->c_str()));
  staticShared[name] = *reinterpret_cast<int *>(module);
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  std::lock_guard<std::mutex> lock(mutex);
  *v = a == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES ? staticShared[reinterpret_cast<const char *>(f)]
                                                : 1024;
  return CUDA_SUCCESS;
}
// The real rule: static + dynamic shared memory past 48 KiB launches only if
// the function opted in to at least the dynamic bytes, and an opt-in whose
// static + dynamic passes the device's opt-in maximum is refused.
LOWBIT_FAKE_API CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  std::lock_guard<std::mutex> lock(mutex);
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    const char *name = reinterpret_cast<const char *>(f);
    if (value < 0 || staticShared[name] + value > kSharedOptInMax)
      return CUDA_ERROR_INVALID_VALUE;
    optIns[name] = value;
    ++lastLaunch.dynamicSharedOptIns;
  }
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz, unsigned shared, CUstream stream,
                                        void **params, void **) {
  std::lock_guard<std::mutex> lock(mutex);
  {
    // The function's dynamic limit: what it opted in to, else what the
    // 48 KiB default leaves next to its static bytes.
    const char *name = reinterpret_cast<const char *>(f);
    auto optIn = optIns.find(name);
    long long limit = optIn != optIns.end() ? optIn->second
                                            : kSharedWithoutOptIn - staticShared[name];
    if (static_cast<long long>(shared) > limit)
      return CUDA_ERROR_INVALID_VALUE;
  }
  LowbitFakeLaunch &l = lastLaunch;
  appendHistory(reinterpret_cast<const char *>(f));
  if (std::strcmp(reinterpret_cast<const char *>(f), "lowbit_quantize_activations") == 0) {
    l.quantizeX = *static_cast<unsigned long long *>(params[0]);
    l.quantizeBf16 = *static_cast<int *>(params[1]);
    l.quantizeE4m3 = *static_cast<int *>(params[2]);
    l.quantizeM = *static_cast<long long *>(params[3]);
    l.quantizeK = *static_cast<long long *>(params[4]);
    l.quantizeCodes = *static_cast<unsigned long long *>(params[5]);
    l.quantizeScales = *static_cast<unsigned long long *>(params[6]);
    l.quantizeTensorAbsmax = *static_cast<unsigned long long *>(params[7]);
    l.quantizeGrid[0] = gx, l.quantizeGrid[1] = gy;
    l.quantizeBlock = bx;
    return CUDA_SUCCESS;
  }
  if (std::strcmp(reinterpret_cast<const char *>(f), "lowbit_activation_absmax") == 0) {
    l.absmaxTarget = *static_cast<unsigned long long *>(params[4]);
    return CUDA_SUCCESS;
  }
  if (std::strcmp(reinterpret_cast<const char *>(f), "lowbit_permute_columns") == 0) {
    // (x, perm, out, M, K): out[m][j] = x[m][perm[j]], 16-bit values.
    auto *x = *static_cast<const uint16_t *const *>(params[0]);
    auto *perm = *static_cast<const int32_t *const *>(params[1]);
    auto *out = *static_cast<uint16_t *const *>(params[2]);
    const long long m = *static_cast<long long *>(params[3]);
    const long long k = *static_cast<long long *>(params[4]);
    if (static_cast<long long>(gx) * bx < k || gy == 0)
      return CUDA_ERROR_INVALID_VALUE; // the grid must cover every column
    for (long long row = 0; row < m; ++row)
      for (long long j = 0; j < k; ++j)
        out[row * k + j] = x[row * k + perm[j]];
    ++l.gatherLaunches;
    l.gatherGrid[0] = gx, l.gatherGrid[1] = gy;
    return CUDA_SUCCESS;
  }
  std::snprintf(l.function, sizeof(l.function), "%s", reinterpret_cast<const char *>(f));
  l.grid[0] = gx, l.grid[1] = gy, l.grid[2] = gz;
  l.block[0] = bx, l.block[1] = by, l.block[2] = bz;
  l.sharedBytes = shared;
  l.stream = stream;
  l.contextWasCurrent = current == kPrimary;
  const int pointerCount = 4 + (std::strstr(l.function, "zeros") ? 1 : 0) +
                           (std::strstr(l.function, "x_scales") ? 1 : 0);
  for (int i = 0; i < 6; ++i)
    l.pointers[i] = i < pointerCount ? *static_cast<unsigned long long *>(params[i]) : 0;
  l.m = *static_cast<long long *>(params[pointerCount]);
  l.workspace = std::strstr(l.function, "stream_k")
                    ? *static_cast<unsigned long long *>(params[pointerCount + 1])
                    : 0;
  ++l.launches;
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  *p = reinterpret_cast<CUdeviceptr>(std::aligned_alloc(256, (n + 255) / 256 * 256));
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
LOWBIT_FAKE_API CUresult cuMemFree(CUdeviceptr p) { std::free(reinterpret_cast<void *>(p)); return CUDA_SUCCESS; }
LOWBIT_FAKE_API CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) {
  std::memcpy(reinterpret_cast<void *>(d), s, n);
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) {
  std::memcpy(d, reinterpret_cast<void *>(s), n);
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream) {
  std::memcpy(reinterpret_cast<void *>(d), s, n);
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream) {
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(reinterpret_cast<char *>(d) + 4 * i, &v, 4);
  appendHistory("memset");
  lastLaunch.memsetAddress = d;
  lastLaunch.memsetValue = v;
  lastLaunch.memsetCount = n;
  return CUDA_SUCCESS;
}
LOWBIT_FAKE_API CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) {
  std::memset(reinterpret_cast<void *>(d), v, n);
  return CUDA_SUCCESS;
}
} // extern "C"
