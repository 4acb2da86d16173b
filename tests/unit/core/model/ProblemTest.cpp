#include "core/Problem.h"

#include <gtest/gtest.h>

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
  p.scheme.scale = DataFormat::e4m3fn();
  EXPECT_FALSE(validate(p).ok());
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
  for (const char *name : {"mxfp4", "nvfp4", "gguf-q4_k"}) {
    Expected<formats::QuantScheme> q = formats::findScheme(name);
    ASSERT_TRUE(q.ok());
    EXPECT_FALSE(kernelScheme(*q).ok()) << name;
  }
}

} // namespace
} // namespace lowbit::core
