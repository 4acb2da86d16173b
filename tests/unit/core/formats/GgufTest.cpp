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

// Q5_K: Q4_K's fields, then qh[32] (bit 2c + h of qh[l] is bit 4 of weight
// 64c + 32h + l) before the same qs nibbles.
int q5kTestCode(int i) { return (i * 11 + i / 64) % 32; }

std::vector<uint8_t> q5kBlock(uint16_t d, uint16_t dmin) {
  std::vector<uint8_t> block(176, 0);
  putHalf(&block[0], d);
  putHalf(&block[2], dmin);
  std::memcpy(&block[4], kQ4kScaleBytes, 12);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const int first = q5kTestCode(64 * c + l), second = q5kTestCode(64 * c + 32 + l);
      block[size_t(48 + 32 * c + l)] = uint8_t((first & 15) | (second & 15) << 4);
      block[size_t(16 + l)] |= uint8_t((first >> 4) << (2 * c) | (second >> 4) << (2 * c + 1));
    }
  return block;
}

TEST(Gguf, Q5_KIntegerScales) {
  std::vector<float> y = decode(GgufType::Q5_K, q5kBlock(0x3C00, 0x3C00), 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(y[size_t(i)], float(kQ4kScales[i / 32] * q5kTestCode(i) - kQ4kMins[i / 32])) << i;
  EXPECT_EQ(y[3], 1.0f);      // code 33 % 32 = 1: 1 * 1 - 0
  EXPECT_EQ(y[255], 1511.0f); // code (2805 + 3) % 32 = 24 (bit 4 from qh): 63 * 24 - 1
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

// Q2_K: byte j of scales[16] is sub-block j's 4-bit scale (low nibble) and
// min (high); weight 128h + 32t + l is bits 2t..2t+1 of qs[32h + l]; d and
// dmin follow at bytes 80 and 82.
int q2kTestCode(int i) { return (i * 7 + i / 32) % 4; }
int q2kTestScale(int j) { return (j * 5 + 1) % 16; }
int q2kTestMin(int j) { return (j * 3 + 2) % 16; }

std::vector<uint8_t> q2kBlock(uint16_t d, uint16_t dmin) {
  std::vector<uint8_t> block(84, 0);
  for (int j = 0; j < 16; ++j)
    block[size_t(j)] = uint8_t(q2kTestScale(j) | q2kTestMin(j) << 4);
  for (int i = 0; i < 256; ++i)
    block[size_t(16 + 32 * (i / 128) + i % 32)] |= uint8_t(q2kTestCode(i) << (2 * ((i % 128) / 32)));
  putHalf(&block[80], d);
  putHalf(&block[82], dmin);
  return block;
}

TEST(Gguf, Q2_KIntegerScales) {
  std::vector<float> y = decode(GgufType::Q2_K, q2kBlock(0x3C00, 0x3C00), 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(y[size_t(i)], float(q2kTestScale(i / 16) * q2kTestCode(i) - q2kTestMin(i / 16)))
        << i;
  EXPECT_EQ(y[0], -2.0f);   // code 0: 1 * 0 - 2
  EXPECT_EQ(y[17], 13.0f);   // code 119 % 4 = 3, sub-block 1: 6 * 3 - 5
  EXPECT_EQ(y[255], -15.0f); // code 1792 % 4 = 0, sub-block 15: 12 * 0 - 15
}

TEST(Gguf, Q2_KBitIdenticalF32Arithmetic) {
  const uint16_t d = 0x2E66, dmin = 0x1A3D;
  std::vector<float> y = decode(GgufType::Q2_K, q2kBlock(d, dmin), 256);
  for (int i = 0; i < 256; ++i) {
    // llama.cpp: dl = d * (sc & 15); ml = dmin * (sc >> 4); y = dl * q - ml.
    float dl = halfValue(d) * float(q2kTestScale(i / 16));
    float ml = halfValue(dmin) * float(q2kTestMin(i / 16));
    float product = dl * float(q2kTestCode(i));
    EXPECT_EQ(bitsOf(y[size_t(i)]), bitsOf(product - ml)) << i;
  }
}

// Q3_K: hmask[32], qs[64], scales[12], d. Weight 128h + 32t + l has its low
// two bits where Q2_K has them and bit 2 in bit 4h + t of hmask[l]; its value
// is code - 4. Scale j is stored as s + 32: low nibble in byte j (j < 8) or
// the high nibble of byte j - 8, top two bits in byte 8 + j % 4 at 2 (j / 4).
const int kQ3kScales[16] = {-32, -1, 0, 1, 31, 7, -20, 15, 3, -8, 25, -13, 2, 30, -31, 9};

int q3kTestCode(int i) { return (i * 5 + i / 64) % 8; }

std::vector<uint8_t> q3kBlock(uint16_t d) {
  std::vector<uint8_t> block(110, 0);
  for (int i = 0; i < 256; ++i) {
    const int half = i / 128, quarter = (i % 128) / 32, l = i % 32, code = q3kTestCode(i);
    block[size_t(32 + 32 * half + l)] |= uint8_t((code & 3) << (2 * quarter));
    block[size_t(l)] |= uint8_t((code >> 2) << (4 * half + quarter));
  }
  for (int j = 0; j < 16; ++j) {
    const int stored = kQ3kScales[j] + 32;
    block[size_t(96 + j % 8)] |= uint8_t((stored & 15) << (j < 8 ? 0 : 4));
    block[size_t(96 + 8 + j % 4)] |= uint8_t((stored >> 4) << (2 * (j / 4)));
  }
  putHalf(&block[108], d);
  return block;
}

TEST(Gguf, Q3_KIntegerScales) {
  std::vector<float> y = decode(GgufType::Q3_K, q3kBlock(0x3C00), 256);
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(y[size_t(i)], float(kQ3kScales[i / 16] * (q3kTestCode(i) - 4))) << i;
  EXPECT_EQ(y[0], 128.0f);  // code 0: -32 * -4
  EXPECT_EQ(y[65], 62.0f);  // code 326 % 8 = 6, sub-block 4: 31 * (6 - 4)
}

TEST(Gguf, Q3_KBitIdenticalF32Arithmetic) {
  const uint16_t d = 0x2E66;
  std::vector<float> y = decode(GgufType::Q3_K, q3kBlock(d), 256);
  for (int i = 0; i < 256; ++i) {
    // llama.cpp: dl = d * (s - 32); y = dl * (q - (hmask bit ? 0 : 4)).
    float dl = halfValue(d) * float(kQ3kScales[i / 16]);
    EXPECT_EQ(bitsOf(y[size_t(i)]), bitsOf(dl * float(q3kTestCode(i) - 4))) << i;
  }
}

// Random blocks (finite f16 fields) through importGguf: our f64 decode,
// rounded to f32, is llama.cpp's f32 decode.
TEST(Gguf, ImportAgreesWithF32Decode) {
  std::mt19937 rng(5);
  auto finiteHalf = [&]() { return uint16_t((rng() & 0x83FF) | ((rng() % 30) << 10)); };
  for (GgufType type : kGgufTypes) {
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
      } else if (type == GgufType::Q3_K) {
        putHalf(block + 108, finiteHalf());
      } else if (type == GgufType::Q2_K) {
        putHalf(block + 80, finiteHalf());
        putHalf(block + 82, finiteHalf());
      } else {
        putHalf(block, finiteHalf());
        if (type == GgufType::Q4_K || type == GgufType::Q5_K)
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

// Issue 19, hostile shapes. rows * cols = 274177 * (32 * 67280421310721)
// is 2^64 + 32: wrapped, it matched one 18-byte block, and AddressSanitizer
// saw the import read past the buffer. The product is checked now.
TEST(Gguf, RejectsAShapeWhoseElementCountWraps) {
  std::vector<uint8_t> block(18, 0x88);
  putHalf(block.data(), 0x3C00);
  const int64_t rows = 274177, cols = 32 * int64_t(67280421310721);
  Expected<QuantizedMatrix> m = importGguf(GgufType::Q4_0, block.data(), block.size(), rows, cols);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), "GGUF Q4_0 tensor 274177 x 2152973481943072: element count rows * cols: "
                       "274177 * 2152973481943072 does not fit in a 64-bit size");
}

// The release-build variant: 5 * 7378697629484193472 wraps to 58254 blocks,
// exactly a 1 MiB - 4 byte buffer, which the import then took for a 5-row
// matrix and dequantize() read far past.
TEST(Gguf, RejectsAWrappedShapeThatMatchesTheBuffer) {
  std::vector<uint8_t> data(58254 * 18, 0x88);
  for (size_t b = 0; b < 58254; ++b)
    putHalf(&data[b * 18], 0x3C00);
  Expected<QuantizedMatrix> m =
      importGguf(GgufType::Q4_0, data.data(), data.size(), 5, int64_t(7378697629484193472));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("5 * 7378697629484193472 does not fit in a 64-bit size"),
            std::string::npos)
      << m.error();
}

// A shape that does not wrap but needs far more bytes than the file holds
// (here 2^40 blocks, 19 TB, against 18 bytes) is refused by the size check,
// before anything is allocated for it: no out-of-memory error, no throw.
TEST(Gguf, RejectsAShapeLargerThanTheDataBeforeAllocating) {
  std::vector<uint8_t> block(18, 0);
  Expected<QuantizedMatrix> m = importGguf(GgufType::Q4_0, block.data(), block.size(), 1,
                                           int64_t(32) << 40, "blk.0.attn_q.weight");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), "GGUF tensor 'blk.0.attn_q.weight' (Q4_0, 1 x 35184372088832): Q4_0 data "
                       "has 18 bytes; 35184372088832 weights need 19791209299968");
  // 2^58 - 1 blocks of 32 weights fit in int64; their 34 bytes each do not.
  Expected<std::vector<float>> f32 = dequantizeGgufF32(GgufType::Q8_0, block.data(), block.size(),
                                                       32 * ((int64_t(1) << 58) - 1));
  ASSERT_FALSE(f32.ok());
  EXPECT_NE(f32.error().find("data size (blocks * bytes per block): 288230376151711743 * 34 does "
                             "not fit in a 64-bit size"),
            std::string::npos)
      << f32.error();
}

