// GPTQ and AWQ importers on tensors written by hand from the formats'
// definitions, checked against values computed by hand.
#include "FormatTestUtil.h"
#include "core/formats/Gptq.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace lowbit::formats {
namespace {

// K = 16, N = 8, group 8: qweight[2][8], qzeros[2][1], scales[2][8].
GptqCheckpoint handBuiltGptq() {
  GptqCheckpoint c;
  c.bits = 4;
  c.inFeatures = 16;
  c.outFeatures = 8;
  c.groupSize = 8;
  c.qweight.assign(16, 0);
  // Word (i, n) holds k = 8i .. 8i+7 of column n, lowest nibble first.
  c.qweight[0 * 8 + 0] = 0x76543210;                 // col 0: k 0..7 -> 0..7
  c.qweight[0 * 8 + 1] = 0x01234567;                 // col 1: k 0..7 -> 7..0
  c.qweight[1 * 8 + 0] = int32_t(0xFEDCBA98u);       // col 0: k 8..15 -> 8..15
  c.qweight[1 * 8 + 1] = int32_t(0x89ABCDEFu);       // col 1: k 8..15 -> 15..8
  for (int n = 2; n < 8; ++n) {
    c.qweight[0 * 8 + n] = int32_t(0x11111111u * uint32_t(n)); // every code n
    c.qweight[1 * 8 + n] = 0x22222222;                         // every code 2
  }
  // Zeros are packed along N: nibble n of word g is column n's stored zero.
  c.qzeros = {0x76543210, 0x00000007};
  // f16: 0x3C00 = 1, 0x3800 = 0.5, 0x4000 = 2, 0xBC00 = -1.
  c.scales.assign(16, 0x3C00);
  c.scales[0 * 8 + 1] = 0x3800;
  for (int n = 0; n < 8; ++n)
    c.scales[1 * 8 + n] = 0x4000;
  c.scales[1 * 8 + 7] = 0xBC00;
  return c;
}

void expectImportAgrees(const std::vector<double> &reference, const QuantizedMatrix &imported) {
  Expected<std::vector<double>> ours = dequantize(imported);
  ASSERT_TRUE(ours.ok()) << ours.error();
  EXPECT_EQ(*ours, reference);
}

TEST(Gptq, V1ZeroPointOffsetHandDecoded) {
  GptqCheckpoint c = handBuiltGptq();
  std::vector<double> w = *dequantizeGptq(c);
  // Row 0: group 0 has z = stored 0 + 1 = 1, s = 1; group 1 z = 7 + 1 = 8, s = 2.
  const double row0[16] = {-1, 0, 1, 2, 3, 4, 5, 6, 0, 2, 4, 6, 8, 10, 12, 14};
  // Row 1: group 0 codes 7..0, z = 2, s = 0.5; group 1 codes 15..8, z = 1, s = 2.
  const double row1[16] = {2.5, 2, 1.5, 1, 0.5, 0, -0.5, -1, 28, 26, 24, 22, 20, 18, 16, 14};
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(w[size_t(0 * 16 + k)], row0[k]) << k;
    EXPECT_EQ(w[size_t(1 * 16 + k)], row1[k]) << k;
  }
  for (int n = 2; n < 8; ++n)
    for (int k = 0; k < 16; ++k) {
      // Group 0: code n, zero n + 1, scale 1. Group 1: code 2, zero 1, scale 2 (-1 for n = 7).
      double expected = k < 8 ? -1.0 : (n == 7 ? -1.0 : 2.0);
      EXPECT_EQ(w[size_t(n * 16 + k)], expected) << n << " " << k;
    }
  Expected<QuantizedMatrix> imported = importGptq(c);
  ASSERT_TRUE(imported.ok()) << imported.error();
  EXPECT_FALSE(imported->scheme.actOrder);
  EXPECT_EQ(imported->scheme.zeroFormat->name(), "uint4+1");
  expectImportAgrees(w, *imported);
}

TEST(Gptq, V2HasNoOffset) {
  GptqCheckpoint c = handBuiltGptq();
  c.zeroPointPlusOne = false;
  std::vector<double> w = *dequantizeGptq(c);
  const double row0[16] = {0, 1, 2, 3, 4, 5, 6, 7, 2, 4, 6, 8, 10, 12, 14, 16};
  for (int k = 0; k < 16; ++k)
    EXPECT_EQ(w[size_t(k)], row0[k]) << k;
  expectImportAgrees(w, *importGptq(c));
}

