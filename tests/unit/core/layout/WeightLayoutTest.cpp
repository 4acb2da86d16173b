#include "core/layout/WeightLayout.h"

#include <gtest/gtest.h>

#include <random>

using namespace lowbit::layout;

namespace {

int log2Of(int value) {
  int bits = 0;
  while ((1 << bits) < value)
    ++bits;
  return bits;
}

// A uniformly random bijective code order for a tileN x tileK tile, built the
// way the compiler hands it over: as a LinearLayout {n, k} -> {offset}.
WeightLayout randomWeightLayout(std::mt19937_64 &rng, int codeBits, int tileN, int tileK) {
  const int nBits = log2Of(tileN), kBits = log2Of(tileK), total = nBits + kBits;
  for (;;) {
    std::vector<std::vector<std::vector<uint32_t>>> basis(2);
    for (int bit = 0; bit < total; ++bit)
      basis[bit < nBits ? 0 : 1].push_back({uint32_t(rng()) & ((1u << total) - 1)});
    auto linear = LinearLayout::create({{"n", nBits}, {"k", kBits}}, {{"offset", total}}, basis);
    EXPECT_TRUE(linear.ok()) << linear.error();
    if (!linear->isInjective())
      continue;
    auto layout = weightLayoutFromLinear(*linear, codeBits);
    EXPECT_TRUE(layout.ok()) << layout.error();
    return *layout;
  }
}

std::vector<uint8_t> randomCodes(std::mt19937_64 &rng, int64_t count, int codeBits) {
  std::vector<uint8_t> codes(static_cast<size_t>(count));
  for (uint8_t &code : codes)
    code = uint8_t(rng() & ((1u << codeBits) - 1));
  return codes;
}

// The storage rule exactly as WeightLayout.h words it, one element at a time:
// tile index k-tile fastest, offset = XOR of basis bits, code o in 32-bit word
// o / (32 / bits) at bit (o % (32 / bits)) * bits, words little-endian. Needs
// tiles of whole words.
std::vector<uint8_t> referencePack(const WeightLayout &layout, int64_t n, int64_t k,
                                   const std::vector<uint8_t> &codes) {
  const int perWord = 32 / layout.codeBits;
  const int64_t tileWords = int64_t(layout.tileN) * layout.tileK / perWord;
  const int nBits = log2Of(layout.tileN);
  std::vector<uint32_t> words(size_t(n * k / perWord), 0);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < k; ++col) {
      const int64_t tile = (row / layout.tileN) * (k / layout.tileK) + col / layout.tileK;
      const uint32_t local = uint32_t(row % layout.tileN) | uint32_t(col % layout.tileK) << nBits;
      uint32_t offset = 0;
      for (size_t bit = 0; bit < layout.basis.size(); ++bit)
        if ((local >> bit) & 1)
          offset ^= layout.basis[bit];
      words[size_t(tile * tileWords + offset / perWord)] |=
          uint32_t(codes[size_t(row * k + col)]) << ((offset % perWord) * layout.codeBits);
    }
  std::vector<uint8_t> bytes;
  for (uint32_t word : words)
    for (int byte = 0; byte < 4; ++byte)
      bytes.push_back(uint8_t(word >> (8 * byte)));
  return bytes;
}

// 3, 5 and 6 bits as WeightLayout.h words it: the low plane is exactly the
// packing of the low bits as lowBits-wide codes; the high plane follows, the
// high part of the code at tile offset o at its unit's run (o / 32 of its
// tile) plus highPlaneBit.
std::vector<uint8_t> referencePlanePack(const WeightLayout &layout, int64_t n, int64_t k,
                                        const std::vector<uint8_t> &codes) {
  const CodePlanes planes = codePlanes(layout.codeBits);
  WeightLayout low = layout;
  low.codeBits = planes.lowBits;
  std::vector<uint8_t> lowCodes(codes.size());
  for (size_t i = 0; i < codes.size(); ++i)
    lowCodes[i] = uint8_t(codes[i] & ((1u << planes.lowBits) - 1));
  std::vector<uint8_t> packed = referencePack(low, n, k, lowCodes);
  const int64_t lowBits = int64_t(packed.size()) * 8;
  packed.resize(size_t(n * k * layout.codeBits / 8), 0);
  const int nBits = log2Of(layout.tileN), kBits = log2Of(layout.tileK);
  const int64_t tileCodes = int64_t(layout.tileN) * layout.tileK, tilesK = k / layout.tileK;
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < k; ++col) {
      const int64_t nl = row % layout.tileN, kl = col % layout.tileK;
      uint32_t offset = 0;
      for (int b = 0; b < nBits; ++b)
        if (nl >> b & 1)
          offset ^= layout.basis[size_t(b)];
      for (int b = 0; b < kBits; ++b)
        if (kl >> b & 1)
          offset ^= layout.basis[size_t(nBits + b)];
      const int64_t tile = (row / layout.tileN) * tilesK + col / layout.tileK;
      const int64_t bit = lowBits + (tile * tileCodes + offset / 32 * 32) * planes.highBits +
                          highPlaneBit(layout.codeBits, int(offset % 32));
      packed[size_t(bit / 8)] |= uint8_t((codes[size_t(row * k + col)] >> planes.lowBits)
                                         << (bit % 8));
    }
  return packed;
}