// A d of +Inf made every weight of its block Inf or NaN (Inf * 0) without an
// error; Quantize.h promises never a silent NaN. Each type's d (and Q4_K's
// dmin), Inf or NaN, is refused with the tensor, the block and the field.
TEST(Gguf, RejectsNonFiniteBlockScales) {
  std::vector<uint8_t> q4(2 * 18, 0x88);
  putHalf(&q4[0], 0x3C00);
  putHalf(&q4[18], 0x7C00); // block 1: d = +Inf
  Expected<QuantizedMatrix> inf =
      importGguf(GgufType::Q4_0, q4.data(), q4.size(), 1, 64, "blk.3.ffn_down.weight");
  ASSERT_FALSE(inf.ok());
  EXPECT_EQ(inf.error(), "GGUF tensor 'blk.3.ffn_down.weight' (Q4_0, 1 x 64): block 1 (row 0, "
                         "columns 32..63) has d = +Inf (f16 0x7c00); a block's scales must be "
                         "finite, or its weights dequantize to NaN or Inf");
  Expected<std::vector<float>> f32 = dequantizeGgufF32(GgufType::Q4_0, q4.data(), q4.size(), 64);
  ASSERT_FALSE(f32.ok());
  EXPECT_NE(f32.error().find("block 1 (weights 32..63) has d = +Inf"), std::string::npos)
      << f32.error();

  std::vector<uint8_t> q8(2 * 34, 0);
  putHalf(&q8[34], 0xFE00); // block 1 of 2, row 1 of 2: d = NaN
  Expected<QuantizedMatrix> nan = importGguf(GgufType::Q8_0, q8.data(), q8.size(), 2, 32);
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.error().find("GGUF Q8_0 tensor 2 x 32: block 1 (row 1, columns 0..31) has d = "
                             "NaN (f16 0xfe00)"),
            std::string::npos)
      << nan.error();

  std::vector<uint8_t> q4k = q4kBlock(0x3C00, 0x7E00); // dmin = NaN
  Expected<QuantizedMatrix> dmin = importGguf(GgufType::Q4_K, q4k.data(), q4k.size(), 1, 256);
  ASSERT_FALSE(dmin.ok());
  EXPECT_NE(dmin.error().find("block 0 (row 0, columns 0..255) has dmin = NaN"), std::string::npos)
      << dmin.error();

  std::vector<uint8_t> q6k = q6kBlock(0xFC00); // d = -Inf
  Expected<QuantizedMatrix> negative = importGguf(GgufType::Q6_K, q6k.data(), q6k.size(), 1, 256);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().find("has d = -Inf (f16 0xfc00)"), std::string::npos)
      << negative.error();
}

} // namespace
} // namespace lowbit::formats
