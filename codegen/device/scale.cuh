// Block-scale bytes widened to f32, exactly, for every code: OCP MX's e8m0
// and e4m3fn (NVFP4's block scale).
//
// A gemv lane widens a scale for every 16 or 32 codes of a column, so each
// conversion is a few instructions, built from the bit fields:
//  - no cvt from e4m3: PTX's needs sm_89 and kernels also target sm_80;
//  - no f32 arithmetic on subnormals: a flush-to-zero build (or a multiply
//    with .ftz) would flush them, so e8m0's bits are assembled as integers,
//    and e4m3fn's only float operations (an f16 -> f32 conversion and a
//    multiply by 2^8) act on normal numbers.
//
// Self-contained (no other lowbit header) and __host__ __device__, so a CPU
// unit test compiles these very functions as host code and checks them against
// the formats library's decode (tests/unit/codegen/device/ScaleConvertTest.cpp).
#pragma once

namespace lowbit {
namespace device {

// The f32 with bit pattern `bits`.
__host__ __device__ __forceinline__ float f32_from_bits(unsigned bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float value;
  __builtin_memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// e8m0: 2^(code - 127). Codes 1..254 are f32 normals (exponent field =
// code); code 0 is 2^-127, the f32 subnormal with only mantissa bit 22 set;
// 0xFF is NaN.
__host__ __device__ __forceinline__ unsigned e8m0_to_f32_bits(unsigned code) {
  code &= 0xFFu;
  const unsigned normal = code << 23;
  return code == 0u ? 0x00400000u : code == 0xFFu ? 0x7FC00000u : normal;
}
__host__ __device__ __forceinline__ float e8m0_to_f32(unsigned code) {
  return f32_from_bits(e8m0_to_f32_bits(code));
}

// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; S.1111.111 is NaN,
// there is no infinity. Its magnitude bits placed at f16's bits 7..13 (the
// exponent field's low 4 bits and the mantissa's top 3) are the f16 of the
// value times 2^-8, normals and subnormals alike (f16's bias is 15 = 7 + 8,
// and an e4m3 subnormal 0.mmm·2^-6 lands on the f16 subnormal 0.mmm·2^-14).
// The code's byte sign-extended and shifted left by 7 puts the sign at bit
// 15 too, and one mask clears bit 14 (a copy of the sign): four
// instructions with the f16 -> f32 conversion, whose result is always an f32
// normal (or zero), so the times 2^8 after it is exact and no flushing applies.
// The other route (an exact int-to-float conversion of subnormals and an
// integer assembly of normals, with a select between them) took about ten.
__host__ __device__ __forceinline__ float f16_bits_to_f32(unsigned bits) {
#ifdef __CUDA_ARCH__
  float value;
  asm("{ .reg .b16 h; cvt.u16.u32 h, %1; cvt.f32.f16 %0, h; }" : "=f"(value) : "r"(bits));
  return value;
#else
  // Host twin of cvt.f32.f16 (exact), for the unit test.
  const unsigned exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  float magnitude = exponent == 0 ? static_cast<float>(mantissa) * 5.9604644775390625e-8f // 2^-24
                                  : f32_from_bits(((exponent + 112u) << 23) | (mantissa << 13));
  return (bits & 0x8000u) ? -magnitude : magnitude;
#endif
}
__host__ __device__ __forceinline__ float e4m3fn_to_f32(unsigned code) {
  const int extended = static_cast<signed char>(static_cast<unsigned char>(code));
  const unsigned half = (static_cast<unsigned>(extended) << 7) & 0xBF80u;
  const float value = f16_bits_to_f32(half) * 256.0f;
  return (code & 0x7Fu) == 0x7Fu ? f32_from_bits(0x7FC00000u) : value;
}

} // namespace device
} // namespace lowbit
