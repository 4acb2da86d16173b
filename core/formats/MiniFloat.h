// Generic minifloats float<e, m, bias, flags>. Every rule (subnormals, NaN and
// Inf placement, range) follows from the parameters, so OCP FP4/FP6/FP8, the
// exponent-only e8m0 and even f16/bf16/f32 are instances of one mechanism.
#pragma once

#include "core/formats/Rounding.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <string>

namespace lowbit::formats {

// Flags describe the special encodings; with none set every bit pattern is a
// finite number (OCP e2m1, e2m3, e3m2).
enum FloatFlags : unsigned {
  kFloatFinite = 0,
  // IEEE 754: the all-ones exponent encodes Inf (mantissa 0) and NaN (else).
  kFloatIeee = 1u << 0,
  // OCP "fn": no Inf; only the all-ones exponent with all-ones mantissa is NaN
  // (e4m3fn: S.1111.111). For an exponent-only format this makes the whole
  // all-ones code NaN (e8m0: 0xFF).
  kFloatNanAllOnes = 1u << 1,
  // No sign bit: the code is exponent and mantissa only (e8m0).
  kFloatUnsigned = 1u << 2,
  // Exponent field 0 is an ordinary binade, so there are no subnormals and no
  // zero (e8m0 decodes 0x00 to 2^-127).
  kFloatNoSubnormals = 1u << 3,
};

struct FloatFormat {
  int exponentBits = 0;
  int mantissaBits = 0;
  int bias = 0;
  unsigned flags = kFloatFinite;

  bool hasSign() const { return !(flags & kFloatUnsigned); }
  bool hasSubnormals() const { return !(flags & kFloatNoSubnormals); }
  bool hasInf() const { return flags & kFloatIeee; }
  bool hasNan() const { return flags & (kFloatIeee | kFloatNanAllOnes); }
  bool hasZero() const { return hasSubnormals(); }
  int bits() const { return (hasSign() ? 1 : 0) + exponentBits + mantissaBits; }
  // The exponent of the lowest normal binade: subnormals share it.
  int minNormalExponent() const { return hasSubnormals() ? 1 - bias : -bias; }
};

// Checks the parameters (1..8 exponent bits, 0..23 mantissa bits, at most 32
// bits in all, compatible flags).
Status validateFloatFormat(const FloatFormat &format);

// The value of a code; NaN for NaN codes, +-Inf for Inf codes.
double decodeFloat(const FloatFormat &format, uint32_t code);
bool isNanCode(const FloatFormat &format, uint32_t code);
double maxFiniteFloat(const FloatFormat &format);
// The smallest positive value (a subnormal when the format has them).
double minPositiveFloat(const FloatFormat &format);
// The code of a value. NaN maps to the canonical NaN code (all ones), Inf to
// the Inf code; anything not representable is an error that names the value.
Expected<uint32_t> encodeFloat(const FloatFormat &format, double value,
                               Rounding rounding = Rounding::NearestEven,
                               OnOverflow onOverflow = OnOverflow::Error);
// "e2m1", "e4m3fn", "e8m0", ... for the formats the OCP spec names, else the
// generic spelling float<e,m,bias,flags>.
std::string floatFormatName(const FloatFormat &format);
std::string floatFormatSpelling(const FloatFormat &format);

} // namespace lowbit::formats
