#include "core/formats/MiniFloat.h"
#include "core/support/FormatNumber.h"

#include <cmath>

namespace lowbit::formats {

namespace {

uint32_t mask(int bits) { return bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1u; }

// The largest exponent field that still encodes finite values, and the largest
// mantissa allowed with it.
void topFiniteFields(const FloatFormat &format, uint32_t &exponentField,
                     uint32_t &mantissaField) {
  exponentField = mask(format.exponentBits);
  mantissaField = mask(format.mantissaBits);
  if (format.flags & kFloatIeee) {
    exponentField -= 1;
  } else if (format.flags & kFloatNanAllOnes) {
    if (format.mantissaBits == 0)
      exponentField -= 1;
    else
      mantissaField -= 1;
  }
}

} // namespace

Status validateFloatFormat(const FloatFormat &format) {
  if (format.exponentBits < 1 || format.exponentBits > 8)
    return makeError("minifloat exponent bits must be 1..8; got " +
                     std::to_string(format.exponentBits));
  if (format.mantissaBits < 0 || format.mantissaBits > 23)
    return makeError("minifloat mantissa bits must be 0..23; got " +
                     std::to_string(format.mantissaBits));
  if ((format.flags & kFloatIeee) && (format.flags & kFloatNanAllOnes))
    return makeError("minifloat flags 'ieee' and 'fn' are mutually exclusive");
  if (format.flags & ~(kFloatIeee | kFloatNanAllOnes | kFloatUnsigned | kFloatNoSubnormals))
    return makeError("minifloat flags contain unknown bits");
  if (format.bits() > 32)
    return makeError("minifloat " + floatFormatSpelling(format) + " needs " +
                     std::to_string(format.bits()) + " bits; at most 32 are supported");
  if ((format.flags & kFloatIeee) && format.exponentBits < 2)
    return makeError("an IEEE-style minifloat needs at least 2 exponent bits, since "
                     "the all-ones exponent is reserved for Inf/NaN");
  if (format.bias < -200 || format.bias > 200)
    return makeError("minifloat bias " + std::to_string(format.bias) + " is out of range");
  return Status::success();
}

bool isNanCode(const FloatFormat &format, uint32_t code) {
  uint32_t exponentField = (code >> format.mantissaBits) & mask(format.exponentBits);
  uint32_t mantissaField = code & mask(format.mantissaBits);
  bool topExponent = exponentField == mask(format.exponentBits);
  if (format.flags & kFloatIeee)
    return topExponent && mantissaField != 0;
  if (format.flags & kFloatNanAllOnes)
    return topExponent && mantissaField == mask(format.mantissaBits);
  return false;
}

double decodeFloat(const FloatFormat &format, uint32_t code) {
  const int m = format.mantissaBits;
  uint32_t exponentField = (code >> m) & mask(format.exponentBits);
  uint32_t mantissaField = code & mask(m);
  bool negative = format.hasSign() && ((code >> (format.exponentBits + m)) & 1u);
  if (isNanCode(format, code))
    return std::nan("");
  double magnitude;
  if ((format.flags & kFloatIeee) && exponentField == mask(format.exponentBits)) {
    magnitude = INFINITY;
  } else if (exponentField == 0 && format.hasSubnormals()) {
    magnitude = std::ldexp(double(mantissaField), format.minNormalExponent() - m);
  } else {
    // The implicit leading one sits just above the mantissa field.
    magnitude = std::ldexp(double((1u << m) | mantissaField),
                           int(exponentField) - format.bias - m);
  }
  return negative ? -magnitude : magnitude;
}

double maxFiniteFloat(const FloatFormat &format) {
  uint32_t exponentField, mantissaField;
  topFiniteFields(format, exponentField, mantissaField);
  return decodeFloat(format, (exponentField << format.mantissaBits) | mantissaField);
}

double minPositiveFloat(const FloatFormat &format) {
  return format.hasSubnormals() ? decodeFloat(format, 1) : decodeFloat(format, 0);
}

Expected<uint32_t> encodeFloat(const FloatFormat &format, double value, Rounding rounding,
                               OnOverflow onOverflow) {
  const int m = format.mantissaBits;
  const uint32_t signBit = format.hasSign() ? 1u << (format.exponentBits + m) : 0u;
  const std::string name = floatFormatName(format);
  if (std::isnan(value)) {
    if (!format.hasNan())
      return makeError("NaN is not representable in " + name);
    // The canonical NaN: every exponent and mantissa bit set.
    return mask(format.exponentBits + m);
  }
  bool negative = std::signbit(value);
  double magnitude = std::fabs(value);
  if (negative && !format.hasSign() && magnitude != 0)
    return makeError("negative value " + formatDouble(value) + " is not representable in " +
                     "unsigned " + name);
  if (!format.hasSign())
    negative = false;
  uint32_t sign = negative ? signBit : 0u;
  const double maxFinite = maxFiniteFloat(format);

  auto overflow = [&]() -> Expected<uint32_t> {
    if (onOverflow == OnOverflow::Saturate) {
      uint32_t exponentField, mantissaField;
      topFiniteFields(format, exponentField, mantissaField);
      return sign | (exponentField << m) | mantissaField;
    }
    return makeError("value " + formatDouble(value) + " overflows " + name + " (largest " +
                     "finite value " + formatDouble(maxFinite) + ")");
  };
  if (std::isinf(magnitude)) {
    if (format.hasInf())
      return sign | (mask(format.exponentBits) << m);
    return overflow();
  }
  if (magnitude == 0 && !format.hasZero())
    return makeError("zero is not representable in " + name);

  // Round on the lattice of the binade that holds the value: the spacing there
  // is 2^(E - m), and below the normal range the subnormal spacing continues.
  // Scaling by a power of two is exact in double, so the only rounding is the
  // one we ask for. The binade above the largest finite value is treated as if
  // it existed, so overflow is detected after rounding, as IEEE 754 does.
  const int minExponent = format.minNormalExponent();
  int exponent = magnitude > 0 ? std::max(std::ilogb(magnitude), minExponent) : minExponent;
  double step = std::ldexp(1.0, exponent - m);
  double steps = magnitude / step;
  double roundedSteps;
  bool roundUpInMagnitude = rounding == Rounding::TowardPositive && !negative;
  if (rounding == Rounding::NearestEven)
    roundedSteps = std::nearbyint(steps); // default FE_TONEAREST: ties to even
  else
    roundedSteps = roundUpInMagnitude ? std::ceil(steps) : std::floor(steps);
  double rounded = roundedSteps * step;
  if (rounded > maxFinite)
    return overflow();
  if (!format.hasSubnormals() && rounded < std::ldexp(1.0, minExponent)) {
    if (rounding == Rounding::TowardPositive && !negative)
      rounded = std::ldexp(1.0, minExponent);
    else
      return makeError("value " + formatDouble(value) + " is below the smallest value of " +
                       name + " (" + formatDouble(std::ldexp(1.0, minExponent)) + ")");
  }
  if (rounded == 0)
    return sign;
  int roundedExponent = std::ilogb(rounded);
  uint32_t exponentField, mantissaField;
  if (roundedExponent < minExponent) {
    exponentField = 0;
    mantissaField = uint32_t(std::ldexp(rounded, m - minExponent));
  } else {
    exponentField = uint32_t(roundedExponent - minExponent + (format.hasSubnormals() ? 1 : 0));
    mantissaField = uint32_t(std::ldexp(rounded, m - roundedExponent)) - (1u << m);
  }
  return sign | (exponentField << m) | mantissaField;
}

std::string floatFormatSpelling(const FloatFormat &format) {
  std::string flags;
  auto add = [&](const char *flag) { flags += flags.empty() ? flag : std::string("|") + flag; };
  if (format.flags & kFloatIeee)
    add("ieee");
  if (format.flags & kFloatNanAllOnes)
    add("fn");
  if (format.flags & kFloatUnsigned)
    add("unsigned");
  if (format.flags & kFloatNoSubnormals)
    add("nosub");
  if (flags.empty())
    flags = "finite";
  return "float<" + std::to_string(format.exponentBits) + "," +
         std::to_string(format.mantissaBits) + "," + std::to_string(format.bias) + "," + flags +
         ">";
}

std::string floatFormatName(const FloatFormat &format) {
  struct Known {
    int e, m, bias;
    unsigned flags;
    const char *name;
  };
  static const Known known[] = {
      {2, 1, 1, kFloatFinite, "e2m1"},
      {2, 3, 1, kFloatFinite, "e2m3"},
      {3, 2, 3, kFloatFinite, "e3m2"},
      {4, 3, 7, kFloatNanAllOnes, "e4m3fn"},
      {5, 2, 15, kFloatIeee, "e5m2"},
      {8, 0, 127, kFloatNanAllOnes | kFloatUnsigned | kFloatNoSubnormals, "e8m0"},
      {5, 10, 15, kFloatIeee, "f16"},
      {8, 7, 127, kFloatIeee, "bf16"},
      {8, 23, 127, kFloatIeee, "f32"},
  };
  for (const Known &k : known)
    if (k.e == format.exponentBits && k.m == format.mantissaBits && k.bias == format.bias &&
        k.flags == format.flags)
      return k.name;
  return floatFormatSpelling(format);
}

} // namespace lowbit::formats
