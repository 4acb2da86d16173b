#include "core/FragmentFacts.h"

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

TEST(FragmentFacts, WidthsThatStraddleWordsHaveNoDecode) {
  for (int bits : {3, 5, 6, 7}) {
    Expected<CodeFragment> f = codeFragment(formats::DataFormat::unsignedInt(bits));
    ASSERT_FALSE(f.ok()) << bits;
    EXPECT_NE(f.error().find("straddle"), std::string::npos) << f.error();
  }
  EXPECT_FALSE(codeFragment(formats::DataFormat::e2m1()).ok());
  EXPECT_FALSE(codeFragment(formats::DataFormat::mxInt8()).ok()) << "fixed point";
}

} // namespace
} // namespace lowbit::core
