// GGUF blocks assembled by hand from llama.cpp's block definitions, with
// known codes, scales and mins, checked element by element.
#include "core/formats/Gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace lowbit::formats {
namespace {

void putHalf(uint8_t *p, uint16_t bits) {
  p[0] = uint8_t(bits & 0xFF);
  p[1] = uint8_t(bits >> 8);
}

float halfValue(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return float(h);
}

std::vector<float> decode(GgufType type, const std::vector<uint8_t> &data, int64_t count) {
  Expected<std::vector<float>> out = dequantizeGgufF32(type, data.data(), data.size(), count);
  EXPECT_TRUE(out.ok()) << out.error();
  return out.ok() ? *out : std::vector<float>(size_t(count));
}

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(Gguf, Q4_0) {
  std::vector<uint8_t> block(18);
  putHalf(block.data(), 0x3800); // d = 0.5
  for (int j = 0; j < 16; ++j)
    block[size_t(2 + j)] = uint8_t(j | ((15 - j) << 4));
  std::vector<float> y = decode(GgufType::Q4_0, block, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[size_t(j)], (j - 8) * 0.5f) << j;
    EXPECT_EQ(y[size_t(j + 16)], (7 - j) * 0.5f) << j;
  }
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[31], -4.0f);
}

TEST(Gguf, Q8_0) {
  std::vector<uint8_t> block(34);
  putHalf(block.data(), 0x4000); // d = 2
  for (int j = 0; j < 32; ++j)
    block[size_t(2 + j)] = uint8_t(int8_t(8 * j - 128));
  std::vector<float> y = decode(GgufType::Q8_0, block, 32);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(y[size_t(j)], 2.0f * float(8 * j - 128)) << j;
  EXPECT_EQ(y[0], -256.0f);
  EXPECT_EQ(y[31], 240.0f);
}

// The eight 6-bit scales and mins below, packed by hand into Q4_K's 12 bytes:
//   bytes 0-3  = sc0..3 | (sc4..7 >> 4) << 6
//   bytes 4-7  = m0..3  | (m4..7 >> 4) << 6
//   bytes 8-11 = (sc4..7 & 15) | (m4..7 & 15) << 4
const int kQ4kScales[8] = {1, 2, 3, 4, 33, 45, 50, 63};
const int kQ4kMins[8] = {0, 5, 10, 63, 17, 32, 48, 1};
const uint8_t kQ4kScaleBytes[12] = {0x81, 0x82, 0xC3, 0xC4, 0x40, 0x85,
                                    0xCA, 0x3F, 0x11, 0x0D, 0x02, 0x1F};

int q4kTestCode(int i) { return (i * 7 + i / 32) % 16; }

std::vector<uint8_t> q4kBlock(uint16_t d, uint16_t dmin) {
  std::vector<uint8_t> block(144, 0);
  putHalf(&block[0], d);
  putHalf(&block[2], dmin);
  std::memcpy(&block[4], kQ4kScaleBytes, 12);
  // Chunk c of 64 weights: byte 32c + l has weight 64c + l in its low nibble
  // and weight 64c + 32 + l in its high nibble.
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      block[size_t(16 + 32 * c + l)] =
          uint8_t(q4kTestCode(64 * c + l) | (q4kTestCode(64 * c + 32 + l) << 4));
  return block;
}

TEST(Gguf, Q4_KIntegerScales) {
  std::vector<float> y = decode(GgufType::Q4_K, q4kBlock(0x3C00, 0x3C00), 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(y[size_t(i)], float(kQ4kScales[i / 32] * q4kTestCode(i) - kQ4kMins[i / 32])) << i;
  EXPECT_EQ(y[0], 0.0f);     // 1 * 0 - 0
  EXPECT_EQ(y[33], 11.0f);   // code 8: 2 * 8 - 5
  EXPECT_EQ(y[200], 652.0f); // code 14: 50 * 14 - 48
  EXPECT_EQ(y[255], -1.0f);  // code 0: 63 * 0 - 1
}

TEST(Gguf, Q4_KBitIdenticalF32Arithmetic) {
  const uint16_t d = 0x2E66, dmin = 0x1A3D;
  std::vector<float> y = decode(GgufType::Q4_K, q4kBlock(d, dmin), 256);
  for (int i = 0; i < 256; ++i) {
    // llama.cpp: d1 = d * sc; m1 = dmin * m; y = d1 * q - m1, all in f32.
    float d1 = halfValue(d) * float(kQ4kScales[i / 32]);
    float m1 = halfValue(dmin) * float(kQ4kMins[i / 32]);
    float product = d1 * float(q4kTestCode(i));
    float expected = product - m1;
    EXPECT_EQ(bitsOf(y[size_t(i)]), bitsOf(expected)) << i;
  }
}

const int kQ6kScales[16] = {-20, 7, 127, -128, 1, 0, 33, -5, 64, 12, -90, 3, 45, -1, 100, 2};

int q6kTestCode(int i) { return (i * 11 + i / 64) % 64; }

std::vector<uint8_t> q6kBlock(uint16_t d) {
  std::vector<uint8_t> block(210, 0);
  uint8_t *ql = &block[0], *qh = &block[128];
  // Half h, lane l: four weights 128h + 32t + l (t = 0..3) share qh[32h + l]
  // (two bits each, t-th pair) and two ql bytes (t = 0, 2 in ql[64h + l],
  // t = 1, 3 in ql[64h + 32 + l]; low nibble for t < 2).
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      int q[4];
      for (int t = 0; t < 4; ++t)
        q[t] = q6kTestCode(128 * h + 32 * t + l);
      ql[64 * h + l] = uint8_t((q[0] & 15) | ((q[2] & 15) << 4));
      ql[64 * h + 32 + l] = uint8_t((q[1] & 15) | ((q[3] & 15) << 4));
      qh[32 * h + l] = uint8_t((q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) |
                               ((q[3] >> 4) << 6));
    }
  for (int j = 0; j < 16; ++j)
    block[size_t(192 + j)] = uint8_t(int8_t(kQ6kScales[j]));
  putHalf(&block[208], d);
  return block;
}

