#include "FormatTestUtil.h"
#include "core/formats/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

namespace lowbit::formats {
namespace {

using test::gaussianMatrix;
using test::halfStepAt;

QuantScheme scheme(const std::string &name) { return std::move(findScheme(name)).value(); }

// quantize -> dequantize under the range fit: every weight within half a step
// of the code it got (with a relative slack for the f64 division), and no
// clamping anywhere. (The default search may clamp outliers on purpose.)
void expectRoundTripWithinHalfStep(const QuantScheme &s, const std::vector<double> &w,
                                   int64_t rows, int64_t cols, QuantizeOptions options = {}) {
  options.fit = ScaleFit::Range;
  Expected<QuantizedMatrix> q = quantize(w.data(), rows, cols, s, options);
  ASSERT_TRUE(q.ok()) << s.name << ": " << q.error();
  Expected<std::vector<double>> back = dequantize(*q);
  ASSERT_TRUE(back.ok()) << back.error();
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 0; k < cols; ++k) {
      double bound = halfStepAt(*q, n, k) * (1 + 1e-12) + 1e-300;
      double error = std::fabs((*back)[size_t(n * cols + k)] - w[size_t(n * cols + k)]);
      ASSERT_LE(error, bound) << describeScheme(s) << " at (" << n << ", " << k << ")";
    }
}

TEST(Quantize, IntegerGroupsWithinHalfStep) {
  auto w = gaussianMatrix(8, 512, 1);
  for (int g : {16, 32, 64, 128, 256})
    for (const DataFormat &scale : {DataFormat::f16(), DataFormat::bf16(), DataFormat::f32()})
      for (int bits : {2, 3, 4, 8}) {
        QuantScheme s = *makeGroupScheme(DataFormat::signedInt(bits), g, scale);
        expectRoundTripWithinHalfStep(s, w, 8, 512);
      }
}

TEST(Quantize, TensorAndChannelWithinHalfStep) {
  auto w = gaussianMatrix(16, 96, 2, 0.02);
  for (const char *name : {"w8-channel", "ternary-tensor", "fp8-e4m3-tensor", "fp8-e4m3-channel",
                           "fp8-e5m2-tensor"})
    expectRoundTripWithinHalfStep(scheme(name), w, 16, 96);
}

TEST(Quantize, ZeroPointsWithinHalfStep) {
  auto w = gaussianMatrix(8, 256, 3);
  for (double &x : w)
    x += 0.7; // off-centre, so the zero point matters
  for (const char *name :
       {"w4-g128-asym", "w4-g128-fzero", "w3-g128-asym", "w2-g64-asym", "w1-g64-asym", "awq-w4-g128"})
    expectRoundTripWithinHalfStep(scheme(name), w, 8, 256);
  // Quantized zero codes: (q - z)·s with an f16 zero, too.
  QuantScheme floatZero = scheme("w4-g128-asym");
  floatZero.zeroFormat = DataFormat::f16();
  expectRoundTripWithinHalfStep(floatZero, w, 8, 256);
}

// The GPU tests' bf16.uint8.g16.sub_value slot: a bf16 zero rounded to
// nearest fell most of a step short of the low end, so the low end encoded
// below code 0 at every scale the fit tried.
TEST(Quantize, CoarseFloatZerosFitTheSlotsLowEnd) {
  QuantScheme s = *makeGroupScheme(DataFormat::unsignedInt(8), 16, DataFormat::bf16());
  s.zeroMode = ZeroMode::SubtractScaled;
  s.zeroFormat = DataFormat::bf16();
  std::vector<double> w(16);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = -0.063225 + (0.023647 + 0.063225) * double(i) / double(w.size() - 1);
  expectRoundTripWithinHalfStep(s, w, 1, 16);
  auto gaussian = gaussianMatrix(8, 256, 4);
  expectRoundTripWithinHalfStep(s, gaussian, 8, 256);
}

TEST(Quantize, MinifloatAndLookupElementsWithinHalfStep) {
  auto w = gaussianMatrix(4, 256, 4);
  for (const char *name : {"nf4-g64", "fp4lut-g32", "fp6-e3m2-g32"})
    expectRoundTripWithinHalfStep(scheme(name), w, 4, 256);
  QuantScheme e2m1 = *makeGroupScheme(DataFormat::e2m1(), 32, DataFormat::f16());
  expectRoundTripWithinHalfStep(e2m1, w, 4, 256);
  QuantScheme book = *makeGroupScheme(
      *DataFormat::lut(3, {-1.5, -1, -0.5, -0.1, 0.1, 0.5, 1, 1.5}, "user"), 64, DataFormat::f32());
  expectRoundTripWithinHalfStep(book, w, 4, 256);
}

TEST(Quantize, SuperBlocksWithinHalfStep) {
  auto w = gaussianMatrix(6, 1024, 5);
  for (double &x : w)
    x += 0.3;
  expectRoundTripWithinHalfStep(scheme("gguf-q4_k"), w, 6, 1024);
  expectRoundTripWithinHalfStep(scheme("gguf-q6_k"), w, 6, 1024);
  expectRoundTripWithinHalfStep(scheme("gguf-q4_0"), w, 6, 1024);
  expectRoundTripWithinHalfStep(scheme("gguf-q8_0"), w, 6, 1024);
  std::vector<double> zeros(256 * 2, 0.0);
  expectRoundTripWithinHalfStep(scheme("gguf-q4_k"), zeros, 2, 256);
}

// The default search: every weight gets the nearest code under its slot's
// stored scale (and min), or an end code when it lies beyond that end.
void expectNearestOrClamped(const QuantScheme &s, const std::vector<double> &w, int64_t rows,
                            int64_t cols) {
  Expected<QuantizedMatrix> q = quantize(w.data(), rows, cols, s);
  ASSERT_TRUE(q.ok()) << s.name << ": " << q.error();
  Expected<std::vector<double>> back = dequantize(*q);
  ASSERT_TRUE(back.ok()) << back.error();
  const double lowest = s.element.minFinite(), highest = s.element.maxFinite();
  int64_t clamped = 0;
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 0; k < cols; ++k) {
      const size_t i = size_t(n * cols + k);
      const double value = s.element.decode(q->codes[i]);
      const double error = std::fabs((*back)[i] - w[i]);
      if (error <= halfStepAt(*q, n, k) * (1 + 1e-9) + 1e-300)
        continue;
      // Beyond an end: the decoded weight is an end code's and the weight
      // lies further out on that side.
      ASSERT_TRUE(value == lowest || value == highest) << s.name << " at (" << n << ", " << k << ")";
      ++clamped;
    }
  EXPECT_LT(clamped, rows * cols / 50) << s.name << ": clamping is for outliers";
}

