// Host models of the 16-bit float formats and of the few PTX instructions the
// device decode units use, written independently of codegen/device so they can
// check it: f16 / bf16 <-> double, lop3, and packed sub/fma with round to
// nearest even. Shared by the CPU unit tests and the GPU tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace lowbit::testing::half {

// ----- f16: 1 sign, 5 exponent (bias 15), 10 mantissa bits -----
inline double f16ToDouble(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  double magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(mantissa, -24); // subnormal: m * 2^-14 / 2^10
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -magnitude : magnitude;
}

// Rounds `v` to the nearest value on the grid {k * 2^e}, ties to even k.
inline double roundToGrid(double v, int e) {
  const double scaled = std::ldexp(v, -e); // exact (power-of-two scaling)
  return std::ldexp(std::nearbyint(scaled), e); // nearbyint: default RN-even
}

// Round to nearest even; overflow -> inf; NaN -> canonical 0x7FFF.
inline uint16_t doubleToF16(double v) {
  if (std::isnan(v))
    return 0x7FFF;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (a == 0)
    return sign;
  int e = std::ilogb(a); // a in [2^e, 2^(e+1))
  if (e < -14)
    e = -14; // subnormal grid: multiples of 2^-24
  double r = roundToGrid(a, e - 10);
  if (r > 65504.0) // the largest finite f16; anything rounding above is inf
    return sign | 0x7C00;
  // Rounding may carry into the next binade; recompute from the value.
  if (r < std::ldexp(1.0, -14))
    return sign | static_cast<uint16_t>(std::ldexp(r, 24)); // subnormal
  int re = std::ilogb(r);
  uint16_t mantissa = static_cast<uint16_t>(std::ldexp(r, 10 - re) - 1024);
  return sign | static_cast<uint16_t>((re + 15) << 10) | mantissa;
}

// ----- bf16: 1 sign, 8 exponent (bias 127), 7 mantissa bits -----
inline double bf16ToDouble(uint16_t b) {
  const int sign = b >> 15, exponent = (b >> 7) & 0xFF, mantissa = b & 0x7F;
  double magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(mantissa, -133);
  else if (exponent == 255)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(128 + mantissa, exponent - 134);
  return sign ? -magnitude : magnitude;
}

inline uint16_t doubleToBf16(double v) {
  if (std::isnan(v))
    return 0x7FFF;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (a == 0)
    return sign;
  int e = std::ilogb(a);
  if (e < -126)
    e = -126;
  double r = roundToGrid(a, e - 7);
  if (r >= std::ldexp(256.0, 120)) // 2^128 and beyond: inf
    return sign | 0x7F80;
  if (r < std::ldexp(1.0, -126))
    return sign | static_cast<uint16_t>(std::ldexp(r, 133));
  int re = std::ilogb(r);
  uint16_t mantissa = static_cast<uint16_t>(std::ldexp(r, 7 - re) - 128);
  return sign | static_cast<uint16_t>((re + 127) << 7) | mantissa;
}

// ----- PTX instruction models -----

// lop3.b32: bit i of the result is bit ((a_i << 2) | (b_i << 1) | c_i) of lut.
inline uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, unsigned lut) {
  uint32_t d = 0;
  for (unsigned index = 0; index < 8; ++index) {
    if (!((lut >> index) & 1))
      continue;
    const uint32_t ma = (index & 4) ? a : ~a;
    const uint32_t mb = (index & 2) ? b : ~b;
    const uint32_t mc = (index & 1) ? c : ~c;
    d |= ma & mb & mc;
  }
  return d;
}

// a * b + c, computed exactly in double, or throws when double cannot hold it
// exactly (then the model would double-round; the decode tests never get
// there: they work on small integers and powers of two).
inline double exactFma(double a, double b, double c) {
  const double product = a * b;
  if (std::fma(a, b, -product) != 0)
    throw std::logic_error("product not exact in double");
  const double sum = product + c;
  if (sum - product != c || sum - c != product)
    throw std::logic_error("sum not exact in double");
  return sum;
}

enum class Fp16Kind { F16, BF16 };

inline double toDouble(Fp16Kind kind, uint16_t bits) {
  return kind == Fp16Kind::F16 ? f16ToDouble(bits) : bf16ToDouble(bits);
}
inline uint16_t fromDouble(Fp16Kind kind, double v) {
  return kind == Fp16Kind::F16 ? doubleToF16(v) : doubleToBf16(v);
}

// fma.rn.{f16x2,bf16x2}, element-wise on both halves. IEEE: an exact zero sum
// of opposite-signed operands is +0 under RN, which `product + c` in double
// already gives.
inline uint32_t fma16x2(Fp16Kind kind, uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d = 0;
  for (int half = 0; half < 2; ++half) {
    const int shift = 16 * half;
    const double r = exactFma(toDouble(kind, (a >> shift) & 0xFFFF),
                              toDouble(kind, (b >> shift) & 0xFFFF),
                              toDouble(kind, (c >> shift) & 0xFFFF));
    d |= static_cast<uint32_t>(fromDouble(kind, r)) << shift;
  }
  return d;
}
// sub.rn.f16x2 (a - b) = fma(b, -1, a) exactly.
inline uint32_t sub16x2(Fp16Kind kind, uint32_t a, uint32_t b) {
  const uint32_t minusOne = kind == Fp16Kind::F16 ? 0xBC00BC00u : 0xBF80BF80u;
  return fma16x2(kind, b, minusOne, a);
}

} // namespace lowbit::testing::half
