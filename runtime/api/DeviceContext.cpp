#include "runtime/api/DeviceContext.h"

#include <cstdlib>

namespace lowbit::api {

ContextState::~ContextState() {
  cublasLt.reset(); // its handle goes before the context it was used in
  if (api && primaryContext)
    api->cuDevicePrimaryCtxRelease(device);
}

Result<std::shared_ptr<const cuda::CublasLt>> ContextState::loadCublasLt() {
  if (!cublasLt && cublasLtError.empty()) {
    const char *chosen = std::getenv("LOWBIT_CUBLASLT");
    std::vector<std::string> libraries = chosen && *chosen
                                             ? std::vector<std::string>{chosen}
                                             : cuda::CublasLt::defaultLibraries();
    Expected<std::unique_ptr<cuda::CublasLt>> loaded = cuda::CublasLt::load(libraries);
    if (loaded)
      cublasLt = std::move(*loaded);
    else
      cublasLtError = loaded.error();
  }
  if (!cublasLt)
    return apiError(LOWBIT_STATUS_NO_KERNEL, cublasLtError);
  return cublasLt;
}

ApiError driverError(const cuda::DriverApi &api, const std::string &what, CUresult result) {
  lowbit_status status = LOWBIT_STATUS_DRIVER_ERROR;
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    status = LOWBIT_STATUS_OUT_OF_MEMORY;
  else if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_INVALID_DEVICE)
    status = LOWBIT_STATUS_NO_DEVICE;
  return apiError(status, what + ": " + cuda::describe(api, result));
}

Result<std::shared_ptr<ContextState>> createContextState(const lowbit_context_options &options) {
  auto state = std::make_shared<ContextState>();
  // The device comes first: without one nothing else matters, and a host
  // app can tell "no GPU here" (skip) from a misconfiguration.
  std::string whyNot;
  state->api = cuda::loadDriver(&whyNot);
  if (!state->api)
    return apiError(LOWBIT_STATUS_NO_DEVICE, whyNot);
  int count = cuda::deviceCount(&whyNot);
  if (count == 0)
    return apiError(LOWBIT_STATUS_NO_DEVICE, whyNot);
  if (options.device_ordinal < 0 || options.device_ordinal >= count)
    return apiError(LOWBIT_STATUS_NO_DEVICE,
                    "device_ordinal " + std::to_string(options.device_ordinal) +
                        " does not exist: the driver reports " + std::to_string(count) +
                        " device(s)");
  state->ordinal = options.device_ordinal;
  Expected<db::DeviceFingerprint> fingerprint = db::readFingerprint(state->ordinal);
  if (!fingerprint)
    return apiError(LOWBIT_STATUS_NO_DEVICE, fingerprint.error());
  state->fingerprint = std::move(*fingerprint);

  Result<KernelDatabases> databases =
      openKernelDatabases(options.system_db_path, options.user_db_path);
  if (!databases)
    return std::move(databases).takeError();
  state->databases = std::move(*databases);

  const cuda::DriverApi &api = *state->api;
  if (CUresult r = api.cuDeviceGet(&state->device, state->ordinal); r != CUDA_SUCCESS)
    return driverError(api, "cuDeviceGet", r);
  // The primary context is the one the CUDA runtime uses, so pointers and
  // streams from a cudart-based engine work with our kernels unchanged.
  CUcontext primary = nullptr;
  if (CUresult r = api.cuDevicePrimaryCtxRetain(&primary, state->device); r != CUDA_SUCCESS)
    return driverError(api, "cuDevicePrimaryCtxRetain", r);
  state->primaryContext = primary;
  return state;
}

ScopedCurrentContext::ScopedCurrentContext(const cuda::DriverApi &api,
                                           CUcontext context) noexcept
    : api_(api) {
  result_ = api_.cuCtxGetCurrent(&previous_);
  if (result_ == CUDA_SUCCESS && previous_ != context) {
    result_ = api_.cuCtxSetCurrent(context);
    switched_ = result_ == CUDA_SUCCESS;
  }
}

ScopedCurrentContext::~ScopedCurrentContext() {
  if (switched_)
    api_.cuCtxSetCurrent(previous_);
}

} // namespace lowbit::api
