// lowbit device primitives: scalar typedefs, mma fragment types, and
// f16x2 / bf16x2 bit helpers.
//
// These headers are compiled only by NVRTC. NVRTC (CUDA 13.0) has no built-in
// <cstdint>, and it does NOT find <cuda_fp16.h> / <cuda_bf16.h> unless the
// toolkit's include directory is passed with -I, which lowbit's compile() does
// not do. So nothing here includes any header: 16-bit floats are carried as
// raw bits, two per 32-bit register ("f16x2" / "bf16x2" = one `u32`, element 0
// in bits 0..15, element 1 in bits 16..31, exactly as the PTX .f16x2/.bf16x2
// types and the mma operand registers hold them), and all arithmetic on them
// is inline PTX.
#pragma once

// The scale conversions, here so that every kernel has them without another
// include in lb-to-cuda's preamble (its text stays as it was for kernels
// that do not use them).
#include "lowbit/device/scale.cuh"

namespace lowbit {
namespace device {

typedef unsigned u32;
typedef int s32;
typedef unsigned long long u64;
typedef unsigned short u16;
static_assert(sizeof(u32) == 4, "u32 must be 32 bits");
static_assert(sizeof(s32) == 4, "s32 must be 32 bits");
static_assert(sizeof(u64) == 8, "u64 must be 64 bits");
static_assert(sizeof(u16) == 2, "u16 must be 16 bits");

// ---------------------------------------------------------------------------
// Element tags. Fragments are templated on the element type so that an f16
// fragment cannot be passed to the bf16 mma (same bits, different meaning).
struct F16 {};   // IEEE binary16
struct BF16 {};  // bfloat16
struct S8 {};    // signed 8-bit integer
struct E4M3 {};  // OCP fp8 e4m3fn

template <class T> struct ElemBits;
template <> struct ElemBits<F16> { static constexpr int value = 16; };
template <> struct ElemBits<BF16> { static constexpr int value = 16; };
template <> struct ElemBits<S8> { static constexpr int value = 8; };
template <> struct ElemBits<E4M3> { static constexpr int value = 8; };

template <class A, class B> constexpr bool kIsSame = false;
template <class A> constexpr bool kIsSame<A, A> = true;

// ---------------------------------------------------------------------------
// Warp-level mma.sync fragments. Let lane = threadIdx.x % 32,
// g = lane / 4 ("groupID"), t = lane % 4 ("threadID_in_group").
// The exact element <-> (lane, register) tables are in mma.cuh.
//
// A operand, 16 x K row-major tile: 4 registers, 8 (16-bit) or 16 (8-bit)
// elements per lane. K = 16 for f16/bf16 (m16n8k16), K = 32 for s8/e4m3
// (m16n8k32) -- either way one A fragment is 16 rows x 256 bits.
template <class T> struct FragA {
  static constexpr int kElemsPerReg = 32 / ElemBits<T>::value;
  u32 r[4];
};
// B operand, K x 8 "col" tile (column n of B is contiguous in k): 2 registers.
template <class T> struct FragB {
  static constexpr int kElemsPerReg = 32 / ElemBits<T>::value;
  u32 r[2];
};
// f32 accumulator of a 16 x 8 tile: 4 floats per lane.
struct FragC_f32 { float r[4]; };
// s32 accumulator of a 16 x 8 tile (s8 mma): 4 ints per lane.
struct FragC_s32 { s32 r[4]; };
// f16 accumulator of a 16 x 8 tile: 2 f16x2 registers per lane.
struct FragC_f16 { u32 r[2]; };

typedef FragA<F16> FragA_f16;
typedef FragA<BF16> FragA_bf16;
typedef FragA<S8> FragA_s8;
typedef FragA<E4M3> FragA_e4m3;
typedef FragB<F16> FragB_f16;
typedef FragB<BF16> FragB_bf16;
typedef FragB<S8> FragB_s8;
typedef FragB<E4M3> FragB_e4m3;

static_assert(sizeof(FragA_f16) == 16 && sizeof(FragB_f16) == 8,
              "16-bit A/B fragments are 4 and 2 registers");
static_assert(sizeof(FragA_s8) == 16 && sizeof(FragB_s8) == 8,
              "8-bit A/B fragments are 4 and 2 registers");
static_assert(sizeof(FragC_f32) == 16 && sizeof(FragC_s32) == 16 &&
                  sizeof(FragC_f16) == 8,
              "accumulator fragments: 4 x 32-bit or 2 x f16x2");

// Zero-initialised accumulators (the mma adds into them).
__device__ __forceinline__ FragC_f32 zero_frag_c_f32() {
  FragC_f32 c;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    c.r[i] = 0.0f;
  return c;
}
__device__ __forceinline__ FragC_s32 zero_frag_c_s32() {
  FragC_s32 c;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    c.r[i] = 0;
  return c;
}

// ---------------------------------------------------------------------------
// 16-bit float bit patterns used as constants (documented where used).
// f16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
// bf16: 1 sign, 8 exponent (bias 127), 7 mantissa bits.
namespace bits {
constexpr u32 kF16One = 0x3C00u;       // 1.0
constexpr u32 kF16NegZero = 0x8000u;   // -0.0
constexpr u32 kBF16One = 0x3F80u;      // 1.0
constexpr u32 kBF16NegOne = 0xBF80u;   // -1.0
constexpr u32 kBF16NegZero = 0x8000u;  // -0.0
} // namespace bits

// Exact 16-bit float bit patterns of small integers and powers of two, so the
// decode constants are written as numbers (e.g. f16_bits_of_int(-72)), not as
// hand-assembled hex. f16 represents every integer |v| <= 2048 exactly, bf16
// every |v| <= 256; outside that these functions are not used (checked below).
__host__ __device__ constexpr u32 f16_bits_of_int(int v) {
  u32 sign = v < 0 ? 0x8000u : 0u;
  int a = v < 0 ? -v : v;
  if (a == 0)
    return sign;
  int e = 0;
  while ((a >> (e + 1)) != 0)
    ++e; // e = floor(log2(a)), at most 10 here
  return sign | (static_cast<u32>(e + 15) << 10) |
         ((static_cast<u32>(a) << (10 - e)) & 0x3FFu);
}
__host__ __device__ constexpr u32 bf16_bits_of_int(int v) {
  u32 sign = v < 0 ? 0x8000u : 0u;
  int a = v < 0 ? -v : v;
  if (a == 0)
    return sign;
  int e = 0;
  while ((a >> (e + 1)) != 0)
    ++e; // at most 7 here
  return sign | (static_cast<u32>(e + 127) << 7) |
         ((static_cast<u32>(a) << (7 - e)) & 0x7Fu);
}
// 2^e as f16 / bf16 bits (normal range only).
__host__ __device__ constexpr u32 f16_bits_of_pow2(int e) {
  return static_cast<u32>(e + 15) << 10;
}
__host__ __device__ constexpr u32 bf16_bits_of_pow2(int e) {
  return static_cast<u32>(e + 127) << 7;
}
static_assert(f16_bits_of_int(1024) == 0x6400u && f16_bits_of_int(1032) == 0x6408u &&
                  f16_bits_of_int(-64) == 0xD400u && f16_bits_of_int(-72) == 0xD480u &&
                  f16_bits_of_int(1) == 0x3C00u && f16_bits_of_int(-2) == 0xC000u,
              "f16_bits_of_int");
static_assert(bf16_bits_of_int(128) == 0x4300u && bf16_bits_of_int(-136) == 0xC308u &&
                  bf16_bits_of_int(1) == 0x3F80u && bf16_bits_of_int(-1) == 0xBF80u,
              "bf16_bits_of_int");
static_assert(f16_bits_of_pow2(-4) == 0x2C00u && bf16_bits_of_pow2(0) == 0x3F80u,
              "pow2 bits");

// The same 16-bit pattern in both halves: splat2(0x3C00) = f16x2 {1, 1}.
__host__ __device__ constexpr u32 splat2(u32 half_bits) {
  return (half_bits & 0xFFFFu) | ((half_bits & 0xFFFFu) << 16);
}
// Packs two 16-bit patterns: `lo` -> element 0 (bits 0..15), `hi` -> element 1.
__host__ __device__ constexpr u32 pack2(u32 lo, u32 hi) {
  return (lo & 0xFFFFu) | ((hi & 0xFFFFu) << 16);
}
__host__ __device__ constexpr u32 lo16(u32 x) { return x & 0xFFFFu; }
__host__ __device__ constexpr u32 hi16(u32 x) { return x >> 16; }
static_assert(splat2(0x3C00u) == 0x3C003C00u, "splat2");
static_assert(pack2(0x1234u, 0xABCDu) == 0xABCD1234u, "pack2: lo is element 0");

// ---------------------------------------------------------------------------
// Conversions between f32 and packed 16-bit pairs (all exact or RN).

// f16x2 -> two f32 (exact).
__device__ __forceinline__ void f16x2_to_f32x2(u32 x, float &lo, float &hi) {
  unsigned short l = static_cast<unsigned short>(x & 0xFFFFu);
  unsigned short h = static_cast<unsigned short>(x >> 16);
  asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"(l));
  asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"(h));
}
// bf16x2 -> two f32 (exact: a bf16 is the top half of an f32).
__device__ __forceinline__ void bf16x2_to_f32x2(u32 x, float &lo, float &hi) {
  lo = __uint_as_float(x << 16);
  hi = __uint_as_float(x & 0xFFFF0000u);
}
// Two f32 -> f16x2, round to nearest even. cvt's packed form puts its FIRST
// source in the UPPER half, hence the swapped operand order. sm_80+.
__device__ __forceinline__ u32 f32x2_to_f16x2(float lo, float hi) {
  u32 d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
// Two f32 -> bf16x2, round to nearest even (same operand order). sm_80+.
__device__ __forceinline__ u32 f32x2_to_bf16x2(float lo, float hi) {
  u32 d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

// Generic pointer -> 32-bit address in the .shared window, the form that
// cp.async and ld.shared take. Computing swizzled addresses on this
// 32-bit value is cheaper than on 64-bit generic pointers.
__device__ __forceinline__ u32 shared_addr(const void *p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

} // namespace device
} // namespace lowbit