void expectError(const lowbit::Status &status, const std::string &fragment) {
  ASSERT_FALSE(status.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(status.error().find(fragment), std::string::npos) << status.error();
}

void expectParseError(const std::string &text, const std::string &fragment) {
  auto parsed = parseWeightLayout(text);
  ASSERT_FALSE(parsed.ok()) << "parsed: " << text;
  EXPECT_NE(parsed.error().find(fragment), std::string::npos) << parsed.error();
}

// offset(n, k) = n + 2k: the two rows interleave code by code.
const WeightLayout kInterleave2x8{4, 2, 8, {1, 2, 4, 8}};

} // namespace

TEST(WeightLayout, SerializeParseRoundTrip) {
  EXPECT_EQ(serialize(kInterleave2x8), "lbwl1;bits=4;tile=2x8;basis=1,2,4,8");
  std::mt19937_64 rng(10);
  for (int codeBits : {1, 2, 4, 8})
    for (int trial = 0; trial < 5; ++trial) {
      WeightLayout layout = randomWeightLayout(rng, codeBits, 64, 16);
      auto parsed = parseWeightLayout(serialize(layout));
      ASSERT_TRUE(parsed.ok()) << parsed.error();
      EXPECT_EQ(*parsed, layout);
      EXPECT_EQ(layoutId(*parsed), layoutId(layout));
    }
  // A 1x1 tile has an empty basis.
  auto single = parseWeightLayout("lbwl1;bits=8;tile=1x1;basis=");
  ASSERT_TRUE(single.ok()) << single.error();
  EXPECT_TRUE(single->basis.empty());
}

TEST(WeightLayout, LayoutIdIsStableFnv1a) {
  // Pinned: packed weights on disk carry this id, so it must never change.
  EXPECT_EQ(layoutId(kInterleave2x8), "f3ad8d236b280ef4");
  WeightLayout other = kInterleave2x8;
  std::swap(other.basis[1], other.basis[2]);
  EXPECT_NE(layoutId(other), layoutId(kInterleave2x8));
  EXPECT_EQ(layoutId(other).size(), 16u);
}

TEST(WeightLayout, ParseRejectsMalformedText) {
  expectParseError("", "expected the version tag 'lbwl1'");
  expectParseError("garbage", "starts with 'garbage'");
  expectParseError("lbwl2;bits=4;tile=2x8;basis=1,2,4,8", "expected the version tag");
  expectParseError("lbwl1;bits=4;tile=2x8", "has 3 ';'-separated fields, expected 4");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,2,4,8;", "has 5 ';'-separated fields");
  expectParseError("lbwl1;tile=2x8;bits=4;basis=1,2,4,8", "field 2 is 'tile=2x8'");
  expectParseError("lbwl1;bits=x;tile=2x8;basis=1,2,4,8", "bits='x' is not a code width");
  expectParseError("lbwl1;bits=04;tile=2x8;basis=1,2,4,8", "bits='04'");
  expectParseError("lbwl1;bits=0;tile=2x8;basis=1,2,4,8", "codeBits is 0");
  expectParseError("lbwl1;bits=7;tile=2x8;basis=1,2,4,8",
                   "codeBits 7 is not supported: it neither divides 32 nor splits into two planes");
  expectParseError("lbwl1;bits=4;tile=2x;basis=1,2,4,8", "tile='2x' is not <tileN>x<tileK>");
  expectParseError("lbwl1;bits=4;tile=2*8;basis=1,2,4,8", "tile='2*8'");
  expectParseError("lbwl1;bits=4;tile=6x8;basis=1,2,4,8", "must be powers of two");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,2,4", "basis has 3 entries; a 2x8 tile needs 4");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,2,4,8,16", "basis has 5 entries");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,2,,8", "basis entry '' is not");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,2,4,8,", "basis entry ''");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1, 2,4,8", "basis entry ' 2'");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,+2,4,8", "basis entry '+2'");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,2,4,16", "k[2] = 16 is not a code offset");
}

