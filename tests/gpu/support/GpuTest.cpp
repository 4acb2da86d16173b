#include "tests/gpu/support/GpuTest.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>

namespace lowbit::testing {

const cuda::DriverApi *gpuOrNull(std::string *whyNot) {
  if (cuda::deviceCount(whyNot) == 0)
    return nullptr;
  const cuda::DriverApi *api = cuda::loadDriver(whyNot);
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUresult result = api->cuDeviceGet(&device, 0);
  if (result == CUDA_SUCCESS)
    result = api->cuDevicePrimaryCtxRetain(&context, device);
  if (result == CUDA_SUCCESS)
    result = api->cuCtxSetCurrent(context);
  if (result != CUDA_SUCCESS) {
    *whyNot = "cannot make device 0 current: " + cuda::describe(*api, result);
    return nullptr;
  }
  return api;
}

DeviceBuffer::DeviceBuffer(const cuda::DriverApi &api, size_t bytes)
    : api_(api), bytes_(bytes) {
  if (api_.cuMemAlloc(&pointer_, bytes) != CUDA_SUCCESS)
    pointer_ = 0;
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_)
    api_.cuMemFree(pointer_);
}

CUresult DeviceBuffer::upload(const void *host, size_t bytes) {
  return api_.cuMemcpyHtoD(pointer_, host, bytes);
}

CUresult DeviceBuffer::download(void *host, size_t bytes) const {
  return api_.cuMemcpyDtoH(host, pointer_, bytes);
}

CUresult DeviceBuffer::poison(unsigned char byte) {
  return api_.cuMemsetD8(pointer_, byte, bytes_);
}

LoadedModule::LoadedModule(const cuda::DriverApi &api, const void *image)
    : api_(api) {
  loadResult_ = api_.cuModuleLoadDataEx(&module_, image, 0, nullptr, nullptr);
  if (loadResult_ != CUDA_SUCCESS)
    module_ = nullptr;
}

LoadedModule::~LoadedModule() {
  if (module_)
    api_.cuModuleUnload(module_);
}

CUfunction LoadedModule::function(const char *name) const {
  CUfunction function = nullptr;
  if (!module_ || api_.cuModuleGetFunction(&function, module_, name) != CUDA_SUCCESS)
    return nullptr;
  return function;
}

std::string testKernelsPath(const char *env, const std::string &name) {
  if (const char *path = std::getenv(env))
    return path;
  char path[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::string exe = length > 0 ? std::string(path, static_cast<size_t>(length)) : ".";
  return exe.substr(0, exe.find_last_of('/')) + "/../kernels/" + name;
}

std::string deviceArchName(const cuda::DriverApi &api) {
  CUdevice device = 0;
  int major = 0, minor = 0;
  api.cuDeviceGet(&device, 0);
  api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  std::string name = "sm_" + std::to_string(major) + std::to_string(minor);
  if (major == 9 && minor == 0)
    name += "a";
  return name;
}

} // namespace lowbit::testing
