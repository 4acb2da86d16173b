// The argument checks and range selection of lowbit_matmul (and
// lowbit_matmul_quantized) and the host half
// of lowbit_pack_weights and lowbit_pack_zeros, on a PlanSpec alone, so they are unit-tested
// without a device. checkMatmul runs on the hot path: it allocates nothing
// unless it fails.
#pragma once

#include "lowbit/lowbit.h"
#include "runtime/api/PlanBuilder.h"

#include <string>

namespace lowbit::api {

struct MatmulArgs {
  int64_t m = 0;
  const void *x = nullptr;
  const lowbit_weights *w = nullptr;
  const void *scales = nullptr;
  const void *zeros = nullptr;
  void *y = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  // lowbit_matmul_quantized's: x's f32 scales, which only a plan for
  // quantized activations takes, and it takes them through that entry point
  // alone (`quantized`), so that x's bytes are never read as the wrong type.
  const void *xScales = nullptr;
  bool quantized = false;
  // lowbit_matmul_quantizing's: x is f16 or bf16 (xDtype) for a plan with s8
  // activations, quantized into the workspace's front before the matmul.
  bool quantizing = false;
  lowbit_dtype xDtype = LOWBIT_DTYPE_F16;
};

// The C entry point that `args` came through, for messages.
inline const char *matmulEntryPoint(const MatmulArgs &args) {
  return args.quantizing  ? "lowbit_matmul_quantizing"
         : args.quantized ? "lowbit_matmul_quantized"
                          : "lowbit_matmul";
}

// On success returns LOWBIT_STATUS_SUCCESS, the index of the range that
// serves m in *rangeIndex and the kernel to launch in *kernelIndex: the
// range's, or its fallback when the range's kernel needs a workspace (the
// dense path, stream-K) and the call's is too small for it; otherwise the status, with the reason in
// *whyNot.
lowbit_status checkMatmul(const PlanSpec &spec, const MatmulArgs &args, int *rangeIndex,
                          size_t *kernelIndex, std::string *whyNot);

// Packs `codes` ([N, K], one per byte) into `packed` (host memory). A code
// that is not one of the format's (formats::checkElementCodes) is
// LOWBIT_STATUS_INVALID_ARGUMENT, naming its position.
ApiStatus packOnHost(const PlanSpec &spec, const uint8_t *codes, uint8_t *packed,
                     size_t packedBytes);
// Copies an act-order plan's permutation (K int32) into `packed` after
// checking that it holds every column once: a repeated or out-of-range
// column would gather the wrong activations (or read outside x).
ApiStatus packPermutationOnHost(const PlanSpec &spec, const int32_t *permutation, uint8_t *packed,
                                size_t packedBytes);
// Packs `count` zero codes (one per byte, the scales' layout) into `packed`
// (host memory) as core::packZeroCodes says; INVALID_ARGUMENT for a problem
// without zero codes or a code too wide, BUFFER_TOO_SMALL for a short buffer.
ApiStatus packZerosOnHost(const PlanSpec &spec, const uint8_t *codes, size_t count, uint8_t *packed,
                          size_t packedBytes);

} // namespace lowbit::api
