// Checkpoint schemes turned into schemes kernels read: every weight keeps its
// value exactly (the f64 dequantize of both is compared with ==), and the
// problem is one core::validate accepts.
#include "core/checkpoint/KernelWeights.h"
#include "core/AbiFormats.h"

#include "core/formats/Quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace lowbit::checkpoint {
namespace {

using formats::DataFormat;
using formats::QuantizedMatrix;
using formats::QuantScheme;

std::vector<double> gaussian(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.02);
  std::vector<double> w(size_t(rows * cols));
  for (double &v : w)
    v = normal(rng);
  return w;
}

QuantizedMatrix quantized(const QuantScheme &scheme, int64_t rows, int64_t cols,
                          const formats::QuantizeOptions &options = {}) {
  std::vector<double> w = gaussian(rows, cols, 7);
  Expected<QuantizedMatrix> m = formats::quantize(w.data(), rows, cols, scheme, options);
  EXPECT_TRUE(m) << m.error();
  return m ? std::move(m).value() : QuantizedMatrix{};
}

QuantScheme builtin(const char *name) {
  Expected<QuantScheme> scheme = formats::findScheme(name);
  EXPECT_TRUE(scheme) << name;
  return *scheme;
}

// The converted weights dequantize to exactly the checkpoint's.
KernelWeights expectSameWeights(const QuantizedMatrix &m) {
  Expected<std::vector<double>> reference = formats::dequantize(m);
  EXPECT_TRUE(reference) << reference.error();
  Expected<KernelWeights> weights = toKernelWeights(m, core::Activation::F16);
  EXPECT_TRUE(weights) << weights.error();
  if (!weights || !reference)
    return {};
  EXPECT_TRUE(core::validate(weights->problem));
  Expected<std::vector<double>> ours = dequantizeKernelWeights(*weights);
  EXPECT_TRUE(ours) << ours.error();
  if (!ours)
    return std::move(weights).value();
  const std::vector<int32_t> &perm = weights->permutation;
  int64_t mismatches = 0;
  for (int64_t n = 0; n < m.rows; ++n)
    for (int64_t j = 0; j < m.cols; ++j) {
      const int64_t k = perm.empty() ? j : perm[size_t(j)];
      const double ourWeight = (*ours)[size_t(n * m.cols + j)];
      const double theirs = (*reference)[size_t(n * m.cols + k)];
      if (ourWeight != theirs && mismatches++ < 3)
        ADD_FAILURE() << "row " << n << ", column " << j << ": " << ourWeight << " != " << theirs;
    }
  EXPECT_EQ(mismatches, 0);
  return std::move(weights).value();
}

TEST(KernelWeights, ActOrderSortsColumnsByGroupAndKeepsEveryWeight) {
  QuantScheme scheme = builtin("gptq-w4-g128-actorder");
  scheme.groupSize = 16;
  const int64_t k = 64;
  // GPTQ's desc_act: a random order of columns, taken 16 at a time.
  std::vector<int32_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  formats::QuantizeOptions options;
  options.groupIndex.resize(k);
  for (int64_t i = 0; i < k; ++i)
    options.groupIndex[size_t(order[size_t(i)])] = int32_t(i / 16);
  KernelWeights w = expectSameWeights(quantized(scheme, 8, k, options));
  EXPECT_FALSE(w.problem.scheme.actOrder);
  ASSERT_EQ(w.permutation.size(), size_t(k));
  std::vector<int32_t> sorted = w.permutation;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < k; ++i)
    EXPECT_EQ(sorted[size_t(i)], i);
  for (int64_t j = 0; j < k; ++j)
    EXPECT_EQ(options.groupIndex[size_t(w.permutation[size_t(j)])], j / 16) << j;
  EXPECT_FALSE(w.notes.empty());
}

