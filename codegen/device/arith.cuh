// Packed f16x2 / bf16x2 arithmetic on raw 32-bit registers (see types.cuh).
//
// Every operation states its rounding (.rn) explicitly: PTX allows an add or
// mul WITHOUT a rounding modifier to be contracted into an fma, which would
// change results bit-wise between archs and compiler versions.
//
// bf16 on sm_80: PTX has only fma.rn.bf16x2 there (add/sub/mul.bf16x2 need
// sm_90). Each bf16 op below is therefore one fma, and each is exactly the
// correctly rounded result of the named operation:
//   add(a, b) = fma(a, 1, b)      -- a * 1 is exact, one rounding
//   sub(a, b) = fma(b, -1, a)     -- exact negation, one rounding
//   mul(a, b) = fma(a, b, -0)     -- adding -0 keeps the sign of a zero product
#pragma once

#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

// ----- f16x2 -----
__device__ __forceinline__ u32 add_f16x2(u32 a, u32 b) {
  u32 d;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ u32 sub_f16x2(u32 a, u32 b) {
  u32 d;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ u32 mul_f16x2(u32 a, u32 b) {
  u32 d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// a * b + c with a single rounding.
__device__ __forceinline__ u32 fma_f16x2(u32 a, u32 b, u32 c) {
  u32 d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// ----- bf16x2 (sm_80-legal: fma only) -----
// a * b + c with a single rounding.
__device__ __forceinline__ u32 fma_bf16x2(u32 a, u32 b, u32 c) {
  u32 d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ u32 add_bf16x2(u32 a, u32 b) {
  return fma_bf16x2(a, splat2(bits::kBF16One), b);
}
__device__ __forceinline__ u32 sub_bf16x2(u32 a, u32 b) {
  return fma_bf16x2(b, splat2(bits::kBF16NegOne), a);
}
__device__ __forceinline__ u32 mul_bf16x2(u32 a, u32 b) {
  return fma_bf16x2(a, b, splat2(bits::kBF16NegZero));
}

// ----- type-dispatched forms, for code generic over the 16-bit type -----
template <class T> struct Arith16x2;
template <> struct Arith16x2<F16> {
  __device__ __forceinline__ static u32 add(u32 a, u32 b) { return add_f16x2(a, b); }
  __device__ __forceinline__ static u32 sub(u32 a, u32 b) { return sub_f16x2(a, b); }
  __device__ __forceinline__ static u32 mul(u32 a, u32 b) { return mul_f16x2(a, b); }
  __device__ __forceinline__ static u32 fma(u32 a, u32 b, u32 c) { return fma_f16x2(a, b, c); }
};
template <> struct Arith16x2<BF16> {
  __device__ __forceinline__ static u32 add(u32 a, u32 b) { return add_bf16x2(a, b); }
  __device__ __forceinline__ static u32 sub(u32 a, u32 b) { return sub_bf16x2(a, b); }
  __device__ __forceinline__ static u32 mul(u32 a, u32 b) { return mul_bf16x2(a, b); }
  __device__ __forceinline__ static u32 fma(u32 a, u32 b, u32 c) { return fma_bf16x2(a, b, c); }
};

} // namespace device
} // namespace lowbit
