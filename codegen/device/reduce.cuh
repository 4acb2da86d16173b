// Warp reductions with shuffles (gemv family, split-K partials).
//
// Butterfly (xor) shuffles: after log2(kWidth) steps EVERY lane of each
// aligned group of kWidth lanes holds the group's total, so no broadcast is
// needed afterwards. All 32 lanes must participate (full mask). The order of
// additions is fixed by the lane index, so the result is deterministic.
#pragma once

#include "lowbit/device/arith.cuh"
#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

constexpr unsigned kFullWarpMask = 0xFFFFFFFFu;

__host__ __device__ constexpr bool is_pow2_le32(int w) {
  return w >= 1 && w <= 32 && (w & (w - 1)) == 0;
}

// Sum of `v` over each aligned group of kWidth lanes (kWidth = 32: whole warp).
template <int kWidth = 32>
__device__ __forceinline__ float warp_sum(float v) {
  static_assert(is_pow2_le32(kWidth), "group width must be a power of two <= 32");
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kFullWarpMask, v, offset);
  return v;
}

// Element-wise f16x2 sum over each aligned group of kWidth lanes, in f16 (each
// step rounds; for long reductions convert to f32 first, see below).
template <int kWidth = 32>
__device__ __forceinline__ u32 warp_sum_f16x2(u32 v) {
  static_assert(is_pow2_le32(kWidth), "group width must be a power of two <= 32");
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2)
    v = add_f16x2(v, __shfl_xor_sync(kFullWarpMask, v, offset));
  return v;
}

// Element-wise bf16x2 sum over each aligned group of kWidth lanes.
template <int kWidth = 32>
__device__ __forceinline__ u32 warp_sum_bf16x2(u32 v) {
  static_assert(is_pow2_le32(kWidth), "group width must be a power of two <= 32");
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset /= 2)
    v = add_bf16x2(v, __shfl_xor_sync(kFullWarpMask, v, offset));
  return v;
}

// Horizontal sums of one packed pair, in f32 (exact conversion, one f32 add).
__device__ __forceinline__ float hsum_f16x2_f32(u32 v) {
  float lo, hi;
  f16x2_to_f32x2(v, lo, hi);
  return lo + hi;
}
__device__ __forceinline__ float hsum_bf16x2_f32(u32 v) {
  float lo, hi;
  bf16x2_to_f32x2(v, lo, hi);
  return lo + hi;
}

// f32 dot product of two f16x2 pairs accumulated into acc:
// acc + a.lo * b.lo + a.hi * b.hi (products exact in f32, two fma roundings).
__device__ __forceinline__ float dot2_f16x2_f32(u32 a, u32 b, float acc) {
  float a0, a1, b0, b1;
  f16x2_to_f32x2(a, a0, a1);
  f16x2_to_f32x2(b, b0, b1);
  return __fmaf_rn(a1, b1, __fmaf_rn(a0, b0, acc));
}
__device__ __forceinline__ float dot2_bf16x2_f32(u32 a, u32 b, float acc) {
  float a0, a1, b0, b1;
  bf16x2_to_f32x2(a, a0, a1);
  bf16x2_to_f32x2(b, b0, b1);
  return __fmaf_rn(a1, b1, __fmaf_rn(a0, b0, acc));
}

} // namespace device
} // namespace lowbit
