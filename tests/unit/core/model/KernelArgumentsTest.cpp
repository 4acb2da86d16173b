#include "core/KernelArguments.h"

#include <gtest/gtest.h>

#include <string>

namespace lowbit::core {
namespace {

// The arguments by name, "x, packed_w, ...": a failure shows the whole list.
std::string names(const Problem &problem, const Schedule &schedule = Schedule()) {
  std::string text;
  for (KernelArgument argument : kernelArguments(problem, schedule))
    text += (text.empty() ? "" : ", ") + std::string(kernelArgumentName(argument));
  return text;
}

Problem w8a8(ActivationScale scale) {
  Problem p;
  p.n = 4096, p.k = 4096;
  p.activation = Activation::S8;
  p.activationScale = scale;
  p.code = formats::DataFormat::signedInt(8);
  p.scheme.granularity = formats::Granularity::PerChannel;
  p.scheme.groupSize = 0;
  setOutput(p, Output::F16);
  return p;
}

TEST(KernelArguments, F16ActivationsTakeNoActivationScales) {
  Problem p;
  p.n = 4096, p.k = 4096;
  EXPECT_EQ(names(p), "x, packed_w, scales, y, M");
  p.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_EQ(names(p), "x, packed_w, scales, zeros, y, M");
}

TEST(KernelArguments, QuantizedActivationsTakeTheirScalesAfterX) {
  EXPECT_EQ(names(w8a8(ActivationScale::PerToken)), "x, x_scales, packed_w, scales, y, M");
  Problem withZeros = w8a8(ActivationScale::PerTensor);
  withZeros.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_EQ(names(withZeros), "x, x_scales, packed_w, scales, zeros, y, M");
  EXPECT_EQ(kernelArguments(withZeros, Schedule()),
            (std::vector<KernelArgument>{KernelArgument::Activations,
                                         KernelArgument::ActivationScales, KernelArgument::Weights,
                                         KernelArgument::Scales, KernelArgument::Zeros,
                                         KernelArgument::Output, KernelArgument::Rows}));
}

Schedule streamK() {
  Schedule s;
  s.family = Family::Wgmma;
  s.scheduler = TileScheduler::StreamK;
  return s;
}

// Stream-K's split tiles meet in a workspace, the last argument; no other
// scheduler takes one.
TEST(KernelArguments, OnlyStreamKTakesAWorkspace) {
  Problem p;
  p.n = 4096, p.k = 4096;
  EXPECT_EQ(names(p, streamK()), "x, packed_w, scales, y, M, workspace");
  Schedule persistent = streamK();
  persistent.scheduler = TileScheduler::Persistent;
  EXPECT_EQ(names(p, persistent), "x, packed_w, scales, y, M");
}

TEST(KernelArguments, NoProblemTakesMoreThanTheMaximum) {
  Problem every = w8a8(ActivationScale::PerToken);
  every.scheme.zero = formats::ZeroMode::SubtractScaled;
  EXPECT_EQ(static_cast<int>(kernelArguments(every, streamK()).size()), kMaxKernelArguments);
}

// Each argument's address is its own value's, so a launch built from the
// list passes every value where the kernel expects it.
TEST(KernelArguments, EachArgumentPointsAtItsValue) {
  KernelParameterValues values;
  values.x = 1;
  values.xScales = 2;
  values.w = 3;
  values.scales = 4;
  values.zeros = 5;
  values.y = 6;
  values.rows = 7;
  values.workspace = 8;
  Problem every = w8a8(ActivationScale::PerToken);
  every.scheme.zero = formats::ZeroMode::SubtractScaled;
  std::vector<long long> seen;
  for (KernelArgument argument : kernelArguments(every, streamK())) {
    void *address = values.address(argument);
    seen.push_back(argument == KernelArgument::Rows
                       ? *static_cast<long long *>(address)
                       : static_cast<long long>(*static_cast<unsigned long long *>(address)));
  }
  EXPECT_EQ(seen, (std::vector<long long>{1, 2, 3, 4, 5, 6, 7, 8}));
}

} // namespace
} // namespace lowbit::core