TEST(KernelWeights, ActOrderGroupsOfUnequalSizeAreAnError) {
  QuantScheme scheme = builtin("gptq-w4-g128-actorder");
  scheme.groupSize = 16;
  formats::QuantizeOptions options;
  options.groupIndex.assign(64, 0);
  for (int i = 0; i < 64; ++i)
    options.groupIndex[size_t(i)] = i < 20 ? 0 : (i < 32 ? 1 : i / 16);
  QuantizedMatrix m = quantized(scheme, 4, 64, options);
  Expected<KernelWeights> w = toKernelWeights(m, core::Activation::F16);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().find("unequal sizes"), std::string::npos) << w.error();
}

// GPTQ v1 stores z - 1, so z is 1..16: uint4 codes hold it unless some
// group has z = 16, which takes uint8 codes.
TEST(KernelWeights, GptqV1ZerosBecomeTheNarrowestCodesThatHoldThem) {
  QuantizedMatrix m = quantized(builtin("gptq-w4-g128"), 8, 256);
  ASSERT_EQ(*m.scheme.zeroFormat, DataFormat::unsignedInt(4, 1));
  for (uint32_t &z : m.zeros)
    z = std::min<uint32_t>(z, 14); // z <= 15 everywhere
  KernelWeights narrow = expectSameWeights(m);
  ASSERT_TRUE(narrow.problem.scheme.zeroCodes);
  EXPECT_EQ(*narrow.problem.scheme.zeroCodes, DataFormat::unsignedInt(4));
  m.zeros[3] = 15; // z = 16 in one group
  KernelWeights wide = expectSameWeights(m);
  ASSERT_TRUE(wide.problem.scheme.zeroCodes);
  EXPECT_EQ(*wide.problem.scheme.zeroCodes, DataFormat::unsignedInt(8));
  EXPECT_EQ(wide.zeros.size(), size_t(8 * 2));
}

TEST(KernelWeights, AwqZerosStayUint4Codes) {
  KernelWeights w = expectSameWeights(quantized(builtin("awq-w4-g128"), 8, 256));
  ASSERT_TRUE(w.problem.scheme.zeroCodes);
  EXPECT_EQ(*w.problem.scheme.zeroCodes, DataFormat::unsignedInt(4));
  EXPECT_TRUE(w.notes.empty());
}

// Q4_K stays two-level: its 6-bit sub-scales and mins are the same
// integers as uint8 codes, each buffer's f16 steps after its codes.
TEST(KernelWeights, Q4KKeepsItsSubScaleCodesAndSteps) {
  QuantizedMatrix m = quantized(builtin("gguf-q4_k"), 4, 512);
  const std::vector<uint32_t> steps = m.superScales, minSteps = m.superMins;
  KernelWeights w = expectSameWeights(m);
  EXPECT_EQ(w.problem.code, DataFormat::unsignedInt(4));
  EXPECT_EQ(w.problem.scheme.scale, DataFormat::unsignedInt(8));
  EXPECT_EQ(w.problem.scheme.groupSize, 32);
  EXPECT_EQ(w.problem.scheme.superBlock, 256);
  EXPECT_EQ(w.problem.scheme.superStep, DataFormat::f16());
  EXPECT_EQ(w.problem.scheme.zero, formats::ZeroMode::SubtractScaled);
  EXPECT_FALSE(w.problem.scheme.zeroCodes);
  // 4 x 16 codes (64 bytes, already 16-aligned), then 4 x 2 f16 steps.
  ASSERT_EQ(w.scales.size(), size_t(64 + 8 * 2));
  ASSERT_EQ(w.zeros.size(), size_t(64 + 8 * 2));
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(w.scales[64 + 2 * i] | w.scales[64 + 2 * i + 1] << 8, int(steps[i]));
    EXPECT_EQ(w.zeros[64 + 2 * i] | w.zeros[64 + 2 * i + 1] << 8, int(minSteps[i]));
  }
}

