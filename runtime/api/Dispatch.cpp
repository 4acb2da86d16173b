#include "runtime/api/Dispatch.h"

#include "core/formats/Quantize.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace lowbit::api {
namespace {

bool aligned(const void *pointer, uintptr_t alignment) {
  return reinterpret_cast<uintptr_t>(pointer) % alignment == 0;
}

std::string pointerText(const void *pointer) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", pointer);
  return text;
}

lowbit_status fail(const char *entryPoint, std::string *whyNot, lowbit_status status,
                   std::string message) {
  if (whyNot)
    *whyNot = entryPoint + (": " + std::move(message));
  return status;
}

// Quantized activations come with scales, and f16 or bf16 ones without: each
// kind has its own entry point, so a caller who mixes them up is told which
// one the plan wants instead of launching a kernel on misread bytes.
lowbit_status checkEntryPoint(const PlanSpec &spec, const MatmulArgs &args, std::string *whyNot) {
  const char *entryPoint = matmulEntryPoint(args);
  const core::Problem &problem = spec.problem;
  const bool quantizedPlan = core::isQuantized(problem.activation);
  if (args.quantizing) {
    if (!quantizedPlan)
      return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
                  std::string("the plan's activations are ") +
                      core::activationName(problem.activation) +
                      ", which the kernels read as they are; call lowbit_matmul");
    if (!spec.quantizesActivations)
      return fail(entryPoint, whyNot, LOWBIT_STATUS_UNSUPPORTED,
                  std::string("the plan's ") + core::activationName(problem.activation) +
                      " activations have no quantizer among its kernels (call "
                      "lowbit_matmul_quantized)");
    if (args.xDtype != LOWBIT_DTYPE_F16 && args.xDtype != LOWBIT_DTYPE_BF16)
      return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
                  "x_dtype is " + std::to_string(static_cast<int>(args.xDtype)) +
                      "; x must be LOWBIT_DTYPE_F16 or LOWBIT_DTYPE_BF16");
    return LOWBIT_STATUS_SUCCESS;
  }
  if (quantizedPlan && !args.quantized)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
                std::string("the plan's activations are ") +
                    core::activationName(problem.activation) + " with f32 per-" +
                    core::activationScaleSpelling(problem.activationScale) +
                    " scales; call lowbit_matmul_quantized, which takes x_scales" +
                    (spec.quantizesActivations
                         ? " (or lowbit_matmul_quantizing, which quantizes f16 or bf16 x)"
                         : ""));
  if (!quantizedPlan && args.quantized)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
                std::string("the plan's activations are ") +
                    core::activationName(problem.activation) +
                    ", which have no scales; call lowbit_matmul");
  if (args.quantized && !args.xScales)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
                std::string("x_scales is NULL; the plan's ") +
                    core::activationName(problem.activation) + " activations need their f32 per-" +
                    core::activationScaleSpelling(problem.activationScale) + " scales");
  return LOWBIT_STATUS_SUCCESS;
}

} // namespace

