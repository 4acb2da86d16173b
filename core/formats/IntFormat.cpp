#include "core/formats/IntFormat.h"
#include "core/support/FormatNumber.h"

#include <cmath>

namespace lowbit::formats {

Status validateIntFormat(const IntFormat &format) {
  if (format.bits < 1 || format.bits > 8)
    return makeError("integer formats have 1..8 bits; got " + std::to_string(format.bits));
  if (format.ternary && (format.bits != 2 || format.isSigned || format.offset != -1))
    return makeError("ternary is stored as 2 unsigned bits with offset -1");
  if (format.isSigned && format.bits < 2)
    return makeError("a signed integer format needs at least 2 bits; got 1");
  if (format.fractionBits < 0 || format.fractionBits > 16)
    return makeError("integer fraction bits must be 0..16; got " +
                     std::to_string(format.fractionBits));
  if (format.ternary && format.fractionBits != 0)
    return makeError("ternary has no fraction bits");
  if (format.offset < -256 || format.offset > 256)
    return makeError("integer offset " + std::to_string(format.offset) + " is out of range");
  return Status::success();
}

bool isValidIntCode(const IntFormat &format, uint32_t code) {
  if (code >> format.bits)
    return false;
  return !(format.ternary && code == 3);
}

int decodeIntRaw(const IntFormat &format, uint32_t code) {
  int raw = int(code);
  // Two's complement: the top bit weighs -2^(bits-1) instead of +2^(bits-1).
  if (format.isSigned && (code >> (format.bits - 1)) & 1u)
    raw -= 1 << format.bits;
  return raw + format.offset;
}

double decodeInt(const IntFormat &format, uint32_t code) {
  return std::ldexp(double(decodeIntRaw(format, code)), -format.fractionBits);
}

double minIntValue(const IntFormat &format) {
  return std::ldexp(double(format.minValue()), -format.fractionBits);
}

double maxIntValue(const IntFormat &format) {
  return std::ldexp(double(format.maxValue()), -format.fractionBits);
}

Expected<uint32_t> encodeInt(const IntFormat &format, double value, Rounding rounding,
                             OnOverflow onOverflow) {
  if (!std::isfinite(value))
    return makeError("value " + std::to_string(value) + " is not representable in " +
                     intFormatName(format));
  // Scaling by 2^fraction is exact, so the only rounding is to an integer.
  double scaled = std::ldexp(value, format.fractionBits);
  double rounded = rounding == Rounding::NearestEven ? std::nearbyint(scaled) : std::ceil(scaled);
  if (rounded < format.minValue() || rounded > format.maxValue()) {
    if (onOverflow == OnOverflow::Error) {
      return makeError("value " + formatDouble(value) + " is outside the range [" +
                       formatDouble(minIntValue(format)) + ", " +
                       formatDouble(maxIntValue(format)) + "] of " + intFormatName(format));
    }
    rounded = rounded < format.minValue() ? format.minValue() : format.maxValue();
  }
  int raw = int(rounded) - format.offset;
  return uint32_t(raw) & ((1u << format.bits) - 1u);
}

std::string intFormatName(const IntFormat &format) {
  if (format.ternary)
    return "ternary";
  std::string name = (format.isSigned ? "int" : "uint") + std::to_string(format.bits);
  if (format.offset > 0)
    name += "+" + std::to_string(format.offset);
  else if (format.offset < 0)
    name += std::to_string(format.offset);
  if (format.fractionBits != 0)
    name += "/2^" + std::to_string(format.fractionBits);
  return name;
}

std::string intFormatSpelling(const IntFormat &format) {
  if (format.ternary)
    return "ternary";
  std::string spelling = "int<" + std::to_string(format.bits) + "," +
                         (format.isSigned ? "signed" : "unsigned");
  if (format.offset != 0 || format.fractionBits != 0)
    spelling += "," + std::to_string(format.offset);
  if (format.fractionBits != 0)
    spelling += "," + std::to_string(format.fractionBits);
  return spelling + ">";
}

} // namespace lowbit::formats
