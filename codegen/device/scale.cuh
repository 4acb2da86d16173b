// Block-scale bytes widened to f32, exactly, for every code: OCP MX's e8m0
// and e4m3fn (NVFP4's block scale).
//
// Scales are loaded once per group, off the hot path, but the conversions are
// still a few integer ops each, built from the bit fields alone:
//  - no cvt: PTX's cvt from e4m3 needs sm_89 and kernels also target sm_80;
//  - no f32 arithmetic on subnormals: a flush-to-zero build (or a multiply
//    with .ftz) would flush them, so the bits are assembled as integers, and
//    the only float operations (e4m3fn's subnormals) act on normal numbers.
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
// there is no infinity. A normal code (exponent e > 0) is 2^(e - 7)·1.m, the
// f32 with exponent e + 120 and the mantissa at bits 20..22: the code's low
// 7 bits shifted by 20, plus 120 in the exponent field. A subnormal is
// m·2^-9 (m = 0..7): an exact int-to-float conversion times 2^-9, both
// results normal (or zero), so no flushing applies. The sign goes on last
// (also making -0 from code 0x80).
__host__ __device__ __forceinline__ unsigned e4m3fn_to_f32_bits(unsigned code) {
  const unsigned magnitude = code & 0x7Fu;
  const unsigned sign = (code & 0x80u) << 24;
  const float subnormal = static_cast<float>(magnitude & 7u) * 0.001953125f; // 2^-9
  unsigned subnormalBits;
#ifdef __CUDA_ARCH__
  subnormalBits = __float_as_uint(subnormal);
#else
  __builtin_memcpy(&subnormalBits, &subnormal, sizeof subnormalBits);
#endif
  const unsigned bits = magnitude >= 8u ? (magnitude << 20) + (120u << 23) : subnormalBits;
  return magnitude == 0x7Fu ? 0x7FC00000u : (bits | sign);
}
__host__ __device__ __forceinline__ float e4m3fn_to_f32(unsigned code) {
  return f32_from_bits(e4m3fn_to_f32_bits(code));
}

} // namespace device
} // namespace lowbit