TEST(Quantize, SearchRoundsToNearestAndClampsOnlyOutliers) {
  auto w = gaussianMatrix(8, 1024, 21);
  for (const char *name : {"w8-channel", "w4-g32", "w4-g128", "gguf-q4_0", "gguf-q8_0",
                           "gguf-q4_k", "gguf-q6_k", "compact-w4-g32"})
    expectNearestOrClamped(scheme(name), w, 8, 1024);
  for (double &x : w)
    x += 0.3;
  for (const char *name : {"gguf-q4_0", "gguf-q4_k", "compact-w4-g32"})
    expectNearestOrClamped(scheme(name), w, 8, 1024);
}

// Per slot the range fit's scale is one of the search's candidates, so the
// search never loses to it; on Gaussian weights it wins by about a dB.
TEST(Quantize, SearchNeverLosesToTheRangeFit) {
  auto w = gaussianMatrix(16, 1024, 22);
  QuantizeOptions range;
  range.fit = ScaleFit::Range;
  for (const char *name : {"w8-channel", "w4-g32", "w4-g128", "w4-g128-bf16", "gguf-q4_0",
                           "gguf-q8_0", "ternary-tensor", "ternary-g128", "gguf-q4_k", "gguf-q6_k",
                           "compact-w4-g32"}) {
    Expected<QualityReport> searched = quantizationQuality(w.data(), 16, 1024, scheme(name));
    Expected<QualityReport> covered = quantizationQuality(w.data(), 16, 1024, scheme(name), range);
    ASSERT_TRUE(searched.ok() && covered.ok()) << name;
    EXPECT_GE(searched->snrDb, covered->snrDb) << name;
  }
  for (const char *name : {"gguf-q4_0", "gguf-q4_k", "compact-w4-g32"}) {
    double searched = quantizationQuality(w.data(), 16, 1024, scheme(name))->snrDb;
    double covered = quantizationQuality(w.data(), 16, 1024, scheme(name), range)->snrDb;
    EXPECT_GT(searched, covered + 0.5) << name;
  }
}