TEST(Gguf, Q6_KIntegerScales) {
  std::vector<float> y = decode(GgufType::Q6_K, q6kBlock(0x3C00), 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(y[size_t(i)], float(kQ6kScales[i / 16] * (q6kTestCode(i) - 32))) << i;
  EXPECT_EQ(y[0], 640.0f);    // code 0: -20 * -32
  EXPECT_EQ(y[17], 189.0f);   // code 59: 7 * 27
  EXPECT_EQ(y[40], 3048.0f);  // code 56: 127 * 24
  EXPECT_EQ(y[255], 48.0f);   // code 56: 2 * 24
}

TEST(Gguf, Q6_KBitIdenticalF32Arithmetic) {
  const uint16_t d = 0x2E66;
  std::vector<float> y = decode(GgufType::Q6_K, q6kBlock(d), 256);
  for (int i = 0; i < 256; ++i) {
    // llama.cpp: y = d * sc * (q - 32), left to right in f32.
    float scaled = halfValue(d) * float(kQ6kScales[i / 16]);
    float expected = scaled * float(q6kTestCode(i) - 32);
    EXPECT_EQ(bitsOf(y[size_t(i)]), bitsOf(expected)) << i;
  }
}

// Random blocks (finite f16 fields) through importGguf: our f64 decode,
// rounded to f32, is llama.cpp's f32 decode.
TEST(Gguf, ImportAgreesWithF32Decode) {
  std::mt19937 rng(5);
  auto finiteHalf = [&]() { return uint16_t((rng() & 0x83FF) | ((rng() % 30) << 10)); };
  for (GgufType type : {GgufType::Q4_0, GgufType::Q8_0, GgufType::Q4_K, GgufType::Q6_K}) {
    GgufBlockShape shape = *ggufBlockShape(type);
    const int64_t rows = 3, cols = 512;
    const int64_t blocks = rows * cols / shape.weights;
    std::vector<uint8_t> data(size_t(blocks * shape.bytes));
    for (uint8_t &b : data)
      b = uint8_t(rng());
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t *block = &data[size_t(b * shape.bytes)];
      if (type == GgufType::Q6_K) {
        putHalf(block + 208, finiteHalf());
      } else {
        putHalf(block, finiteHalf());
        if (type == GgufType::Q4_K)
          putHalf(block + 2, finiteHalf());
      }
    }
    std::vector<float> reference = decode(type, data, rows * cols);
    Expected<QuantizedMatrix> imported = importGguf(type, data.data(), data.size(), rows, cols);
    ASSERT_TRUE(imported.ok()) << ggufTypeName(type) << ": " << imported.error();
    std::vector<double> ours = *dequantize(*imported);
    for (size_t i = 0; i < ours.size(); ++i)
      ASSERT_EQ(bitsOf(float(ours[i])), bitsOf(reference[i])) << ggufTypeName(type) << " " << i;
  }
}

TEST(Gguf, RejectsMalformedData) {
  std::vector<uint8_t> data(143);
  Expected<std::vector<float>> shortBlock =
      dequantizeGgufF32(GgufType::Q4_K, data.data(), data.size(), 256);
  ASSERT_FALSE(shortBlock.ok());
  EXPECT_NE(shortBlock.error().find("Q4_K data has 143 bytes; 256 weights need 144"),
            std::string::npos);
  std::vector<uint8_t> rows(144 * 2);
  Expected<QuantizedMatrix> ragged = importGguf(GgufType::Q4_K, rows.data(), rows.size(), 4, 128);
  ASSERT_FALSE(ragged.ok());
  EXPECT_NE(ragged.error().find("K = 128 is not a multiple"), std::string::npos);
  Expected<GgufType> q5 = ggufTypeFromId(6);
  ASSERT_FALSE(q5.ok());
  EXPECT_NE(q5.error().find("GGUF tensor type 6 is not supported"), std::string::npos);
  EXPECT_EQ(*ggufTypeFromId(12), GgufType::Q4_K);
}

} // namespace
} // namespace lowbit::formats
