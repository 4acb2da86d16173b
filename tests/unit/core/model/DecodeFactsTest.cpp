// The minifloat bit moves and the table bits the decode pass emits, and the
// rules' question whether a code decodes to an activation type.
#include "core/DecodeFacts.h"

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {

// The s8 byte is the code's value moved to a byte's top and centred: int4
// and Q4_0's offset −8 need no Σx term, plain unsigned codes one of 2^(b−1),
// ternary (uint2 with offset −1) one of 1.
TEST(DecodeFacts, S8DecodeShiftsToTheByteTopAndCentres) {
  struct Row {
    const char *format;
    int shift, centre;
  } rows[] = {{"int8", 0, 0},         {"uint8", 0, 128},
              {"int4", 4, 0},         {"uint4", 4, 8},
              {"int<4,unsigned,-8>", 4, 0}, {"int<8,unsigned,-128>", 0, 0},
              {"int2", 6, 0},         {"uint2", 6, 2},
              {"ternary", 6, 1},      {"uint1", 7, 1}};
  for (const Row &row : rows) {
    Expected<S8Decode> d = s8Decode(*formats::parseFormat(row.format));
    ASSERT_TRUE(d.ok()) << row.format << ": " << d.error();
    EXPECT_EQ(d->shift, row.shift) << row.format;
    EXPECT_EQ(d->centre, row.centre) << row.format;
  }
  for (const char *format : {"e4m3fn", "nf4", "uint6", "int3"})
    EXPECT_FALSE(s8Decode(*formats::parseFormat(format)).ok()) << format;
}

TEST(DecodeFacts, MinifloatMovesFollowFromTheFields) {
  struct Row {
    formats::DataFormat code;
    Activation activation;
    int shift;
    uint32_t mask;
    int exponent;
  };
  // f16's mantissa has 10 bits, bf16's 7; the magnitude's top lands there.
  for (const Row &row : {Row{formats::DataFormat::e2m1(), Activation::F16, 3, 0x0E00, 14},
                         Row{formats::DataFormat::e2m1(), Activation::BF16, 6, 0x01C0, 126},
                         Row{formats::DataFormat::e4m3fn(), Activation::F16, 1, 0x3F80, 8},
                         Row{formats::DataFormat::e4m3fn(), Activation::BF16, 4, 0x07F0, 120},
                         Row{formats::DataFormat::e5m2(), Activation::F16, 0, 0x7F00, 0},
                         Row{formats::DataFormat::e5m2(), Activation::BF16, 3, 0x0FE0, 112}}) {
    Expected<MinifloatDecode> d = minifloatDecode(row.code, row.activation);
    ASSERT_TRUE(d.ok()) << row.code.name() << ": " << d.error();
    EXPECT_EQ(d->codeBits, row.code.bits());
    EXPECT_TRUE(d->hasSign);
    EXPECT_EQ(d->magnitudeShift, row.shift) << row.code.name();
    EXPECT_EQ(d->magnitudeMask, row.mask) << row.code.name();
    EXPECT_EQ(d->scaleExponent, row.exponent) << row.code.name();
  }
}

TEST(DecodeFacts, FormatsTheWideTypeCannotHoldSayWhy) {
  struct Row {
    const char *format;
    Activation activation;
    const char *reason;
  };
  for (const Row &row : {Row{"e8m0", Activation::F16, "without subnormals"},
                         Row{"float<6,1,31>", Activation::F16, "do not fit"},
                         Row{"float<5,2,-5>", Activation::F16, "2^20 is not an f16"},
                         Row{"float<5,2,30>", Activation::F16, "code 1 (4.65661e-10) is not exact in f16"},
                         Row{"float<5,2,10>", Activation::F16, "not exact in f16"},
                         Row{"float<3,3,3>", Activation::BF16, "straddle"}}) {
    Expected<formats::DataFormat> code = formats::parseFormat(row.format);
    ASSERT_TRUE(code.ok()) << row.format << ": " << code.error();
    Status s = checkDecodable(*code, row.activation);
    ASSERT_FALSE(s.ok()) << row.format;
    EXPECT_NE(s.error().find(row.reason), std::string::npos) << row.format << ": " << s.error();
  }
  EXPECT_TRUE(checkDecodable(formats::DataFormat::e4m3fn(), Activation::BF16).ok());
  EXPECT_TRUE(checkDecodable(formats::DataFormat::e3m2(), Activation::BF16).ok());
  EXPECT_TRUE(checkDecodable(formats::DataFormat::e2m3(), Activation::F16).ok());
  EXPECT_TRUE(checkDecodable(formats::DataFormat::nf4(), Activation::F16).ok());
}

TEST(DecodeFacts, TablesAreTheirEntriesRoundedToTheActivation) {
  Expected<std::vector<uint16_t>> f16 = lookupTableBits(formats::DataFormat::fp4Lut(), Activation::F16);
  ASSERT_TRUE(f16.ok()) << f16.error();
  ASSERT_EQ(f16->size(), 16u);
  EXPECT_EQ((*f16)[1], 0x3800); // 0.5
  EXPECT_EQ((*f16)[15], 0xC600); // -6
  Expected<formats::DataFormat> huge = formats::DataFormat::lut(
      4, {1e6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "");
  ASSERT_TRUE(huge.ok());
  Expected<std::vector<uint16_t>> tooBig = lookupTableBits(*huge, Activation::F16);
  ASSERT_FALSE(tooBig.ok());
  EXPECT_NE(tooBig.error().find("not a finite f16"), std::string::npos) << tooBig.error();
  EXPECT_TRUE(lookupTableBits(*huge, Activation::BF16).ok());
}

// Raw decodes: unsigned integers and minifloats to f16, with the factor
// their kernels fold into the scales.
TEST(DecodeFacts, RawDecodesAndTheirScaleFactors) {
  EXPECT_TRUE(decodesRaw(formats::DataFormat::unsignedInt(4), Activation::F16));
  EXPECT_FALSE(decodesRaw(formats::DataFormat::signedInt(4), Activation::F16));
  EXPECT_FALSE(decodesRaw(formats::DataFormat::ternary(), Activation::F16));
  EXPECT_TRUE(decodesRaw(formats::DataFormat::e2m1(), Activation::F16));
  EXPECT_FALSE(decodesRaw(formats::DataFormat::e2m1(), Activation::BF16));
  EXPECT_FALSE(decodesRaw(formats::DataFormat::nf4(), Activation::F16));
  EXPECT_FALSE(decodesRaw(formats::DataFormat::e8m0(), Activation::F16));
  EXPECT_EQ(rawScaleExponent(formats::DataFormat::e2m1(), 3), 14);
  EXPECT_EQ(rawScaleExponent(formats::DataFormat::e4m3fn(), 0), 8);
  EXPECT_EQ(rawScaleExponent(formats::DataFormat::unsignedInt(4), 0), 24);
  EXPECT_EQ(rawScaleExponent(formats::DataFormat::unsignedInt(4), 1), 20);
}

TEST(DecodeFacts, NanAndInfCodesAreNoWeights) {
  EXPECT_FALSE(isWeightCode(formats::DataFormat::e4m3fn(), 0x7F));
  EXPECT_FALSE(isWeightCode(formats::DataFormat::e4m3fn(), 0xFF));
  EXPECT_TRUE(isWeightCode(formats::DataFormat::e4m3fn(), 0x7E));
  EXPECT_FALSE(isWeightCode(formats::DataFormat::e5m2(), 0x7C)); // +Inf
  EXPECT_FALSE(isWeightCode(formats::DataFormat::e5m2(), 0xFE)); // NaN
  EXPECT_TRUE(isWeightCode(formats::DataFormat::e5m2(), 0x7B));
  EXPECT_FALSE(isWeightCode(formats::DataFormat::ternary(), 3));
  EXPECT_FALSE(isWeightCode(formats::DataFormat::e2m1(), 16));
}

} // namespace
} // namespace lowbit::core