// llama.cpp's Q4_0 rule, block by block: d = (the weight of largest
// magnitude) / -8 stored as f16, codes round(w / d) + 8 clamped to 15. The
// search has that d among its candidates and rounds each weight to nearest
// under the stored d, so no block may come out worse.
TEST(Quantize, Q4_0NeverLosesToTheReferenceRuleOnAnyBlock) {
  const int64_t rows = 16, cols = 1024;
  auto w = gaussianMatrix(rows, cols, 23);
  // Two blocks whose weights are exactly -0.5 (row 0) and 0.5 (row 1) times
  // the 16 levels -8..7 twice over: only the scale that puts the weight of
  // largest magnitude on -8 decodes them exactly.
  for (int64_t n = 0; n < 2; ++n)
    for (int i = 0; i < 32; ++i)
      w[size_t(n * cols + i)] = (n == 0 ? -0.5 : 0.5) * (i % 16 - 8);
  QuantizedMatrix q = *quantize(w.data(), rows, cols, scheme("gguf-q4_0"));
  std::vector<double> back = *dequantize(q);
  for (int64_t block = 0; block < rows * cols / 32; ++block) {
    const double *x = w.data() + block * 32;
    double extreme = 0;
    for (int i = 0; i < 32; ++i)
      if (std::fabs(x[i]) > std::fabs(extreme))
        extreme = x[i];
    const double d = test::halfBitsToDouble(test::doubleToHalfBits(float(extreme / -8)));
    const double inverse = d != 0 ? 1.0 / double(float(extreme / -8)) : 0.0;
    double reference = 0, ours = 0;
    for (int i = 0; i < 32; ++i) {
      const int code = std::min(15, int(std::floor(x[i] * inverse + 8.5)));
      reference += std::pow(x[i] - (code - 8) * d, 2);
      ours += std::pow(x[i] - back[size_t(block * 32 + i)], 2);
    }
    ASSERT_LE(ours, reference * (1 + 1e-12)) << "block " << block;
  }
  // A block led by a positive weight takes a negative scale, so that weight
  // lands on -8, the code int4 has one more of.
  EXPECT_EQ(DataFormat::f16().decode(q.scales[0]), -0.5);
  EXPECT_EQ(DataFormat::f16().decode(q.scales[size_t(q.scaleCols())]), 0.5);
  for (int64_t n = 0; n < 2; ++n)
    for (int i = 0; i < 32; ++i)
      EXPECT_EQ(back[size_t(n * cols + i)], w[size_t(n * cols + i)]) << n << ", " << i;
}

TEST(Quantize, SearchedSuperBlocksOfZerosAndConstants) {
  std::vector<double> w(256 * 3, 0.0);
  for (size_t i = 256; i < 512; ++i)
    w[i] = 0.25; // a constant super-block
  for (size_t i = 512; i < 768; ++i)
    w[i] = i % 32 < 16 ? -1.0 : 0.5; // two values per group
  for (const char *name : {"gguf-q4_k", "gguf-q6_k", "compact-w4-g32", "gguf-q4_0"}) {
    Expected<QuantizedMatrix> q = quantize(w.data(), 3, 256, scheme(name));
    ASSERT_TRUE(q.ok()) << name << ": " << q.error();
    std::vector<double> back = *dequantize(*q);
    for (size_t i = 0; i < 256; ++i)
      ASSERT_EQ(back[i], 0.0) << name << " " << i;
    Expected<QualityReport> quality = quantizationQuality(w.data(), 3, 256, scheme(name));
    ASSERT_TRUE(quality.ok());
    EXPECT_GT(quality->snrDb, 30) << name;
  }
}

TEST(Quantize, ActOrderUsesGroupIndex) {
  const int64_t rows = 4, cols = 256;
  auto w = gaussianMatrix(rows, cols, 6);
  QuantScheme s = scheme("gptq-w4-g128-actorder");
  s.zeroFormat = DataFormat::unsignedInt(4); // v2 zeros, so z = 0 is representable
  QuantizeOptions options;
  options.groupIndex.resize(cols);
  for (int64_t k = 0; k < cols; ++k)
    options.groupIndex[size_t(k)] = int32_t(k % 2); // interleaved groups
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 1; k < cols; k += 2)
      w[size_t(n * cols + k)] *= 100; // group 1 only: odd columns
  expectRoundTripWithinHalfStep(s, w, rows, cols, options);
  QuantizedMatrix q = *quantize(w.data(), rows, cols, s, options);
  for (int64_t n = 0; n < rows; ++n) {
    double scale0 = DataFormat::f16().decode(q.scales[size_t(n * 2 + 0)]);
    double scale1 = DataFormat::f16().decode(q.scales[size_t(n * 2 + 1)]);
    EXPECT_GT(scale1, 30 * scale0) << "group 1 holds the large odd columns";
  }
  QuantizeOptions missing;
  Expected<QuantizedMatrix> noIndex = quantize(w.data(), rows, cols, s, missing);
  ASSERT_FALSE(noIndex.ok());
  EXPECT_NE(noIndex.error().find("act-order needs g_idx with K = 256 entries; got 0"),
            std::string::npos);
  Expected<QuantizedMatrix> stray = quantize(w.data(), rows, cols, scheme("w4-g128"), options);
  ASSERT_FALSE(stray.ok());
  EXPECT_NE(stray.error().find("g_idx given but scheme 'w4-g128' has no act-order"),
            std::string::npos);
}