TEST(Gptq, ActOrderGroupIndex) {
  GptqCheckpoint c = handBuiltGptq();
  c.gIdx.resize(16);
  for (int k = 0; k < 16; ++k)
    c.gIdx[size_t(k)] = k % 2;
  std::vector<double> w = *dequantizeGptq(c);
  // Row 0, code k: even k use group 0 (z 1, s 1), odd k group 1 (z 8, s 2).
  const double row0[16] = {-1, -14, 1, -10, 3, -6, 5, -2, 7, 2, 9, 6, 11, 10, 13, 14};
  for (int k = 0; k < 16; ++k)
    EXPECT_EQ(w[size_t(k)], row0[k]) << k;
  QuantizedMatrix imported = *importGptq(c);
  EXPECT_TRUE(imported.scheme.actOrder);
  EXPECT_EQ(imported.groupIndex, c.gIdx);
  expectImportAgrees(w, imported);
  c.gIdx[3] = 2;
  Expected<QuantizedMatrix> bad = importGptq(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("g_idx[3] = 2 is outside [0, 2)"), std::string::npos);
}

TEST(Gptq, TwoBitPerChannel) {
  GptqCheckpoint c;
  c.bits = 2;
  c.inFeatures = 16;
  c.outFeatures = 16;
  c.groupSize = -1;
  c.qweight.assign(16, 0);
  c.qweight[0] = int32_t(0xE4E4E4E4u); // 0xE4 = 0b11'10'01'00: codes 0, 1, 2, 3, ...
  c.qzeros = {0x00000001};              // column 0 stores 1 -> z = 2; the rest z = 1
  c.scales.assign(16, 0x3C00);
  std::vector<double> w = *dequantizeGptq(c);
  for (int k = 0; k < 16; ++k)
    EXPECT_EQ(w[size_t(k)], double(k % 4 - 2)) << k;
  EXPECT_EQ(w[size_t(1 * 16)], -1.0);
  QuantizedMatrix imported = *importGptq(c);
  EXPECT_EQ(imported.scheme.granularity, Granularity::PerChannel);
  expectImportAgrees(w, imported);
}

TEST(Gptq, RoundingOurValueToF16MatchesAutoGptqF16Arithmetic) {
  // AutoGPTQ evaluates scales * (q - z) in f16; the exact product rounded
  // once is that result.
  GptqCheckpoint c = handBuiltGptq();
  std::mt19937 rng(3);
  for (uint16_t &s : c.scales)
    s = uint16_t(0x2000 + rng() % 0x2000); // assorted normal f16 scales
  std::vector<double> w = *dequantizeGptq(c);
  std::vector<double> ours = *dequantize(*importGptq(c));
  for (int64_t n = 0; n < 8; ++n)
    for (int64_t k = 0; k < 16; ++k) {
      int64_t g = k / 8;
      uint32_t code = (uint32_t(c.qweight[size_t((k / 8) * 8 + n)]) >> (4 * (k % 8))) & 15;
      uint32_t zero = ((uint32_t(c.qzeros[size_t(g)]) >> (4 * n)) & 15) + 1;
      _Float16 scale;
      std::memcpy(&scale, &c.scales[size_t(g * 8 + n)], 2);
      _Float16 product = scale * _Float16(int(code) - int(zero));
      EXPECT_EQ(test::doubleToHalfBits(ours[size_t(n * 16 + k)]),
                test::doubleToHalfBits(double(product)));
      EXPECT_EQ(ours[size_t(n * 16 + k)], w[size_t(n * 16 + k)]);
    }
}

TEST(Gptq, RejectsMalformedCheckpoints) {
  GptqCheckpoint c = handBuiltGptq();
  c.bits = 3;
  Expected<QuantizedMatrix> three = importGptq(c);
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.error().find("GPTQ bits 3 is not supported"), std::string::npos);
  c = handBuiltGptq();
  c.qweight.pop_back();
  Expected<QuantizedMatrix> size = importGptq(c);
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().find("qweight has 15 elements; expected [K*bits/32][N] = 16"),
            std::string::npos)
      << size.error();
  c = handBuiltGptq();
  c.groupSize = 6;
  Expected<QuantizedMatrix> group = importGptq(c);
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.error().find("group size 6 does not divide K = 16"), std::string::npos);
  c = handBuiltGptq();
  c.scales[0] = 0x7C00; // +Inf
  Expected<QuantizedMatrix> inf = importGptq(c);
  ASSERT_FALSE(inf.ok());
  EXPECT_NE(inf.error().find("scales[0][0] is not finite"), std::string::npos);
}

// K = 4, N = 8, group 2.
AwqCheckpoint handBuiltAwq() {
  AwqCheckpoint c;
  c.inFeatures = 4;
  c.outFeatures = 8;
  c.groupSize = 2;
  // Nibble i of a word holds column [0, 2, 4, 6, 1, 3, 5, 7][i].
  c.qweight = {0x75316420,            // k 0: column n has code n
               0x01234567,            // k 1: nibble i = 7 - i
               0x00000000,            // k 2: all 0
               int32_t(0xFFFFFFFFu)}; // k 3: all 15
  c.qzeros = {0x11111111,  // group 0: z = 1 everywhere
              0x75316420}; // group 1: z = n
  c.scales.assign(16, 0x3C00);
  for (int n = 0; n < 8; ++n)
    c.scales[size_t(8 + n)] = 0x3800; // group 1: 0.5
  return c;
}

