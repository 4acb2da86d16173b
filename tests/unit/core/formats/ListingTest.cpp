#include "core/formats/Listing.h"
#include "core/formats/Scheme.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lowbit::formats {
namespace {

std::string lineWith(const std::string &text, const std::string &needle) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    if (line.find(needle) != std::string::npos)
      return line;
  return "";
}

TEST(Listing, ListsEveryFormatAndScheme) {
  std::string listing = formatListing();
  for (const DataFormat &format : builtinElementFormats())
    EXPECT_NE(lineWith(listing, "  " + format.name() + " "), "") << format.name();
  for (const QuantScheme &scheme : builtinSchemes())
    EXPECT_NE(lineWith(listing, "  " + scheme.name + " "), "") << scheme.name;
  EXPECT_NE(lineWith(listing, "  w4-g128 ").find("4.125"), std::string::npos);
  EXPECT_NE(lineWith(listing, "  gguf-q4_k ").find("4.5"), std::string::npos);
  EXPECT_NE(lineWith(listing, "  gguf-q6_k ").find("6.5625"), std::string::npos);
  EXPECT_NE(lineWith(listing, "  mxfp4 ").find("4.25"), std::string::npos);
  EXPECT_NE(lineWith(listing, "  nf4 ").find("f16~"), std::string::npos);
  EXPECT_NE(lineWith(listing, "  int4 ").find("f16 bf16 f32 s8 e4m3"), std::string::npos);
  EXPECT_NE(lineWith(listing, "  e8m0 ").find("float<8,0,127,fn|unsigned|nosub>"),
            std::string::npos);
}

} // namespace
} // namespace lowbit::formats
