// lowbit.h: lowbit_pack_weights, lowbit_pack_zeros, lowbit_pack_permutation and
// lowbit_unpack_weights.
#include "core/AbiFormats.h"
#include "core/layout/WeightLayout.h"
#include "lowbit/lowbit.h"
#include "runtime/api/Dispatch.h"
#include "runtime/api/LoadedPlan.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

using namespace lowbit::api;

namespace {

// Packs `what` on the host with `packHost` (into `packed_out` itself for
// HOST, or into a staging buffer of `bytes` copied to the device on `stream`
// for DEVICE), with the checks both entry points share. `where` is the
// caller's lowbit_memory as its stored int (core::abiField): a bogus value
// loaded as the enum would be undefined.
lowbit_status deliver(const char *entry, const char *what, const lowbit_plan *plan, int64_t bytes,
                      void *packed_out, size_t packed_bytes, int where, void *stream,
                      const std::function<ApiStatus(uint8_t *, size_t)> &packHost) {
  if (where == LOWBIT_MEMORY_HOST) {
    ApiStatus s = packHost(static_cast<uint8_t *>(packed_out), packed_bytes);
    return s ? LOWBIT_STATUS_SUCCESS : recordFailure(s.error());
  }
  if (where != LOWBIT_MEMORY_DEVICE)
    return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                         std::string(entry) +
                             ": where must be LOWBIT_MEMORY_HOST or LOWBIT_MEMORY_DEVICE, got " +
                             std::to_string(where));
  if (reinterpret_cast<uintptr_t>(packed_out) % 16 != 0)
    return recordFailure(LOWBIT_STATUS_MISALIGNED,
                         std::string(entry) + ": packed_out is not 16-byte aligned");
  // Packing is a host permutation for now: pack into a staging buffer and
  // copy it in order on the caller's stream. Weights are packed once, at
  // load time, so the staging allocation and the wait are acceptable here.
  if (packed_bytes < static_cast<size_t>(bytes))
    return recordFailure(LOWBIT_STATUS_BUFFER_TOO_SMALL,
                         std::string(entry) + ": packed_bytes is " + std::to_string(packed_bytes) +
                             ", the packed " + what + " take " + std::to_string(bytes));
  std::vector<uint8_t> staging(static_cast<size_t>(bytes));
  if (ApiStatus s = packHost(staging.data(), staging.size()); !s)
    return recordFailure(s.error());
  const lowbit::cuda::DriverApi &api = *plan->context->api;
  ScopedCurrentContext current(api, plan->context->primaryContext);
  if (current.result() != CUDA_SUCCESS)
    return recordFailure(
        driverError(api, std::string(entry) + ": making the context current", current.result()));
  CUstream cuStream = static_cast<CUstream>(stream);
  if (CUresult r = api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(packed_out), staging.data(),
                                         staging.size(), cuStream);
      r != CUDA_SUCCESS)
    return recordFailure(driverError(api, std::string(entry) + ": cuMemcpyHtoDAsync", r));
  // The staging buffer dies with this call, so the copy must be done.
  if (CUresult r = api.cuStreamSynchronize(cuStream); r != CUDA_SUCCESS)
    return recordFailure(driverError(api, std::string(entry) + ": cuStreamSynchronize", r));
  return LOWBIT_STATUS_SUCCESS;
}

} // namespace

extern "C" {

lowbit_status lowbit_pack_weights(const lowbit_plan *plan, const uint8_t *codes, void *packed_out,
                                  size_t packed_bytes, lowbit_memory where, void *stream) {
  return guardEntryPoint("lowbit_pack_weights", [&]() -> lowbit_status {
    if (!plan || !codes || !packed_out)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, std::string("lowbit_pack_weights: ") +
                                                               (!plan    ? "plan"
                                                                : !codes ? "codes"
                                                                         : "packed_out") +
                                                               " is NULL");
    const PlanSpec &spec = plan->spec;
    return deliver("lowbit_pack_weights", "weights", plan, spec.weightBytes, packed_out,
                   packed_bytes, lowbit::core::abiField(where), stream,
                   [&](uint8_t *out, size_t bytes) { return packOnHost(spec, codes, out, bytes); });
  });
}

