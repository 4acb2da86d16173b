#include "FakeComputeDriver.h"

#include "compiler/measure/ProblemInputs.h"
#include "core/layout/WeightLayout.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>

namespace lowbit::testing {
namespace {

struct FakeKernel {
  bool copy = false; // the copy kernel rather than a matmul
  core::Problem problem;
  layout::WeightLayout layout;
  std::string entryName; // what cuModuleGetFunction asked for
  int staticShared = 0;        // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, from the image
  int dynamicSharedOptIn = -1; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; -1: never set
};

constexpr int kSharedWithoutOptIn = 48 * 1024;
constexpr int kSharedOptInMax = 227 * 1024; // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, as an H100's

bool capturing = false;

constexpr size_t kElfHeaderBytes = 64;

// "key=value" lines of a fake cubin after its ELF header (makeFakeCubin),
// or the copy kernel's PTX.
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
  std::stringstream lines{std::string(image + kElfHeaderBytes)};
  std::string line;
  if (!std::getline(lines, line) || line != "FAKE-CUBIN")
    return nullptr;
  auto kernel = std::make_unique<FakeKernel>();
  bool haveProblem = false, haveLayout = false;
  while (std::getline(lines, line)) {
    std::string key = line.substr(0, line.find('='));
    std::string value = line.substr(line.find('=') + 1);
    if (key == "static_shared") {
      kernel->staticShared = std::stoi(value);
    } else if (key == "problem") {
      Expected<core::Problem> problem = core::parseSignature(value);
      if (!problem)
        return nullptr;
      kernel->problem = *problem;
      haveProblem = true;
    } else if (key == "layout") {
      Expected<layout::WeightLayout> layout = layout::parseWeightLayout(value);
      if (!layout)
        return nullptr;
      kernel->layout = *layout;
      haveLayout = true;
    }
  }
  return haveProblem && haveLayout ? kernel.release() : nullptr;
}

// The value of the `bytes`-byte little-endian element `index` of `data`
// decoded in `format`.
double decodeElement(const uint8_t *data, int64_t index, int bytes,
                     const formats::DataFormat &format) {
  uint32_t code = 0;
  for (int b = 0; b < bytes; ++b)
    code |= static_cast<uint32_t>(data[index * bytes + b]) << (8 * b);
  return format.decode(code);
}

// Y[m, n] = Σ_k X[m, k] · w(n, k), w the kernel's dequantized weight: its
// code (read in the kernel's own layout, whatever layout the weights were
// packed in) combined with the slot's scale and zero as the scheme says.
void compute(const FakeKernel &kernel, void **params) {
  const core::Problem &p = kernel.problem;
  const bool zeros = p.scheme.hasZeros();
  auto pointer = [&](int i) { return *static_cast<CUdeviceptr *>(params[i]); };
  auto x = reinterpret_cast<const uint16_t *>(pointer(0));
  auto w = reinterpret_cast<const uint8_t *>(pointer(1));
  auto s = reinterpret_cast<const uint8_t *>(pointer(2));
  auto z = zeros ? reinterpret_cast<const uint8_t *>(pointer(3)) : nullptr;
  auto y = reinterpret_cast<uint16_t *>(pointer(zeros ? 4 : 3));
  long long m = *static_cast<long long *>(params[zeros ? 5 : 4]);
  const int64_t n = p.n, k = p.k;
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  size_t bytes = static_cast<size_t>(layout::packedBytes(kernel.layout, n, k));
  if (!layout::unpackWeights(kernel.layout, n, k, w, bytes, codes.data()).ok())
    std::abort(); // a test bug, not a measurer bug
  // Everything decoded once per launch (codes by value, one scale and zero
  // per slot, x), so large shapes stay cheap.
  const int scaleBytes = core::scaleElementBytes(p), zeroBytes = core::zeroElementBytes(p);
  const formats::DataFormat zeroFormat = p.scheme.zeroCodes ? *p.scheme.zeroCodes : p.scheme.scale;
  std::vector<double> codeValue(size_t{1} << p.codeBits());
  for (size_t c = 0; c < codeValue.size(); ++c)
    codeValue[c] = p.code.decode(static_cast<uint32_t>(c));
  const int64_t slots = core::scaleCount(p);
  std::vector<double> scales(static_cast<size_t>(slots)), zeroValues(static_cast<size_t>(slots));
  for (int64_t i = 0; i < slots; ++i) {
    scales[static_cast<size_t>(i)] = decodeElement(s, i, scaleBytes, p.scheme.scale);
    // Zero codes are packed densely, two uint4 a byte (even index low).
    const int zeroBits = p.scheme.zeroCodes ? zeroFormat.bits() : 0;
    zeroValues[static_cast<size_t>(i)] = !zeros ? 0
                                         : zeroBits == 4
                                             ? zeroFormat.decode((z[i / 2] >> (4 * (i % 2))) & 15u)
                                             : decodeElement(z, i, zeroBytes, zeroFormat);
  }
  std::vector<double> xValues(static_cast<size_t>(m * k));
  for (size_t i = 0; i < xValues.size(); ++i)
    xValues[i] = measure::activationValue(x[i], p.activation);
  auto slot = [&](int64_t col, int64_t kk) -> int64_t {
    switch (p.scheme.granularity) {
    case formats::Granularity::PerTensor: return 0;
    case formats::Granularity::PerChannel: return col;
    case formats::Granularity::PerGroup: break;
    }
    return col * (k / p.scheme.groupSize) + kk / p.scheme.groupSize;
  };
  const bool subtractScaled = p.scheme.zero == formats::ZeroMode::SubtractScaled;
  std::vector<double> row(static_cast<size_t>(k));
  for (int64_t col = 0; col < n; ++col) {
    for (int64_t kk = 0; kk < k; ++kk) {
      double q = codeValue[codes[static_cast<size_t>(col * k + kk)]];
      const size_t at = static_cast<size_t>(slot(col, kk));
      row[static_cast<size_t>(kk)] =
          subtractScaled ? q * scales[at] - zeroValues[at] : (q - zeroValues[at]) * scales[at];
    }
    for (long long r = 0; r < m; ++r) {
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += xValues[static_cast<size_t>(r * k + kk)] * row[static_cast<size_t>(kk)];
      y[r * n + col] = measure::activationBits(
          col == fakeDriverCounters().corruptColumn ? sum + 1 : sum, p.activation);
    }
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
  if (!launched->copy && launched->entryName == counters.failLaunchesOf)
    return CUDA_ERROR_LAUNCH_FAILED; // set by a test: this kernel never launches
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
  api.cuModuleGetFunction = [](CUfunction *f, CUmodule module, const char *name) {
    reinterpret_cast<FakeKernel *>(module)->entryName = name;
    *f = reinterpret_cast<CUfunction>(module);
    return CUDA_SUCCESS;
  };
  api.cuLaunchKernel = launch;
  api.cuFuncSetAttribute = setAttribute;
  api.cuFuncGetAttribute = getAttribute;
  // cuMemAlloc's 256-byte alignment, as the driver guarantees: cuBLASLt
  // plans for less aligned matrices of their own, so malloc's 16 made the
  // number of plans depend on where malloc put the buffers (a fresh-clone CI
  // saw CublasFake.TheFixtureTimesItAndReportsWhyItFailed plan twice).
  api.cuMemAlloc = [](CUdeviceptr *p, size_t bytes) {
    constexpr size_t kAlignment = 256;
    const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    *p = reinterpret_cast<CUdeviceptr>(std::aligned_alloc(kAlignment, rounded));
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
  std::string text = "FAKE-CUBIN\nname=" + name +
                     "\nstatic_shared=" + std::to_string(staticSharedBytes) +
                     "\nproblem=" + core::signature(problem) + "\nlayout=" + weightLayout + "\n";
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
