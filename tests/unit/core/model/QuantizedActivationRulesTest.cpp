// The quantized-activation rules (core/QuantizedActivationRules.cpp): which
// s8 and e4m3 problems and schedules the split-K mma and wgmma take, and
// each refusal's reason.
#include "core/DecodeFacts.h"
#include "tests/unit/core/model/ScheduleRulesTestSupport.h"

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {

Problem s8Problem(const formats::DataFormat &code, int64_t k = 4096) {
  Problem p = problem(code, 4096, k);
  p.activation = Activation::S8;
  p.activationScale = ActivationScale::PerToken;
  p.output = Output::F16;
  p.scheme.granularity = formats::Granularity::PerChannel;
  p.scheme.groupSize = 0;
  return p;
}

// Only the split-K mma and wgmma multiply s8 activations (on the integer
// tensor cores) and e4m3 ones (on the fp8 tensor cores); every other family
// says so.
TEST(ScheduleRules, QuantizedActivationsOnTheSplitKMmaAndWgmma) {
  const Schedule wgmma{Family::Wgmma, 32, 512, 64, 1, 8, 8, 1};
  const Schedule splitK{Family::Mma, 16, 64, 128, 1, 1, 1, 8};
  for (const formats::DataFormat &code :
       {formats::DataFormat::signedInt(4), formats::DataFormat::signedInt(8)}) {
    Problem p = s8Problem(code);
    ASSERT_TRUE(validate(p).ok());
    EXPECT_TRUE(checkSchedule(p, splitK).ok()) << checkSchedule(p, splitK).error();
    EXPECT_TRUE(checkSchedule(p, wgmma).ok()) << checkSchedule(p, wgmma).error();
    for (const Schedule &s : {kGemv, kMma, kGemvTiled, kDequant}) {
      Status fits = checkSchedule(p, s);
      ASSERT_FALSE(fits.ok()) << s.text();
      EXPECT_EQ(fits.error(), scheduleSubject(s) + ": only the split-K mma (family mma, split_k "
                                                   "> 1) and wgmma multiply s8 activations, on "
                                                   "the integer tensor cores");
    }
    p.activation = Activation::E4M3;
    EXPECT_EQ(checkSchedule(p, splitK).error(),
              scheduleSubject(splitK) + ": e4m3 activations multiply e4m3fn weights (the fp8 "
                                        "mma takes both operands as e4m3 bytes), not " +
                  code.name());
    EXPECT_EQ(checkSchedule(p, kGemv).error(),
              scheduleSubject(kGemv) + ": only the split-K mma (family mma, split_k > 1) and "
                                       "wgmma multiply e4m3 activations, on the fp8 tensor cores");
    EXPECT_FALSE(checkDecodable(code, Activation::S8).ok());
  }
}

// W8A8 in fp8: e4m3fn weights with per-channel or per-tensor scales, on the
// split-K mma from sm_89 and on wgmma; group scales and zero points are
// refused with the reason.
TEST(ScheduleRules, E4M3ActivationsTakeE4M3WeightsWithChannelScales) {
  Problem p = s8Problem(formats::DataFormat::e4m3fn());
  p.activation = Activation::E4M3;
  ASSERT_TRUE(validate(p).ok()) << validate(p).error();
  const Schedule splitK{Family::Mma, 16, 64, 128, 1, 1, 1, 8};
  const Schedule wgmma{Family::Wgmma, 64, 256, 64, 1, 4, 8, 1};
  EXPECT_TRUE(checkSchedule(p, splitK).ok()) << checkSchedule(p, splitK).error();
  EXPECT_TRUE(checkSchedule(p, wgmma).ok()) << checkSchedule(p, wgmma).error();
  Schedule n40 = wgmma;
  n40.tileM = 40;
  EXPECT_TRUE(checkSchedule(p, n40).ok()) << "fp8 wgmma takes N in 8s";
  p.scheme.granularity = formats::Granularity::PerTensor;
  EXPECT_TRUE(checkSchedule(p, splitK).ok()) << checkSchedule(p, splitK).error();
  Problem grouped = p;
  grouped.scheme.granularity = formats::Granularity::PerGroup;
  grouped.scheme.groupSize = 128;
  EXPECT_NE(checkSchedule(grouped, splitK).error().find("group scales and zero points are not "
                                                        "implemented"),
            std::string::npos);
  for (const char *name : {"sm_80", "sm_86"}) {
    Status onArch = checkScheduleArch(p, splitK, *findTargetArch(name));
    ASSERT_FALSE(onArch.ok()) << name;
    EXPECT_NE(onArch.error().find("exist from sm_89 on"), std::string::npos) << onArch.error();
  }
  EXPECT_TRUE(checkScheduleArch(p, splitK, *findTargetArch("sm_89")).ok());
  Problem s8 = s8Problem(formats::DataFormat::signedInt(8));
  EXPECT_TRUE(checkScheduleArch(s8, splitK, *findTargetArch("sm_80")).ok());
}

// wgmma's s8 form: channel, tensor or whole-tile group scales without zero
// points, integer wgmma's N, and tile M 32 for 8-bit codes on two
// warpgroups and for groups; each refusal names its reason.
TEST(ScheduleRules, S8WgmmaTakesCentredCodesWithChannelScales) {
  auto errorOf = [](const Problem &p, const Schedule &s) {
    Status fits = checkSchedule(p, s);
    return fits.ok() ? std::string() : fits.error();
  };
  const Schedule one{Family::Wgmma, 64, 256, 64, 1, 4, 8, 1};
  const Schedule two{Family::Wgmma, 64, 512, 64, 1, 8, 8, 1};
  Problem w4 = s8Problem(formats::DataFormat::signedInt(4));
  Problem w8 = s8Problem(formats::DataFormat::signedInt(8));
  EXPECT_EQ(errorOf(w4, one), "");
  EXPECT_EQ(errorOf(w4, two), "");
  EXPECT_EQ(errorOf(w8, one), "");
  EXPECT_NE(errorOf(w8, two).find("8-bit codes with quantized activations on two consumer "
                                  "warpgroups "
                                  "need tile M <= 32, got 64"),
            std::string::npos);
  Schedule n40 = one;
  n40.tileM = 40;
  EXPECT_NE(errorOf(w4, n40).find("integer wgmma takes N = 8, 16, 24, 32 or a multiple of 16"),
            std::string::npos);
  n40.tileM = 24;
  EXPECT_EQ(errorOf(w4, n40), "");
  Problem q40 = s8Problem(formats::DataFormat::unsignedInt(4, -8));
  EXPECT_EQ(errorOf(q40, one), "") << "Q4_0's codes are centred on 0";
  // Codes centred off 0 take Σx from a wgmma of ones.
  for (const char *name : {"uint4", "uint8", "ternary", "uint1"})
    EXPECT_EQ(errorOf(s8Problem(*formats::parseFormat(name)), one), "") << name;
  // Group scales close each group's s32 sums into f32 sums after its last
  // K tile: whole tiles, and tile M 32 for the second set of sums.
  Problem grouped = w4;
  grouped.scheme.granularity = formats::Granularity::PerGroup;
  grouped.scheme.groupSize = 128;
  EXPECT_NE(errorOf(grouped, one).find("tile M must be at most 32, got 64"), std::string::npos);
  Schedule narrow = one;
  narrow.tileM = 32;
  EXPECT_EQ(errorOf(grouped, narrow), "");
  grouped.scheme.groupSize = 32;
  EXPECT_NE(errorOf(grouped, narrow).find("groups must be multiples of 64, got 32"),
            std::string::npos);
  Problem zeros = w4;
  zeros.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_NE(errorOf(zeros, one).find("zero points with s8 activations on wgmma"),
            std::string::npos);
}

// The s8 split-K mma takes codes whose s8 bytes are centred on 0, scales
// that leave the K loop, registers only, and a K share whose s32 sum is
// exact; each refusal names its reason.
TEST(ScheduleRules, S8ActivationsTakeCentredIntegerCodes) {
  const Schedule splitK{Family::Mma, 16, 64, 128, 1, 1, 1, 8};
  auto errorOf = [&](const Problem &p, const Schedule &s = Schedule{Family::Mma, 16, 64, 128, 1,
                                                                     1, 1, 8}) {
    Status fits = checkSchedule(p, s);
    return fits.ok() ? std::string() : fits.error();
  };
  // GGUF Q4_0's codes (uint4 offset -8) are centred on 0; plain uint8 and
  // uint4 are centred on 128 and 8, which Σx per token takes care of.
  for (const formats::DataFormat &code :
       {formats::DataFormat::unsignedInt(4, -8), formats::DataFormat::unsignedInt(8),
        formats::DataFormat::unsignedInt(4)})
    EXPECT_EQ(errorOf(s8Problem(code)), "") << code.name();
  EXPECT_NE(errorOf(s8Problem(formats::DataFormat::signedInt(3))).find("no s8 decode of"),
            std::string::npos);
  // BitNet b1.58: ternary weights, bytes 64 (v - 1), with Σx.
  EXPECT_EQ(errorOf(s8Problem(*formats::parseFormat("ternary"))), "");
  // GPTQ/AWQ-style uint4 g128 with (q - z)·s zeros: groups close their s32
  // sums, zeros come off as (c - z)·Σx. Groups of 16 and q·s - z do not.
  Problem gptq = s8Problem(formats::DataFormat::unsignedInt(4));
  gptq.scheme.granularity = formats::Granularity::PerGroup;
  gptq.scheme.groupSize = 128;
  gptq.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_EQ(errorOf(gptq), "");
  EXPECT_NE(errorOf(gptq, Schedule{Family::Mma, 32, 128, 64, 1, 1, 1, 2})
                .find("tile M x tile N / 128 must be at most 16, got 32"),
            std::string::npos);
  EXPECT_NE(errorOf(gptq, Schedule{Family::Mma, 8, 64, 256, 1, 1, 1, 16})
                .find("group scales with s8 activations, split_k >= 16 and tile K > 128"),
            std::string::npos);
  Problem subValue = gptq;
  subValue.scheme.zero = formats::ZeroMode::SubtractScaled;
  EXPECT_NE(errorOf(subValue).find("sub_value zero points (q·s - z) with s8 activations are not"),
            std::string::npos);
  Problem sixteen = gptq;
  sixteen.scheme.groupSize = 16;
  EXPECT_NE(errorOf(sixteen).find("a group must be whole 32-wide blocks"), std::string::npos);
  Schedule staged = splitK;
  staged.stages = 2;
  EXPECT_EQ(errorOf(s8Problem(formats::DataFormat::signedInt(8)), staged),
            scheduleSubject(staged) + ": the split-K mma reads s8 activations straight into "
                                      "registers: stages must be 1, got 2");
  Schedule sixteenWarps{Family::Mma, 8, 64, 256, 1, 1, 1, 16};
  EXPECT_NE(errorOf(s8Problem(formats::DataFormat::signedInt(8)), sixteenWarps)
                .find("need more than the 128 registers a thread of 16 warps gets"),
            std::string::npos);
  EXPECT_EQ(errorOf(s8Problem(formats::DataFormat::signedInt(4)), sixteenWarps), "");
  // 2 slices of K = 262144: a warp sums 131072 products of up to 2^14.
  Schedule twoWarps = splitK;
  twoWarps.splitK = 2;
  EXPECT_NE(errorOf(s8Problem(formats::DataFormat::signedInt(8), 262144), twoWarps)
                .find("must stay below 131072 for its s32 sum"),
            std::string::npos);
  EXPECT_EQ(errorOf(s8Problem(formats::DataFormat::signedInt(8), 262144 - 256), twoWarps), "");
  // Off-centre codes add 2^shift c Σx, up to 2^14 a K again: half the share.
  EXPECT_NE(errorOf(s8Problem(formats::DataFormat::unsignedInt(8), 131072), twoWarps)
                .find("must stay below 65536 for its s32 sum"),
            std::string::npos);
  EXPECT_EQ(errorOf(s8Problem(formats::DataFormat::unsignedInt(8), 131072 - 256), twoWarps), "");
}

} // namespace
} // namespace lowbit::core
