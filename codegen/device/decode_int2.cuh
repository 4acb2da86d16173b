// Dequantize 16 x 2-bit integer codes in one 32-bit word to 8 f16x2 or 8
// bf16x2 registers (lop3 + magic-number bias, as in decode_int4.cuh; read that
// first). Ternary {-1, 0, 1} stored as 2 bits is kTwosComplement (or
// kOffsetBinary with codes 1..3).
//
// ---- Register interleave ---------------------------------------------------
// Field i of the word is bits [2i, 2i+2). out[j] (j = 0..7) holds logical
// elements 2j (low half) and 2j+1 (high half); element e comes from field
//     int2_field_of_element(e) = (e >> 1) | ((e & 1) << 3)
//     e     : 0 1 2 3  4 5  6 7  8 9 10 11 12 13 14 15
//     field : 0 8 1 9  2 10 3 11 4 12 5 13  6 14  7 15
// i.e. out[j] = {field j, field j + 8}: the 4-bit field index is the element
// index rotated right by one bit -- the same rule as int4 (3-bit rotation).
//
// ---- f16 --------------------------------------------------------------------
// All four fields of a byte are used in place on the magic 1024 (0x6400),
// whose mantissa counts in units of 1:
//     (q & 0x00030003) | M = {1024 +    c, ...}  -> - 1024           = c
//     (q & 0x000C000C) | M = {1024 +  4 c, ...}  -> * 1/4  - 256     = c
//     (q & 0x00300030) | M = {1024 + 16 c, ...}  -> * 1/16 - 64      = c
//     (q & 0x00C000C0) | M = {1024 + 64 c, ...}  -> * 1/64 - 16      = c
// (each a single exact sub or fma), then the same on q >> 8 for fields 4..7 /
// 12..15. 1 shift, 8 lop3, 2 sub, 6 fma for 16 codes.
//
// ---- bf16 -------------------------------------------------------------------
// Magic 128 (0x4300) has 7 mantissa bits: fields at bit offsets 0, 2, 4 of a
// byte fit in place (scales 1, 1/4, 1/16; subtract 128, 32, 8), the field at
// offset 6 would touch the exponent, so it is shifted down by 6 first.
// 3 shifts, 8 lop3, 8 fma.
//
// ---- Codings (see decode_int4.cuh) ----------------------------------------
// Offset binary subtracts 2 more; two's complement flips each field's sign bit
// (q ^ 0xAAAAAAAA), folded into the lop3 constant exactly as for int4.
#pragma once

#include "lowbit/device/arith.cuh"
#include "lowbit/device/decode_int4.cuh" // IntCoding
#include "lowbit/device/lop3.cuh"
#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

__host__ __device__ constexpr int int2_field_of_element(int e) {
  return (e >> 1) | ((e & 1) << 3);
}
__host__ __device__ constexpr int int2_element_of_field(int i) {
  return ((i & 7) << 1) | (i >> 3);
}
static_assert(int2_field_of_element(1) == 8 && int2_field_of_element(2) == 1 &&
                  int2_field_of_element(15) == 15 && int2_field_of_element(14) == 7 &&
                  int2_element_of_field(int2_field_of_element(5)) == 5 &&
                  int2_element_of_field(int2_field_of_element(10)) == 10,
              "int2 interleave table");

