// Dequantize 8 x 4-bit integer codes in one 32-bit word to 4 f16x2 or 4 bf16x2
// registers, with lop3 and a magic-number bias (no int->float cvt).
//
// ---- Register interleave (the part the layout pass must fold into packing) ---
// Nibble i of the word is bits [4i, 4i+4). The decode produces out[0..3]; out[j]
// holds logical elements 2j (low half) and 2j+1 (high half), i.e. out[] is in
// the order an mma B/A operand wants: {e0,e1}, {e2,e3}, {e4,e5}, {e6,e7}.
// Element e comes from nibble
//     int4_nibble_of_element(e) = (e >> 1) | ((e & 1) << 2)
//     e      : 0 1 2 3 4 5 6 7
//     nibble : 0 4 1 5 2 6 3 7
// equivalently nibble i holds element int4_element_of_nibble(i) =
//     i      : 0 1 2 3 4 5 6 7
//     element: 0 2 4 6 1 3 5 7
// As a bit map: the 3-bit nibble index is the element index rotated right by
// one bit. So out[j] = {nibble j, nibble j + 4}: the two halves of each output
// come from the two 16-bit halves of the word at the same position, which is
// what lets ONE lop3 build both halves of a register.
//
// ---- Why the magic number works (f16) -----------------------------------
// 0x6400 is f16 1024.0: exponent 2^10, so the 10 mantissa bits count in units
// of exactly 1. OR-ing a nibble n into the low mantissa bits gives the f16
// value 1024 + n exactly. lop3 does this for both halves at once:
//     (q & 0x000F000F) | 0x64006400  = {1024 + n0, 1024 + n4}
// and one sub.f16x2 of {1024, 1024} leaves {n0, n4} (exact: small integers).
// The next nibble up is used IN PLACE (no shift): bits 4..7 land in mantissa
// bits 4..7, i.e. worth 16 each:
//     (q & 0x00F000F0) | 0x64006400  = {1024 + 16 n1, 1024 + 16 n5}
// and fma(x, 1/16, -64) = 64 + n - 64 = n, exact with the single rounding of
// fma. Then q >> 8 brings nibbles 2,3 / 6,7 to the same places. Total for 8
// codes: 1 shift, 4 lop3, 2 sub, 2 fma.
//
// ---- bf16 -----------------------------------------------------------------
// bf16 has only 7 mantissa bits. 0x4300 is bf16 128.0 (units of 1), so
// (x & 0x000F000F) | 0x43004300 = {128 + n, 128 + n'} works, but the in-place
// trick for bits 4..7 does not (bit 7 is the exponent's lowest bit). Each pair
// is therefore shifted down: out[j] from q >> 4j (3 shifts, 4 lop3, 4 fma).
// The subtraction is fma.rn.bf16x2(x, 1, -128): add/sub.bf16x2 need sm_90, fma
// is legal on sm_80. Same interleave as f16.
//
// ---- Codings --------------------------------------------------------------
//   kUnsigned:       value = n                    (0..15; zero point applied later)
//   kOffsetBinary:   value = n - 8                (GPTQ-style "uint4b8")
//   kTwosComplement: value = n as signed 4-bit    (-8..7)
// Offset binary: subtract 1024 + 8 (resp. 64 + 8 after the 1/16, 128 + 8 for
// bf16) instead of 1024: the bias is free.
// Two's complement: flipping the sign bit (n ^ 8) maps it to offset binary
// (-8 = 1000b -> 0000b, -1 = 1111b -> 0111b, 7 = 0111b -> 1111b), so the
// textbook step is q ^= 0x88888888 before the offset-binary decode. That XOR
// is folded into the lop3: with mask m and magic M disjoint, and X = 0x88888888
// & m inside m,  ((q ^ X) & m) | M  ==  (q & m) ^ (M | X)  -- lut (a & b) ^ c,
// a constant c = M | X. So all three codings cost the same instructions.
#pragma once

#include "lowbit/device/arith.cuh"
#include "lowbit/device/lop3.cuh"
#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

// How an n-bit integer code maps to its value.
enum class IntCoding : int {
  kUnsigned = 0,       // value = code
  kOffsetBinary = 1,   // value = code - 2^(n-1)
  kTwosComplement = 2, // value = code sign-extended from n bits
};

// The interleave above, as functions (usable in static_asserts and by
// generated code; the host-side packer keeps its own copy, tested against the
// GPU decode).
__host__ __device__ constexpr int int4_nibble_of_element(int e) {
  return (e >> 1) | ((e & 1) << 2);
}
__host__ __device__ constexpr int int4_element_of_nibble(int i) {
  return ((i & 3) << 1) | (i >> 2);
}
static_assert(int4_nibble_of_element(0) == 0 && int4_nibble_of_element(1) == 4 &&
                  int4_nibble_of_element(2) == 1 && int4_nibble_of_element(3) == 5 &&
                  int4_nibble_of_element(4) == 2 && int4_nibble_of_element(5) == 6 &&
                  int4_nibble_of_element(6) == 3 && int4_nibble_of_element(7) == 7,
              "int4 interleave table");
static_assert(int4_element_of_nibble(int4_nibble_of_element(0)) == 0 &&
                  int4_element_of_nibble(int4_nibble_of_element(1)) == 1 &&
                  int4_element_of_nibble(int4_nibble_of_element(2)) == 2 &&
                  int4_element_of_nibble(int4_nibble_of_element(3)) == 3 &&
                  int4_element_of_nibble(int4_nibble_of_element(4)) == 4 &&
                  int4_element_of_nibble(int4_nibble_of_element(5)) == 5 &&
                  int4_element_of_nibble(int4_nibble_of_element(6)) == 6 &&
                  int4_element_of_nibble(int4_nibble_of_element(7)) == 7,
              "int4 interleave is a permutation with this inverse");

