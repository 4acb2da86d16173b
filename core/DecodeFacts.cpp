#include "core/DecodeFacts.h"

#include "core/FragmentFacts.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace lowbit::core {
namespace {

struct WideType {
  int exponentBits, mantissaBits, bias;
  formats::DataFormat format;
};

WideType wideType(Activation activation) {
  if (activation == Activation::BF16)
    return {8, 7, 127, formats::DataFormat::bf16()};
  return {5, 10, 15, formats::DataFormat::f16()};
}

// The value `bits` of the wide type holds exactly, or NaN.
double exactly(const formats::DataFormat &wide, double value) {
  if (!std::isfinite(value))
    return std::nan("");
  Expected<uint32_t> code = wide.encode(value);
  if (!code.ok() || wide.decode(*code) != value)
    return std::nan("");
  return value;
}

std::string text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

} // namespace

bool isWeightCode(const formats::DataFormat &code, uint32_t value) {
  return code.isValidCode(value) && std::isfinite(code.decode(value));
}

Expected<MinifloatDecode> minifloatDecode(const formats::DataFormat &code, Activation activation) {
  if (isQuantized(activation))
    return makeError(std::string("codes decode to f16 or bf16, not to ") +
                     activationName(activation));
  const formats::FloatFormat *f = code.asFloat();
  if (!f)
    return makeError(code.name() + " is not a minifloat");
  const WideType wide = wideType(activation);
  const std::string subject = "no exact decode of " + code.name() + " to " +
                              activationName(activation) + ": ";
  MinifloatDecode d;
  d.codeBits = f->bits();
  d.hasSign = f->hasSign();
  // A two-plane code (3, 5 or 6 bits) is joined inside its half before
  // this decode sees it (passes/DecodeStrategy.cpp).
  if (d.codeBits > 8 || (16 % d.codeBits && !layout::codePlanes(d.codeBits).highBits))
    return makeError(subject + "a code must not straddle a 16-bit half (2, 4 or 8 bits, or 3, "
                               "5 and 6 in two planes), not " +
                     std::to_string(d.codeBits));
  if (!f->hasSubnormals())
    return makeError(subject + "a format without subnormals has no zero, and the wide type's "
                               "exponent 0 is subnormal");
  if (f->exponentBits > wide.exponentBits || f->mantissaBits > wide.mantissaBits)
    return makeError(subject + std::to_string(f->exponentBits) + " exponent and " +
                     std::to_string(f->mantissaBits) + " mantissa bits do not fit " +
                     std::to_string(wide.exponentBits) + " and " +
                     std::to_string(wide.mantissaBits));
  const int magnitudeBits = f->exponentBits + f->mantissaBits;
  // The magnitude starts at bit 16 - c of the half and must start at
  // mantissaBits(wide) - m.
  d.magnitudeShift = (16 - d.codeBits) - (wide.mantissaBits - f->mantissaBits);
  d.magnitudeMask = ((1u << magnitudeBits) - 1) << (wide.mantissaBits - f->mantissaBits);
  d.scaleExponent = wide.bias - f->bias;
  const double factor = std::ldexp(1.0, d.scaleExponent);
  if (std::isnan(exactly(wide.format, factor)))
    return makeError(subject + "the exponent factor 2^" + std::to_string(d.scaleExponent) +
                     " is not an " + activationName(activation));
  for (uint32_t q = 0; q < code.codeCount(); ++q) {
    if (!isWeightCode(code, q))
      continue;
    uint32_t atTop = q << (16 - d.codeBits);
    uint32_t bits = ((atTop >> d.magnitudeShift) & d.magnitudeMask) |
                    (d.hasSign ? atTop & 0x8000u : 0u);
    double value = exactly(wide.format, wide.format.decode(bits) * factor);
    if (!(value == code.decode(q)))
      return makeError(subject + "code " + std::to_string(q) + " (" + text(code.decode(q)) +
                       ") is not exact in " + activationName(activation));
    if (std::signbit(value) != std::signbit(code.decode(q)))
      return makeError(subject + "code " + std::to_string(q) + " loses its sign");
  }
  return d;
}

Expected<std::vector<uint16_t>> lookupTableBits(const formats::DataFormat &code,
                                                Activation activation) {
  if (isQuantized(activation))
    return makeError(std::string("codes decode to f16 or bf16, not to ") +
                     activationName(activation));
  const formats::LutFormat *lut = code.asLut();
  if (!lut)
    return makeError(code.name() + " is not a lookup table");
  const formats::DataFormat wide = wideType(activation).format;
  std::vector<uint16_t> bits;
  for (size_t i = 0; i < lut->table.size(); ++i) {
    Expected<uint32_t> entry = wide.encode(lut->table[i], formats::Rounding::NearestEven);
    if (!entry.ok() || !std::isfinite(wide.decode(*entry)))
      return makeError("table entry " + std::to_string(i) + " of " + code.name() + " (" +
                       text(lut->table[i]) + ") is not a finite " +
                       activationName(activation));
    bits.push_back(static_cast<uint16_t>(*entry));
  }
  return bits;
}

Expected<S8Decode> s8Decode(const formats::DataFormat &code) {
  const formats::IntFormat *integer = code.asInt();
  // Ternary is 2-bit unsigned with offset -1: its bytes are 64 (v - 1).
  if (!integer || integer->fractionBits != 0)
    return makeError("no s8 decode of " + code.name() + ": only integer codes decode to s8");
  if (integer->bits != 8 && integer->bits != 4 && integer->bits != 2 && integer->bits != 1)
    return makeError("no s8 decode of " + code.name() +
                     ": 8-, 4-, 2- and 1-bit codes decode to s8, not " +
                     std::to_string(integer->bits) + "-bit ones");
  S8Decode d;
  d.shift = 8 - integer->bits;
  d.centre = integer->offset + (integer->isSigned ? 0 : 1 << (integer->bits - 1));
  return d;
}

bool decodesRaw(const formats::DataFormat &code, Activation activation) {
  if (activation != Activation::F16 || !checkDecodable(code, activation).ok())
    return false;
  if (const formats::IntFormat *integer = code.asInt())
    return !integer->isSigned && integer->offset == 0 && !integer->ternary;
  return code.asFloat() != nullptr;
}

int rawScaleExponent(const formats::DataFormat &code, int subtile) {
  if (code.asFloat())
    return minifloatDecode(code, Activation::F16)->scaleExponent;
  return 24 - rawSubtileBitOffset(CodeFragment{code.bits()}, subtile);
}

bool needsWideDot(const formats::DataFormat &code, Activation activation) {
  return activation == Activation::F16 &&
         std::max(std::fabs(code.maxFinite()), std::fabs(code.minFinite())) > kPackedDotCodeLimit;
}

Status checkDecodable(const formats::DataFormat &code, Activation activation) {
  if (isQuantized(activation))
    return makeError(std::string("codes decode to f16 or bf16, not to ") +
                     activationName(activation));
  if (Expected<CodeFragment> fragment = codeFragment(code); !fragment)
    return makeError(fragment.error());
  if (code.asFloat()) {
    if (Expected<MinifloatDecode> d = minifloatDecode(code, activation); !d)
      return makeError(d.error());
  } else if (code.asLut()) {
    if (Expected<std::vector<uint16_t>> t = lookupTableBits(code, activation); !t)
      return makeError(t.error());
  }
  return Status::success();
}

} // namespace lowbit::core
