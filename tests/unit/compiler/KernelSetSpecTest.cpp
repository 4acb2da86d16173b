#include "compiler/spec/KernelSetSpec.h"

#include <gtest/gtest.h>

namespace lowbit::spec {
namespace {

TEST(KernelSetSpec, BuiltinSpecParses) {
  Expected<KernelSetSpec> spec = parseKernelSetSpec(builtinKernelSetSpecText(), "<builtin>");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->archs.size(), 4u);
  ASSERT_EQ(spec->problems.size(), 4u);
  EXPECT_EQ(spec->problems[2].n, 14336);
  EXPECT_EQ(spec->problems[2].scheme.groupSize, 128); // from [defaults]
}

// Every key reaches the typed model through core's parses; group_size from
// [defaults] means nothing for other granularities; quantized zeros name
// their code format.
TEST(KernelSetSpec, KeysBecomeTheTypedProblem) {
  Expected<KernelSetSpec> spec = parseKernelSetSpec(
      "archs = [\"sm_90a\"]\n[defaults]\ngroup_size = 64\n"
      "[[problem]]\nname='a'\nn=64\nk=256\nactivation='bf16'\nweight='int2'\n"
      "scale='f32'\ngranularity='channel'\nzero='sub_value'\n"
      "[[problem]]\nname='b'\nn=64\nk=256\nzero='quantized'\nzero_codes='uint8'\n",
      "<t>");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const core::Problem &a = spec->problems[0];
  EXPECT_EQ(a.activation, core::Activation::BF16);
  EXPECT_EQ(a.code, formats::DataFormat::signedInt(2));
  EXPECT_EQ(a.scheme.scale, formats::DataFormat::f32());
  EXPECT_EQ(a.scheme.granularity, formats::Granularity::PerChannel);
  EXPECT_EQ(a.scheme.groupSize, 0);
  EXPECT_EQ(a.scheme.zero, formats::ZeroMode::SubtractScaled);
  const core::Problem &b = spec->problems[1];
  EXPECT_EQ(b.scheme.groupSize, 64);
  EXPECT_EQ(b.scheme.zero, formats::ZeroMode::SubtractCode);
  ASSERT_TRUE(b.scheme.zeroCodes.has_value());
  EXPECT_EQ(*b.scheme.zeroCodes, formats::DataFormat::unsignedInt(8));
  EXPECT_EQ(core::signature(b), "lowbit.qmatmul.v1;n=64;k=256;act=f16;weight=uint4;scale=f16;"
                                "granularity=group;group=64;zero=quantized;zero_codes=uint8");
}

struct BadSpec {
  const char *text;
  const char *message;
};

TEST(KernelSetSpec, RejectsBadSpecsWithTheReason) {
  const BadSpec cases[] = {
      {"archs = []\n", "'archs' must list at least one arch"},
      {"archs = [\"sm_90\"]\n[[problem]]\nname='a'\nn=1\nk=32\n", "sm_90a"},
      {"archs = [\"sm_80\"]\n", "no [[problem]] entries"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=4096\ngroup_size=48\n",
       "group size 48 does not divide K = 4096"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=64\nweight='uint9'\n",
       "weight 'uint9'"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn='x'\nk=64\n", "'n' has the wrong type"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\n[[problem]]\nname='a'\nn=64\nk=128\n",
       "appears twice"},
      {"archs = [\"sm_80\"\n", "<t>:"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\nactivation='f32'\n",
       "activation 'f32'"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\nzero='quantized'\n",
       "zero_codes"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\nzero_codes='uint4'\n",
       "zero_codes"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\nzero='quantized'\n"
       "zero_codes='int4'\n",
       "uint4 or uint8"},
  };
  for (const BadSpec &c : cases) {
    Expected<KernelSetSpec> spec = parseKernelSetSpec(c.text, "<t>");
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_NE(spec.error().find(c.message), std::string::npos) << spec.error();
  }
}

} // namespace
} // namespace lowbit::spec
