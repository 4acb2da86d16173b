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
  EXPECT_EQ(spec->problems[2].groupSize, 128); // from [defaults]
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
  };
  for (const BadSpec &c : cases) {
    Expected<KernelSetSpec> spec = parseKernelSetSpec(c.text, "<t>");
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_NE(spec.error().find(c.message), std::string::npos) << spec.error();
  }
}

} // namespace
} // namespace lowbit::spec