TEST(WeightLayout, ParseRejectsNonBijections) {
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,2,4,2",
                   "basis entries k[0] and k[2] are both 2 (duplicated offset), so the layout "
                   "is not a bijection");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,0,4,8", "basis entry k[0] is 0");
  expectParseError("lbwl1;bits=4;tile=2x8;basis=1,2,3,8", "basis entries {n[0], k[0], k[1]} XOR");
}

TEST(WeightLayout, ValidateRejectsOddTilesAndWidths) {
  expectError(validateWeightLayout({7, 1, 32, {1, 2, 4, 8, 16}}), "neither divides 32");
  // Two-plane codes place a unit's high bits together: a tile holds units.
  expectError(validateWeightLayout({6, 1, 16, {1, 2, 4, 8}}), "fewer than the 32 codes of a unit");
  expectError(validateWeightLayout({9, 1, 1, {}}), "codes have 1..8 bits");
  expectError(validateWeightLayout({4, 1, 1, {}}), "not a whole number of bytes");
  expectError(validateWeightLayout({4, 0, 8, {}}), "must be powers of two");
  expectError(validateWeightLayout({4, 1 << 13, 1 << 12, {}}), "more than 2^24 codes");
}

TEST(WeightLayout, FromLinearTakesEitherDimOrder) {
  // offset = n + 2k, given as {k, n} -> {offset}.
  auto linear = LinearLayout::create({{"k", 3}, {"n", 1}}, {{"offset", 4}},
                                     {{{2}, {4}, {8}}, {{1}}});
  ASSERT_TRUE(linear.ok()) << linear.error();
  auto layout = weightLayoutFromLinear(*linear, 4);
  ASSERT_TRUE(layout.ok()) << layout.error();
  EXPECT_EQ(*layout, kInterleave2x8);
  auto back = linearFromWeightLayout(*layout);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, *linear->reorderIns({"n", "k"}));

  auto singular = LinearLayout::create({{"n", 1}, {"k", 1}}, {{"offset", 2}}, {{{1}}, {{1}}});
  ASSERT_TRUE(singular.ok());
  auto rejected = weightLayoutFromLinear(*singular, 4);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.error().find("not a bijection"), std::string::npos) << rejected.error();
  auto misnamed = weightLayoutFromLinear(LinearLayout::identity({{"n", 2}, {"k", 2}}), 4);
  ASSERT_FALSE(misnamed.ok());
  EXPECT_NE(misnamed.error().find("expected a layout {n, k} -> {offset}, got {n:2, k:2} -> "
                                  "{n:2, k:2}"),
            std::string::npos)
      << misnamed.error();
  auto straddling = weightLayoutFromLinear(*linear, 7);
  ASSERT_FALSE(straddling.ok());
  EXPECT_NE(straddling.error().find("codeBits 7 is not supported"), std::string::npos)
      << straddling.error();
  // A 2 x 8 tile holds fewer codes than a unit, whose high plane bits a
  // 3-bit code keeps together.
  auto smallPlanes = weightLayoutFromLinear(*linear, 3);
  ASSERT_FALSE(smallPlanes.ok());
  EXPECT_NE(smallPlanes.error().find("fewer than the 32 codes of a unit"), std::string::npos)
      << smallPlanes.error();
}

TEST(WeightLayout, PackHandComputed2x8Int4) {
  const std::vector<uint8_t> codes = {0, 1, 2,  3,  4,  5,  6,  7,  // n = 0
                                      8, 9, 10, 11, 12, 13, 14, 15}; // n = 1
  ASSERT_EQ(packedBytes(kInterleave2x8, 2, 8), 8);
  std::vector<uint8_t> packed(8, 0xEE);
  ASSERT_TRUE(packWeights(kInterleave2x8, 2, 8, codes.data(), packed.data(), packed.size()).ok());
  // Offsets in order hold codes 0, 8, 1, 9, ...; the low nibble is first.
  EXPECT_EQ(packed, (std::vector<uint8_t>{0x80, 0x91, 0xA2, 0xB3, 0xC4, 0xD5, 0xE6, 0xF7}));
  std::vector<uint8_t> unpacked(16, 0xFF);
  ASSERT_TRUE(
      unpackWeights(kInterleave2x8, 2, 8, packed.data(), packed.size(), unpacked.data()).ok());
  EXPECT_EQ(unpacked, codes);
}