TEST(Quantize, MxFollowsSpecScaleRule) {
  // One MXFP4 block of 32; hand-computed per OCP MX 6.3:
  //   amax 6   -> X = 2^(2 - 2) = 1, code 127; 6 -> 0x7, -3 -> 0xD, 0.5 -> 0x1
  //   amax 7   -> X = 2^(2 - 2) = 1; 7 saturates to 6 (spec rule)
  //   amax 0.1 -> X = 2^(-4 - 2) = 2^-6, code 121; 0.1 * 64 = 6.4 -> 6
  QuantScheme mx = scheme("mxfp4");
  auto block = [](double first, double second, double third) {
    std::vector<double> w(32, 0.0);
    w[0] = first, w[1] = second, w[2] = third;
    return w;
  };
  QuantizedMatrix a = *quantize(block(6, -3, 0.5).data(), 1, 32, mx);
  EXPECT_EQ(a.scales[0], 127u);
  EXPECT_EQ(a.codes[0], 0x7);
  EXPECT_EQ(a.codes[1], 0xD);
  EXPECT_EQ(a.codes[2], 0x1);
  QuantizedMatrix b = *quantize(block(7, 1, 0).data(), 1, 32, mx);
  EXPECT_EQ(b.scales[0], 127u);
  EXPECT_EQ(b.codes[0], 0x7);
  QuantizedMatrix c = *quantize(block(0.1, 0.05, 0).data(), 1, 32, mx);
  EXPECT_EQ(c.scales[0], 121u);
  EXPECT_EQ(c.codes[0], 0x7);
  EXPECT_EQ(c.codes[1], 0x5); // 0.05 * 64 = 3.2 -> 3
  // MXINT8: the element is int8 * 2^-6 (emax 0), so amax 1 -> X = 1 (code
  // 127, as any MX producer writes it) and 1.0 -> int8 64.
  QuantizedMatrix d = *quantize(block(1.0, -0.5, 0).data(), 1, 32, scheme("mxint8"));
  EXPECT_EQ(d.scales[0], 127u);
  EXPECT_EQ(d.codes[0], 64);
  EXPECT_EQ(d.codes[1], uint8_t(-32));
  // Away from saturation an MX round trip is within half a step.
  auto w = gaussianMatrix(4, 128, 7);
  for (const char *name : {"mxfp6-e2m3", "mxfp6-e3m2", "mxfp8-e4m3", "mxfp8-e5m2"}) {
    Expected<QualityReport> quality = quantizationQuality(w.data(), 4, 128, scheme(name));
    ASSERT_TRUE(quality.ok()) << quality.error();
    EXPECT_GT(quality->snrDb, 15) << name;
  }
}

TEST(Quantize, Nvfp4TwoLevelScales) {
  // Tensor amax 2688 = 6 * 448 makes the f32 tensor scale exactly 1, so the
  // block scales are amax / 6 in e4m3: 448 (0x7E), 1 (0x38), 0.5 (0x30).
  std::vector<double> w(48, 0.0);
  w[0] = 2688;
  w[16] = 6, w[17] = -1.5;
  w[32] = 3, w[33] = 0.25;
  QuantizedMatrix q = *quantize(w.data(), 1, 48, scheme("nvfp4"));
  EXPECT_EQ(DataFormat::f32().decode(q.tensorScale), 1.0);
  EXPECT_EQ(q.scales[0], 0x7Eu);
  EXPECT_EQ(q.scales[1], 0x38u);
  EXPECT_EQ(q.scales[2], 0x30u);
  std::vector<double> back = *dequantize(q);
  EXPECT_EQ(back[0], 2688.0);
  EXPECT_EQ(back[16], 6.0);
  EXPECT_EQ(back[17], -1.5);
  EXPECT_EQ(back[32], 3.0);
  EXPECT_EQ(back[33], 0.25);
  auto g = gaussianMatrix(8, 256, 8);
  Expected<QualityReport> quality = quantizationQuality(g.data(), 8, 256, scheme("nvfp4"));
  ASSERT_TRUE(quality.ok());
  EXPECT_GT(quality->snrDb, 15);
}

