// A host model of the int4 / int2 decode bit tricks in codegen/device,
// emulating lop3 and the f16 / bf16 arithmetic bit-exactly. The constants are
// written here as literal bit patterns, independently of the device headers
// (which compute theirs with f16_bits_of_int & co.), so this pins the magic
// numbers, the interleave and the signed-code handling. The GPU tests then
// check that the device code produces the same values.
#include "tests/unit/codegen/device/DecodeReference.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace lowbit::testing {
namespace {

using half::Fp16Kind;
using half::fma16x2;
using half::lop3;
using half::sub16x2;

using decode::Coding;
using decode::kCodings;
using decode::kInt2FieldOfElement;
using decode::kInt4NibbleOfElement;

constexpr unsigned kLutAndXor = (0xF0 & 0xCC) ^ 0xAA; // (a & b) ^ c
constexpr unsigned kLutAndOr = (0xF0 & 0xCC) | 0xAA;  // (a & b) | c

// ---- the models (mirror decode_int4.cuh / decode_int2.cuh step by step) ----

std::array<uint32_t, 4> modelInt4F16(uint32_t q, Coding coding) {
  const bool sign = coding == Coding::TwosComplement;
  const bool biased = coding != Coding::Unsigned;
  const uint32_t cLo = 0x64006400u | (sign ? 0x00080008u : 0u);
  const uint32_t cHi = 0x64006400u | (sign ? 0x00800080u : 0u);
  const uint32_t subLo = biased ? 0x64086408u : 0x64006400u; // 1032 : 1024
  const uint32_t mulHi = 0x2C002C00u;                         // 1/16
  const uint32_t addHi = biased ? 0xD480D480u : 0xD400D400u; // -72 : -64
  const uint32_t q8 = q >> 8;
  return {sub16x2(Fp16Kind::F16, lop3(q, 0x000F000Fu, cLo, kLutAndXor), subLo),
          fma16x2(Fp16Kind::F16, lop3(q, 0x00F000F0u, cHi, kLutAndXor), mulHi, addHi),
          sub16x2(Fp16Kind::F16, lop3(q8, 0x000F000Fu, cLo, kLutAndXor), subLo),
          fma16x2(Fp16Kind::F16, lop3(q8, 0x00F000F0u, cHi, kLutAndXor), mulHi, addHi)};
}

std::array<uint32_t, 4> modelInt4Bf16(uint32_t q, Coding coding) {
  const uint32_t c = 0x43004300u | (coding == Coding::TwosComplement ? 0x00080008u : 0u);
  const uint32_t one = 0x3F803F80u;
  const uint32_t add = coding == Coding::Unsigned ? 0xC300C300u : 0xC308C308u; // -128 : -136
  std::array<uint32_t, 4> out{};
  for (int j = 0; j < 4; ++j)
    out[j] = fma16x2(Fp16Kind::BF16, lop3(q >> (4 * j), 0x000F000Fu, c, kLutAndXor), one, add);
  return out;
}

uint32_t int2F16Step(uint32_t x, int shift, Coding coding) {
  const bool sign = coding == Coding::TwosComplement;
  const bool biased = coding != Coding::Unsigned;
  const uint32_t t = lop3(x, 0x00030003u << shift,
                          0x64006400u | (sign ? 0x00020002u << shift : 0u), kLutAndXor);
  switch (shift) {
  case 0: return sub16x2(Fp16Kind::F16, t, biased ? 0x64026402u : 0x64006400u); // 1026 : 1024
  case 2: return fma16x2(Fp16Kind::F16, t, 0x34003400u, biased ? 0xDC08DC08u : 0xDC00DC00u); // 1/4, -258 : -256
  case 4: return fma16x2(Fp16Kind::F16, t, 0x2C002C00u, biased ? 0xD420D420u : 0xD400D400u); // 1/16, -66 : -64
  default: return fma16x2(Fp16Kind::F16, t, 0x24002400u, biased ? 0xCC80CC80u : 0xCC00CC00u); // 1/64, -18 : -16
  }
}

std::array<uint32_t, 8> modelInt2F16(uint32_t q, Coding coding) {
  std::array<uint32_t, 8> out{};
  for (int j = 0; j < 8; ++j)
    out[j] = int2F16Step(j < 4 ? q : q >> 8, 2 * (j % 4), coding);
  return out;
}

uint32_t int2Bf16Step(uint32_t x, int shift, Coding coding) {
  const bool sign = coding == Coding::TwosComplement;
  const bool biased = coding != Coding::Unsigned;
  const uint32_t t = lop3(x, 0x00030003u << shift,
                          0x43004300u | (sign ? 0x00020002u << shift : 0u), kLutAndXor);
  switch (shift) {
  case 0: return fma16x2(Fp16Kind::BF16, t, 0x3F803F80u, biased ? 0xC302C302u : 0xC300C300u); // 1, -130 : -128
  case 2: return fma16x2(Fp16Kind::BF16, t, 0x3E803E80u, biased ? 0xC208C208u : 0xC200C200u); // 1/4, -34 : -32
  default: return fma16x2(Fp16Kind::BF16, t, 0x3D803D80u, biased ? 0xC120C120u : 0xC100C100u); // 1/16, -10 : -8
  }
}

std::array<uint32_t, 8> modelInt2Bf16(uint32_t q, Coding coding) {
  return {int2Bf16Step(q, 0, coding),      int2Bf16Step(q, 2, coding),
          int2Bf16Step(q, 4, coding),      int2Bf16Step(q >> 6, 0, coding),
          int2Bf16Step(q >> 8, 0, coding), int2Bf16Step(q >> 8, 2, coding),
          int2Bf16Step(q >> 8, 4, coding), int2Bf16Step(q >> 14, 0, coding)};
}

// ---- the input set: every 16-bit half exhaustively, against a few others ---

std::vector<uint32_t> testWords() {
  std::vector<uint32_t> words;
  std::mt19937 rng(1234);
  std::vector<uint32_t> others = {0x0000u, 0xFFFFu, 0x8888u, 0x7777u};
  for (int i = 0; i < 2; ++i)
    others.push_back(rng() & 0xFFFFu);
  for (uint32_t lo = 0; lo < 0x10000u; ++lo)
    for (uint32_t other : others) {
      words.push_back((other << 16) | lo);
      words.push_back((lo << 16) | other);
    }
  return words;
}

// Checks every element of a decoded word against the reference: the value of
// its code field (decode::expectedBits, tabulated once per code).
class Expectation {
public:
  Expectation(int bits, Coding coding, Fp16Kind kind) : bits_(bits), coding_(coding), kind_(kind) {
    for (unsigned code = 0; code < (1u << bits); ++code)
      want_[code] = half::fromDouble(kind, decode::codeValue(code, bits, coding));
  }

