// The shared inputs of the bench, the tuner and the GPU tests: codes, scales
// and zeros come from the formats library's quantizer in the dtype a kernel
// reads, and the reference is the formats library's f64 dequantize of them.
#include "compiler/measure/ProblemInputs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace lowbit::measure {
namespace {

// Quantized zeros are uint4 for codes of up to 4 bits, uint8 for wider ones
// (a zero must be able to sit anywhere in the codes' range).
core::Problem problem(const char *weight, const char *zero, int64_t n = 64, int64_t k = 256) {
  core::Problem p;
  p.name = std::string(weight) + "-" + zero;
  p.n = n;
  p.k = k;
  p.code = *formats::parseFormat(weight);
  p.scheme.groupSize = 64;
  core::ZeroSpelling spelled = *core::parseZero(zero);
  p.scheme.zero = spelled.mode;
  if (spelled.quantized)
    p.scheme.zeroCodes = formats::DataFormat::unsignedInt(p.code.bits() > 4 ? 8 : 4);
  return p;
}

// Element `slot` of bytes laid out as a kernel reads them, decoded.
double element(const std::vector<uint8_t> &bytes, int64_t slot, int width,
               const formats::DataFormat &format) {
  uint32_t code = 0;
  for (int b = 0; b < width; ++b)
    code |= uint32_t(bytes[size_t(slot * width + b)]) << (8 * b);
  return format.decode(code);
}

// Zero code `slot` as kernels read it: uint8 one a byte, uint4 two a byte,
// the even slot in the low nibble.
double zeroCode(const std::vector<uint8_t> &bytes, int64_t slot,
                const formats::DataFormat &format) {
  if (format.bits() == 8)
    return format.decode(bytes[size_t(slot)]);
  return format.decode((bytes[size_t(slot / 2)] >> (4 * (slot % 2))) & 15u);
}

// The f32 tensor scale after the block scales, where kernels read it; 1
// without one.
double tensorScale(const ProblemInputs &in) {
  const int64_t offset = core::tensorScaleOffset(in.problem);
  if (offset < 0)
    return 1;
  return element(in.scales, offset / 4, 4, formats::DataFormat::f32());
}

// Rebuilds every reference weight from the kernel-facing codes, scales and
// zeros: they must be the dequantized weights exactly (scales [N][K / group],
// [N] per channel, [1] per tensor, times the tensor scale).
void expectReferenceIsTheKernelsWeights(const ProblemInputs &in) {
  const core::Problem &p = in.problem;
  const formats::DataFormat zeroFormat = p.scheme.zeroCodes ? *p.scheme.zeroCodes : p.scheme.scale;
  const int scaleBytes = core::scaleElementBytes(p), zeroBytes = core::zeroElementBytes(p);
  const int64_t group = p.scheme.groupSize;
  ASSERT_EQ(int64_t(in.scales.size()), core::scaleBytes(p));
  for (int64_t n = 0; n < p.n; n += in.referenceStride)
    for (int64_t k = 0; k < p.k; ++k) {
      const int64_t slot = p.scheme.granularity == formats::Granularity::PerTensor ? 0
                           : p.scheme.granularity == formats::Granularity::PerChannel
                               ? n
                               : n * (p.k / group) + k / group;
      double q = p.code.decode(in.codes[size_t(n * p.k + k)]);
      double s = element(in.scales, slot, scaleBytes, p.scheme.scale) * tensorScale(in);
      double z = !p.scheme.hasZeros() ? 0
                 : p.scheme.zeroCodes ? zeroCode(in.zeros, slot, zeroFormat)
                                      : element(in.zeros, slot, zeroBytes, zeroFormat);
      double w = p.scheme.zero == formats::ZeroMode::SubtractScaled ? q * s - z : (q - z) * s;
      ASSERT_EQ(in.referenceWeights[size_t(n / in.referenceStride * p.k + k)], w)
          << p.name << " n=" << n << " k=" << k;
    }
}

// The 2-bit problem the compiler is getting kernels for: the formats library
// makes its inputs (codes 0..3 spread over all four values, not random bytes).
TEST(ProblemInputs, TwoBitInputsAndReferenceComeFromTheFormatsLibrary) {
  Expected<ProblemInputs> in = makeProblemInputs(problem("uint2", "none"));
  ASSERT_TRUE(in.ok()) << in.error();
  ASSERT_EQ(in->codes.size(), 64u * 256u);
  int seen[4] = {};
  for (uint8_t c : in->codes) {
    ASSERT_LT(c, 4);
    ++seen[c];
  }
  for (int count : seen)
    EXPECT_GT(count, 0);
  EXPECT_EQ(in->scales.size(), 64u * 4u * 2u); // [N][K / 64] f16
  EXPECT_TRUE(in->zeros.empty());
  expectReferenceIsTheKernelsWeights(*in);
}

TEST(ProblemInputs, EveryZeroModeAndWidthIsQuantized) {
  for (const char *weight : {"uint1", "uint2", "int2", "uint4", "int4", "uint8", "int8"})
    for (const char *zero : {"none", "sub_code", "sub_value", "quantized"}) {
      // Unsigned zero codes go with unsigned codes (GPTQ, AWQ); the formats
      // library refuses a zero below a signed code's range.
      if (weight[0] == 'i' && std::string(zero) == "quantized")
        continue;
      Expected<ProblemInputs> in = makeProblemInputs(problem(weight, zero));
      ASSERT_TRUE(in.ok()) << weight << " " << zero << ": " << in.error();
      EXPECT_EQ(in->zeros.size(), std::string(zero) == "none" ? 0u
                                  : std::string(zero) == "quantized"
                                      ? 64u * 4u * in->problem.scheme.zeroCodes->bits() / 8u
                                      : 64u * 4u * 2u);
      expectReferenceIsTheKernelsWeights(*in);
    }
}

TEST(ProblemInputs, ScaleDtypesAreTheKernelsBitPatterns) {
  for (formats::DataFormat scale :
       {formats::DataFormat::f16(), formats::DataFormat::bf16(), formats::DataFormat::f32()}) {
    core::Problem p = problem("int4", "sub_code");
    p.scheme.scale = scale;
    Expected<ProblemInputs> in = makeProblemInputs(p);
    ASSERT_TRUE(in.ok()) << in.error();
    EXPECT_EQ(in->scales.size(), size_t(64 * 4 * core::scaleElementBytes(p)));
    expectReferenceIsTheKernelsWeights(*in);
  }
}

// MX-style (e8m0 per 32) and NVFP4-style (e4m3fn per 16 times one f32)
// scales on integer codes: one byte a scale, the tensor scale after them,
// and one tensor scale for the whole matrix however many blocks of rows
// quantize it: the one its largest |w| gives.
TEST(ProblemInputs, BlockScalesAndTheTensorScale) {
  core::Problem mx = problem("uint4", "none");
  mx.scheme.groupSize = 32;
  mx.scheme.scale = formats::DataFormat::e8m0();
  core::Problem nv = problem("int4", "none", 48, 256);
  nv.scheme.groupSize = 16;
  nv.scheme.scale = formats::DataFormat::e4m3fn();
  nv.scheme.tensorScale = formats::DataFormat::f32();
  ProblemInputOptions blocks;
  blocks.blockWeights = 256 * 5; // 5 rows a block
  blocks.referenceStride = 1;
  for (const core::Problem &p : {mx, nv}) {
    Expected<ProblemInputs> in = makeProblemInputs(p, blocks);
    ASSERT_TRUE(in.ok()) << in.error();
    EXPECT_EQ(int64_t(in->scales.size()), core::scaleBytes(p));
    expectReferenceIsTheKernelsWeights(*in);
  }
  Expected<ProblemInputs> in = makeProblemInputs(nv, blocks);
  ASSERT_TRUE(in.ok()) << in.error();
  double amax = 0, ratio = 0;
  for (double w : in->referenceWeights)
    amax = std::max(amax, std::fabs(w));
  // The largest weight saturates its block: its scale is near 448 (e4m3fn's
  // largest) times the tensor scale, its code near int4's 7, within
  // e4m3fn's and int4's rounding.
  ratio = amax / (7 * 448 * tensorScale(*in));
  EXPECT_GT(ratio, 0.85);
  EXPECT_LT(ratio, 1.15);
  EXPECT_EQ(in->scales.size(), 48u * 16u + 4u);
}

// Only the reference rows are dequantized, in blocks of rows; whatever the
// stride and granularity (one tensor scale spans every block), they are the
// right rows.
TEST(ProblemInputs, EveryGranularityAndReferenceStride) {
  for (formats::Granularity granularity :
       {formats::Granularity::PerTensor, formats::Granularity::PerChannel,
        formats::Granularity::PerGroup})
    for (int64_t stride : {1, 3, 7}) {
      core::Problem p = problem("uint4", "sub_code", 100, 256);
      p.scheme.granularity = granularity;
      if (granularity != formats::Granularity::PerGroup)
        p.scheme.groupSize = 0;
      ProblemInputOptions options;
      options.referenceStride = stride;
      options.blockWeights = 5 * 256; // blocks of 5 rows: every phase of every stride
      Expected<ProblemInputs> in = makeProblemInputs(p, options);
      ASSERT_TRUE(in.ok()) << in.error();
      EXPECT_EQ(in->referenceWeights.size(), size_t((100 + stride - 1) / stride * 256));
      EXPECT_EQ(in->scales.size(), size_t(core::scaleCount(p) * 2));
      expectReferenceIsTheKernelsWeights(*in);
    }
}

// The reference is exact on the kernel's weights: a y computed from them
// has no error, one output changed does.
TEST(ProblemInputs, RelativeErrorIsZeroOnlyForTheReference) {
  Expected<ProblemInputs> in = makeProblemInputs(problem("uint4", "sub_value"));
  ASSERT_TRUE(in.ok()) << in.error();
  std::vector<double> x(256), y(64);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(double(i));
  for (int64_t n = 0; n < 64; n += in->referenceStride)
    y[size_t(n)] = in->reference(x.data(), n);
  EXPECT_EQ(relativeError(*in, x, y, 1), 0);
  y[7] += 1;
  EXPECT_GT(relativeError(*in, x, y, 1), 1e-3);
  y[7] = NAN;
  EXPECT_GT(relativeError(*in, x, y, 1), 1e3);
}

TEST(ProblemInputs, RefusesWhatTheFormatsLibraryCannotQuantize) {
  core::Problem p = problem("uint4", "none");
  p.scheme.actOrder = true;
  Expected<ProblemInputs> in = makeProblemInputs(p);
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.error().find(p.name), std::string::npos) << in.error();
}

