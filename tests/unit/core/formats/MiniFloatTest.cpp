// Minifloat decode and encode against independent statements of each format:
// literal value tables transcribed from the OCP MX v1.0 spec (section 5.3),
// the compiler's own f16, and bit-level definitions written out per format.
#include "FormatTestUtil.h"
#include "core/formats/DataFormat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace lowbit::formats {
namespace {

// Positive halves (codes 0 .. 2^(bits-1) - 1) from the OCP MX spec tables.
const double kE2m1Positive[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
const double kE2m3Positive[32] = {0,     0.125, 0.25, 0.375, 0.5,  0.625, 0.75, 0.875,
                                  1,     1.125, 1.25, 1.375, 1.5,  1.625, 1.75, 1.875,
                                  2,     2.25,  2.5,  2.75,  3,    3.25,  3.5,  3.75,
                                  4,     4.5,   5,    5.5,   6,    6.5,   7,    7.5};
const double kE3m2Positive[32] = {0,   0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.4375,
                                  0.5, 0.625,  0.75,  0.875,  1,    1.25,   1.5,   1.75,
                                  2,   2.5,    3,     3.5,    4,    5,      6,     7,
                                  8,   10,     12,    14,     16,   20,     24,    28};

void expectSignedTable(const DataFormat &format, const double *positive, int half) {
  ASSERT_EQ(format.codeCount(), uint32_t(2 * half));
  for (int code = 0; code < 2 * half; ++code) {
    double expected = code < half ? positive[code] : -positive[code - half];
    double actual = format.decode(uint32_t(code));
    EXPECT_EQ(actual, expected) << format.name() << " code " << code;
    EXPECT_EQ(std::signbit(actual), code >= half) << format.name() << " code " << code;
  }
}

TEST(MiniFloat, E2m1MatchesOcpTable) { expectSignedTable(DataFormat::e2m1(), kE2m1Positive, 8); }
TEST(MiniFloat, E2m3MatchesOcpTable) { expectSignedTable(DataFormat::e2m3(), kE2m3Positive, 32); }
TEST(MiniFloat, E3m2MatchesOcpTable) { expectSignedTable(DataFormat::e3m2(), kE3m2Positive, 32); }

TEST(MiniFloat, E4m3fnEveryCode) {
  // OCP E4M3: S.EEEE.MMM, bias 7, subnormals at E = 0, no Inf, NaN only at
  // S.1111.111; max normal 448.
  DataFormat format = DataFormat::e4m3fn();
  for (uint32_t code = 0; code < 256; ++code) {
    int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
    double actual = format.decode(code);
    if (e == 15 && m == 7) {
      EXPECT_TRUE(std::isnan(actual)) << code;
      EXPECT_TRUE(format.isNanCode(code));
      continue;
    }
    double magnitude = e == 0 ? m / 8.0 * std::pow(2.0, -6) : (1 + m / 8.0) * std::pow(2.0, e - 7);
    EXPECT_EQ(actual, s ? -magnitude : magnitude) << code;
  }
  EXPECT_EQ(format.decode(0x7E), 448.0);
  EXPECT_EQ(format.decode(0x08), 1.0 / 64);  // min normal 2^-6
  EXPECT_EQ(format.decode(0x01), 1.0 / 512); // min subnormal 2^-9
  EXPECT_EQ(format.maxFinite(), 448.0);
}

TEST(MiniFloat, E5m2IsTheTopByteOfF16) {
  // OCP E5M2 has f16's exponent and bias and IEEE Inf/NaN, so code c is the
  // f16 with bits c << 8.
  DataFormat format = DataFormat::e5m2();
  for (uint32_t code = 0; code < 256; ++code) {
    double expected = test::halfBitsToDouble(uint16_t(code << 8));
    double actual = format.decode(code);
    if (std::isnan(expected))
      EXPECT_TRUE(std::isnan(actual)) << code;
    else
      EXPECT_EQ(actual, expected) << code;
  }
  EXPECT_EQ(format.decode(0x7B), 57344.0);
  EXPECT_EQ(format.decode(0x7C), INFINITY);
  EXPECT_TRUE(std::isnan(format.decode(0x7D)));
}

TEST(MiniFloat, E8m0EveryCode) {
  // OCP E8M0: unsigned, value 2^(code - 127), 0xFF is NaN, no zero.
  DataFormat format = DataFormat::e8m0();
  for (uint32_t code = 0; code < 255; ++code)
    EXPECT_EQ(format.decode(code), std::ldexp(1.0, int(code) - 127)) << code;
  EXPECT_TRUE(std::isnan(format.decode(0xFF)));
  EXPECT_FALSE(format.isSigned());
  EXPECT_EQ(*format.encode(1.0), 127u);
  EXPECT_EQ(*format.encode(0.25), 125u);
  Expected<uint32_t> zero = format.encode(0.0);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("zero is not representable in e8m0"), std::string::npos);
  Expected<uint32_t> negative = format.encode(-2.0);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().find("negative value"), std::string::npos);
  EXPECT_EQ(*format.encode(NAN), 0xFFu);
}