// Kernels decode 6-bit codes (in two planes), so Q6_K's codes keep their 6
// bits and its int8 sub-scales stay two-level: 6.5625 bits a weight.
TEST(KernelWeights, Q6KCodesKeepTheirBitsAndItsScalesStayTwoLevel) {
  KernelWeights w = expectSameWeights(quantized(builtin("gguf-q6_k"), 4, 512));
  EXPECT_EQ(w.problem.code, DataFormat::signedInt(6)); // q - 32, top bit flipped
  EXPECT_EQ(w.problem.scheme.scale, DataFormat::int8());
  EXPECT_EQ(w.problem.scheme.superBlock, 256);
  EXPECT_EQ(w.problem.scheme.groupSize, 16);
  for (const std::string &note : w.notes)
    EXPECT_EQ(note.find("re-encoded"), std::string::npos) << note;
  lowbit_problem abi;
  std::vector<double> table;
  ASSERT_TRUE(core::problemToAbi(w.problem, &abi, &table));
  EXPECT_EQ(abi.weight, LOWBIT_WEIGHT_INT6);
}

// A width no kernel decodes (7 bits) is re-encoded as bytes of the same
// values, and the notes say so.
TEST(KernelWeights, CodesNoKernelDecodesWidenToBytes) {
  formats::QuantScheme scheme = builtin("w4-g128");
  scheme.element = DataFormat::signedInt(7);
  KernelWeights w = expectSameWeights(quantized(scheme, 4, 256));
  EXPECT_EQ(w.problem.code, DataFormat::int8());
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("re-encoded as int8"), std::string::npos) << w.notes[0];
}

// Sub-scales no byte holds (-64..191 here) are multiplied out into f32
// scales (a step times a code is exact), and the notes say so.
TEST(KernelWeights, SubScalesNoByteHoldsAreMultipliedOut) {
  formats::QuantScheme scheme = builtin("gguf-q6_k");
  scheme.scaleFormat = DataFormat::unsignedInt(8, -64);
  KernelWeights w = expectSameWeights(quantized(scheme, 4, 512));
  EXPECT_EQ(w.problem.scheme.scale, DataFormat::f32());
  EXPECT_FALSE(w.problem.scheme.hasSuperBlocks());
  EXPECT_EQ(w.scales.size(), size_t(4 * 32 * 4));
}

// Narrower sub-scales stay two-level as the byte codes of the same values:
// Q3_K's excess-32 6-bit codes become int8 two's complement (a code of 0,
// the value -32, is the byte 0xE0), Q2_K's 4-bit scales and mins uint8.
TEST(KernelWeights, NarrowSubScalesBecomeByteCodesOfTheSameValues) {
  KernelWeights q3k = expectSameWeights(quantized(builtin("gguf-q3_k"), 4, 512));
  EXPECT_EQ(q3k.problem.scheme.scale, DataFormat::int8());
  EXPECT_EQ(q3k.problem.code, DataFormat::signedInt(3));
  EXPECT_TRUE(q3k.problem.scheme.hasSuperBlocks());
  KernelWeights q2k = expectSameWeights(quantized(builtin("gguf-q2_k"), 4, 512));
  EXPECT_EQ(q2k.problem.scheme.scale, DataFormat::unsignedInt(8));
  EXPECT_EQ(q2k.problem.code, DataFormat::unsignedInt(2));
  EXPECT_EQ(q2k.scales.size(), size_t(core::scaleBytes(q2k.problem)));
  for (int64_t slot = 0; slot < core::scaleCount(q2k.problem); ++slot) {
    EXPECT_LT(q2k.scales[size_t(slot)], 16) << slot;
    EXPECT_LT(q2k.zeros[size_t(slot)], 16) << slot;
  }
}

