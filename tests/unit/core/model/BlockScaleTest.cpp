// Block-scale dtypes (e8m0, e4m3fn) and NVFP4's tensor scale in the typed
// model: which schemes are valid and why not, the signature and its parse,
// the formats library's MX and NVFP4 schemes both ways, and the bytes of the
// scales buffer with the tensor scale after the block scales.
#include "core/Problem.h"

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {

using formats::DataFormat;
using formats::Granularity;
using formats::ZeroMode;

// uint4 with MX scales: one e8m0 per 32 weights.
Problem mxUint4() {
  Problem p;
  p.n = 4096, p.k = 4096;
  p.scheme.groupSize = 32;
  p.scheme.scale = DataFormat::e8m0();
  return p;
}

// int4 with NVFP4's scales: e4m3fn per 16 weights times one f32.
Problem nvInt4() {
  Problem p;
  p.n = 4096, p.k = 4096;
  p.code = DataFormat::signedInt(4);
  p.scheme.groupSize = 16;
  p.scheme.scale = DataFormat::e4m3fn();
  p.scheme.tensorScale = DataFormat::f32();
  return p;
}

std::string validationError(const Problem &p) {
  Status s = validate(p);
  return s ? std::string("(valid)") : s.error();
}

TEST(BlockScales, ValidSchemes) {
  EXPECT_TRUE(validate(mxUint4()).ok()) << validationError(mxUint4());
  EXPECT_TRUE(validate(nvInt4()).ok()) << validationError(nvInt4());
  Problem e4m3Alone = nvInt4();
  e4m3Alone.scheme.tensorScale.reset();
  e4m3Alone.scheme.groupSize = 128;
  EXPECT_TRUE(validate(e4m3Alone).ok()) << "e4m3fn block scales need no tensor scale";
}

TEST(BlockScales, InvalidSchemesSayWhy) {
  Problem channel = nvInt4();
  channel.scheme.tensorScale.reset();
  channel.scheme.granularity = Granularity::PerChannel;
  channel.scheme.groupSize = 0;
  EXPECT_EQ(validationError(channel),
            "scale dtype e4m3fn is a block scale: it needs granularity group, got channel");
  Problem g64 = mxUint4();
  g64.scheme.groupSize = 64;
  EXPECT_EQ(validationError(g64), "e8m0 scales are OCP MX block scales of 32 weights: group "
                                  "size must be 32, got 64");
  Problem zeros = mxUint4();
  zeros.scheme.zero = ZeroMode::SubtractCode;
  zeros.scheme.zeroCodes = DataFormat::unsignedInt(4);
  EXPECT_EQ(validationError(zeros),
            "block scales (e8m0) have no zero points: zero must be none, got quantized");
  Problem overE8m0 = mxUint4();
  overE8m0.scheme.tensorScale = DataFormat::f32();
  EXPECT_EQ(validationError(overE8m0), "a tensor scale multiplies e4m3fn block scales (NVFP4's "
                                       "second level); the scale dtype is e8m0");
  Problem overF16 = nvInt4();
  overF16.scheme.scale = DataFormat::f16();
  EXPECT_NE(validationError(overF16).find("the scale dtype is f16"), std::string::npos);
  Problem f16Tensor = nvInt4();
  f16Tensor.scheme.tensorScale = DataFormat::f16();
  EXPECT_EQ(validationError(f16Tensor), "tensor scale dtype 'f16' is not f32");
  Problem e5m2 = mxUint4();
  e5m2.scheme.scale = DataFormat::e5m2();
  EXPECT_EQ(validationError(e5m2), "scale dtype 'e5m2' is not f16, bf16, f32, e8m0 or e4m3fn");
}

TEST(BlockScales, SignaturesPrintAndParse) {
  EXPECT_EQ(signature(mxUint4()), "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;"
                                  "scale=e8m0;granularity=group;group=32;zero=none");
  EXPECT_EQ(signature(nvInt4()), "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=int4;"
                                 "scale=e4m3fn;granularity=group;group=16;zero=none;"
                                 "tensor_scale=f32");
  for (const Problem &p : {mxUint4(), nvInt4()}) {
    Expected<Problem> back = parseSignature(signature(p));
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_TRUE(back->sameAs(p)) << signature(p);
  }
  // A tensor scale with act-order: in the optional fields' order.
  Problem ordered = nvInt4();
  ordered.scheme.actOrder = true;
  EXPECT_TRUE(parseSignature(signature(ordered)).ok()) << signature(ordered);
  const std::string base = "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=int4;scale=e4m3fn;"
                           "granularity=group;group=16;zero=none";
  for (const std::string &bad : {base + ";act_order=1;tensor_scale=f32",
                                 base + ";tensor_scale=f32;tensor_scale=f32",
                                 base + ";tensor_scale=f16", base + ";tensor_scale=float"})
    EXPECT_FALSE(parseSignature(bad).ok()) << bad;
  Expected<Problem> f16 = parseSignature(base + ";tensor_scale=f16");
  EXPECT_NE(f16.error().find("tensor scale dtype 'f16' is not f32"), std::string::npos)
      << f16.error();
}

// The formats library's MX and NVFP4 schemes are kernel schemes, and the
// typed model's come back as them.
TEST(BlockScales, MxAndNvfp4SchemesBothWays) {
  Expected<formats::QuantScheme> mx = formats::makeMxScheme(DataFormat::e2m1());
  ASSERT_TRUE(mx.ok()) << mx.error();
  Expected<Scheme> mxKernel = kernelScheme(*mx);
  ASSERT_TRUE(mxKernel.ok()) << mxKernel.error();
  EXPECT_EQ(*mxKernel, mxUint4().scheme);
  Expected<Scheme> nvKernel = kernelScheme(formats::makeNvfp4Scheme());
  ASSERT_TRUE(nvKernel.ok()) << nvKernel.error();
  EXPECT_EQ(*nvKernel, nvInt4().scheme);
  for (const Problem &p : {mxUint4(), nvInt4()}) {
    Expected<formats::QuantScheme> q = quantScheme(p);
    ASSERT_TRUE(q.ok()) << q.error();
    EXPECT_EQ(q->scaleFormat, p.scheme.scale);
    EXPECT_EQ(q->tensorScale, p.scheme.tensorScale.has_value());
    Expected<Scheme> back = kernelScheme(*q);
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(*back, p.scheme);
  }
}

// One byte per block scale; the tensor scale's f32 at the next multiple of 4.
TEST(BlockScales, ScalesBufferBytes) {
  Problem mx = mxUint4();
  EXPECT_EQ(scaleElementBytes(mx), 1);
  EXPECT_EQ(scaleBytes(mx), 4096 * 128);
  EXPECT_EQ(scaleAlignment(mx), 16); // group scales: a chunk's run is one vector
  EXPECT_EQ(tensorScaleOffset(mx), -1);
  Problem nv = nvInt4();
  EXPECT_EQ(tensorScaleOffset(nv), 4096 * 256);
  EXPECT_EQ(scaleBytes(nv), 4096 * 256 + 4);
  EXPECT_EQ(scaleAlignment(nv), 16);
  // 3 x 16 block scales: 48 bytes, then the f32 at 48; 3 x 1 + padding to 4.
  nv.n = 3, nv.k = 256;
  EXPECT_EQ(tensorScaleOffset(nv), 48);
  nv.k = 16;
  EXPECT_EQ(tensorScaleOffset(nv), 4);
  EXPECT_EQ(scaleBytes(nv), 8);
  EXPECT_EQ(tensorScaleOffsetAfter(5), 8);
  EXPECT_EQ(tensorScaleOffsetAfter(8), 8);
  Problem f16 = mxUint4();
  f16.scheme.scale = DataFormat::f16();
  EXPECT_EQ(scaleBytes(f16), 4096 * 128 * 2) << "unchanged without a tensor scale";
}

} // namespace
} // namespace lowbit::core
