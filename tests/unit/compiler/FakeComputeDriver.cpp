#include "FakeComputeDriver.h"

#include "core/layout/WeightLayout.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace lowbit::testing {
namespace {

struct FakeKernel {
  bool copy = false; // the copy kernel rather than a matmul
  int64_t n = 0, k = 0, groupSize = 0;
  bool signedCodes = false;
  layout::WeightLayout layout;
  int staticShared = 0;        // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, from the image
  int dynamicSharedOptIn = -1; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; -1: never set
};

constexpr int kSharedWithoutOptIn = 48 * 1024;
constexpr int kSharedOptInMax = 227 * 1024; // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, as an H100's

bool capturing = false;

double f16Value(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<double>(h);
}
uint16_t f16Bits(double v) {
  _Float16 h = static_cast<_Float16>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

constexpr size_t kElfHeaderBytes = 64;

// "key=value;..." of a fake cubin after its ELF header; the layout text comes
// last because it holds ';'. Or the copy kernel's PTX.
FakeKernel *parseFakeImage(const char *image) {
  if (std::strstr(image, ".entry lowbit_copy16")) {
    ++fakeDriverCounters().ptxLoads;
    auto *kernel = new FakeKernel;
    kernel->copy = true;
    return kernel;
  }
  if (std::strncmp(image,
                   "\x7f"
                   "ELF",
                   4) != 0)
    return nullptr;
  std::string text(image + kElfHeaderBytes);
  if (text.rfind("FAKE-CUBIN;", 0) != 0)
    return nullptr;
  size_t layoutAt = text.find(";layout=");
  if (layoutAt == std::string::npos)
    return nullptr;
  auto layout = layout::parseWeightLayout(text.substr(layoutAt + 8));
  if (!layout.ok())
    return nullptr;
  auto *kernel = new FakeKernel;
  kernel->layout = *layout;
  std::stringstream fields(text.substr(11, layoutAt - 11));
  std::string field;
  while (std::getline(fields, field, ';')) {
    std::string key = field.substr(0, field.find('='));
    std::string value = field.substr(field.find('=') + 1);
    if (key == "n")
      kernel->n = std::stoll(value);
    else if (key == "k")
      kernel->k = std::stoll(value);
    else if (key == "group")
      kernel->groupSize = std::stoll(value);
    else if (key == "static_shared")
      kernel->staticShared = std::stoi(value);
    else if (key == "weight")
      kernel->signedCodes = value == "int4";
  }
  return kernel;
}

// Y[m, n] = Σ_k X[m, k] · q(W[n, k]) · S[n, k / group], W read in the
// kernel's own layout, whatever layout the weights were packed in.
void compute(const FakeKernel &kernel, void **params) {
  auto x = reinterpret_cast<const uint16_t *>(*static_cast<CUdeviceptr *>(params[0]));
  auto w = reinterpret_cast<const uint8_t *>(*static_cast<CUdeviceptr *>(params[1]));
  auto s = reinterpret_cast<const uint16_t *>(*static_cast<CUdeviceptr *>(params[2]));
  auto y = reinterpret_cast<uint16_t *>(*static_cast<CUdeviceptr *>(params[3]));
  long long m = *static_cast<long long *>(params[4]);
  const int64_t n = kernel.n, k = kernel.k, groups = k / kernel.groupSize;
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  size_t bytes = static_cast<size_t>(layout::packedBytes(kernel.layout, n, k));
  if (!layout::unpackWeights(kernel.layout, n, k, w, bytes, codes.data()).ok())
    std::abort(); // a test bug, not a measurer bug
  for (long long r = 0; r < m; ++r)
    for (int64_t col = 0; col < n; ++col) {
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        int c = codes[static_cast<size_t>(col * k + kk)];
        double q = kernel.signedCodes && c >= 8 ? c - 16 : c;
        sum += f16Value(x[r * k + kk]) * q * f16Value(s[col * groups + kk / kernel.groupSize]);
      }
      y[r * n + col] = f16Bits(col == fakeDriverCounters().corruptColumn ? sum + 1 : sum);
    }
}

CUresult loadModule(CUmodule *module, const void *image, unsigned, CUjit_option *, void **) {
  FakeKernel *kernel = parseFakeImage(static_cast<const char *>(image));
  if (!kernel)
    return CUDA_ERROR_INVALID_IMAGE;
  ++fakeDriverCounters().modulesLoaded;
  ++fakeDriverCounters().modulesAlive;
  *module = reinterpret_cast<CUmodule>(kernel);
  return CUDA_SUCCESS;
}

CUresult unloadModule(CUmodule module) {
  delete reinterpret_cast<FakeKernel *>(module);
  --fakeDriverCounters().modulesAlive;
  return CUDA_SUCCESS;
}

// The real rule: an opt-in whose static + dynamic passes the device's opt-in
// maximum is refused.
CUresult setAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    auto *kernel = reinterpret_cast<FakeKernel *>(f);
    if (value < 0 || kernel->staticShared + value > kSharedOptInMax)
      return CUDA_ERROR_INVALID_VALUE;
    kernel->dynamicSharedOptIn = value;
    ++fakeDriverCounters().dynamicSharedOptIns;
  }
  return CUDA_SUCCESS;
}