TEST(Awq, InterleavedNibblesHandDecoded) {
  AwqCheckpoint c = handBuiltAwq();
  std::vector<double> w = *dequantizeAwq(c);
  // k = 1: nibble i = 7 - i lands in column order[i], so columns 0..7 read
  // 7, 3, 6, 2, 5, 1, 4, 0.
  const double codesAtK1[8] = {7, 3, 6, 2, 5, 1, 4, 0};
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(w[size_t(n * 4 + 0)], n - 1.0) << n;
    EXPECT_EQ(w[size_t(n * 4 + 1)], codesAtK1[n] - 1.0) << n;
    EXPECT_EQ(w[size_t(n * 4 + 2)], 0.5 * (0 - n)) << n;
    EXPECT_EQ(w[size_t(n * 4 + 3)], 0.5 * (15 - n)) << n;
  }
  Expected<QuantizedMatrix> imported = importAwq(c);
  ASSERT_TRUE(imported.ok()) << imported.error();
  expectImportAgrees(w, *imported);
}

TEST(Awq, RejectsMalformedCheckpoints) {
  AwqCheckpoint c = handBuiltAwq();
  c.bits = 8;
  Expected<QuantizedMatrix> eight = importAwq(c);
  ASSERT_FALSE(eight.ok());
  EXPECT_NE(eight.error().find("AWQ bits 8 is not supported"), std::string::npos);
  c = handBuiltAwq();
  c.qzeros.push_back(0);
  Expected<QuantizedMatrix> size = importAwq(c);
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().find("qzeros has 3 elements"), std::string::npos);
}

// The dequantizer and the importer of one checkpoint both refuse it, with
// the same message.
template <typename Checkpoint>
void expectBothRefuse(const Checkpoint &c,
                      Expected<std::vector<double>> (*weights)(const Checkpoint &),
                      Expected<QuantizedMatrix> (*matrix)(const Checkpoint &),
                      const std::string &expected) {
  Expected<std::vector<double>> w = weights(c);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error(), expected);
  Expected<QuantizedMatrix> m = matrix(c);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), expected);
}

// Issue 19, hostile shapes. K = 274177 and N = 8 * 67280421310721 make
// K * (N / 8) = 2^64 + 1: wrapped, one qweight word matched, and the unpack
// loop over the real N segfaulted. N * K * 8 (the f64 result's bytes) is
// checked first now, for both entry points.
TEST(Awq, RejectsAShapeWhoseSizesWrap) {
  AwqCheckpoint c;
  c.inFeatures = 274177;
  c.outFeatures = 8 * int64_t(67280421310721);
  c.groupSize = 1;
  c.qweight = {0};
  c.qzeros = {0};
  c.scales.assign(8, 0x3C00);
  expectBothRefuse(c, dequantizeAwq, importAwq,
                   "AWQ shape N x K = 538243370485768 x 274177 (its f64 dequantize, N * K * 8 "
                   "bytes): 538243370485768 * 274177 * 8 does not fit in a 64-bit size");
}

// K = 8 * (2^54 + 1), N = 1024: K / 8 * N wraps to 1024, the tensors of a
// 1024-column checkpoint passed, and resizing g_idx to K threw std::bad_alloc
// out of a function that promises not to throw.
TEST(Gptq, RejectsAShapeWhoseSizesWrap) {
  GptqCheckpoint c;
  c.bits = 4;
  c.inFeatures = 8 * ((int64_t(1) << 54) + 1);
  c.outFeatures = 1024;
  c.groupSize = -1;
  c.qweight.assign(1024, 0);
  c.qzeros.assign(128, 0);
  c.scales.assign(1024, 0x3C00);
  expectBothRefuse(c, dequantizeGptq, importGptq,
                   "GPTQ shape N x K = 1024 x 144115188075855880 (its f64 dequantize, N * K * 8 "
                   "bytes): 1024 * 144115188075855880 * 8 does not fit in a 64-bit size");
}

// A shape that fits but is larger than the tensors: the size check, which
// comes before any allocation, refuses it.
TEST(Gptq, RejectsAShapeLargerThanItsTensorsBeforeAllocating) {
  GptqCheckpoint c = handBuiltGptq();
  c.inFeatures = int64_t(1) << 40;
  Expected<std::vector<double>> w = dequantizeGptq(c);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().find("qweight has 16 elements; expected [K*bits/32][N] = 1099511627776"),
            std::string::npos)
      << w.error();
}

} // namespace
} // namespace lowbit::formats