TEST(WeightLayout, PackHandComputedXorTwoTiles) {
  // offset = 8n ^ (k & 3) ^ 12 * ((k >> 2) & 1) within each 2x8 tile, and
  // the second k-tile follows the first.
  const WeightLayout layout{4, 2, 8, {8, 1, 2, 12}};
  std::vector<uint8_t> codes(32);
  for (int k = 0; k < 16; ++k) {
    codes[size_t(k)] = uint8_t(k);
    codes[size_t(16 + k)] = uint8_t(15 - k);
  }
  std::vector<uint8_t> packed(16);
  ASSERT_TRUE(packWeights(layout, 2, 16, codes.data(), packed.data(), packed.size()).ok());
  EXPECT_EQ(packed, (std::vector<uint8_t>{0x10, 0x32, 0xAB, 0x89, 0xEF, 0xCD, 0x54, 0x76, //
                                          0x98, 0xBA, 0x23, 0x01, 0x67, 0x45, 0xDC, 0xFE}));
}

TEST(WeightLayout, PackMatchesReferenceAndUnpackInverts) {
  std::mt19937_64 rng(11);
  struct Shape {
    int tileN, tileK;
    int64_t n, k;
  };
  const Shape shapes[] = {{64, 16, 128, 64}, {8, 32, 24, 96}, {1, 64, 3, 128}, {16, 16, 32, 48}};
  for (int codeBits : {1, 2, 3, 4, 5, 6, 8})
    for (const Shape &shape : shapes) {
      WeightLayout layout = randomWeightLayout(rng, codeBits, shape.tileN, shape.tileK);
      SCOPED_TRACE(serialize(layout) + " N=" + std::to_string(shape.n) +
                   " K=" + std::to_string(shape.k));
      std::vector<uint8_t> codes = randomCodes(rng, shape.n * shape.k, codeBits);
      const int64_t bytes = packedBytes(layout, shape.n, shape.k);
      ASSERT_EQ(bytes, shape.n * shape.k * codeBits / 8);
      std::vector<uint8_t> packed(size_t(bytes), 0xA5);
      ASSERT_TRUE(
          packWeights(layout, shape.n, shape.k, codes.data(), packed.data(), packed.size()).ok());
      EXPECT_EQ(packed, codePlanes(codeBits).highBits
                            ? referencePlanePack(layout, shape.n, shape.k, codes)
                            : referencePack(layout, shape.n, shape.k, codes));
      std::vector<uint8_t> unpacked(codes.size(), 0xFF);
      ASSERT_TRUE(unpackWeights(layout, shape.n, shape.k, packed.data(), packed.size(),
                                unpacked.data())
                      .ok());
      EXPECT_EQ(unpacked, codes);
    }
}

TEST(WeightLayout, SubWordTilesRoundTrip) {
  // A 1x2 int4 tile is one byte: tiles need only be whole bytes.
  const WeightLayout layout{4, 1, 2, {1}};
  const std::vector<uint8_t> codes = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> packed(3);
  expectError(packWeights(layout, 2, 3, codes.data(), packed.data(), 3), "(K is not)");
  ASSERT_TRUE(packWeights(layout, 3, 2, codes.data(), packed.data(), 3).ok());
  EXPECT_EQ(packed, (std::vector<uint8_t>{0x21, 0x43, 0x65}));
  std::vector<uint8_t> unpacked(6);
  ASSERT_TRUE(unpackWeights(layout, 3, 2, packed.data(), 3, unpacked.data()).ok());
  EXPECT_EQ(unpacked, codes);
}

TEST(WeightLayout, PackRejectsBadInput) {
  std::vector<uint8_t> codes(16, 3);
  codes[11] = 16; // n = 1, k = 3
  std::vector<uint8_t> packed(8, 0xEE);
  expectError(packWeights(kInterleave2x8, 2, 8, codes.data(), packed.data(), packed.size()),
              "packWeights: code 16 at (n=1, k=3) does not fit in 4 bits");
  EXPECT_EQ(packed, std::vector<uint8_t>(8, 0xEE)) << "nothing is written on error";
  codes[11] = 3;
  expectError(packWeights(kInterleave2x8, 3, 8, codes.data(), packed.data(), packed.size()),
              "weight shape N=3 x K=8 is not a multiple of the layout's 2x8 tile (N is not)");
  expectError(packWeights(kInterleave2x8, 2, 12, codes.data(), packed.data(), packed.size()),
              "(K is not)");
  expectError(packWeights(kInterleave2x8, 2, 8, codes.data(), packed.data(), 7),
              "the packed buffer has 7 bytes; 2 x 8 codes of 4 bits need 8");
  expectError(packWeights(kInterleave2x8, -2, 8, codes.data(), packed.data(), 8),
              "negative dimension");
  expectError(packWeights(kInterleave2x8, 2, 8, nullptr, packed.data(), 8), "null codes pointer");
  expectError(unpackWeights(kInterleave2x8, 2, 8, packed.data(), 4, codes.data()),
              "unpackWeights: the packed buffer has 4 bytes");
  WeightLayout broken = kInterleave2x8;
  broken.basis[3] = 2;
  expectError(packWeights(broken, 2, 8, codes.data(), packed.data(), 8), "duplicated offset");
  EXPECT_EQ(packedBytes(broken, 2, 8), -1);
  EXPECT_EQ(packedBytes(kInterleave2x8, 3, 8), -1);
  EXPECT_EQ(packedBytes(kInterleave2x8, int64_t(1) << 40, int64_t(1) << 40), -1);
  EXPECT_EQ(packedBytes(kInterleave2x8, 0, 0), 0);
}

