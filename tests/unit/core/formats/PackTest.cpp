#include "core/formats/Pack.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace lowbit::formats {
namespace {

PackedCodes packOrDie(const std::vector<uint8_t> &codes, int64_t rows, int64_t cols,
                      const PackLayout &layout) {
  Expected<PackedCodes> packed = pack(codes.data(), rows, cols, layout);
  EXPECT_TRUE(packed.ok()) << packed.error();
  return packed.ok() ? *packed : PackedCodes{};
}

TEST(Pack, HandCheckedWords) {
  std::vector<uint8_t> codes = {1, 2, 3, 4, 5, 6, 7, 8};
  PackLayout lsb{4, Container::U32, BitOrder::LsbFirst, false, {}};
  EXPECT_EQ(packOrDie(codes, 1, 8, lsb).container(0), 0x87654321u);
  PackLayout msb{4, Container::U32, BitOrder::MsbFirst, false, {}};
  EXPECT_EQ(packOrDie(codes, 1, 8, msb).container(0), 0x12345678u);
  PackLayout bytes{4, Container::U8, BitOrder::LsbFirst, false, {}};
  PackedCodes asBytes = packOrDie(codes, 1, 8, bytes);
  EXPECT_EQ(asBytes.bytes, (std::vector<uint8_t>{0x21, 0x43, 0x65, 0x87}));
  // Little-endian storage: the u32 word's low byte comes first.
  EXPECT_EQ(packOrDie(codes, 1, 8, lsb).bytes, asBytes.bytes);
  // AWQ's interleave: nibble i holds code order[i].
  std::vector<uint8_t> identity = {0, 1, 2, 3, 4, 5, 6, 7};
  PackLayout awq{4, Container::U32, BitOrder::LsbFirst, false, {0, 2, 4, 6, 1, 3, 5, 7}};
  EXPECT_EQ(packOrDie(identity, 1, 8, awq).container(0), 0x75316420u);
  // 2-bit codes, 16 per word.
  std::vector<uint8_t> twoBit(16, 0);
  twoBit[0] = 3, twoBit[15] = 1;
  PackLayout two{2, Container::U32, BitOrder::LsbFirst, false, {}};
  EXPECT_EQ(packOrDie(twoBit, 1, 16, two).container(0), 0x40000003u);
}

TEST(Pack, ThreeBitWithAndWithoutStraddling) {
  std::vector<uint8_t> ones(11, 7);
  PackLayout whole{3, Container::U32, BitOrder::LsbFirst, false, {}};
  PackedCodes a = packOrDie(ones, 1, 11, whole);
  ASSERT_EQ(a.containersPerRow, 2);
  EXPECT_EQ(a.container(0), 0x3FFFFFFFu); // ten codes, top two bits unused
  EXPECT_EQ(a.container(1), 0x7u);
  PackLayout stream{3, Container::U32, BitOrder::LsbFirst, true, {}};
  PackedCodes b = packOrDie(ones, 1, 11, stream);
  ASSERT_EQ(b.containersPerRow, 2); // 33 bits
  EXPECT_EQ(b.container(0), 0xFFFFFFFFu);
  EXPECT_EQ(b.container(1), 0x1u);
  // Code 10 = 0b101 straddles: its low two bits end word 0 (bits 30, 31) and
  // its top bit starts word 1.
  std::vector<uint8_t> one(11, 0);
  one[10] = 0b101;
  PackedCodes c = packOrDie(one, 1, 11, stream);
  EXPECT_EQ(c.container(0), 0x40000000u);
  EXPECT_EQ(c.container(1), 0x1u);
}

TEST(Pack, RoundTripsEveryLayout) {
  std::mt19937 rng(11);
  for (int bits = 1; bits <= 8; ++bits)
    for (Container container : {Container::U8, Container::U32})
      for (BitOrder order : {BitOrder::LsbFirst, BitOrder::MsbFirst})
        for (bool straddle : {false, true}) {
          if (bits > containerBits(container))
            continue;
          const int64_t rows = 3, cols = 37; // odd, so rows end mid-container
          std::vector<uint8_t> codes(size_t(rows * cols));
          for (uint8_t &c : codes)
            c = uint8_t(rng() & ((1u << bits) - 1));
          PackLayout layout{bits, container, order, straddle, {}};
          PackedCodes packed = packOrDie(codes, rows, cols, layout);
          Expected<std::vector<uint8_t>> back = unpack(packed);
          ASSERT_TRUE(back.ok()) << back.error();
          EXPECT_EQ(*back, codes) << bits << " bits";
        }
  std::vector<uint8_t> codes(64);
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = uint8_t(i % 16);
  PackLayout awq{4, Container::U32, BitOrder::MsbFirst, false, {0, 2, 4, 6, 1, 3, 5, 7}};
  EXPECT_EQ(*unpack(packOrDie(codes, 2, 32, awq)), codes);
}

TEST(Pack, RejectsWhatDoesNotFit) {
  std::vector<uint8_t> codes = {1, 16};
  PackLayout four{4, Container::U32, BitOrder::LsbFirst, false, {}};
  Expected<PackedCodes> wide = pack(codes.data(), 1, 2, four);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().find("code 16 at (0, 1) does not fit in 4 bits"), std::string::npos);
  PackLayout badPermutation{4, Container::U32, BitOrder::LsbFirst, false, {0, 1, 2, 3, 4, 5, 6, 6}};
  Expected<PackedCodes> perm = pack(codes.data(), 1, 1, badPermutation);
  ASSERT_FALSE(perm.ok());
  EXPECT_NE(perm.error().find("not a permutation of 0..7"), std::string::npos);
  PackLayout shortPermutation{4, Container::U8, BitOrder::LsbFirst, false, {0, 1, 2}};
  Expected<PackedCodes> size = pack(codes.data(), 1, 1, shortPermutation);
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().find("slot permutation has 3 entries; a 8-bit container holds 2"),
            std::string::npos)
      << size.error();
  PackedCodes packed = *pack(codes.data(), 1, 1, four);
  packed.bytes[3] = 0x80; // a padding bit
  Expected<std::vector<uint8_t>> dirty = unpack(packed);
  ASSERT_FALSE(dirty.ok());
  EXPECT_NE(dirty.error().find("padding bits in row 0"), std::string::npos);
}