  template <size_t kN> bool check(const std::array<uint32_t, kN> &out, uint32_t q) const {
    const int *fieldOf =
        bits_ == 4 ? kInt4NibbleOfElement.data() : kInt2FieldOfElement.data();
    for (size_t e = 0; e < 2 * kN; ++e) {
      const unsigned code = (q >> (bits_ * fieldOf[e])) & ((1u << bits_) - 1);
      const uint16_t got = static_cast<uint16_t>(out[e / 2] >> (16 * (e % 2)));
      if (got != want_[code]) {
        ADD_FAILURE() << "int" << bits_ << " -> " << (kind_ == Fp16Kind::F16 ? "f16" : "bf16")
                      << ", coding " << static_cast<int>(coding_) << ": word 0x" << std::hex
                      << q << " element " << std::dec << e << " (code " << code
                      << ") decodes to bits 0x" << std::hex << got << " ("
                      << half::toDouble(kind_, got) << "), want 0x" << want_[code] << " ("
                      << half::toDouble(kind_, want_[code]) << ")";
        return false;
      }
    }
    return true;
  }

private:
  int bits_;
  Coding coding_;
  Fp16Kind kind_;
  uint16_t want_[16] = {};
};

TEST(DecodeModel, HostHalfConversions) {
  EXPECT_EQ(half::doubleToF16(1.0), 0x3C00);
  EXPECT_EQ(half::doubleToF16(-2.0), 0xC000);
  EXPECT_EQ(half::doubleToF16(65504.0), 0x7BFF);
  EXPECT_EQ(half::doubleToF16(65520.0), 0x7C00);       // rounds to inf
  EXPECT_EQ(half::doubleToF16(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(half::doubleToF16(1.0 + std::ldexp(1.0, -11)), 0x3C00); // tie -> even
  EXPECT_EQ(half::doubleToF16(1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02);
  EXPECT_EQ(half::doubleToF16(1024.0), 0x6400);
  EXPECT_EQ(half::doubleToBf16(1.0), 0x3F80);
  EXPECT_EQ(half::doubleToBf16(128.0), 0x4300);
  EXPECT_EQ(half::doubleToBf16(1.0 + std::ldexp(1.0, -8)), 0x3F80); // tie -> even
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    if ((h & 0x7C00) != 0x7C00) { // finite f16 round-trips
      ASSERT_EQ(half::doubleToF16(half::f16ToDouble(h)), h) << std::hex << h;
    }
    if ((h & 0x7F80) != 0x7F80) {
      ASSERT_EQ(half::doubleToBf16(half::bf16ToDouble(h)), h) << std::hex << h;
    }
  }
}

TEST(DecodeModel, Lop3LutArithmetic) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint32_t a = rng(), b = rng(), c = rng();
    ASSERT_EQ(lop3(a, b, c, kLutAndOr), (a & b) | c);
    ASSERT_EQ(lop3(a, b, c, kLutAndXor), (a & b) ^ c);
    ASSERT_EQ(lop3(a, b, c, 0xF0), a);
    ASSERT_EQ(lop3(a, b, c, 0xCC), b);
    ASSERT_EQ(lop3(a, b, c, 0xAA), c);
  }
  EXPECT_EQ(kLutAndOr, 0xEAu);
  EXPECT_EQ(kLutAndXor, 0x6Au);
}

// The two's-complement fold: ((q ^ X) & m) | M == (q & m) ^ (M | X) when M and
// m are disjoint and X lies inside m.
TEST(DecodeModel, SignFlipFoldsIntoLop3) {
  std::mt19937 rng(11);
  const uint32_t masks[] = {0x000F000Fu, 0x00F000F0u, 0x00030003u, 0x000C000Cu,
                            0x00300030u, 0x00C000C0u};
  for (uint32_t m : masks) {
    const uint32_t x = (m & 0x000F000Fu ? 0x88888888u : 0xAAAAAAAAu) & m;
    for (int i = 0; i < 1000; ++i) {
      const uint32_t q = rng();
      ASSERT_EQ(((q ^ (0x88888888u & m)) & m) | 0x64006400u,
                (q & m) ^ (0x64006400u | (0x88888888u & m)));
      ASSERT_EQ(((q ^ x) & m) | 0x43004300u, lop3(q, m, 0x43004300u | x, kLutAndXor));
    }
  }
}

TEST(DecodeModel, Int4ToF16) {
  const std::vector<uint32_t> words = testWords();
  for (Coding coding : kCodings) {
    const Expectation expect(4, coding, Fp16Kind::F16);
    for (uint32_t q : words)
      if (!expect.check(modelInt4F16(q, coding), q))
        return;
  }
}

TEST(DecodeModel, Int4ToBf16) {
  const std::vector<uint32_t> words = testWords();
  for (Coding coding : kCodings) {
    const Expectation expect(4, coding, Fp16Kind::BF16);
    for (uint32_t q : words)
      if (!expect.check(modelInt4Bf16(q, coding), q))
        return;
  }
}

TEST(DecodeModel, Int2ToF16) {
  const std::vector<uint32_t> words = testWords();
  for (Coding coding : kCodings) {
    const Expectation expect(2, coding, Fp16Kind::F16);
    for (uint32_t q : words)
      if (!expect.check(modelInt2F16(q, coding), q))
        return;
  }
}

TEST(DecodeModel, Int2ToBf16) {
  const std::vector<uint32_t> words = testWords();
  for (Coding coding : kCodings) {
    const Expectation expect(2, coding, Fp16Kind::BF16);
    for (uint32_t q : words)
      if (!expect.check(modelInt2Bf16(q, coding), q))
        return;
  }
}

// The interleave tables are the rotation the header comments describe.
TEST(DecodeModel, InterleaveIsARotationByOneBit) {
  for (int e = 0; e < 8; ++e)
    EXPECT_EQ(kInt4NibbleOfElement[e], (e >> 1) | ((e & 1) << 2));
  for (int e = 0; e < 16; ++e)
    EXPECT_EQ(kInt2FieldOfElement[e], (e >> 1) | ((e & 1) << 3));
}

} // namespace
} // namespace lowbit::testing