// The layout a kernel gets by propagating the mma.m16n8k16 B fragment back to
// global memory: each lane's four codes (reg, half) are contiguous, lanes in
// order, so lane L loads the 16 bits at byte 2L of an 8x16 int4 tile and finds
// its fragment in nibbles 2 * reg + half.
TEST(WeightLayout, FragmentDerivedLayoutFeedsEachLaneItsFragment) {
  auto fragment = LinearLayout::create({{"lane", 5}, {"reg", 1}, {"half", 1}}, {{"k", 4}, {"n", 3}},
                                       {{{2, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 4}}, {{8, 0}}, {{1, 0}}});
  ASSERT_TRUE(fragment.ok()) << fragment.error();
  auto owner = fragment->invert();
  ASSERT_TRUE(owner.ok()) << owner.error();
  auto ordered = owner->reorderOuts({"half", "reg", "lane"});
  ASSERT_TRUE(ordered.ok()) << ordered.error();
  auto offsetOf = ordered->flattenOuts("offset");
  ASSERT_TRUE(offsetOf.ok()) << offsetOf.error();
  auto layout = weightLayoutFromLinear(*offsetOf, 4);
  ASSERT_TRUE(layout.ok()) << layout.error();
  EXPECT_EQ(layout->tileN, 8);
  EXPECT_EQ(layout->tileK, 16);

  std::mt19937_64 rng(12);
  const int64_t n = 16, k = 32;
  std::vector<uint8_t> codes = randomCodes(rng, n * k, 4);
  std::vector<uint8_t> packed(size_t(packedBytes(*layout, n, k)));
  ASSERT_TRUE(packWeights(*layout, n, k, codes.data(), packed.data(), packed.size()).ok());
  for (int64_t tn = 0; tn < n / 8; ++tn)
    for (int64_t tk = 0; tk < k / 16; ++tk) {
      const uint8_t *tile = packed.data() + (tn * (k / 16) + tk) * 64;
      for (uint32_t lane = 0; lane < 32; ++lane) {
        const uint32_t loaded = uint32_t(tile[2 * lane]) | uint32_t(tile[2 * lane + 1]) << 8;
        for (uint32_t reg = 0; reg < 2; ++reg)
          for (uint32_t half = 0; half < 2; ++half) {
            const int64_t row = tn * 8 + lane / 4;
            const int64_t col = tk * 16 + 2 * (lane % 4) + half + 8 * reg;
            EXPECT_EQ((loaded >> (4 * (2 * reg + half))) & 15, codes[size_t(row * k + col)])
                << "lane " << lane << " reg " << reg << " half " << half;
          }
      }
    }
}

// A layout read from a kernel database is untrusted text: tiles whose code
// count would overflow the packer's tables are refused when parsed, and the
// packed size of a caller's N x K never wraps.
TEST(WeightLayout, HostileSizesAreRefused) {
  expectParseError("lbwl1;bits=8;tile=16777216x16777216;basis=", "more than 2^24 codes");
  expectParseError("lbwl1;bits=8;tile=4294967295x1;basis=", "decimal sizes up to 2^24");
  expectParseError("lbwl1;bits=8;tile=4294967296x1;basis=", "decimal sizes up to 2^24");
  EXPECT_EQ(packedBytes(kInterleave2x8, int64_t(1) << 32, int64_t(1) << 31), -1)
      << "2^63 codes";
  EXPECT_EQ(packedBytes(kInterleave2x8, int64_t(1) << 30, int64_t(1) << 30), int64_t(1) << 59);
}