// Shapes are the caller's: a count of codes or of packed bytes that wraps is
// refused before anything is allocated or read.
TEST(Pack, RejectsShapesWhoseSizesWrap) {
  uint8_t code = 0;
  PackLayout four{4, Container::U32, BitOrder::LsbFirst, false, {}};
  Expected<PackedCodes> wide = pack(&code, int64_t(1) << 33, int64_t(1) << 33, four);
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.error(), "pack: 8589934592 x 8589934592 codes: rows * cols: 8589934592 * "
                          "8589934592 does not fit in a 64-bit size");
  PackLayout straddle{3, Container::U32, BitOrder::LsbFirst, true, {}};
  EXPECT_EQ(containersPerRow(straddle, int64_t(1) << 62), -1);
  EXPECT_EQ(containersPerRow(four, std::numeric_limits<int64_t>::max()),
            std::numeric_limits<int64_t>::max() / 8 + 1);
  Expected<PackedCodes> bits = pack(&code, 1, int64_t(1) << 62, straddle);
  ASSERT_FALSE(bits.ok());
  EXPECT_NE(bits.error().find("a row's 3-bit codes overflow a 64-bit bit count"),
            std::string::npos)
      << bits.error();
  // 2^61 rows of one u32 container: 2^63 bytes, which wrapped to a negative
  // size and matched nothing; now it is named.
  PackedCodes packed;
  packed.layout = four;
  packed.rows = int64_t(1) << 61;
  packed.cols = 1;
  packed.containersPerRow = 1;
  Expected<std::vector<uint8_t>> back = unpack(packed);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().find("unpack: 2305843009213693952 x 1 codes: packed bytes"),
            std::string::npos)
      << back.error();
}

} // namespace
} // namespace lowbit::formats
