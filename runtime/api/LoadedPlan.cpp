#include "runtime/api/LoadedPlan.h"

namespace lowbit::api {
namespace {

void unloadAll(const cuda::DriverApi &api, std::vector<CUmodule> &modules) {
  for (CUmodule module : modules)
    if (module)
      api.cuModuleUnload(module);
  modules.clear();
}

Result<CUmodule> loadImage(const cuda::DriverApi &api, const PlannedKernel &kernel) {
  CUmodule module = nullptr;
  CUresult result;
  std::string jitLog;
  if (kernel.fromPtx) {
    // The JIT's own log says why PTX was refused (an unsupported .version
    // from a newer toolkit, a bad instruction); keep it for the message.
    char log[4096] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof(log) - 1))};
    result = api.cuModuleLoadDataEx(&module, kernel.image.data(), 2, options, values);
    jitLog = log;
  } else {
    result = api.cuModuleLoadDataEx(&module, kernel.image.data(), 0, nullptr, nullptr);
  }
  if (result == CUDA_SUCCESS)
    return module;
  std::string what = std::string("loading ") + (kernel.fromPtx ? "the PTX (JIT)" : "the cubin") +
                     " of kernel " + kernel.id.substr(0, 12) + " (" + kernel.name + ", " +
                     kernel.arch + ")";
  ApiError error = driverError(api, what, result);
  switch (result) {
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_SOURCE:
  case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
    error.status = LOWBIT_STATUS_CORRUPT_KERNEL;
    break;
  default:
    break;
  }
  if (!jitLog.empty())
    error.message += "\nJIT log: " + jitLog;
  return error;
}

} // namespace

Result<std::vector<CUmodule>> loadModules(const ContextState &context, const PlanSpec &spec,
                                          std::vector<CUfunction> *functions) {
  const cuda::DriverApi &api = *context.api;
  ScopedCurrentContext current(api, context.primaryContext);
  if (current.result() != CUDA_SUCCESS)
    return driverError(api, "making the device's primary context current", current.result());
  std::vector<CUmodule> modules;
  functions->clear();
  for (const PlannedKernel &kernel : spec.kernels) {
    Result<CUmodule> module = loadImage(api, kernel);
    if (!module) {
      unloadAll(api, modules);
      return std::move(module).takeError();
    }
    modules.push_back(*module);
    CUfunction function = nullptr;
    if (CUresult r = api.cuModuleGetFunction(&function, *module, kernel.name.c_str());
        r != CUDA_SUCCESS) {
      unloadAll(api, modules);
      ApiError error = driverError(api, "kernel " + kernel.id.substr(0, 12) +
                                            ": entry point `" + kernel.name +
                                            "` not found in its image",
                                   r);
      error.status = LOWBIT_STATUS_CORRUPT_KERNEL;
      return error;
    }
    // Registers can cap the block size below what the launch needs; finding
    // that out here beats a launch failure on the hot path.
    int maxThreads = 0;
    if (CUresult r = api.cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                            function);
        r != CUDA_SUCCESS) {
      unloadAll(api, modules);
      return driverError(api, "cuFuncGetAttribute(" + kernel.name + ")", r);
    }
    if (maxThreads < static_cast<int>(kernel.geometry.blockThreads)) {
      unloadAll(api, modules);
      return apiError(LOWBIT_STATUS_CORRUPT_KERNEL,
                      "kernel " + kernel.name + " launches " +
                          std::to_string(kernel.geometry.blockThreads) +
                          " threads per block, but this device allows it only " +
                          std::to_string(maxThreads));
    }
    if (CUresult r =
            cuda::allowDynamicSharedBytes(api, function, kernel.geometry.dynamicSharedBytes);
        r != CUDA_SUCCESS) {
      unloadAll(api, modules);
      return driverError(api, "opting kernel " + kernel.name + " in to " +
                                  std::to_string(kernel.geometry.dynamicSharedBytes) +
                                  " bytes of dynamic shared memory",
                         r);
    }
    functions->push_back(function);
  }
  return modules;
}

} // namespace lowbit::api

lowbit_plan::~lowbit_plan() {
  if (!context || !context->api || modules.empty())
    return;
  // Unloading acts on the modules' context; make it current, as for loading.
  lowbit::api::ScopedCurrentContext current(*context->api, context->primaryContext);
  lowbit::api::unloadAll(*context->api, modules);
}