lowbit_status checkMatmul(const PlanSpec &spec, const MatmulArgs &args, int *rangeIndex,
                          size_t *kernelIndex, std::string *whyNot) {
  // 16 bytes: the kernels load x, store y and read packed weights in 16-byte
  // vectors; a misaligned pointer would fault or, worse, read the wrong bytes.
  constexpr uintptr_t kVectorAlignment = 16;
  const char *entryPoint = matmulEntryPoint(args);
  if (lowbit_status status = checkEntryPoint(spec, args, whyNot); status != LOWBIT_STATUS_SUCCESS)
    return status;
  if (args.m <= 0)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_SHAPE,
                "M = " + std::to_string(args.m) + ": M must be at least 1");
  int index = spec.rangeIndex(args.m);
  if (index < 0)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INTERNAL_ERROR,
                "no range of the plan covers M = " + std::to_string(args.m));
  const PlannedRange &range = spec.ranges[static_cast<size_t>(index)];
  size_t launched = range.kernel;
  // An act-order plan's gathered x comes first in the workspace; the dense
  // path's weights and cuBLASLt's workspace follow it.
  const size_t gathered = static_cast<size_t>(spec.permutedActivationBytes(args.m));
  auto workspaceFits = [&](const PlannedKernel &k) {
    const int64_t own = k.dense             ? spec.denseWorkspaceBytes()
                        : k.geometry.streamK() ? k.geometry.workspaceBytes(args.m)
                                               : 0;
    return own == 0 ||
           (args.workspace && args.workspaceBytes >= gathered + static_cast<size_t>(own));
  };
  if (!workspaceFits(spec.kernels[launched]) && range.fallback >= 0)
    launched = static_cast<size_t>(range.fallback);
  const PlannedKernel &kernel = spec.kernels[launched];
  if (args.m > kernel.geometry.maxM)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_SHAPE,
                "M = " + std::to_string(args.m) + " is more than kernel " + kernel.name +
                    " can cover in one launch (" + std::to_string(kernel.geometry.maxM) +
                    "); split the rows into several calls");
  if (!args.x || !args.y || !args.w || !args.scales)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
                std::string(!args.x   ? "x"
                            : !args.y ? "y"
                            : !args.w ? "w"
                                      : "scales") +
                    " is NULL");
  if (args.w->struct_size < sizeof(lowbit_weights))
    return fail(
        entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
        "w->struct_size is " + std::to_string(args.w->struct_size) +
            ", expected sizeof(lowbit_weights) = " + std::to_string(sizeof(lowbit_weights)));
  if (!args.w->data)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT, "w->data is NULL");
  if (spec.hasZeros && !args.zeros)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
                std::string("zeros is NULL but the problem has zero mode ") +
                    core::zeroSpelling(spec.problem.scheme.zero,
                                       spec.problem.scheme.zeroCodes.has_value()));
  if (!spec.hasZeros && args.zeros)
    return fail(entryPoint, whyNot, LOWBIT_STATUS_INVALID_ARGUMENT,
                "zeros is given but the problem has no zero points (zero = none); a plan "
                "for another problem?");
  if (args.w->layout_id != spec.layoutId) {
    char expected[24], got[24];
    std::snprintf(expected, sizeof(expected), "%016llx",
                  static_cast<unsigned long long>(spec.layoutId));
    std::snprintf(got, sizeof(got), "%016llx", static_cast<unsigned long long>(args.w->layout_id));
    return fail(entryPoint, whyNot, LOWBIT_STATUS_LAYOUT_MISMATCH,
                std::string("the weights were packed for layout ") + got +
                    ", but this plan's kernels read layout " + expected +
                    "; pack them with lowbit_pack_weights for this plan");
  }
  if (args.w->bytes < static_cast<size_t>(spec.packedWeightBytes()))
    return fail(entryPoint, whyNot, LOWBIT_STATUS_LAYOUT_MISMATCH,
                "w->bytes is " + std::to_string(args.w->bytes) + ", the packed weights take " +
                    std::to_string(spec.packedWeightBytes()) +
                    (spec.permutedColumns ? " (codes, then the act-order permutation)" : ""));
  struct {
    const void *pointer;
    uintptr_t alignment;
    const char *name;
  } const alignments[] = {
      {args.x, kVectorAlignment, "x"},
      {args.y, kVectorAlignment, "y"},
      {args.w->data, kVectorAlignment, "w->data"},
      {args.scales, static_cast<uintptr_t>(spec.scaleAlignment), "scales"},
      {args.zeros, static_cast<uintptr_t>(spec.zeroAlignment), "zeros"},
      {args.xScales, sizeof(float), "x_scales"},
  };
  for (const auto &a : alignments)
    if (a.pointer && !aligned(a.pointer, a.alignment))
      return fail(entryPoint, whyNot, LOWBIT_STATUS_MISALIGNED,
                  std::string(a.name) + " = " + pointerText(a.pointer) + " is not " +
                      std::to_string(a.alignment) + "-byte aligned");
  if (args.quantizing) {
    const size_t quantized = static_cast<size_t>(spec.quantizedActivationBytes(args.m));
    if (!args.workspace || args.workspaceBytes < quantized)
      return fail(entryPoint, whyNot, LOWBIT_STATUS_BUFFER_TOO_SMALL,
                  "the workspace has " +
                      std::to_string(args.workspace ? args.workspaceBytes : 0) +
                      " bytes; x is quantized into it, " + std::to_string(quantized) +
                      " bytes at M = " + std::to_string(args.m) +
                      " (codes and scales; lowbit_plan_workspace_bytes)");
    if (!aligned(args.workspace, kVectorAlignment))
      return fail(entryPoint, whyNot, LOWBIT_STATUS_MISALIGNED,
                  "workspace = " + pointerText(args.workspace) + " is not " +
                      std::to_string(kVectorAlignment) + "-byte aligned");
  }
  if (spec.permutedColumns && (!args.workspace || args.workspaceBytes < gathered))
    return fail(entryPoint, whyNot, LOWBIT_STATUS_BUFFER_TOO_SMALL,
                "the workspace has " + std::to_string(args.workspace ? args.workspaceBytes : 0) +
                    " bytes; an act-order plan gathers x[:, perm] into it, " +
                    std::to_string(gathered) + " bytes at M = " + std::to_string(args.m) +
                    " (lowbit_plan_workspace_bytes)");
  if (spec.permutedColumns && !aligned(args.workspace, kVectorAlignment))
    return fail(entryPoint, whyNot, LOWBIT_STATUS_MISALIGNED,
                "workspace = " + pointerText(args.workspace) + " is not " +
                    std::to_string(kVectorAlignment) + "-byte aligned");
  if (kernel.dense && !workspaceFits(kernel))
    return fail(entryPoint, whyNot, LOWBIT_STATUS_BUFFER_TOO_SMALL,
                "the workspace has " + std::to_string(args.workspace ? args.workspaceBytes : 0) +
                    " bytes; the dense path that serves M = " + std::to_string(args.m) + " needs " +
                    std::to_string(gathered + static_cast<size_t>(spec.denseWorkspaceBytes())) +
                    " and no other kernel of the plan serves it");
  if (kernel.dense && !aligned(args.workspace, kVectorAlignment))
    return fail(entryPoint, whyNot, LOWBIT_STATUS_MISALIGNED,
                "workspace = " + pointerText(args.workspace) + " is not " +
                    std::to_string(kVectorAlignment) + "-byte aligned");
  if (kernel.geometry.streamK()) {
    const size_t needed = gathered + static_cast<size_t>(kernel.geometry.workspaceBytes(args.m));
    if (!workspaceFits(kernel))
      return fail(entryPoint, whyNot, LOWBIT_STATUS_BUFFER_TOO_SMALL,
                  "the workspace has " + std::to_string(args.workspace ? args.workspaceBytes : 0) +
                      " bytes; " + kernel.name + ", which serves M = " + std::to_string(args.m) +
                      ", adds split tiles' partial sums in it and needs " + std::to_string(needed) +
                      " (lowbit_plan_workspace_bytes), and no other kernel of the plan serves it");
    if (!aligned(args.workspace, kVectorAlignment))
      return fail(entryPoint, whyNot, LOWBIT_STATUS_MISALIGNED,
                  "workspace = " + pointerText(args.workspace) + " is not " +
                      std::to_string(kVectorAlignment) + "-byte aligned");
  }
  *rangeIndex = index;
  *kernelIndex = launched;
  return LOWBIT_STATUS_SUCCESS;
}