CUresult getAttribute(int *value, CUfunction_attribute attribute, CUfunction f) {
  const auto *kernel = reinterpret_cast<const FakeKernel *>(f);
  *value = attribute == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES ? kernel->staticShared
           : attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024
                                                                   : 0;
  return CUDA_SUCCESS;
}

CUresult launch(CUfunction f, unsigned gridX, unsigned, unsigned, unsigned, unsigned, unsigned,
                unsigned sharedBytes, CUstream, void **params, void **) {
  FakeDriverCounters &counters = fakeDriverCounters();
  // As on a GPU: a function's dynamic limit is what it opted in to, else
  // what the 48 KiB default leaves next to its static shared memory.
  const auto *launched = reinterpret_cast<const FakeKernel *>(f);
  const long long dynamicLimit = launched->dynamicSharedOptIn >= 0
                                     ? launched->dynamicSharedOptIn
                                     : kSharedWithoutOptIn - launched->staticShared;
  if (static_cast<long long>(sharedBytes) > dynamicLimit)
    return CUDA_ERROR_INVALID_VALUE;
  counters.lastGridX = gridX;
  counters.lastSharedBytes = sharedBytes;
  if (capturing) {
    ++counters.capturedLaunches;
    return CUDA_SUCCESS;
  }
  ++counters.computedLaunches;
  const FakeKernel &kernel = *reinterpret_cast<const FakeKernel *>(f);
  if (kernel.copy) {
    auto source = reinterpret_cast<const void *>(*static_cast<CUdeviceptr *>(params[0]));
    auto target = reinterpret_cast<void *>(*static_cast<CUdeviceptr *>(params[1]));
    auto vectors = *static_cast<unsigned long long *>(params[2]);
    if (!counters.brokenCopy)
      std::memcpy(target, source, vectors * 16);
    return CUDA_SUCCESS;
  }
  compute(kernel, params);
  return CUDA_SUCCESS;
}

