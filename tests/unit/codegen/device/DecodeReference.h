// The reference meaning of the device decode units: which code field each
// decoded element comes from (the documented register interleave) and what
// value a code has under each coding. Shared by the CPU model test and the GPU
// tests; independent of codegen/device.
#pragma once

#include "tests/unit/codegen/device/HostHalf.h"

#include <array>
#include <cstdint>

namespace lowbit::testing::decode {

// Matches lowbit::device::IntCoding (same order: the GPU test passes the index).
enum class Coding { Unsigned = 0, OffsetBinary = 1, TwosComplement = 2 };
constexpr Coding kCodings[] = {Coding::Unsigned, Coding::OffsetBinary, Coding::TwosComplement};

// Element e of a decoded word comes from this code field (nibble / 2-bit field).
constexpr std::array<int, 8> kInt4NibbleOfElement = {0, 4, 1, 5, 2, 6, 3, 7};
constexpr std::array<int, 16> kInt2FieldOfElement = {0, 8,  1, 9,  2, 10, 3, 11,
                                                     4, 12, 5, 13, 6, 14, 7, 15};

inline int codeValue(unsigned code, int bits, Coding coding) {
  const int half = 1 << (bits - 1);
  switch (coding) {
  case Coding::Unsigned: return static_cast<int>(code);
  case Coding::OffsetBinary: return static_cast<int>(code) - half;
  case Coding::TwosComplement:
    return code >= static_cast<unsigned>(half) ? static_cast<int>(code) - 2 * half
                                               : static_cast<int>(code);
  }
  return 0;
}

// The 16-bit pattern element `e` of word `q` must decode to (+0 for zero).
inline uint16_t expectedBits(uint32_t q, int e, int bits, Coding coding, half::Fp16Kind kind) {
  const int field = bits == 4 ? kInt4NibbleOfElement[e] : kInt2FieldOfElement[e];
  const unsigned code = (q >> (bits * field)) & ((1u << bits) - 1);
  return half::fromDouble(kind, codeValue(code, bits, coding));
}

} // namespace lowbit::testing::decode
