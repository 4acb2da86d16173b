// Two-level scales in the typed model: byte codes per group times a step per
// super-block (the compact int4 encoding, GGUF k-quants' shape). Which
// schemes are valid and why not, the signature and its parse, the formats
// library's super-block schemes both ways, and the buffer layout (codes, then
// the steps at a 16-byte offset).
#include "core/Problem.h"
#include "core/formats/Scheme.h"

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {

using formats::DataFormat;
using formats::Granularity;
using formats::ZeroMode;

// uint4 codes, uint8 scale and min codes per 32, f16 steps per 256.
Problem compactInt4() {
  Problem p;
  p.n = 4096, p.k = 4096;
  p.scheme.groupSize = 32;
  p.scheme.scale = DataFormat::unsignedInt(8);
  p.scheme.zero = ZeroMode::SubtractScaled;
  p.scheme.superBlock = 256;
  p.scheme.superStep = DataFormat::f16();
  return p;
}

std::string validationError(const Problem &p) {
  Status s = validate(p);
  return s ? std::string("(valid)") : s.error();
}

TEST(SuperBlock, ValidSchemes) {
  EXPECT_EQ(validationError(compactInt4()), "(valid)");
  Problem symmetric = compactInt4();
  symmetric.code = DataFormat::signedInt(4);
  symmetric.scheme.scale = DataFormat::int8();
  symmetric.scheme.zero = ZeroMode::None;
  symmetric.scheme.groupSize = 16;
  symmetric.scheme.superStep = DataFormat::bf16();
  EXPECT_EQ(validationError(symmetric), "(valid)");
}

TEST(SuperBlock, ValidateNamesWhatIsWrong) {
  auto errorOf = [](auto edit) {
    Problem p = compactInt4();
    edit(p);
    return validationError(p);
  };
  EXPECT_NE(errorOf([](Problem &p) { p.scheme.superStep.reset(); }).find("super_step"),
            std::string::npos);
  EXPECT_NE(errorOf([](Problem &p) { p.scheme.superStep = DataFormat::e8m0(); }).find("e8m0"),
            std::string::npos);
  EXPECT_NE(errorOf([](Problem &p) { p.scheme.superBlock = 48; }).find("multiple of the group"),
            std::string::npos);
  EXPECT_NE(errorOf([](Problem &p) { p.k = 4096 + 32; }).find("divide K"), std::string::npos);
  EXPECT_NE(errorOf([](Problem &p) { p.scheme.scale = DataFormat::f16(); })
                .find("uint8 or int8"),
            std::string::npos);
  EXPECT_NE(errorOf([](Problem &p) { p.scheme.scale = DataFormat::int8(); }).find("unsigned"),
            std::string::npos);
  EXPECT_NE(errorOf([](Problem &p) { p.scheme.zero = ZeroMode::SubtractCode; }).find("sub_value"),
            std::string::npos);
  EXPECT_NE(errorOf([](Problem &p) {
              p.scheme.granularity = Granularity::PerChannel;
              p.scheme.groupSize = 0;
            }).find("granularity group"),
            std::string::npos);
  EXPECT_NE(errorOf([](Problem &p) {
              p.scheme.superBlock = 0;
            }).find("super_step"),
            std::string::npos);
  // Without super-blocks, integer scales are still no scale dtype.
  EXPECT_NE(errorOf([](Problem &p) {
              p.scheme.superBlock = 0;
              p.scheme.superStep.reset();
            }).find("is not f16"),
            std::string::npos);
}

TEST(SuperBlock, SignatureRoundTrips) {
  const Problem p = compactInt4();
  const std::string text = signature(p);
  EXPECT_EQ(text, "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=uint8;"
                  "granularity=group;group=32;zero=sub_value;super_block=256;super_step=f16");
  Expected<Problem> back = parseSignature(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(back->sameAs(p));
  // The step without its block, or the block without its step, is no signature.
  EXPECT_FALSE(parseSignature(text.substr(0, text.find(";super_step"))).ok());
  EXPECT_FALSE(parseSignature("lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=uint8;"
                              "granularity=group;group=32;zero=sub_value;super_step=f16")
                   .ok());
}

TEST(SuperBlock, FormatsLibrarySchemesBothWays) {
  Expected<formats::QuantScheme> q = quantScheme(compactInt4());
  ASSERT_TRUE(q.ok()) << q.error();
  ASSERT_TRUE(q->superBlock.has_value());
  EXPECT_EQ(q->superBlock->size, 256);
  EXPECT_EQ(q->superBlock->superScaleFormat, DataFormat::f16());
  EXPECT_EQ(q->scaleFormat, DataFormat::unsignedInt(8));
  EXPECT_EQ(*q->zeroFormat, DataFormat::unsignedInt(8));
  Expected<Scheme> back = kernelScheme(*q);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, compactInt4().scheme);

  // GGUF Q4_K: 6-bit sub-scales and mins keep their values as uint8 codes.
  Expected<formats::QuantScheme> q4k = formats::findScheme("gguf-q4_k");
  ASSERT_TRUE(q4k.ok());
  Expected<Scheme> q4kKernel = kernelScheme(*q4k);
  ASSERT_TRUE(q4kKernel.ok()) << q4kKernel.error();
  EXPECT_EQ(q4kKernel->scale, DataFormat::unsignedInt(8));
  EXPECT_EQ(q4kKernel->superBlock, 256);
  EXPECT_EQ(q4kKernel->zero, ZeroMode::SubtractScaled);
  // Q6_K's int8 sub-scales stay int8 (its 6-bit elements are the codes'
  // question, not the scheme's).
  Expected<formats::QuantScheme> q6k = formats::findScheme("gguf-q6_k");
  ASSERT_TRUE(q6k.ok());
  Expected<Scheme> q6kKernel = kernelScheme(*q6k);
  ASSERT_TRUE(q6kKernel.ok()) << q6kKernel.error();
  EXPECT_EQ(q6kKernel->scale, DataFormat::int8());
  EXPECT_EQ(q6kKernel->groupSize, 16);
}

TEST(SuperBlock, BufferLayout) {
  Problem p = compactInt4();
  p.n = 3, p.k = 512 + 256; // 24 codes a row, 72 in all; 3 steps a row
  EXPECT_EQ(scaleCount(p), 72);
  EXPECT_EQ(scaleElementBytes(p), 1);
  EXPECT_EQ(superStepOffset(p), 80); // 72 rounded up to 16
  EXPECT_EQ(superStepCount(p), 9);
  EXPECT_EQ(scaleBytes(p), 80 + 9 * 2);
  EXPECT_EQ(zeroBytes(p), 80 + 9 * 2);
  p.scheme.zero = ZeroMode::None;
  EXPECT_EQ(zeroBytes(p), 0);
  p.scheme.superStep = DataFormat::f32();
  EXPECT_EQ(scaleBytes(p), 80 + 9 * 4);
  EXPECT_EQ(superStepOffset(Problem{}), -1);
  EXPECT_EQ(superStepOffsetAfter(16), 16);
  EXPECT_EQ(superStepOffsetAfter(17), 32);
  EXPECT_EQ(superStepOffsetAfter(-1), -1);
}

} // namespace
} // namespace lowbit::core