cuda::DriverApi makeApi() {
  cuda::DriverApi api;
  // Everything defaults to a no-op success; the ones that matter follow.
#define LOWBIT_FAKE_NOOP(name) api.name = [](auto...) { return CUDA_SUCCESS; };
  LOWBIT_CUDA_DRIVER_FUNCTIONS(LOWBIT_FAKE_NOOP)
#undef LOWBIT_FAKE_NOOP
  api.cuGetErrorName = [](CUresult, const char **text) {
    *text = "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
  };
  api.cuGetErrorString = [](CUresult, const char **text) {
    *text = "fake driver";
    return CUDA_SUCCESS;
  };
  api.cuModuleLoadDataEx = loadModule;
  api.cuModuleUnload = unloadModule;
  api.cuModuleGetFunction = [](CUfunction *f, CUmodule module, const char *) {
    *f = reinterpret_cast<CUfunction>(module);
    return CUDA_SUCCESS;
  };
  api.cuLaunchKernel = launch;
  api.cuFuncSetAttribute = setAttribute;
  api.cuFuncGetAttribute = getAttribute;
  api.cuMemAlloc = [](CUdeviceptr *p, size_t bytes) {
    *p = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  };
  api.cuMemFree = [](CUdeviceptr p) {
    std::free(reinterpret_cast<void *>(p));
    return CUDA_SUCCESS;
  };
  api.cuMemcpyHtoD = [](CUdeviceptr to, const void *from, size_t bytes) {
    std::memcpy(reinterpret_cast<void *>(to), from, bytes);
    return CUDA_SUCCESS;
  };
  api.cuMemcpyDtoH = [](void *to, CUdeviceptr from, size_t bytes) {
    std::memcpy(to, reinterpret_cast<const void *>(from), bytes);
    return CUDA_SUCCESS;
  };
  api.cuMemsetD8 = [](CUdeviceptr to, unsigned char value, size_t bytes) {
    std::memset(reinterpret_cast<void *>(to), value, bytes);
    return CUDA_SUCCESS;
  };
  api.cuMemsetD32 = [](CUdeviceptr to, unsigned value, size_t count) {
    for (size_t i = 0; i < count; ++i)
      std::memcpy(reinterpret_cast<char *>(to) + 4 * i, &value, 4);
    return CUDA_SUCCESS;
  };
  api.cuDeviceGetAttribute = [](int *value, CUdevice_attribute attribute, CUdevice) {
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 4; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 1 << 20; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = kSharedOptInMax; break;
    default: *value = 0;
    }
    return CUDA_SUCCESS;
  };
  api.cuStreamBeginCapture = [](CUstream, CUstreamCaptureMode) {
    capturing = true;
    return CUDA_SUCCESS;
  };
  api.cuStreamEndCapture = [](CUstream, CUgraph *graph) {
    capturing = false;
    *graph = nullptr;
    return CUDA_SUCCESS;
  };
  api.cuEventElapsedTime = [](float *ms, CUevent, CUevent) {
    *ms = kFakeReplayMs;
    return CUDA_SUCCESS;
  };
  return api;
}

} // namespace

std::vector<char> makeFakeCubin(const kernels::ProblemDesc &problem,
                                const std::string &weightLayout, const std::string &name,
                                int staticSharedBytes) {
  // What api::looksLikeCubin checks: ELF magic, 64-bit little-endian, EM_CUDA.
  std::vector<char> image(kElfHeaderBytes, 0);
  image[0] = 0x7f, image[1] = 'E', image[2] = 'L', image[3] = 'F';
  image[4] = 2, image[5] = 1;
  image[18] = static_cast<char>(190);
  std::string text = "FAKE-CUBIN;name=" + name + ";n=" + std::to_string(problem.n) +
                     ";k=" + std::to_string(problem.k) +
                     ";group=" + std::to_string(problem.groupSize) + ";weight=" + problem.weight +
                     ";static_shared=" + std::to_string(staticSharedBytes) +
                     ";layout=" + weightLayout;
  image.insert(image.end(), text.c_str(), text.c_str() + text.size() + 1);
  return image;
}

kernels::KernelEntry fakeKernelEntry(const kernels::ProblemDesc &problem, const std::string &name,
                                     const std::string &family, const std::string &layout,
                                     int64_t tileM, int64_t tileN) {
  kernels::KernelEntry e;
  e.problem = problem;
  e.name = name;
  e.arch = "sm_90a";
  e.family = family;
  e.schedule = "#lb.schedule<family = " + family + ", tile = [" + std::to_string(tileM) + ", " +
               std::to_string(tileN) + ", 128], warps = [1, 1], stages = 1, split_k = 1>";
  e.weightLayout = layout;
  e.blockThreads = 32;
  e.gridTile = {tileN, tileM, 1};
  return e;
}

const cuda::DriverApi &fakeComputeDriver() {
  static const cuda::DriverApi api = makeApi();
  return api;
}

FakeDriverCounters &fakeDriverCounters() {
  static FakeDriverCounters counters;
  return counters;
}

} // namespace lowbit::testing
