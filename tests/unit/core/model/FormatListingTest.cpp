#include "core/FormatListing.h"

#include "core/Arch.h"
#include "core/FragmentFacts.h"
#include "core/formats/Scheme.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lowbit::core {
namespace {

using formats::DataFormat;
using formats::QuantScheme;

std::string lineWith(const std::string &text, const std::string &needle) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    if (line.find(needle) != std::string::npos)
      return line;
  return "";
}

std::vector<std::string> allArchs() {
  std::vector<std::string> names;
  for (const TargetArch &arch : targetArchs())
    names.push_back(arch.name);
  return names;
}

QuantScheme builtin(const std::string &name) {
  Expected<QuantScheme> scheme = formats::findScheme(name);
  EXPECT_TRUE(scheme.ok()) << name;
  return scheme ? *scheme : QuantScheme{};
}

bool contains(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}

TEST(FormatListing, ListsEveryFormatAndScheme) {
  std::string listing = formatListing();
  for (const DataFormat &format : formats::builtinElementFormats())
    EXPECT_NE(lineWith(listing, "  " + format.name() + " "), "") << format.name();
  for (const QuantScheme &scheme : formats::builtinSchemes())
    EXPECT_NE(lineWith(listing, "  " + scheme.name + " "), "") << scheme.name;
  EXPECT_TRUE(contains(lineWith(listing, "  w4-g128 "), "4.125"));
  EXPECT_TRUE(contains(lineWith(listing, "  gguf-q4_k "), "4.5"));
  EXPECT_TRUE(contains(lineWith(listing, "  gguf-q6_k "), "6.5625"));
  EXPECT_TRUE(contains(lineWith(listing, "  mxfp4 "), "4.25"));
  EXPECT_TRUE(contains(lineWith(listing, "  nf4 "), "f16~"));
  EXPECT_TRUE(contains(lineWith(listing, "  int4 "), "f16 bf16 f32 s8 e4m3"));
  EXPECT_TRUE(contains(lineWith(listing, "  e8m0 "), "float<8,0,127,fn|unsigned|nosub>"));
  // A user's table, with the kernels every arch has for one.
  std::string yours = lineWith(listing, "  yours ");
  EXPECT_TRUE(contains(yours, "lut<4,[v0, ..., v15]>")) << yours;
  for (const std::string &arch : allArchs())
    EXPECT_TRUE(contains(yours, arch)) << yours;
  EXPECT_TRUE(contains(listing, "LOWBIT_WEIGHT_LUT4"));
  // A minifloat of the user's, by its parameters, with its kernels.
  EXPECT_TRUE(contains(listing, "LOWBIT_WEIGHT_FLOAT"));
  std::string floatRow = lineWith(listing, "float<e,m,bias[,flags]>");
  EXPECT_TRUE(contains(floatRow, "float<3,4,3>: [-31, 31]")) << floatRow;
  for (const std::string &arch : allArchs())
    EXPECT_TRUE(contains(floatRow, arch)) << floatRow;
}

// Every integer width the fragment facts decode has kernels on every arch
// `lowbit compile` accepts, with both activations.
TEST(FormatListing, IntegerWidthsHaveKernelsOnEveryArch) {
  for (const DataFormat &code :
       {DataFormat::unsignedInt(1), DataFormat::unsignedInt(2), DataFormat::unsignedInt(4),
        DataFormat::signedInt(4), DataFormat::unsignedInt(8), DataFormat::int8(),
        DataFormat::ternary()}) {
    KernelAvailability kernels = elementKernels(code);
    EXPECT_EQ(kernels.archs, allArchs()) << code.name() << ": " << kernels.reason;
    EXPECT_EQ(kernels.activations.size(), 2u) << code.name();
    EXPECT_EQ(kernels.reason, "") << code.name();
  }
  std::string uint2 = lineWith(formatListing(), "  uint2 ");
  EXPECT_TRUE(contains(uint2, "sm_80 sm_86 sm_89 sm_90a")) << uint2;
}

// Minifloats of 4 and 8 bits and 4-bit tables decode to both activations.
TEST(FormatListing, MinifloatsAndTablesHaveKernelsOnEveryArch) {
  for (const DataFormat &code : {DataFormat::e2m1(), DataFormat::e4m3fn(), DataFormat::e5m2(),
                                 DataFormat::nf4(), DataFormat::fp4Lut()}) {
    KernelAvailability kernels = elementKernels(code);
    EXPECT_EQ(kernels.archs, allArchs()) << code.name() << ": " << kernels.reason;
    EXPECT_EQ(kernels.activations.size(), 2u) << code.name();
  }
  std::string e2m1 = lineWith(formatListing(), "  e2m1 ");
  EXPECT_TRUE(contains(e2m1, "sm_80 sm_86 sm_89 sm_90a")) << e2m1;
}

// The activation rows are the rules' answer too: f16, bf16 and s8 (the
// split-K mma on the integer tensor cores) have kernels on every arch, e4m3
// (the fp8 tensor cores) from sm_89 on.
TEST(FormatListing, ActivationFormatsSayWhichHaveKernels) {
  std::string listing = formatListing();
  std::string f16 = lineWith(listing, "  f16       none");
  EXPECT_TRUE(contains(f16, "sm_80 sm_86 sm_89 sm_90a")) << f16;
  EXPECT_FALSE(contains(f16, "only")) << f16;
  for (const char *name : {"  s8 ", "  e4m3 "}) {
    std::string row = lineWith(listing, name);
    EXPECT_TRUE(contains(row, "f32 per token or per tensor")) << row;
  }
  std::string s8 = lineWith(listing, "  s8 ");
  EXPECT_TRUE(contains(s8, "sm_80 sm_86 sm_89 sm_90a")) << s8;
  EXPECT_FALSE(contains(s8, "none")) << s8;
  std::string e4m3 = lineWith(listing, "  e4m3 ");
  EXPECT_TRUE(contains(e4m3, "sm_89 sm_90a")) << e4m3;
  EXPECT_FALSE(contains(e4m3, "sm_80")) << e4m3;
}

