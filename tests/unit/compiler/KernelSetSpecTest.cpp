#include "compiler/spec/KernelSetSpec.h"

#include <gtest/gtest.h>

#include <filesystem>

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

// Quantized activations name their scale and y's type; naming f16's own
// output is allowed (from [defaults]) and is no output at all.
TEST(KernelSetSpec, QuantizedActivationsNameTheirScaleAndOutput) {
  Expected<KernelSetSpec> spec = parseKernelSetSpec(
      "archs = [\"sm_90a\"]\n[defaults]\noutput = 'f16'\n"
      "[[problem]]\nname='a'\nn=64\nk=256\nactivation='s8'\nactivation_scale='token'\n"
      "weight='int8'\ngranularity='channel'\n"
      "[[problem]]\nname='b'\nn=64\nk=256\n",
      "<t>");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const core::Problem &a = spec->problems[0];
  EXPECT_EQ(a.activation, core::Activation::S8);
  EXPECT_EQ(a.activationScale, core::ActivationScale::PerToken);
  EXPECT_EQ(a.output, std::optional<core::Output>(core::Output::F16));
  EXPECT_FALSE(spec->problems[1].output.has_value());
  // The printed spec parses back to the same problems.
  Expected<KernelSetSpec> again = parseKernelSetSpec(printKernelSetSpec(*spec, ""), "<printed>");
  ASSERT_TRUE(again.ok()) << again.error();
  ASSERT_EQ(again->problems.size(), 2u);
  EXPECT_TRUE(again->problems[0].sameAs(a));
  EXPECT_TRUE(again->problems[1].sameAs(spec->problems[1]));

  Expected<KernelSetSpec> noScale = parseKernelSetSpec(
      "archs = [\"sm_90a\"]\n[[problem]]\nname='a'\nn=64\nk=256\nactivation='e4m3'\n"
      "output='bf16'\n",
      "<t>");
  ASSERT_FALSE(noScale.ok());
  EXPECT_NE(noScale.error().find("e4m3 activations need an activation scale"), std::string::npos)
      << noScale.error();
  Expected<KernelSetSpec> f16Scale = parseKernelSetSpec(
      "archs = [\"sm_90a\"]\n[[problem]]\nname='a'\nn=64\nk=256\n"
      "activation_scale='token'\n",
      "<t>");
  ASSERT_FALSE(f16Scale.ok());
  EXPECT_NE(f16Scale.error().find("f16 activations have none"), std::string::npos)
      << f16Scale.error();
}

struct BadSpec {
  const char *text;
  const char *message;
};

// Block scales and NVFP4's tensor scale, spelled as the typed model parses
// them.
// The strict rules hold for every spec the repository ships or tests with.
TEST(KernelSetSpec, EverySpecInTheRepositoryParses) {
  int parsed = 0;
  for (const char *dir :
       {"/examples/specs", "/tests/gpu/kernels", "/tests/gpu/tuner", "/tests/gpu/runtime",
        "/tests/unit/compiler/specs", "/docs/measurements/specs"}) {
    std::filesystem::path root = std::string(LOWBIT_SOURCE_DIR) + dir;
    if (!std::filesystem::exists(root))
      continue;
    for (const auto &entry : std::filesystem::directory_iterator(root)) {
      if (entry.path().extension() != ".toml")
        continue;
      Expected<KernelSetSpec> spec = loadKernelSetSpec(entry.path().string());
      // no-kernels.toml parses; it is the compile that fails.
      EXPECT_TRUE(spec.ok()) << spec.error();
      ++parsed;
      if (!spec.ok())
        continue;
      // printKernelSetSpec (lowbit import's writer) gives the same problems
      // back through the parser.
      Expected<KernelSetSpec> again =
          parseKernelSetSpec(printKernelSetSpec(*spec, "printed\n\nagain"), "printed");
      ASSERT_TRUE(again.ok()) << entry.path() << ": " << again.error();
      EXPECT_EQ(again->archs, spec->archs);
      ASSERT_EQ(again->problems.size(), spec->problems.size());
      for (size_t i = 0; i < spec->problems.size(); ++i) {
        EXPECT_TRUE(again->problems[i].sameAs(spec->problems[i])) << spec->problems[i].name;
        EXPECT_EQ(again->problems[i].name, spec->problems[i].name);
      }
    }
  }
  EXPECT_GT(parsed, 10);
}