namespace detail {
template <IntCoding kCoding> struct Int2Bias {
  static constexpr int value = kCoding == IntCoding::kUnsigned ? 0 : 2;
  // The sign bit (bit 1) of the two fields selected by a mask at bit offset s.
  static constexpr u32 xor_at(int s) {
    return kCoding == IntCoding::kTwosComplement ? (0x00020002u << s) : 0u;
  }
};

// One in-place f16 step: fields at bit offset `kShift` of both 16-bit halves
// of `x`, scaled back by 2^-kShift.
template <IntCoding kCoding, int kShift>
__device__ __forceinline__ u32 int2_f16_step(u32 x) {
  typedef Int2Bias<kCoding> B;
  constexpr u32 kMask = 0x00030003u << kShift;
  constexpr u32 kMagic = splat2(f16_bits_of_int(1024));
  static_assert((kMagic & kMask) == 0, "magic must not overlap the codes");
  const u32 t = lop3<kLutAndXor>(x, kMask, kMagic | B::xor_at(kShift));
  if constexpr (kShift == 0) {
    return sub_f16x2(t, splat2(f16_bits_of_int(1024 + B::value)));
  } else {
    // (1024 + 2^s c) * 2^-s - (1024 * 2^-s + B) = c - B
    return fma_f16x2(t, splat2(f16_bits_of_pow2(-kShift)),
                     splat2(f16_bits_of_int(-((1024 >> kShift) + B::value))));
  }
}

// One bf16 step: fields at bit offset kShift (0, 2 or 4) of both halves of x.
template <IntCoding kCoding, int kShift>
__device__ __forceinline__ u32 int2_bf16_step(u32 x) {
  typedef Int2Bias<kCoding> B;
  static_assert(kShift == 0 || kShift == 2 || kShift == 4,
                "bit 7 of a bf16 half is exponent: offsets 0, 2, 4 only");
  constexpr u32 kMask = 0x00030003u << kShift;
  constexpr u32 kMagic = splat2(bf16_bits_of_int(128));
  static_assert((kMagic & kMask) == 0, "magic must not overlap the codes");
  const u32 t = lop3<kLutAndXor>(x, kMask, kMagic | B::xor_at(kShift));
  return fma_bf16x2(t, splat2(bf16_bits_of_pow2(-kShift)),
                    splat2(bf16_bits_of_int(-((128 >> kShift) + B::value))));
}
} // namespace detail

// out[j] = f16x2 {value(field j), value(field j + 8)}, j = 0..7.
template <IntCoding kCoding>
__device__ __forceinline__ void decode_int2_f16x2(u32 q, u32 (&out)[8]) {
  const u32 q8 = q >> 8;
  out[0] = detail::int2_f16_step<kCoding, 0>(q);
  out[1] = detail::int2_f16_step<kCoding, 2>(q);
  out[2] = detail::int2_f16_step<kCoding, 4>(q);
  out[3] = detail::int2_f16_step<kCoding, 6>(q);
  out[4] = detail::int2_f16_step<kCoding, 0>(q8);
  out[5] = detail::int2_f16_step<kCoding, 2>(q8);
  out[6] = detail::int2_f16_step<kCoding, 4>(q8);
  out[7] = detail::int2_f16_step<kCoding, 6>(q8);
}

// out[j] = bf16x2 {value(field j), value(field j + 8)}, j = 0..7.
template <IntCoding kCoding>
__device__ __forceinline__ void decode_int2_bf16x2(u32 q, u32 (&out)[8]) {
  const u32 q8 = q >> 8;
  out[0] = detail::int2_bf16_step<kCoding, 0>(q);
  out[1] = detail::int2_bf16_step<kCoding, 2>(q);
  out[2] = detail::int2_bf16_step<kCoding, 4>(q);
  out[3] = detail::int2_bf16_step<kCoding, 0>(q >> 6);
  out[4] = detail::int2_bf16_step<kCoding, 0>(q8);
  out[5] = detail::int2_bf16_step<kCoding, 2>(q8);
  out[6] = detail::int2_bf16_step<kCoding, 4>(q8);
  out[7] = detail::int2_bf16_step<kCoding, 0>(q >> 14);
}

template <class T, IntCoding kCoding>
__device__ __forceinline__ void decode_int2(u32 q, u32 (&out)[8]) {
  static_assert(kIsSame<T, F16> || kIsSame<T, BF16>, "int2 decodes to F16 or BF16");
  if constexpr (kIsSame<T, F16>)
    decode_int2_f16x2<kCoding>(q, out);
  else
    decode_int2_bf16x2<kCoding>(q, out);
}

} // namespace device
} // namespace lowbit
