#include "core/FragmentFacts.h"

#include <set>

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {

TEST(FragmentFacts, AUnitIs32ValuesWhateverTheWidth) {
  struct Row {
    formats::DataFormat code;
    int bytes, codesPerWord;
  };
  for (const Row &row : {Row{formats::DataFormat::unsignedInt(8), 32, 4},
                         Row{formats::DataFormat::int8(), 32, 4},
                         Row{formats::DataFormat::unsignedInt(4), 16, 8},
                         Row{formats::DataFormat::signedInt(4), 16, 8},
                         Row{formats::DataFormat::unsignedInt(2), 8, 16},
                         Row{formats::DataFormat::ternary(), 8, 16},
                         Row{formats::DataFormat::unsignedInt(1), 4, 32}}) {
    Expected<CodeFragment> f = codeFragment(row.code);
    ASSERT_TRUE(f.ok()) << row.code.name() << ": " << f.error();
    EXPECT_EQ(f->bytesPerUnit(), row.bytes) << row.code.name();
    EXPECT_EQ(f->codesPerWord(), row.codesPerWord) << row.code.name();
    EXPECT_EQ(f->wordsPerUnit() * f->codesPerWord(), kValuesPerUnit) << row.code.name();
  }
}

// 3, 5 and 6 bits are two planes: a unit loads both, and its words decode
// with the low plane's codes per word.
TEST(FragmentFacts, TwoPlaneUnitsLoadBothPlanes) {
  struct Row {
    int bits, lowWords, codesPerWord, pairedUnits;
  };
  for (const Row &row : {Row{3, 2, 16, 2}, Row{5, 4, 8, 1}, Row{6, 4, 8, 1}}) {
    Expected<CodeFragment> f = codeFragment(formats::DataFormat::signedInt(row.bits));
    ASSERT_TRUE(f.ok()) << row.bits << ": " << f.error();
    EXPECT_TRUE(f->hasPlanes());
    EXPECT_EQ(f->wordsPerUnit(), row.bits);
    EXPECT_EQ(f->lowWordsPerUnit(), row.lowWords);
    EXPECT_EQ(f->codesPerWord(), row.codesPerWord);
    EXPECT_EQ(f->pairedUnitsPerLoad(), row.pairedUnits);
  }
}

TEST(FragmentFacts, WidthsThatStraddleWordsHaveNoDecode) {
  Expected<CodeFragment> seven = codeFragment(formats::DataFormat::unsignedInt(7));
  ASSERT_FALSE(seven.ok());
  EXPECT_NE(seven.error().find("straddle"), std::string::npos) << seven.error();
  Expected<formats::DataFormat> e3m3 = formats::parseFormat("float<3,3,3>");
  ASSERT_TRUE(e3m3.ok()) << e3m3.error();
  EXPECT_FALSE(codeFragment(*e3m3).ok()) << "a 7-bit minifloat straddles a half";
  Expected<CodeFragment> fp6 = codeFragment(formats::DataFormat::e3m2());
  ASSERT_TRUE(fp6.ok()) << fp6.error();
  EXPECT_TRUE(fp6->hasPlanes()) << "fp6 is two planes, 4 + 2 bits";
  EXPECT_FALSE(codeFragment(formats::DataFormat::mxInt8()).ok()) << "fixed point";
  Expected<formats::DataFormat> lut2 = formats::DataFormat::lut(2, {-1, 0, 1, 2}, "");
  ASSERT_TRUE(lut2.ok());
  Expected<CodeFragment> f = codeFragment(*lut2);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().find("4-bit"), std::string::npos) << f.error();
}

TEST(FragmentFacts, MinifloatsAndTablesHaveTheUnitsOfTheirWidth) {
  for (const formats::DataFormat &code :
       {formats::DataFormat::e2m1(), formats::DataFormat::e4m3fn(), formats::DataFormat::e5m2(),
        formats::DataFormat::nf4(), formats::DataFormat::fp4Lut()}) {
    Expected<CodeFragment> f = codeFragment(code);
    ASSERT_TRUE(f.ok()) << code.name() << ": " << f.error();
    EXPECT_EQ(f->codeBits, code.bits()) << code.name();
    EXPECT_EQ(f->bytesPerUnit(), 4 * code.bits()) << code.name();
  }
}

// The wgmma family's staged activations: every K of a 32-wide block has
// one slot, and the slot is where wgmma's B operand meets the weight that
// the mma_b_paired fragment put in the same (lane, step, register, half).
TEST(FragmentFacts, PairedSlotsPairEveryKWithItsWeight) {
  std::set<int> slots;
  for (int t = 0; t < 4; ++t)
    for (int j = 0; j < 2; ++j)
      for (int r = 0; r < 2; ++r)
        for (int h = 0; h < 2; ++h) {
          int k = 8 * t + 4 * j + 2 * r + h; // the fragment's K (PTX m16n8k16 B: rows 2 t + h + 8 r)
          int slot = pairedSlotOfK(k);
          // wgmma step j reads 16 slots; within them, slot 2 t + h + 8 r is
          // the A/B fragment's row of lane t, register r, half h.
          EXPECT_EQ(slot / 16, j) << "k " << k;
          EXPECT_EQ(slot % 16, 2 * t + h + 8 * r) << "k " << k;
          slots.insert(slot);
        }
  EXPECT_EQ(slots.size(), 32u) << "a permutation of the block";
  // Pairs stay pairs (4-byte granularity, what cp.async can place).
  for (int k = 0; k < 32; k += 2)
    EXPECT_EQ(pairedSlotOfK(k + 1), pairedSlotOfK(k) + 1);
}

} // namespace
} // namespace lowbit::core