// Comments and strings may hold UTF-8 (the built-in spec's comments do).
TEST(KernelSetSpec, CommentsAndStringsMayHoldUtf8) {
  Expected<KernelSetSpec> spec = parseKernelSetSpec(
      "# 28672 \xC3\x97 8192, \xE2\x89\xA4 \xF0\x9F\x99\x82\narchs = [\"sm_80\"]\n[[problem]]\n"
      "name='caf\xC3\xA9 \"q\"' # \xC2\xB5s\nn=64\nk=256\n",
      "<t>");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->problems.at(0).name, "caf\xC3\xA9 \"q\"");
}

TEST(KernelSetSpec, BlockScalesAndTheTensorScale) {
  Expected<KernelSetSpec> spec =
      parseKernelSetSpec("archs = [\"sm_80\"]\n"
                         "[[problem]]\nname='mx'\nn=64\nk=256\nscale='e8m0'\ngroup_size=32\n"
                         "[[problem]]\nname='nv'\nn=64\nk=256\nweight='int4'\nscale='e4m3fn'\n"
                         "tensor_scale='f32'\ngroup_size=16\n",
                         "<t>");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->problems[0].scheme.scale, formats::DataFormat::e8m0());
  EXPECT_FALSE(spec->problems[0].scheme.tensorScale.has_value());
  EXPECT_EQ(core::signature(spec->problems[1]),
            "lowbit.qmatmul.v1;n=64;k=256;act=f16;weight=int4;scale=e4m3fn;"
            "granularity=group;group=16;zero=none;tensor_scale=f32");
}

