#include "compiler/measure/CopyBandwidth.h"

#include "compiler/measure/CopyKernelPtx.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace lowbit::measure {
namespace {

Error driverError(const cuda::DriverApi &api, const std::string &what, CUresult r) {
  return makeError("copy bandwidth: " + what + ": " + cuda::describe(api, r));
}

class Module {
public:
  explicit Module(const cuda::DriverApi &api) : api_(api) {}
  ~Module() {
    if (module_)
      api_.cuModuleUnload(module_);
  }
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
  CUmodule *out() { return &module_; }
  CUmodule get() const { return module_; }

private:
  const cuda::DriverApi &api_;
  CUmodule module_ = nullptr;
};

// The bytes the check compares at each end of the buffers.
constexpr size_t kCheckedBytes = 64 * 1024;
constexpr unsigned kSourcePattern = 0x9E3779B9u;

} // namespace

const char *copyKernelPtx() {
  return kCopyKernelPtx;
}

size_t copyBufferBytes(int64_t l2Bytes, size_t minBytes) {
  size_t bytes = std::max(minBytes, static_cast<size_t>(std::max<int64_t>(l2Bytes, 0)) * 4);
  return std::max<size_t>(16, (bytes + 15) / 16 * 16);
}

unsigned copyBlocks(int smCount, int maxThreadsPerSm) {
  int perSm = std::max(1, maxThreadsPerSm / static_cast<int>(kCopyKernelThreads));
  return static_cast<unsigned>(std::max(1, smCount) * perSm);
}

Expected<CopyBandwidth> measureCopyBandwidth(const cuda::DriverApi &api, CUdevice device,
                                             size_t minBytes) {
  int sms = 0, threadsPerSm = 0, l2 = 0;
  if (CUresult r = api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
      r != CUDA_SUCCESS)
    return driverError(api, "SM count", r);
  if (CUresult r = api.cuDeviceGetAttribute(
          &threadsPerSm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device);
      r != CUDA_SUCCESS)
    return driverError(api, "threads per SM", r);
  if (CUresult r = api.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device);
      r != CUDA_SUCCESS)
    return driverError(api, "L2 size", r);

  Module module(api);
  // PTX is read as a C string; the driver JIT-compiles it for this device.
  if (CUresult r = api.cuModuleLoadDataEx(module.out(), copyKernelPtx(), 0, nullptr, nullptr);
      r != CUDA_SUCCESS)
    return driverError(api, "loading the copy kernel's PTX", r);
  CUfunction function = nullptr;
  if (CUresult r = api.cuModuleGetFunction(&function, module.get(), kCopyKernelName);
      r != CUDA_SUCCESS)
    return driverError(api, std::string("finding ") + kCopyKernelName, r);

  CopyBandwidth result;
  result.bufferBytes = copyBufferBytes(l2, minBytes);
  result.blocks = copyBlocks(sms, threadsPerSm);
  Expected<DeviceMemory> source = DeviceMemory::allocate(api, result.bufferBytes);
  Expected<DeviceMemory> target = DeviceMemory::allocate(api, result.bufferBytes);
  if (!source.ok() || !target.ok())
    return makeError("copy bandwidth: " + (source.ok() ? target.error() : source.error()));
  // Non-zero source data (zeros can be cheaper to move on some parts).
  if (CUresult r = api.cuMemsetD32(source->get(), kSourcePattern, result.bufferBytes / 4);
      r != CUDA_SUCCESS)
    return driverError(api, "filling the source", r);
  if (CUresult r = api.cuMemsetD8(target->get(), 0, result.bufferBytes); r != CUDA_SUCCESS)
    return driverError(api, "clearing the target", r);

  CUdeviceptr from = source->get(), to = target->get();
  unsigned long long vectors = result.bufferBytes / 16;
  auto launch = [&](CUstream stream) {
    void *args[] = {&from, &to, &vectors};
    return api.cuLaunchKernel(function, result.blocks, 1, 1, kCopyKernelThreads, 1, 1, 0, stream,
                              args, nullptr);
  };
  if (CUresult r = launch(nullptr); r != CUDA_SUCCESS)
    return driverError(api, "launching the copy kernel", r);
  if (CUresult r = api.cuCtxSynchronize(); r != CUDA_SUCCESS)
    return driverError(api, "running the copy kernel", r);
  const size_t checked = std::min(kCheckedBytes, result.bufferBytes);
  std::vector<unsigned char> head(checked), tail(checked), expected(checked);
  for (size_t i = 0; i < checked; i += 4)
    std::memcpy(&expected[i], &kSourcePattern, std::min<size_t>(4, checked - i));
  if (CUresult r = api.cuMemcpyDtoH(head.data(), to, checked); r != CUDA_SUCCESS)
    return driverError(api, "reading the target", r);
  if (CUresult r = api.cuMemcpyDtoH(tail.data(), to + result.bufferBytes - checked, checked);
      r != CUDA_SUCCESS)
    return driverError(api, "reading the target", r);
  if (head != expected || tail != expected)
    return makeError("copy bandwidth: the copy kernel did not copy its buffer");

  // Eight launches per graph: ~0.5 ms each for 1 GiB at 4 TB/s, far above
  // launch gaps, so the median is the copy itself.
  Expected<Timing> timing =
      timeGraph(api, 8, 9, [&](int, CUstream stream) { return launch(stream); });
  if (!timing.ok())
    return makeError("copy bandwidth: " + timing.error());
  result.timing = *timing;
  // Bytes per µs / 1e3 = GB/s.
  result.gbps = 2.0 * static_cast<double>(result.bufferBytes) / (timing->medianUs * 1e3);
  return result;
}

} // namespace lowbit::measure
