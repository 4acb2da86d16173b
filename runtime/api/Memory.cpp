// lowbit.h: device memory conveniences for programs without their own CUDA
// allocator. Synchronous, off the hot path.
#include "lowbit/lowbit.h"
#include "runtime/api/DeviceContext.h"

using namespace lowbit::api;

namespace {

// Runs `body` with the context's primary context current, or records why not.
template <typename Body>
lowbit_status withContext(const char *entryPoint, lowbit_context *context, Body &&body) {
  if (!context || !context->state)
    return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                         std::string(entryPoint) + ": context is NULL");
  const lowbit::cuda::DriverApi &api = *context->state->api;
  ScopedCurrentContext current(api, context->state->primaryContext);
  if (current.result() != CUDA_SUCCESS)
    return recordFailure(driverError(api, std::string(entryPoint) + ": making the context current",
                                     current.result()));
  CUresult r = body(api);
  if (r != CUDA_SUCCESS)
    return recordFailure(driverError(api, entryPoint, r));
  return LOWBIT_STATUS_SUCCESS;
}

CUdeviceptr devicePointer(const void *pointer) { return reinterpret_cast<CUdeviceptr>(pointer); }

} // namespace

extern "C" {

lowbit_status lowbit_device_alloc(lowbit_context *context, size_t bytes, void **out_pointer) {
  return guardEntryPoint("lowbit_device_alloc", [&]() -> lowbit_status {
    if (!out_pointer)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_device_alloc: out_pointer is NULL");
    *out_pointer = nullptr;
    if (bytes == 0)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_device_alloc: bytes is 0");
    return withContext("lowbit_device_alloc", context, [&](const lowbit::cuda::DriverApi &api) {
      CUdeviceptr pointer = 0;
      CUresult r = api.cuMemAlloc(&pointer, bytes);
      if (r == CUDA_SUCCESS)
        *out_pointer = reinterpret_cast<void *>(pointer);
      return r;
    });
  });
}

lowbit_status lowbit_device_free(lowbit_context *context, void *pointer) {
  return guardEntryPoint("lowbit_device_free", [&]() -> lowbit_status {
    if (!pointer)
      return LOWBIT_STATUS_SUCCESS;
    return withContext("lowbit_device_free", context, [&](const lowbit::cuda::DriverApi &api) {
      return api.cuMemFree(devicePointer(pointer));
    });
  });
}

lowbit_status lowbit_memcpy(lowbit_context *context, void *destination, const void *source,
                            size_t bytes, lowbit_copy_kind kind) {
  return guardEntryPoint("lowbit_memcpy", [&]() -> lowbit_status {
    if (bytes == 0)
      return LOWBIT_STATUS_SUCCESS;
    if (!destination || !source)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           std::string("lowbit_memcpy: ") + (!destination ? "destination" : "source") +
                               " is NULL");
    if (kind != LOWBIT_COPY_HOST_TO_DEVICE && kind != LOWBIT_COPY_DEVICE_TO_HOST &&
        kind != LOWBIT_COPY_DEVICE_TO_DEVICE)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_memcpy: kind must be a lowbit_copy_kind, got " +
                               std::to_string(static_cast<int>(kind)));
    return withContext("lowbit_memcpy", context, [&](const lowbit::cuda::DriverApi &api) {
      switch (kind) {
      case LOWBIT_COPY_HOST_TO_DEVICE:
        return api.cuMemcpyHtoD(devicePointer(destination), source, bytes);
      case LOWBIT_COPY_DEVICE_TO_HOST:
        return api.cuMemcpyDtoH(destination, devicePointer(source), bytes);
      default:
        return api.cuMemcpyDtoD(devicePointer(destination), devicePointer(source), bytes);
      }
    });
  });
}

lowbit_status lowbit_memset(lowbit_context *context, void *destination, unsigned char value,
                            size_t bytes) {
  return guardEntryPoint("lowbit_memset", [&]() -> lowbit_status {
    if (bytes == 0)
      return LOWBIT_STATUS_SUCCESS;
    if (!destination)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_memset: destination is NULL");
    return withContext("lowbit_memset", context, [&](const lowbit::cuda::DriverApi &api) {
      return api.cuMemsetD8(devicePointer(destination), value, bytes);
    });
  });
}

lowbit_status lowbit_stream_synchronize(lowbit_context *context, void *stream) {
  return guardEntryPoint("lowbit_stream_synchronize", [&]() -> lowbit_status {
    return withContext("lowbit_stream_synchronize", context,
                       [&](const lowbit::cuda::DriverApi &api) {
                         return api.cuStreamSynchronize(static_cast<CUstream>(stream));
                       });
  });
}

} // extern "C"