// Q8_0 needs no change; Q4_0's q - 8 codes become int4 codes of the same
// values (the top bit flipped), which the C ABI can name.
TEST(KernelWeights, Q4_0AndQ8_0ReachTheAbiUnchangedInValue) {
  for (const char *name : {"gguf-q4_0", "gguf-q8_0"}) {
    KernelWeights w = expectSameWeights(quantized(builtin(name), 4, 256));
    EXPECT_TRUE(w.permutation.empty());
    lowbit_problem abi;
    std::vector<double> table;
    ASSERT_TRUE(core::problemToAbi(w.problem, &abi, &table)) << name;
    if (std::string(name) == "gguf-q8_0") {
      EXPECT_TRUE(w.notes.empty());
      continue;
    }
    EXPECT_EQ(w.problem.code, DataFormat::signedInt(4));
    EXPECT_EQ(abi.weight, LOWBIT_WEIGHT_INT4);
    ASSERT_EQ(w.notes.size(), 1u);
    EXPECT_NE(w.notes[0].find("top bit flipped"), std::string::npos) << w.notes[0];
  }
}

// NVFP4's f32 tensor scale travels in the scales buffer, after the block
// scales, where kernels read it; dropping it would scale every weight by 0.
TEST(KernelWeights, Nvfp4TensorScaleFollowsTheBlockScales) {
  QuantizedMatrix m = quantized(formats::makeNvfp4Scheme(), 4, 64);
  ASSERT_NE(m.tensorScale, 0u);
  KernelWeights w = expectSameWeights(m);
  ASSERT_TRUE(w.problem.scheme.tensorScale.has_value());
  ASSERT_EQ(int64_t(w.scales.size()), core::scaleBytes(w.problem));
  uint32_t stored = 0;
  std::memcpy(&stored, w.scales.data() + core::tensorScaleOffset(w.problem), 4);
  EXPECT_EQ(stored, m.tensorScale);
}

// Fixed-point codes (MX's int8 times 2^-6) have no register decode.
TEST(KernelWeights, CodesWithoutADecodeAreAnError) {
  Expected<KernelWeights> w =
      toKernelWeights(quantized(builtin("mxint8"), 4, 64), core::Activation::F16);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().find("no kernel decode"), std::string::npos) << w.error();
}

// fp6 is served as stored (two planes in kernels): its codes pass through.
TEST(KernelWeights, Fp6CodesPassThrough) {
  QuantizedMatrix m = quantized(builtin("fp6-e3m2-g32"), 4, 64);
  Expected<KernelWeights> w = toKernelWeights(m, core::Activation::F16);
  ASSERT_TRUE(w) << w.error();
  EXPECT_EQ(w->problem.code, formats::DataFormat::e3m2());
  EXPECT_EQ(w->codes, m.codes);
}

// Quantized activations name their scales and y's type (core::validate):
// the weights are the same bytes, for a problem that says so.
TEST(KernelWeights, QuantizedActivationsCarryTheirScaleAndOutput) {
  QuantizedMatrix m = quantized(builtin("w8-channel"), 4, 64);
  Expected<KernelWeights> f16 = toKernelWeights(m, core::Activation::F16);
  Expected<KernelWeights> s8 = toKernelWeights(m, core::Activation::S8,
                                               core::ActivationScale::PerToken, core::Output::F16);
  ASSERT_TRUE(f16) << f16.error();
  ASSERT_TRUE(s8) << s8.error();
  EXPECT_EQ(s8->problem.activation, core::Activation::S8);
  EXPECT_EQ(s8->problem.activationScale, core::ActivationScale::PerToken);
  EXPECT_EQ(s8->problem.output, core::Output::F16);
  EXPECT_TRUE(core::validate(s8->problem));
  EXPECT_EQ(s8->codes, f16->codes);
  EXPECT_EQ(s8->scales, f16->scales);
  Expected<KernelWeights> unscaled = toKernelWeights(m, core::Activation::S8);
  ASSERT_FALSE(unscaled);
  EXPECT_NE(unscaled.error().find("activation scale"), std::string::npos) << unscaled.error();
}

} // namespace
} // namespace lowbit::checkpoint