TEST(MiniFloat, F16EveryCodeMatchesCompiler) {
  DataFormat format = DataFormat::f16();
  for (uint32_t code = 0; code < 65536; ++code) {
    double expected = test::halfBitsToDouble(uint16_t(code));
    double actual = format.decode(code);
    if (std::isnan(expected))
      ASSERT_TRUE(std::isnan(actual)) << code;
    else
      ASSERT_EQ(actual, expected) << code;
  }
}

TEST(MiniFloat, Bf16EveryCodeMatchesF32TopHalf) {
  DataFormat format = DataFormat::bf16();
  for (uint32_t code = 0; code < 65536; ++code) {
    double expected = test::bf16BitsToDouble(uint16_t(code));
    double actual = format.decode(code);
    if (std::isnan(expected))
      ASSERT_TRUE(std::isnan(actual)) << code;
    else
      ASSERT_EQ(actual, expected) << code;
  }
}

TEST(MiniFloat, F16EncodeMatchesCompilerRounding) {
  DataFormat format = DataFormat::f16();
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 14);
  for (int i = 0; i < 200000; ++i) {
    double value = std::ldexp(mantissa(rng), exponent(rng));
    uint16_t expected = test::doubleToHalfBits(value);
    Expected<uint32_t> code = format.encode(value);
    ASSERT_TRUE(code.ok()) << value << ": " << code.error();
    ASSERT_EQ(*code, expected) << value;
  }
  // Exact ties: halfway between 1 and 1 + 2^-10 goes to the even 1.
  EXPECT_EQ(*format.encode(1.0 + std::ldexp(1.0, -11)), 0x3C00u);
  EXPECT_EQ(*format.encode(1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02u);
  EXPECT_EQ(*format.encode(INFINITY), 0x7C00u);
  EXPECT_FALSE(format.encode(65520.0).ok()); // rounds past 65504
  EXPECT_EQ(*format.encode(65519.0), 0x7BFFu);
}

TEST(MiniFloat, E2m1RoundsToNearestEvenAndNeverClampsSilently) {
  DataFormat format = DataFormat::e2m1();
  struct Case {
    double value;
    double expected;
  } cases[] = {{0.25, 0}, {0.75, 1}, {1.25, 1}, {1.75, 2}, {2.5, 2},  {3.5, 4},
               {5, 4},    {5.5, 6}, {6.5, 6},  {-2.5, -2}, {-5, -4}, {0.26, 0.5}};
  for (const Case &c : cases) {
    Expected<uint32_t> code = format.encode(c.value);
    ASSERT_TRUE(code.ok()) << c.value;
    EXPECT_EQ(format.decode(*code), c.expected) << c.value;
  }
  Expected<uint32_t> overflow = format.encode(7.0); // ties to 8, beyond 6
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.error().find("overflows e2m1"), std::string::npos) << overflow.error();
  EXPECT_EQ(*format.encode(7.0, Rounding::NearestEven, OnOverflow::Saturate), 0x7u);
  EXPECT_EQ(*format.encode(-100.0, Rounding::NearestEven, OnOverflow::Saturate), 0xFu);
  Expected<uint32_t> nan = format.encode(NAN);
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.error().find("NaN is not representable in e2m1"), std::string::npos);
}

