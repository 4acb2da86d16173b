#include "core/formats/Scheme.h"

#include <gtest/gtest.h>

namespace lowbit::formats {
namespace {

QuantScheme scheme(const std::string &name) {
  Expected<QuantScheme> found = findScheme(name);
  EXPECT_TRUE(found.ok()) << name;
  return found.ok() ? *found : QuantScheme{};
}

void expectError(const Status &status, const std::string &fragment) {
  ASSERT_FALSE(status.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(status.error().find(fragment), std::string::npos) << status.error();
}

TEST(Scheme, BitsPerWeightIncludesMetadata) {
  // Hand-computed: element bits + metadata bits / weights sharing them.
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("w4-g128")), 4 + 16.0 / 128);          // 4.125
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("w4-g32")), 4 + 16.0 / 32);            // 4.5
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("w4-g128-asym")), 4 + 20.0 / 128);     // 4.15625
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("gguf-q4_0")), 18 * 8 / 32.0);         // 4.5
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("gguf-q8_0")), 34 * 8 / 32.0);         // 8.5
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("gguf-q4_k")), 144 * 8 / 256.0);       // 4.5
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("gguf-q6_k")), 210 * 8 / 256.0);       // 6.5625
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("mxfp4")), 4 + 8.0 / 32);              // 4.25
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("mxfp8-e4m3")), 8 + 8.0 / 32);         // 8.25
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("nvfp4")), 4 + 8.0 / 16);              // 4.5
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("nf4-g64")), 4 + 32.0 / 64);           // 4.5
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("ternary-tensor")), 2.0);
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("w8-channel")), 8 + 16.0 / 4096);
  // Exact for a shape: NVFP4's f32 tensor scale and act-order's g_idx count.
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("nvfp4"), 64, 256), 4.5 + 32.0 / (64 * 256));
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("gptq-w4-g128-actorder"), 4096, 4096),
                   4 + 20.0 / 128 + 32.0 / 4096);
  EXPECT_DOUBLE_EQ(bitsPerWeight(scheme("w8-channel"), 10, 100), 8 + 16.0 / 100);
}

TEST(Scheme, EveryBuiltinValidates) {
  for (const QuantScheme &s : builtinSchemes()) {
    Status status = validateScheme(s, 64, 4096);
    EXPECT_TRUE(status.ok()) << s.name << ": " << status.error();
  }
  EXPECT_TRUE(isMxScheme(scheme("mxfp4")));
  EXPECT_FALSE(isMxScheme(scheme("nvfp4")));
  EXPECT_FALSE(findScheme("w5-g7").ok());
}

TEST(Scheme, GroupMustDivideK) {
  QuantScheme s = scheme("w4-g128");
  s.groupSize = 48;
  expectError(validateScheme(s, 16, 4096), "group size 48 does not divide K = 4096");
  for (int g : {16, 32, 64, 128, 256})
    EXPECT_TRUE(validateScheme(*makeGroupScheme(DataFormat::signedInt(4), g, DataFormat::f16()),
                               16, 4096)
                    .ok());
  expectError(validateScheme(scheme("gguf-q4_k"), 4, 4096 + 32),
              "super-block size 256 does not divide K = 4128");
}

// e8m0 scales are MX block scales: group 32 and no zero point, for any
// element; only MX elements are MX schemes (and get the MX quantizer).
TEST(Scheme, E8m0ScalesOnlyInMxBlocks) {
  QuantScheme s = scheme("w4-g128");
  s.scaleFormat = DataFormat::e8m0();
  expectError(validateScheme(s), "e8m0 scales are MX block scales");
  expectError(validateScheme(s), "group size 128");
  s.groupSize = 32;
  EXPECT_TRUE(validateScheme(s).ok()) << "int4 with e8m0 scales per 32";
  EXPECT_FALSE(isMxScheme(s)) << "int4 is not an MX element";
  QuantScheme asymmetric = *makeAsymmetricGroupScheme(DataFormat::unsignedInt(4), 32,
                                                      DataFormat::f16(), DataFormat::unsignedInt(4));
  asymmetric.scaleFormat = DataFormat::e8m0();
  expectError(validateScheme(asymmetric), "zero mode (q - z)·s");
  EXPECT_FALSE(makeMxScheme(DataFormat::signedInt(4)).ok());
  EXPECT_TRUE(makeMxScheme(DataFormat::e3m2()).ok());
}

TEST(Scheme, InvalidCombinationsNameTheProblem) {
  QuantScheme tensor = scheme("w4-g128");
  tensor.tensorScale = true;
  expectError(validateScheme(tensor), "needs e4m3 block scales; got f16");

  QuantScheme floatZero = scheme("mxfp4");
  floatZero.scaleFormat = DataFormat::f16();
  floatZero.zeroMode = ZeroMode::SubtractCode;
  floatZero.zeroFormat = DataFormat::unsignedInt(4);
  expectError(validateScheme(floatZero), "needs an integer element format; e2m1 is a minifloat");

  QuantScheme intScale = scheme("w4-g128");
  intScale.scaleFormat = DataFormat::unsignedInt(6);
  expectError(validateScheme(intScale), "integer scales need a super-block");

  QuantScheme badSuper = scheme("gguf-q4_k");
  badSuper.superBlock->size = 100;
  expectError(validateScheme(badSuper), "super-block size 100 is not a multiple of group size 32");

  QuantScheme actChannel = scheme("w8-channel");
  actChannel.actOrder = true;
  expectError(validateScheme(actChannel), "act-order (g_idx) needs per-group scales");

  QuantScheme strayZero = scheme("w4-g128");
  strayZero.zeroFormat = DataFormat::unsignedInt(4);
  expectError(validateScheme(strayZero), "given but the zero mode is none");

  QuantScheme missingZero = scheme("w4-g128-asym");
  missingZero.zeroFormat.reset();
  expectError(validateScheme(missingZero), "needs a zero format");

  QuantScheme lutZero = scheme("nf4-g64");
  lutZero.zeroMode = ZeroMode::SubtractScaled;
  lutZero.zeroFormat = DataFormat::f16();
  expectError(validateScheme(lutZero), "nf4 is a lookup table");

  QuantScheme zeroGroup = scheme("w4-g128");
  zeroGroup.groupSize = 0;
  expectError(validateScheme(zeroGroup), "group size 0 must be positive");
}

TEST(Scheme, Describe) {
  EXPECT_EQ(describeScheme(scheme("w4-g128")), "int4 g128, f16 scales");
  EXPECT_EQ(describeScheme(scheme("gguf-q4_k")),
            "uint4 g32 in 256-blocks, uint6 scales x f16, zero q·s - z uint6 x f16");
  EXPECT_EQ(describeScheme(scheme("nvfp4")), "e2m1 g16, e4m3fn scales x f32 tensor scale");
}

} // namespace
} // namespace lowbit::formats