TEST(KernelSetSpec, RejectsBadSpecsWithTheReason) {
  const BadSpec cases[] = {
      {"archs = []\n", "'archs' must list at least one arch"},
      {"archs = [\"sm_90\"]\n[[problem]]\nname='a'\nn=1\nk=32\n", "sm_90a"},
      {"archs = [\"sm_80\"]\n", "no [[problem]] entries"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=4096\ngroup_size=48\n",
       "group size 48 does not divide K = 4096"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=64\nweight='uint9'\n",
       "weight 'uint9'"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn='x'\nk=64\n", "'n' must be an integer"},
      {"archs = "
       "[\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\n[[problem]]\nname='a'\nn=64\nk=128\n",
       "appears twice"},
      {"archs = [\"sm_80\"\n", "<t>:"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\nactivation='f32'\n",
       "activation 'f32'"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\nzero='quantized'\n", "zero_codes"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\nzero_codes='uint4'\n",
       "zero_codes"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=128\nzero='quantized'\n"
       "zero_codes='int4'\n",
       "uint4 or uint8"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=256\nscale='e8m0'\n",
       "problem 'a': e8m0 scales are OCP MX block scales of 32 weights: group size must "
       "be 32, got 128"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=256\ntensor_scale='f32'\n",
       "a tensor scale multiplies e4m3fn block scales"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=256\nscale='e4m3fn'\n"
       "tensor_scale='f33'\n",
       "tensor_scale 'f33'"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=256\nscale='e4m3fn'\n"
       "granularity='channel'\n",
       "scale dtype e4m3fn is a block scale: it needs granularity group, got channel"},
  };
  for (const BadSpec &c : cases) {
    Expected<KernelSetSpec> spec = parseKernelSetSpec(c.text, "<t>");
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_NE(spec.error().find(c.message), std::string::npos) << spec.error();
  }
}

// Hostile and mistaken specs (issue 19): each of these once compiled the
// default problem with exit 0, crashed toml++, or collided in the output.
TEST(KernelSetSpec, MistakesAreErrorsNotDefaults) {
  const std::string head = "archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=256\n";
  struct BadSpec {
    std::string text;
    const char *message;
  };
  const std::string longName(core::kMaxProblemNameLength + 1, 'x');
  const BadSpec cases[] = {
      {head + "weigth = 'int4'\n",
       "<t>:6: unknown key 'weigth' in [[problem]] (did you mean 'weight'?)"},
      {head + "groupsize = 64\n", "unknown key 'groupsize' in [[problem]] (did you mean "
                                  "'group_size'?)"},
      {head + "zero_point = 'sub_code'\n", "unknown key 'zero_point' in [[problem]] (did you "
                                           "mean 'zero'?)"},
      {"archs = [\"sm_80\"]\n[default]\nweight='int4'\n[[problem]]\nname='a'\nn=64\nk=256\n",
       "unknown key 'default' in the spec (did you mean 'defaults'?)"},
      {"archs = [\"sm_80\"]\n[defaults]\nwieght='int4'\n[[problem]]\nname='a'\nn=64\nk=256\n",
       "unknown key 'wieght' in [defaults] (did you mean 'weight'?)"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=true\nk=256\n", "'n' must be an integer"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=256\nweight=4\n",
       "'weight' must be a string"},
      {"archs = [\"sm_80\", \"sm_80\"]\n[[problem]]\nname='a'\nn=64\nk=256\n",
       "arch 'sm_80' is listed twice"},
      {"archs = [\"sm_80\"]\n[[problem]]\nname='" + longName + "'\nn=64\nk=256\n",
       "a problem name has at most 200 characters, got 201"},
      {head + "[[problem]]\nname='a.b'\nn=64\nk=256\n[[problem]]\nname='a_b'\nn=64\nk=256\n",
       "problem names 'a.b' and 'a_b' both become the identifier 'a_b'"},
      {"archs = [\"sm_80\"]\n\xC3[[problem]]\nname='a'\nn=64\nk=256\n",
       "<t>:2: byte 0xC3 is not ASCII outside a comment or a string"},
      {"archs = [\"sm_80\"] # \xFF\n", "<t>:1: byte 0xFF is not well-formed UTF-8"},
      // tests/fuzz's spec target: a quote after '+' opens no string for
      // toml++, which scanned on into U+FEDF and reached TOML_UNREACHABLE.
      {"g1 =+\"f1xxxxxxxxxxxxxxxxx\xEF\xBB\x9Fxxxxxhxxxx'f15(\"\n`h",
       "<t>:1: byte 0xEF is not ASCII outside a comment or a string"},
      {"archs = [\"sm_80\"]\nx = 1'\xC3\x97'\n", "<t>:2: byte 0xC3 is not ASCII outside"},
      // A quote after a `=` inside a bare value opens nothing: toml++ scans
      // the whole token (tests/fuzz/corpus/spec/quote-after-equals-in-value).
      {"g- =+\"f1xg0w+=\"f1xxnami'un\xC8\x85"
       "activation]]\n",
       "<t>:1: byte 0xC8 is not ASCII outside a comment or a string"},
      // What toml++ trims after a line-ending backslash in a multi-line
      // string, and what follows a backslash there, must be ASCII
      // (tests/fuzz/corpus/spec/non-ascii-after-line-ending-backslash).
      {"archs = [\"sm_80\"]\nx = \"\"\"a\\\n\n  \xEF\xBB\xB6\"\"\"\n",
       "<t>:2: byte 0xEF follows a backslash"},
      {"archs = [\"sm_80\"]\nx = \"\"\"a\\\xC8\x85\"\"\"\n",
       "<t>:2: byte 0xC8 follows a backslash"},
      {"archs = [\"sm_80\"]\n\x01\n", "<t>:2: byte 0x01 is a control character"},
      {std::string(kMaxSpecBytes + 1, ' '), "a spec has at most 4194304 bytes"},
  };
  for (const BadSpec &c : cases) {
    Expected<KernelSetSpec> spec = parseKernelSetSpec(c.text, "<t>");
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_NE(spec.error().find(c.message), std::string::npos) << spec.error();
  }
}

} // namespace
} // namespace lowbit::spec