TEST(Quantize, QualityReport) {
  const double ref[4] = {1, 2, 0, -4};
  const double approx[4] = {1.1, 2, 0.5, -4};
  QualityReport r = measureQuality(ref, approx, 4);
  EXPECT_DOUBLE_EQ(r.maxAbsoluteError, 0.5);
  EXPECT_NEAR(r.maxRelativeError, 0.1, 1e-12); // the zero weight has no relative error
  EXPECT_NEAR(r.meanRelativeError, 0.1 / 3, 1e-12);
  EXPECT_NEAR(r.snrDb, 10 * std::log10(21 / (0.01 + 0.25)), 1e-9);
  EXPECT_TRUE(std::isinf(measureQuality(ref, ref, 4).snrDb));

  auto w = gaussianMatrix(16, 1024, 9);
  double int8 = quantizationQuality(w.data(), 16, 1024, scheme("w8-channel"))->snrDb;
  double int4g32 = quantizationQuality(w.data(), 16, 1024, scheme("w4-g32"))->snrDb;
  double int4g128 = quantizationQuality(w.data(), 16, 1024, scheme("w4-g128"))->snrDb;
  EXPECT_GT(int8, 35);
  EXPECT_GT(int8, int4g32);
  EXPECT_GT(int4g32, int4g128);
  EXPECT_GT(int4g128, 15);
}

TEST(Quantize, RejectsWhatItCannotRepresent) {
  std::vector<double> w = {0.5, -0.25, 1.0, 0.0};
  QuantScheme unsignedNoZero = *makeGroupScheme(DataFormat::unsignedInt(4), 4, DataFormat::f16());
  Expected<QuantizedMatrix> negative = quantize(w.data(), 1, 4, unsignedNoZero);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().find("uint4 has no negative values"), std::string::npos)
      << negative.error();

  // GPTQ v1 stores zero - 1, so a zero point of 0 cannot be written: an
  // all-positive group needs z = 0 and must be refused, not wrapped.
  std::vector<double> positive = {0.5, 0.25, 1.0, 0.75};
  QuantScheme v1 = scheme("gptq-w4-g128");
  v1.groupSize = 4;
  Expected<QuantizedMatrix> wrapped = quantize(positive.data(), 1, 4, v1);
  ASSERT_FALSE(wrapped.ok());
  EXPECT_NE(wrapped.error().find("zero point"), std::string::npos) << wrapped.error();
  EXPECT_NE(wrapped.error().find("uint4+1"), std::string::npos) << wrapped.error();

  std::vector<double> bad = {1.0, NAN, 0, 0};
  Expected<QuantizedMatrix> nan = quantize(bad.data(), 2, 2, scheme("w8-channel"));
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.error().find("weight (0, 1) is not finite"), std::string::npos);

  Expected<QuantizedMatrix> indivisible = quantize(w.data(), 1, 4, scheme("w4-g128"));
  ASSERT_FALSE(indivisible.ok());
  EXPECT_NE(indivisible.error().find("group size 128 does not divide K = 4"), std::string::npos);

  std::vector<double> huge = {1e6, 1, 1, 1};
  Expected<QuantizedMatrix> overflow =
      quantize(huge.data(), 1, 4, *makeGroupScheme(DataFormat::signedInt(2), 4, DataFormat::f16()));
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.error().find("overflows f16"), std::string::npos) << overflow.error();
}

