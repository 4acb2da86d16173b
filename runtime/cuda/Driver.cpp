#include "runtime/cuda/Driver.h"

#include <dlfcn.h>

#include <mutex>

namespace lowbit::cuda {
namespace {

#define LOWBIT_STRINGIFY_EXPANDED(x) LOWBIT_STRINGIFY(x)
#define LOWBIT_STRINGIFY(x) #x

struct LoadResult {
  DriverApi api;
  bool ok = false;
  std::string whyNot;
};

LoadResult load() {
  LoadResult result;
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *detail = dlerror();
    result.whyNot = std::string("no CUDA driver: cannot load libcuda.so.1 (") +
                    (detail ? detail : "unknown reason") + ")";
    return result;
  }
#define LOWBIT_RESOLVE_DRIVER_MEMBER(name)                                     \
  result.api.name = reinterpret_cast<decltype(result.api.name)>(               \
      dlsym(library, LOWBIT_STRINGIFY_EXPANDED(name)));                        \
  if (!result.api.name) {                                                      \
    result.whyNot = "CUDA driver too old: libcuda.so.1 lacks " +               \
                    std::string(LOWBIT_STRINGIFY_EXPANDED(name));              \
    return result;                                                             \
  }
  LOWBIT_CUDA_DRIVER_FUNCTIONS(LOWBIT_RESOLVE_DRIVER_MEMBER)
#undef LOWBIT_RESOLVE_DRIVER_MEMBER

  CUresult initResult = result.api.cuInit(0);
  if (initResult != CUDA_SUCCESS) {
    result.whyNot = "CUDA driver present but cuInit failed: " +
                    describe(result.api, initResult);
    return result;
  }
  // The library stays loaded for the life of the process: function pointers
  // into it are handed out and may be used until exit.
  result.ok = true;
  return result;
}

} // namespace

const DriverApi *loadDriver(std::string *whyNot) {
  static const LoadResult loaded = load();
  if (!loaded.ok) {
    if (whyNot)
      *whyNot = loaded.whyNot;
    return nullptr;
  }
  return &loaded.api;
}

std::string describe(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(result, &text);
  std::string out = name ? name : ("CUresult " + std::to_string(result));
  if (text)
    out += std::string(": ") + text;
  return out;
}

CUresult allowDynamicSharedBytes(const DriverApi &api, CUfunction function, int64_t bytes) {
  if (bytes < 0 || bytes > INT32_MAX)
    return CUDA_ERROR_INVALID_VALUE; // the attribute is an int
  if (bytes == 0)
    return CUDA_SUCCESS; // static shared memory alone never needs an opt-in
  int staticBytes = 0;
  if (CUresult r = api.cuFuncGetAttribute(&staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                          function);
      r != CUDA_SUCCESS)
    return r;
  if (staticBytes + bytes <= kSharedWithoutOptIn)
    return CUDA_SUCCESS;
  return api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(bytes));
}

int deviceCount(std::string *whyNot) {
  const DriverApi *api = loadDriver(whyNot);
  if (!api)
    return 0;
  int count = 0;
  CUresult result = api->cuDeviceGetCount(&count);
  if (result != CUDA_SUCCESS) {
    if (whyNot)
      *whyNot = "cuDeviceGetCount failed: " + describe(*api, result);
    return 0;
  }
  if (count == 0 && whyNot)
    *whyNot = "the CUDA driver reports no device";
  return count;
}

} // namespace lowbit::cuda