// Caller-chosen codes (the GPU decode test's): stored as the kernel reads
// them, with the formats library's dequantize of exactly those codes as the
// reference, zero points included.
TEST(ProblemInputs, CallerCodesKeepTheirValuesAndScales) {
  for (const char *zero : {"none", "sub_code"}) {
    core::Problem p = problem("int2", zero, 32, 128);
    Expected<formats::QuantScheme> scheme = core::quantScheme(p);
    ASSERT_TRUE(scheme.ok()) << scheme.error();
    formats::QuantizedMatrix q;
    q.scheme = *scheme;
    q.rows = p.n;
    q.cols = p.k;
    for (int64_t i = 0; i < p.n * p.k; ++i)
      q.codes.push_back(uint8_t((i + i / 7) % 4));
    const size_t slots = size_t(core::scaleCount(p));
    for (size_t i = 0; i < slots; ++i) {
      q.scales.push_back(*p.scheme.scale.encode(0.5 + double(i % 3)));
      if (p.scheme.hasZeros())
        q.zeros.push_back(*p.scheme.scale.encode(double(i % 2)));
    }
    Expected<ProblemInputs> in = problemInputsFromQuantized(p, q, 3);
    ASSERT_TRUE(in.ok()) << in.error();
    EXPECT_EQ(in->codes, q.codes);
    EXPECT_EQ(in->referenceStride, 3);
    expectReferenceIsTheKernelsWeights(*in);
    // W[0, 3]: code 3 (int2's -1) times slot 0's scale 0.5, minus its zero 0.
    EXPECT_EQ(in->referenceWeights[3], -0.5);
  }
}