TEST(Dequantize, RejectsInvalidCodesAndNonFiniteScales) {
  QuantizedMatrix m;
  m.scheme = scheme("ternary-tensor");
  m.rows = 1;
  m.cols = 2;
  m.codes = {0, 3};
  m.scales = {0x3F800000u};
  Expected<std::vector<double>> bad = dequantize(m);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("code 3 at (0, 1) is not a valid ternary code"), std::string::npos)
      << bad.error();
  m.codes = {0, 2};
  EXPECT_EQ(*dequantize(m), (std::vector<double>{-1.0, 1.0}));
  // An infinite scale is as silent a NaN as a NaN one (Inf * 0 for code 1).
  m.scales = {0x7F800000u};
  Expected<std::vector<double>> inf = dequantize(m);
  ASSERT_FALSE(inf.ok());
  EXPECT_NE(inf.error().find("scale 0 is infinite (f32 code 2139095040)"), std::string::npos)
      << inf.error();

  QuantizedMatrix mx;
  mx.scheme = scheme("mxfp4");
  mx.rows = 1;
  mx.cols = 32;
  mx.codes.assign(32, 0);
  mx.scales = {0xFFu};
  Expected<std::vector<double>> nanScale = dequantize(mx);
  ASSERT_FALSE(nanScale.ok());
  EXPECT_NE(nanScale.error().find("scale 0 is NaN"), std::string::npos) << nanScale.error();
  mx.scales = {0x80u}; // 2^1
  mx.codes[0] = 0xF;   // -6
  EXPECT_EQ((*dequantize(mx))[0], -12.0);
}

// The check the runtime's packer runs on every weight: the first bad code's
// position, and what the format's valid codes are; NaN codes are refused too.
TEST(CheckElementCodes, NamesTheFirstCodeTheFormatDoesNotHave) {
  const std::vector<uint8_t> ternary = {0, 1, 2, 2, 3, 3};
  Status three = checkElementCodes(DataFormat::ternary(), ternary.data(), 2, 3);
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.error().find("code 3 at (1, 1) is not a valid ternary code (ternary codes are "
                               "0, 1 and 2, meaning -1, 0 and 1)"),
            std::string::npos)
      << three.error();
  EXPECT_TRUE(checkElementCodes(DataFormat::ternary(), ternary.data(), 1, 3).ok());

  const std::vector<uint8_t> signExtended = {7, 8, 0xF8};
  Status int4 = checkElementCodes(DataFormat::signedInt(4), signExtended.data(), 1, 3);
  ASSERT_FALSE(int4.ok());
  EXPECT_NE(int4.error().find("code 248 at (0, 2) is not a valid int4 code (int4 codes are 0 to "
                              "15, one per byte, two's complement in the low 4 bits, not "
                              "sign-extended)"),
            std::string::npos)
      << int4.error();
  std::vector<uint8_t> everyByte(256);
  for (int i = 0; i < 256; ++i)
    everyByte[size_t(i)] = uint8_t(i);
  EXPECT_TRUE(checkElementCodes(DataFormat::int8(), everyByte.data(), 16, 16).ok());
  Status nan = checkElementCodes(DataFormat::e4m3fn(), everyByte.data(), 16, 16);
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.error().find("code 127 at (7, 15) is NaN in e4m3"), std::string::npos)
      << nan.error();
}

// Shapes are the caller's: one whose buffers' sizes wrap is refused before
// any buffer is sized or read, here with a one-weight buffer behind it.
TEST(Dequantize, RejectsShapesWhoseSizesWrap) {
  QuantizedMatrix m;
  m.scheme = scheme("gguf-q4_0");
  m.rows = 274177;
  m.cols = 32 * int64_t(67280421310721); // rows * cols = 2^64 + 32
  m.codes.assign(32, 8);
  m.scales = {0x3C00};
  Status valid = validateQuantizedMatrix(m);
  ASSERT_FALSE(valid.ok());
  EXPECT_NE(valid.error().find("matrix shape 274177 x 2152973481943072 (its f64 dequantize, rows "
                               "* cols * 8 bytes): 274177 * 2152973481943072 * 8 does not fit"),
            std::string::npos)
      << valid.error();
  EXPECT_FALSE(dequantize(m).ok());
  double weight = 1.0;
  Expected<QuantizedMatrix> q =
      quantize(&weight, int64_t(1) << 32, int64_t(1) << 32, scheme("w8-channel"));
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.error().find("4294967296 * 4294967296 * 8 does not fit"), std::string::npos)
      << q.error();
  uint8_t code = 0;
  Status codes = checkElementCodes(DataFormat::unsignedInt(4), &code, int64_t(1) << 32,
                                   (int64_t(1) << 32) + 1);
  ASSERT_FALSE(codes.ok());
  EXPECT_NE(codes.error().find("element codes rows * cols: 4294967296 * 4294967297"),
            std::string::npos)
      << codes.error();
}

} // namespace
} // namespace lowbit::formats
