#include "core/Problem.h"

#include <gtest/gtest.h>

#include <limits>

namespace lowbit::core {
namespace {

using formats::DataFormat;
using formats::Granularity;
using formats::ZeroMode;

Problem w4g128() {
  Problem p;
  p.n = 4096, p.k = 4096;
  return p;
}

TEST(Problem, SignatureIsTheEarlierDatabasesOne) {
  // The string whose sha256 earlier databases use as the problem id.
  EXPECT_EQ(signature(w4g128()), "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;"
                                 "scale=f16;granularity=group;group=128;zero=none");
  Problem channel = w4g128();
  channel.scheme.granularity = Granularity::PerChannel;
  channel.scheme.groupSize = 0;
  channel.scheme.zero = ZeroMode::SubtractCode;
  channel.activation = Activation::BF16;
  EXPECT_EQ(signature(channel), "lowbit.qmatmul.v1;n=4096;k=4096;act=bf16;weight=uint4;"
                                "scale=f16;granularity=channel;group=0;zero=sub_code");
}

TEST(Problem, EveryIntegerWidthRoundTrips) {
  for (const char *code : {"uint1", "uint2", "uint4", "uint8", "int2", "int4", "int8", "ternary"}) {
    Problem p = w4g128();
    p.code = *formats::parseFormat(code);
    p.scheme.zero = ZeroMode::SubtractScaled;
    p.scheme.scale = DataFormat::bf16();
    Expected<Problem> back = parseSignature(signature(p));
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_TRUE(back->sameAs(p)) << signature(p);
    EXPECT_EQ(back->codeBits(), p.code.bits());
  }
}

TEST(Problem, QuantizedZerosAndActOrderRoundTrip) {
  Problem p = w4g128();
  p.scheme.zero = ZeroMode::SubtractCode;
  p.scheme.zeroCodes = DataFormat::unsignedInt(4);
  p.scheme.actOrder = true;
  std::string text = signature(p);
  EXPECT_NE(text.find(";zero=quantized;zero_codes=uint4;act_order=1"), std::string::npos) << text;
  Expected<Problem> back = parseSignature(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(back->sameAs(p));
}

TEST(Problem, NonCanonicalSignaturesAreRejected) {
  std::string good = signature(w4g128());
  for (std::string bad : {
           std::string("lowbit.qmatmul.v2;") + good.substr(18),
           good + ";",
           good + ";colour=red",
           good.substr(0, good.find(";zero")),
           // group given for a per-channel problem
           std::string("lowbit.qmatmul.v1;n=1;k=128;act=f16;weight=uint4;scale=f16;"
                       "granularity=channel;group=128;zero=none"),
           // leading zero: not the canonical print
           std::string("lowbit.qmatmul.v1;n=04096;k=4096;act=f16;weight=uint4;scale=f16;"
                       "granularity=group;group=128;zero=none"),
           std::string("lowbit.qmatmul.v1;n=4096;k=4096;act=f32;weight=uint4;scale=f16;"
                       "granularity=group;group=128;zero=none"),
           std::string("lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=f16;"
                       "granularity=group;group=100;zero=none"),
       })
    EXPECT_FALSE(parseSignature(bad).ok()) << bad;
}

TEST(Problem, ValidateNamesTheField) {
  Problem p = w4g128();
  p.scheme.groupSize = 96;
  Status s = validate(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("group size 96"), std::string::npos) << s.error();
  p = w4g128();
  p.scheme.zeroCodes = DataFormat::unsignedInt(4);
  EXPECT_FALSE(validate(p).ok()) << "zero codes without zero mode quantized";
  p = w4g128();
  p.scheme.scale = DataFormat::e5m2();
  EXPECT_FALSE(validate(p).ok()) << "e5m2 is no scale dtype";
}

Problem w4s8() {
  Problem p = w4g128();
  p.activation = Activation::S8;
  p.activationScale = ActivationScale::PerToken;
  p.output = Output::BF16;
  return p;
}

TEST(Problem, ActivationFieldsHaveOneParseAndOnePrint) {
  for (Activation a : {Activation::F16, Activation::BF16, Activation::S8, Activation::E4M3})
    EXPECT_EQ(*parseActivation(activationName(a)), a);
  for (ActivationScale s :
       {ActivationScale::None, ActivationScale::PerToken, ActivationScale::PerTensor})
    EXPECT_EQ(*parseActivationScale(activationScaleSpelling(s)), s);
  for (Output o : {Output::F16, Output::BF16, Output::F32})
    EXPECT_EQ(*parseOutput(outputName(o)), o);
  EXPECT_FALSE(parseActivation("int8").ok());
  EXPECT_FALSE(parseActivationScale("row").ok());
  EXPECT_FALSE(parseOutput("s32").ok());
  EXPECT_EQ(activationBytes(Activation::S8), 1);
  EXPECT_EQ(activationBytes(Activation::BF16), 2);
}

// Quantized activations add two fields at the signature's end; f16 and bf16
// problems keep their ids (SignatureIsTheEarlierDatabasesOne).
TEST(Problem, QuantizedActivationsRoundTrip) {
  Problem p = w4s8();
  std::string text = signature(p);
  EXPECT_EQ(text, "lowbit.qmatmul.v1;n=4096;k=4096;act=s8;weight=uint4;scale=f16;"
                  "granularity=group;group=128;zero=none;act_scale=token;out=bf16");
  Expected<Problem> back = parseSignature(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(back->sameAs(p));
  EXPECT_EQ(outputType(*back), Output::BF16);
  p.activation = Activation::E4M3;
  p.activationScale = ActivationScale::PerTensor;
  p.output = Output::F32;
  p.scheme.actOrder = true;
  back = parseSignature(signature(p));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(back->sameAs(p)) << signature(p);
  // Out of order, repeated, or "none" spelled out: not canonical.
  for (std::string bad :
       {signature(w4g128()) + ";act_scale=none",
        signature(w4g128()) + ";out=f32;act_scale=token",
        signature(w4s8()) + ";out=f16"})
    EXPECT_FALSE(parseSignature(bad).ok()) << bad;
}

TEST(Problem, QuantizedActivationsNeedTheirScaleAndOutputAndOnlyThey) {
  Problem p = w4s8();
  EXPECT_TRUE(validate(p).ok());
  p.activationScale = ActivationScale::None;
  Status s = validate(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("s8 activations need an activation scale"), std::string::npos)
      << s.error();
  p = w4s8();
  p.output.reset();
  s = validate(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("need an output type"), std::string::npos) << s.error();
  p = w4g128();
  p.activationScale = ActivationScale::PerToken;
  EXPECT_FALSE(validate(p).ok()) << "f16 activations have no scale";
  p = w4g128();
  p.output = Output::F32;
  s = validate(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("write y in f16"), std::string::npos) << s.error();
}

// setOutput is the canonical form: naming f16's own type is no output at all,
// so the two spellings are one problem with one id.
TEST(Problem, NamingTheActivationsOwnOutputIsNoOutput) {
  Problem p = w4g128();
  setOutput(p, Output::F16);
  EXPECT_FALSE(p.output.has_value());
  EXPECT_EQ(outputType(p), Output::F16);
  EXPECT_EQ(signature(p), signature(w4g128()));
  p.activation = Activation::BF16;
  setOutput(p, Output::BF16);
  EXPECT_FALSE(p.output.has_value());
  EXPECT_EQ(outputType(p), Output::BF16);
  p = w4s8();
  setOutput(p, Output::F16);
  ASSERT_TRUE(p.output.has_value());
  EXPECT_EQ(*p.output, Output::F16);
}

TEST(Problem, QuantSchemeMatchesTheFormatsLibrary) {
  Problem p = w4g128();
  p.code = DataFormat::unsignedInt(2);
  p.scheme.zero = ZeroMode::SubtractCode;
  Expected<formats::QuantScheme> q = quantScheme(p);
  ASSERT_TRUE(q.ok()) << q.error();
  EXPECT_EQ(q->element, p.code);
  EXPECT_EQ(q->groupSize, 128);
  ASSERT_TRUE(q->zeroFormat.has_value());
  EXPECT_EQ(*q->zeroFormat, DataFormat::f16());
  EXPECT_EQ(scaleCount(p), 4096 * 32);
  EXPECT_EQ(scaleElementBytes(p), 2);
  EXPECT_EQ(zeroElementBytes(p), 2);
}

// kernelScheme inverts quantScheme where a kernel can read the scheme.
TEST(Problem, KernelSchemeInvertsQuantScheme) {
  for (ZeroMode zero : {ZeroMode::None, ZeroMode::SubtractCode, ZeroMode::SubtractScaled}) {
    Problem p = w4g128();
    p.scheme.zero = zero;
    Expected<formats::QuantScheme> q = quantScheme(p);
    ASSERT_TRUE(q.ok()) << q.error();
    Expected<Scheme> back = kernelScheme(*q);
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(*back, p.scheme);
  }
  Expected<formats::QuantScheme> awq = formats::findScheme("awq-w4-g128");
  ASSERT_TRUE(awq.ok());
  Expected<Scheme> quantized = kernelScheme(*awq);
  ASSERT_TRUE(quantized.ok()) << quantized.error();
  EXPECT_EQ(quantized->zeroCodes, DataFormat::unsignedInt(4));
  // Narrower plain zero codes are the uint4 (or uint8) codes of the same
  // values; offset codes (GPTQ v1's z - 1) are not, and validate() says so.
  for (auto [name, codes] : {std::pair{"w2-g64-asym", DataFormat::unsignedInt(4)},
                             std::pair{"w3-g128-asym", DataFormat::unsignedInt(4)}}) {
    Expected<formats::QuantScheme> narrow = formats::findScheme(name);
    ASSERT_TRUE(narrow.ok()) << name;
    Expected<Scheme> widened = kernelScheme(*narrow);
    ASSERT_TRUE(widened.ok()) << widened.error();
    EXPECT_EQ(widened->zeroCodes, codes) << name;
    narrow->zeroFormat = DataFormat::unsignedInt(6);
    EXPECT_EQ(kernelScheme(*narrow)->zeroCodes, DataFormat::unsignedInt(8)) << name;
  }
  Expected<formats::QuantScheme> gptq = formats::findScheme("gptq-w4-g128");
  ASSERT_TRUE(gptq.ok());
  EXPECT_EQ(kernelScheme(*gptq)->zeroCodes, DataFormat::unsignedInt(4, 1));
  // Two-level scales map too (SuperBlockTest); a sub-scale no byte holds
  // does not.
  Expected<formats::QuantScheme> superBlocks = formats::findScheme("gguf-q4_k");
  ASSERT_TRUE(superBlocks.ok());
  superBlocks->scaleFormat = DataFormat::unsignedInt(8);
  EXPECT_TRUE(kernelScheme(*superBlocks).ok());
  // Narrower integers become the byte codes of the same values: Q3_K's
  // excess-32 6-bit sub-scales are int8 codes.
  superBlocks->scaleFormat = DataFormat::unsignedInt(6, -32);
  Expected<Scheme> excess = kernelScheme(*superBlocks);
  ASSERT_TRUE(excess.ok()) << excess.error();
  EXPECT_EQ(excess->scale, DataFormat::int8());
  superBlocks->scaleFormat = DataFormat::unsignedInt(8, -64); // -64..191: no byte
  EXPECT_FALSE(kernelScheme(*superBlocks).ok());
}

// Zero codes as kernels read them: the scales' order, uint4 two a byte (even
// index low, an odd count padded with a zero nibble), uint8 one a byte.
TEST(Problem, ZeroCodesPackDenselyInTheScalesOrder) {
  Problem p = w4g128();
  p.n = 3, p.k = 256;
  p.scheme.granularity = Granularity::PerChannel;
  p.scheme.groupSize = 0;
  p.scheme.zero = ZeroMode::SubtractCode;
  p.scheme.zeroCodes = DataFormat::unsignedInt(4);
  ASSERT_TRUE(validate(p).ok());
  EXPECT_EQ(zeroBytes(p), 2);
  EXPECT_EQ(zeroElementBytes(p), 1);
  const uint8_t codes[] = {0x1, 0xA, 0xF};
  uint8_t packed[2] = {0xEE, 0xEE};
  ASSERT_TRUE(packZeroCodes(p, codes, 3, packed, 2).ok());
  EXPECT_EQ(packed[0], 0xA1);
  EXPECT_EQ(packed[1], 0x0F);

  const uint8_t wide[] = {0x1, 0x10, 0x2};
  Status tooWide = packZeroCodes(p, wide, 3, packed, 2);
  ASSERT_FALSE(tooWide.ok());
  EXPECT_EQ(tooWide.error(), "zero code 16 of column 1, group 0 does not fit uint4");
  EXPECT_NE(packZeroCodes(p, codes, 2, packed, 2).error().find("has 3 zero codes"),
            std::string::npos);
  EXPECT_NE(packZeroCodes(p, codes, 3, packed, 1).error().find("take 2 bytes"), std::string::npos);

  Expected<std::vector<uint8_t>> back = unpackZeroCodes(p, packed, 2);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, std::vector<uint8_t>(codes, codes + 3));
  EXPECT_NE(unpackZeroCodes(p, packed, 1).error().find("take 2 bytes"), std::string::npos);

  p.scheme.granularity = Granularity::PerGroup;
  p.scheme.groupSize = 128;
  p.scheme.zeroCodes = DataFormat::unsignedInt(8);
  EXPECT_EQ(zeroBytes(p), 6);
  const uint8_t bytes[] = {0, 200, 255, 7, 8, 9};
  uint8_t out[6] = {};
  ASSERT_TRUE(packZeroCodes(p, bytes, 6, out, 6).ok());
  EXPECT_EQ(std::vector<uint8_t>(out, out + 6), std::vector<uint8_t>(bytes, bytes + 6));

  p.scheme.zeroCodes.reset(); // zeros in the scale dtype have nothing to pack
  EXPECT_EQ(zeroBytes(p), 6 * 2);
  EXPECT_FALSE(packZeroCodes(p, bytes, 6, out, 6).ok());
}

// N, K and the group size come from callers (the C ABI, specs): the buffer
// sizes never wrap or divide by zero, and validate() refuses a problem
// whose buffers do not fit in int64 although N and K are in range.
TEST(Problem, BufferSizesNeverWrap) {
  Problem p = w4g128();
  p.n = p.k = (int64_t(1) << 31) - 1;
  p.scheme.groupSize = 1;
  p.scheme.scale = DataFormat::f32();
  EXPECT_EQ(scaleCount(p), p.n * p.k);
  EXPECT_EQ(scaleBytes(p), -1) << "N * K * 4 bytes of f32 scales overflow";
  Status s = validate(p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "N = 2147483647 and K = 2147483647: 4611686014132420609 scales of 4 bytes "
                       "do not fit in a 64-bit buffer size");
  p.scheme.zero = ZeroMode::SubtractCode;
  EXPECT_EQ(zeroBytes(p), -1);
  p.scheme.zeroCodes = DataFormat::unsignedInt(4);
  EXPECT_EQ(zeroBytes(p), (p.n * p.k + 1) / 2) << "half a byte each fits";

  Problem unchecked = w4g128();
  unchecked.scheme.groupSize = 0;
  EXPECT_EQ(scaleCount(unchecked), -1) << "no division by zero";
  EXPECT_EQ(scaleBytes(unchecked), -1);
  EXPECT_EQ(zeroBytes(unchecked), -1);
  unchecked = w4g128();
  unchecked.n = std::numeric_limits<int64_t>::max();
  unchecked.k = 256;
  EXPECT_EQ(scaleCount(unchecked), -1);
  unchecked.scheme.scale = DataFormat::e4m3fn();
  unchecked.scheme.tensorScale = DataFormat::f32();
  EXPECT_EQ(tensorScaleOffset(unchecked), -1);
  EXPECT_EQ(scaleBytes(unchecked), -1);
  EXPECT_EQ(tensorScaleOffsetAfter(std::numeric_limits<int64_t>::max()), -1);
  EXPECT_EQ(tensorScaleOffsetAfter(5), 8);
  unchecked.n = -4;
  EXPECT_EQ(scaleCount(unchecked), -1);
}

} // namespace
} // namespace lowbit::core
