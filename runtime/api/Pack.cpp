// lowbit.h: lowbit_pack_weights.
#include "lowbit/lowbit.h"
#include "runtime/api/Dispatch.h"
#include "runtime/api/LoadedPlan.h"

#include <cstdint>
#include <vector>

using namespace lowbit::api;

extern "C" {

lowbit_status lowbit_pack_weights(const lowbit_plan *plan, const uint8_t *codes,
                                  void *packed_out, size_t packed_bytes, lowbit_memory where,
                                  void *stream) {
  return guardEntryPoint("lowbit_pack_weights", [&]() -> lowbit_status {
    if (!plan || !codes || !packed_out)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           std::string("lowbit_pack_weights: ") +
                               (!plan ? "plan" : !codes ? "codes" : "packed_out") + " is NULL");
    const PlanSpec &spec = plan->spec;
    if (where == LOWBIT_MEMORY_HOST) {
      ApiStatus s = packOnHost(spec, codes, static_cast<uint8_t *>(packed_out), packed_bytes);
      return s ? LOWBIT_STATUS_SUCCESS : recordFailure(s.error());
    }
    if (where != LOWBIT_MEMORY_DEVICE)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_pack_weights: where must be LOWBIT_MEMORY_HOST or "
                           "LOWBIT_MEMORY_DEVICE, got " +
                               std::to_string(static_cast<int>(where)));
    if (reinterpret_cast<uintptr_t>(packed_out) % 16 != 0)
      return recordFailure(LOWBIT_STATUS_MISALIGNED,
                           "lowbit_pack_weights: packed_out is not 16-byte aligned");
    // Packing is a host permutation for now: pack into a staging buffer and
    // copy it in order on the caller's stream. Weights are packed once, at
    // load time, so the staging allocation and the wait are acceptable here.
    if (packed_bytes < static_cast<size_t>(spec.weightBytes))
      return recordFailure(LOWBIT_STATUS_BUFFER_TOO_SMALL,
                           "lowbit_pack_weights: packed_bytes is " + std::to_string(packed_bytes) +
                               ", the packed weights take " + std::to_string(spec.weightBytes));
    std::vector<uint8_t> staging(static_cast<size_t>(spec.weightBytes));
    if (ApiStatus s = packOnHost(spec, codes, staging.data(), staging.size()); !s)
      return recordFailure(s.error());
    const lowbit::cuda::DriverApi &api = *plan->context->api;
    ScopedCurrentContext current(api, plan->context->primaryContext);
    if (current.result() != CUDA_SUCCESS)
      return recordFailure(driverError(api, "lowbit_pack_weights: making the context current",
                                       current.result()));
    CUstream cuStream = static_cast<CUstream>(stream);
    if (CUresult r = api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(packed_out),
                                           staging.data(), staging.size(), cuStream);
        r != CUDA_SUCCESS)
      return recordFailure(driverError(api, "lowbit_pack_weights: cuMemcpyHtoDAsync", r));
    // The staging buffer dies with this call, so the copy must be done.
    if (CUresult r = api.cuStreamSynchronize(cuStream); r != CUDA_SUCCESS)
      return recordFailure(driverError(api, "lowbit_pack_weights: cuStreamSynchronize", r));
    return LOWBIT_STATUS_SUCCESS;
  });
}

} // extern "C"