// 3, 5 and 6 bits decode from two planes, signed or not.
TEST(FormatListing, TwoPlaneIntegersHaveKernelsOnEveryArch) {
  for (int bits : {3, 5, 6})
    for (const DataFormat &code : {DataFormat::unsignedInt(bits), DataFormat::signedInt(bits)}) {
      KernelAvailability kernels = elementKernels(code);
      EXPECT_EQ(kernels.archs, allArchs()) << code.name() << ": " << kernels.reason;
      EXPECT_EQ(kernels.activations.size(), 2u) << code.name();
    }
}

TEST(FormatListing, FormatsWithoutARegisterDecodeHaveNoKernels) {
  Expected<DataFormat> e3m3 = formats::parseFormat("float<3,3,3>");
  ASSERT_TRUE(e3m3.ok()) << e3m3.error();
  for (const DataFormat &code : {*e3m3, DataFormat::e8m0(), DataFormat::unsignedInt(7)}) {
    KernelAvailability kernels = elementKernels(code);
    EXPECT_FALSE(kernels.any()) << code.name();
    EXPECT_TRUE(contains(kernels.reason, "no ")) << kernels.reason;
  }
  std::string uint7 = lineWith(formatListing(), "  uint7 ");
  EXPECT_TRUE(contains(uint7, "none: no register decode for 7-bit codes")) << uint7;
}

// fp6 comes in two planes, like the integers of 3, 5 and 6 bits.
TEST(FormatListing, Fp6HasKernelsOnEveryArch) {
  for (const DataFormat &code : {DataFormat::e2m3(), DataFormat::e3m2()}) {
    KernelAvailability kernels = elementKernels(code);
    EXPECT_EQ(kernels.archs, allArchs()) << code.name() << ": " << kernels.reason;
    EXPECT_EQ(kernels.activations.size(), 2u) << code.name();
  }
  for (const char *name : {"mxfp6-e2m3", "mxfp6-e3m2", "fp6-e3m2-g32"}) {
    KernelAvailability kernels = schemeKernels(builtin(name));
    EXPECT_EQ(kernels.archs, allArchs()) << name << ": " << kernels.reason;
  }
  std::string e3m2 = lineWith(formatListing(), "  e3m2 ");
  EXPECT_TRUE(contains(e3m2, "sm_80 sm_86 sm_89 sm_90a")) << e3m2;
}

TEST(FormatListing, SchemesSayWhetherKernelsExistAndWhyNot) {
  for (const char *name : {"w4-g128", "w4-g32", "w4-g128-bf16", "w8-channel", "w4-g128-fzero",
                           "ternary-tensor", "gguf-q4_0", "w4-g128-asym", "awq-w4-g128", "nf4-g64",
                           "gguf-q4_k", "gguf-q5_k", "gguf-q6_k",
                           // uint3 and uint2 zero codes, read as uint4 codes of the same values
                           "w3-g128-asym", "w2-g64-asym"}) {
    KernelAvailability kernels = schemeKernels(builtin(name));
    EXPECT_EQ(kernels.archs, allArchs()) << name << ": " << kernels.reason;
  }
  struct Missing {
    const char *scheme;
    const char *why;
  };
  for (const Missing &missing : {
           Missing{"gptq-w4-g128", "zero codes must be uint4 or uint8, got uint4+1"},
       }) {
    KernelAvailability kernels = schemeKernels(builtin(missing.scheme));
    EXPECT_FALSE(kernels.any()) << missing.scheme;
    EXPECT_TRUE(contains(kernels.reason, missing.why)) << missing.scheme << ": " << kernels.reason;
  }
  std::string listing = formatListing();
  EXPECT_TRUE(contains(lineWith(listing, "  w4-g128 "), "sm_80 sm_86 sm_89 sm_90a"));
  EXPECT_TRUE(contains(lineWith(listing, "  awq-w4-g128 "), "sm_80 sm_86 sm_89 sm_90a"));
}

// MX and NVFP4 scales have kernel schemes: what decides their kernels is the
// element's decode alone. Integer codes with those scales have kernels.
TEST(FormatListing, BlockScaleSchemesHaveKernelsWhereTheElementDecodes) {
  for (const char *name : {"mxfp4", "nvfp4"}) {
    QuantScheme scheme = builtin(name);
    KernelAvailability kernels = schemeKernels(scheme);
    Expected<CodeFragment> fragment = codeFragment(scheme.element);
    EXPECT_EQ(kernels.any(), fragment.ok()) << name << ": " << kernels.reason;
    if (!fragment) {
      EXPECT_EQ(kernels.reason, fragment.error()) << name;
    }
  }
  QuantScheme mxInt4 = *formats::makeGroupScheme(DataFormat::signedInt(4), 32, DataFormat::e8m0());
  EXPECT_EQ(schemeKernels(mxInt4).archs, allArchs()) << schemeKernels(mxInt4).reason;
  QuantScheme nvInt4 = formats::makeNvfp4Scheme();
  nvInt4.element = DataFormat::signedInt(4);
  EXPECT_EQ(schemeKernels(nvInt4).archs, allArchs()) << schemeKernels(nvInt4).reason;
}

} // namespace
} // namespace lowbit::core