lowbit_status lowbit_pack_zeros(const lowbit_plan *plan, const uint8_t *zero_codes, size_t count,
                                void *packed_out, size_t packed_bytes, lowbit_memory where,
                                void *stream) {
  return guardEntryPoint("lowbit_pack_zeros", [&]() -> lowbit_status {
    if (!plan || !zero_codes || !packed_out)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, std::string("lowbit_pack_zeros: ") +
                                                               (!plan         ? "plan"
                                                                : !zero_codes ? "zero_codes"
                                                                              : "packed_out") +
                                                               " is NULL");
    const PlanSpec &spec = plan->spec;
    // A problem without zero codes is refused before any copy is attempted.
    if (!spec.problem.scheme.zeroCodes)
      return recordFailure(packZerosOnHost(spec, zero_codes, count, nullptr, 0).error());
    return deliver("lowbit_pack_zeros", "zero codes", plan, spec.zeroBytes, packed_out,
                   packed_bytes, lowbit::core::abiField(where), stream,
                   [&](uint8_t *out, size_t bytes) {
                     return packZerosOnHost(spec, zero_codes, count, out, bytes);
                   });
  });
}

lowbit_status lowbit_pack_permutation(const lowbit_plan *plan, const int32_t *permutation,
                                      void *packed_out, size_t packed_bytes, lowbit_memory where,
                                      void *stream) {
  return guardEntryPoint("lowbit_pack_permutation", [&]() -> lowbit_status {
    if (!plan || !permutation || !packed_out)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           std::string("lowbit_pack_permutation: ") +
                               (!plan          ? "plan"
                                : !permutation ? "permutation"
                                               : "packed_out") +
                               " is NULL");
    const PlanSpec &spec = plan->spec;
    if (!spec.permutedColumns)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_pack_permutation: the plan's problem has act_order = 0");
    if (packed_bytes < static_cast<size_t>(spec.packedWeightBytes()))
      return recordFailure(LOWBIT_STATUS_BUFFER_TOO_SMALL,
                           "lowbit_pack_permutation: packed_bytes is " +
                               std::to_string(packed_bytes) + ", the packed weights take " +
                               std::to_string(spec.packedWeightBytes()));
    const int64_t bytes = spec.problem.k * int64_t(sizeof(int32_t));
    uint8_t *tail = static_cast<uint8_t *>(packed_out) + spec.permutationOffset;
    return deliver("lowbit_pack_permutation", "permutation", plan, bytes, tail,
                   static_cast<size_t>(bytes), lowbit::core::abiField(where), stream,
                   [&](uint8_t *out, size_t outBytes) {
                     return packPermutationOnHost(spec, permutation, out, outBytes);
                   });
  });
}

lowbit_status lowbit_unpack_weights(const lowbit_plan *plan, const void *packed,
                                    size_t packed_bytes, uint8_t *codes_out, size_t codes_count,
                                    int32_t *permutation_out) {
  return guardEntryPoint("lowbit_unpack_weights", [&]() -> lowbit_status {
    if (!plan || !packed || !codes_out)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, std::string("lowbit_unpack_weights: ") +
                                                               (!plan     ? "plan"
                                                                : !packed ? "packed"
                                                                          : "codes_out") +
                                                               " is NULL");
    const PlanSpec &spec = plan->spec;
    const int64_t n = spec.problem.n, k = spec.problem.k;
    if (codes_count != static_cast<size_t>(n * k))
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           "lowbit_unpack_weights: codes_count is " + std::to_string(codes_count) +
                               ", the problem has N * K = " + std::to_string(n * k) + " codes");
    if (packed_bytes < static_cast<size_t>(spec.packedWeightBytes()))
      return recordFailure(LOWBIT_STATUS_BUFFER_TOO_SMALL,
                           "lowbit_unpack_weights: packed_bytes is " +
                               std::to_string(packed_bytes) + ", the packed weights take " +
                               std::to_string(spec.packedWeightBytes()));
    const auto *bytes = static_cast<const uint8_t *>(packed);
    if (lowbit::Status s = lowbit::layout::unpackWeights(spec.layout, n, k, bytes, packed_bytes,
                                                          codes_out);
        !s)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_unpack_weights: " + s.error());
    if (spec.permutedColumns && permutation_out)
      std::memcpy(permutation_out, bytes + spec.permutationOffset,
                  static_cast<size_t>(k) * sizeof(int32_t));
    return LOWBIT_STATUS_SUCCESS;
  });
}

} // extern "C"
