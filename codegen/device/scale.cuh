// Applying quantization scales and zero points to decoded f16x2 / bf16x2
// values (the output of decode_int*.cuh), one packed pair at a time.
//
// `s`, `z`, `m` are packed pairs too: the scale / zero of element 0 in the low
// half and of element 1 in the high half. With a scale group along K and the
// interleaves of decode_int*.cuh, both elements of a pair usually share one
// group, so a kernel splats a scalar once per group with splat_lo16 /
// splat_hi16 below (one prmt each).
//
// Rounding (per element, q integer code, exact in f16/bf16 after decode):
//  * scale_*:        q * s                one rounding: correctly rounded.
//  * zero_scale_*:   (q - z) * s          q - z is exact for |q|, |z| small
//                    (integers below 2048 in f16, below 256 in bf16), then
//                    one rounding: the correctly rounded value of (q - z) * s.
//  * scale_sub_*:    q * s - m            one fma rounding (GGUF-style "q*s - m").
// Prefer factoring per group where the algebra allows (docs/architecture.md):
// s * (sum q*x - z * sum x) does these once per group, not per element.
#pragma once

#include "lowbit/device/arith.cuh"
#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

// q * s
__device__ __forceinline__ u32 scale_f16x2(u32 q, u32 s) { return mul_f16x2(q, s); }
__device__ __forceinline__ u32 scale_bf16x2(u32 q, u32 s) { return mul_bf16x2(q, s); }

// (q - z) * s
__device__ __forceinline__ u32 zero_scale_f16x2(u32 q, u32 z, u32 s) {
  return mul_f16x2(sub_f16x2(q, z), s);
}
__device__ __forceinline__ u32 zero_scale_bf16x2(u32 q, u32 z, u32 s) {
  return mul_bf16x2(sub_bf16x2(q, z), s);
}

// q * s - m, given neg_m = -m (precomputed once per group).
__device__ __forceinline__ u32 scale_sub_f16x2(u32 q, u32 s, u32 neg_m) {
  return fma_f16x2(q, s, neg_m);
}
__device__ __forceinline__ u32 scale_sub_bf16x2(u32 q, u32 s, u32 neg_m) {
  return fma_bf16x2(q, s, neg_m);
}

// The low / high 16-bit half of `x` in both halves (per-group scalar splat).
__device__ __forceinline__ u32 splat_lo16(u32 x) { return __byte_perm(x, x, 0x1010); }
__device__ __forceinline__ u32 splat_hi16(u32 x) { return __byte_perm(x, x, 0x3232); }

// Type-dispatched forms (T = F16 or BF16) for code generic over the type.
template <class T> __device__ __forceinline__ u32 scale16x2(u32 q, u32 s) {
  return Arith16x2<T>::mul(q, s);
}
template <class T> __device__ __forceinline__ u32 zero_scale16x2(u32 q, u32 z, u32 s) {
  return Arith16x2<T>::mul(Arith16x2<T>::sub(q, z), s);
}
template <class T> __device__ __forceinline__ u32 scale_sub16x2(u32 q, u32 s, u32 neg_m) {
  return Arith16x2<T>::fma(q, s, neg_m);
}

} // namespace device
} // namespace lowbit