TEST(MiniFloat, E4m3fnOverflowFollowsOcp) {
  DataFormat format = DataFormat::e4m3fn();
  EXPECT_EQ(*format.encode(464.0), 0x7Eu); // tie between 448 and (virtual) 480: even
  EXPECT_FALSE(format.encode(465.0).ok());
  EXPECT_EQ(*format.encode(465.0, Rounding::NearestEven, OnOverflow::Saturate), 0x7Eu);
  EXPECT_EQ(*format.encode(-1e9, Rounding::NearestEven, OnOverflow::Saturate), 0xFEu);
  EXPECT_FALSE(format.encode(INFINITY).ok());
  EXPECT_EQ(*format.encode(NAN), 0x7Fu);
  EXPECT_EQ(*format.encode(std::ldexp(1.0, -10)), 0x00u); // half the min subnormal: even 0
  EXPECT_EQ(*format.encode(std::ldexp(3.0, -10)), 0x02u); // 1.5 min subnormals: tie to 2
  EXPECT_EQ(*format.encode(std::ldexp(3.0, -11)), 0x01u); // 0.75 min subnormals
}

TEST(MiniFloat, TowardPositiveRoundsUp) {
  DataFormat format = DataFormat::f16();
  EXPECT_EQ(format.decode(*format.encode(1.0 + 1e-6, Rounding::TowardPositive)),
            1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(format.decode(*format.encode(1.0, Rounding::TowardPositive)), 1.0);
  EXPECT_EQ(format.decode(*format.encode(1e-12, Rounding::TowardPositive)), std::ldexp(1.0, -24));
  EXPECT_EQ(DataFormat::e8m0().decode(*DataFormat::e8m0().encode(3.0, Rounding::TowardPositive)),
            4.0);
}

TEST(MiniFloat, EncodeInvertsDecodeForEveryFiniteCode) {
  for (const DataFormat &format : builtinElementFormats()) {
    if (format.kind() != DataFormat::Kind::Float)
      continue;
    for (uint32_t code = 0; code < format.codeCount(); ++code) {
      if (format.isNanCode(code))
        continue;
      Expected<uint32_t> again = format.encode(format.decode(code));
      ASSERT_TRUE(again.ok()) << format.name() << " " << code;
      EXPECT_EQ(*again, code) << format.name();
    }
  }
}

TEST(MiniFloat, GenericParametersDecodeWithoutSpecialCases) {
  // float<3,1,2,finite>: an arbitrary format nobody named. Subnormal at E=0
  // with exponent 1 - bias = -1; largest 1.5 * 2^(7-2) = 48.
  Expected<DataFormat> format = DataFormat::minifloat(3, 1, 2, kFloatFinite);
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(format->bits(), 5);
  EXPECT_EQ(format->decode(0b00001), 0.25);
  EXPECT_EQ(format->decode(0b00010), 0.5);
  EXPECT_EQ(format->decode(0b00011), 0.75);
  EXPECT_EQ(format->decode(0b01111), 48.0);
  EXPECT_EQ(format->decode(0b11111), -48.0);
  EXPECT_EQ(format->spelling(), "float<3,1,2,finite>");
}

TEST(MiniFloat, InvalidParametersAreRejected) {
  Expected<DataFormat> noExponent = DataFormat::minifloat(0, 3, 1, kFloatFinite);
  ASSERT_FALSE(noExponent.ok());
  EXPECT_NE(noExponent.error().find("exponent bits must be 1..8; got 0"), std::string::npos);
  Expected<DataFormat> both = DataFormat::minifloat(4, 3, 7, kFloatIeee | kFloatNanAllOnes);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().find("mutually exclusive"), std::string::npos);
  Expected<DataFormat> wide = DataFormat::minifloat(8, 24, 127, kFloatIeee);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().find("mantissa bits must be 0..23; got 24"), std::string::npos);
}

} // namespace
} // namespace lowbit::formats