TEST(ProblemInputs, CallerCodesMustBeTheProblemsMatrix) {
  core::Problem p = problem("uint4", "none", 16, 64);
  formats::QuantizedMatrix q;
  q.scheme = *core::quantScheme(p);
  q.rows = p.n;
  q.cols = p.k;
  q.codes.assign(size_t(p.n * p.k), 1);
  q.scales.assign(size_t(core::scaleCount(p)), *p.scheme.scale.encode(1.0));
  ASSERT_TRUE(problemInputsFromQuantized(p, q).ok());

  formats::QuantizedMatrix shorter = q;
  shorter.rows = 8;
  Expected<ProblemInputs> wrongShape = problemInputsFromQuantized(p, shorter);
  ASSERT_FALSE(wrongShape.ok());
  EXPECT_NE(wrongShape.error().find("8 x 64"), std::string::npos) << wrongShape.error();

  formats::QuantizedMatrix signedCodes = q;
  signedCodes.scheme.element = formats::DataFormat::signedInt(4);
  Expected<ProblemInputs> wrongFormat = problemInputsFromQuantized(p, signedCodes);
  ASSERT_FALSE(wrongFormat.ok());
  EXPECT_NE(wrongFormat.error().find("not the problem's scheme"), std::string::npos)
      << wrongFormat.error();

  formats::QuantizedMatrix outOfRange = q;
  outOfRange.codes[5] = 16; // not a 4-bit code
  EXPECT_FALSE(problemInputsFromQuantized(p, outOfRange).ok());
}

} // namespace
} // namespace lowbit::measure
