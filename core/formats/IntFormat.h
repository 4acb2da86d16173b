// Integer codes int<bits, signed, offset, fraction>: two's complement or
// plain binary, plus a constant offset added after decoding, optionally read
// as fixed point with `fraction` bits after the binary point. The offset
// covers the excess-K encodings that checkpoints use (GGUF Q4_0 stores q + 8,
// GPTQ v1 stores zero - 1); the fraction covers OCP MXINT8, whose element is
// int8 * 2^-6 so that its e8m0 scales mean what the spec says. Ternary
// {-1, 0, 1} is the 2-bit excess-1 code whose top code 3 is invalid (the
// BitNet / GGUF TQ2_0 convention).
#pragma once

#include "core/formats/Rounding.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <string>

namespace lowbit::formats {

struct IntFormat {
  int bits = 8;
  bool isSigned = true; // two's complement when set
  int offset = 0;       // value = raw + offset
  bool ternary = false; // 2 bits, codes 0,1,2 -> -1,0,1; code 3 invalid
  int fractionBits = 0; // value = (raw + offset) * 2^-fractionBits

  // The integer range before the fixed-point fraction is applied.
  int minValue() const { return (isSigned ? -(1 << (bits - 1)) : 0) + offset; }
  int maxValue() const {
    if (ternary)
      return 1;
    return (isSigned ? (1 << (bits - 1)) - 1 : (1 << bits) - 1) + offset;
  }
};

Status validateIntFormat(const IntFormat &format);
bool isValidIntCode(const IntFormat &format, uint32_t code);
// The integer (before the fraction) of a valid code; callers check validity.
int decodeIntRaw(const IntFormat &format, uint32_t code);
double decodeInt(const IntFormat &format, uint32_t code);
double minIntValue(const IntFormat &format);
double maxIntValue(const IntFormat &format);
Expected<uint32_t> encodeInt(const IntFormat &format, double value,
                             Rounding rounding = Rounding::NearestEven,
                             OnOverflow onOverflow = OnOverflow::Error);
// "int4", "uint4", "uint4-8" (stores q + 8), "uint4+1", "ternary", "int8/2^6".
std::string intFormatName(const IntFormat &format);
std::string intFormatSpelling(const IntFormat &format);

} // namespace lowbit::formats