ApiStatus packOnHost(const PlanSpec &spec, const uint8_t *codes, uint8_t *packed,
                     size_t packedBytes) {
  if (packedBytes < static_cast<size_t>(spec.weightBytes))
    return apiError(LOWBIT_STATUS_BUFFER_TOO_SMALL,
                    "lowbit_pack_weights: packed_bytes is " + std::to_string(packedBytes) +
                        ", the packed weights take " + std::to_string(spec.weightBytes));
  // Each code must mean a weight of the plan's format: a ternary 3 or a
  // sign-extended int4 -1 (0xFF) fits no kernel's decode.
  if (Status valid =
          formats::checkElementCodes(spec.problem.code, codes, spec.problem.n, spec.problem.k);
      !valid)
    return apiError(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_pack_weights: " + valid.error());
  Status status =
      layout::packWeights(spec.layout, spec.problem.n, spec.problem.k, codes, packed, packedBytes);
  if (!status)
    return apiError(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_pack_weights: " + status.error());
  return ApiStatus();
}

ApiStatus packPermutationOnHost(const PlanSpec &spec, const int32_t *permutation, uint8_t *packed,
                                size_t packedBytes) {
  const int64_t k = spec.problem.k;
  if (packedBytes < static_cast<size_t>(k) * sizeof(int32_t))
    return apiError(LOWBIT_STATUS_BUFFER_TOO_SMALL,
                    "lowbit_pack_permutation: the permutation takes " +
                        std::to_string(k * int64_t(sizeof(int32_t))) + " bytes");
  std::vector<bool> seen(static_cast<size_t>(k), false);
  for (int64_t j = 0; j < k; ++j) {
    const int32_t column = permutation[j];
    if (column < 0 || column >= k || seen[static_cast<size_t>(column)])
      return apiError(
          LOWBIT_STATUS_INVALID_ARGUMENT,
          "lowbit_pack_permutation: entry " + std::to_string(j) + " is " + std::to_string(column) +
              (column < 0 || column >= k ? ", outside [0, K = " + std::to_string(k) + ")"
                                         : ", a column an earlier entry already took") +
              "; a permutation holds every column once");
    seen[static_cast<size_t>(column)] = true;
  }
  std::memcpy(packed, permutation, static_cast<size_t>(k) * sizeof(int32_t));
  return ApiStatus();
}

ApiStatus packZerosOnHost(const PlanSpec &spec, const uint8_t *codes, size_t count, uint8_t *packed,
                          size_t packedBytes) {
  const core::Scheme &scheme = spec.problem.scheme;
  if (!scheme.zeroCodes)
    return apiError(LOWBIT_STATUS_INVALID_ARGUMENT,
                    std::string("lowbit_pack_zeros: the problem has zero mode ") +
                        core::zeroSpelling(scheme.zero, false) +
                        ", not zero codes; its zeros go to lowbit_matmul as they are");
  if (packedBytes < static_cast<size_t>(spec.zeroBytes))
    return apiError(LOWBIT_STATUS_BUFFER_TOO_SMALL,
                    "lowbit_pack_zeros: packed_bytes is " + std::to_string(packedBytes) +
                        ", the packed zero codes take " + std::to_string(spec.zeroBytes));
  Status status = core::packZeroCodes(spec.problem, codes, count, packed, packedBytes);
  if (!status)
    return apiError(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_pack_zeros: " + status.error());
  return ApiStatus();
}

} // namespace lowbit::api