namespace detail {
// The value subtracted on top of the magic number: 0, or 8 for the two signed
// codings (two's complement is turned into offset binary by the folded XOR).
template <IntCoding kCoding> struct Int4Bias {
  static constexpr int value = kCoding == IntCoding::kUnsigned ? 0 : 8;
  // Sign bit of both 4-bit fields selected by a mask, to flip for two's complement.
  static constexpr u32 xor_lo = kCoding == IntCoding::kTwosComplement ? 0x00080008u : 0u;
  static constexpr u32 xor_hi = kCoding == IntCoding::kTwosComplement ? 0x00800080u : 0u;
};
} // namespace detail

// out[j] = f16x2 {value(nibble j), value(nibble j + 4)}, j = 0..3.
template <IntCoding kCoding>
__device__ __forceinline__ void decode_int4_f16x2(u32 q, u32 (&out)[4]) {
  typedef detail::Int4Bias<kCoding> B;
  constexpr u32 kMaskLo = 0x000F000Fu;       // nibbles 0 and 4 (after >> 8: 2, 6)
  constexpr u32 kMaskHi = 0x00F000F0u;       // nibbles 1 and 5 (after >> 8: 3, 7)
  constexpr u32 kMagic = splat2(f16_bits_of_int(1024)); // 0x64006400
  static_assert((kMagic & (kMaskLo | kMaskHi)) == 0, "magic must not overlap the codes");
  // {1024 + B, 1024 + B}: subtracted from {1024 + n, ...}.
  constexpr u32 kSubLo = splat2(f16_bits_of_int(1024 + B::value));
  // (1024 + 16 n) / 16 - (64 + B) = n - B.
  constexpr u32 kMulHi = splat2(f16_bits_of_pow2(-4));
  constexpr u32 kAddHi = splat2(f16_bits_of_int(-(64 + B::value)));

  const u32 q8 = q >> 8;
  out[0] = sub_f16x2(lop3<kLutAndXor>(q, kMaskLo, kMagic | B::xor_lo), kSubLo);
  out[1] = fma_f16x2(lop3<kLutAndXor>(q, kMaskHi, kMagic | B::xor_hi), kMulHi, kAddHi);
  out[2] = sub_f16x2(lop3<kLutAndXor>(q8, kMaskLo, kMagic | B::xor_lo), kSubLo);
  out[3] = fma_f16x2(lop3<kLutAndXor>(q8, kMaskHi, kMagic | B::xor_hi), kMulHi, kAddHi);
}

// out[j] = bf16x2 {value(nibble j), value(nibble j + 4)}, j = 0..3.
template <IntCoding kCoding>
__device__ __forceinline__ void decode_int4_bf16x2(u32 q, u32 (&out)[4]) {
  typedef detail::Int4Bias<kCoding> B;
  constexpr u32 kMask = 0x000F000Fu;
  constexpr u32 kMagic = splat2(bf16_bits_of_int(128)); // 0x43004300
  static_assert((kMagic & kMask) == 0, "magic must not overlap the codes");
  constexpr u32 kOne = splat2(bf16_bits_of_int(1));
  constexpr u32 kAdd = splat2(bf16_bits_of_int(-(128 + B::value)));
  constexpr u32 kC = kMagic | B::xor_lo;

  out[0] = fma_bf16x2(lop3<kLutAndXor>(q, kMask, kC), kOne, kAdd);
  out[1] = fma_bf16x2(lop3<kLutAndXor>(q >> 4, kMask, kC), kOne, kAdd);
  out[2] = fma_bf16x2(lop3<kLutAndXor>(q >> 8, kMask, kC), kOne, kAdd);
  out[3] = fma_bf16x2(lop3<kLutAndXor>(q >> 12, kMask, kC), kOne, kAdd);
}

// Type-dispatched form: T = F16 or BF16.
template <class T, IntCoding kCoding>
__device__ __forceinline__ void decode_int4(u32 q, u32 (&out)[4]) {
  static_assert(kIsSame<T, F16> || kIsSame<T, BF16>, "int4 decodes to F16 or BF16");
  if constexpr (kIsSame<T, F16>)
    decode_int4_f16x2<kCoding>(q, out);
  else
    decode_int4_bf16x2<kCoding>(q, out);
}

// Short names.
__device__ __forceinline__ void decode_u4_f16x2(u32 q, u32 (&out)[4]) {
  decode_int4_f16x2<IntCoding::kUnsigned>(q, out);
}
__device__ __forceinline__ void decode_u4b8_f16x2(u32 q, u32 (&out)[4]) {
  decode_int4_f16x2<IntCoding::kOffsetBinary>(q, out);
}
__device__ __forceinline__ void decode_s4_f16x2(u32 q, u32 (&out)[4]) {
  decode_int4_f16x2<IntCoding::kTwosComplement>(q, out);
}
__device__ __forceinline__ void decode_u4_bf16x2(u32 q, u32 (&out)[4]) {
  decode_int4_bf16x2<IntCoding::kUnsigned>(q, out);
}
__device__ __forceinline__ void decode_u4b8_bf16x2(u32 q, u32 (&out)[4]) {
  decode_int4_bf16x2<IntCoding::kOffsetBinary>(q, out);
}
__device__ __forceinline__ void decode_s4_bf16x2(u32 q, u32 (&out)[4]) {
  decode_int4_bf16x2<IntCoding::kTwosComplement>(q, out);
}

} // namespace device
} // namespace lowbit
