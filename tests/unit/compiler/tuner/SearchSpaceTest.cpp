#include "compiler/tuner/SearchSpace.h"
#include "TunerTestSupport.h"
#include "codegen/nvrtc/NvrtcCompiler.h"
#include "core/ScheduleRules.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace lowbit::tuner {
namespace {

using core::Family;
using core::Schedule;

// W4A16, group 128 (or `group`), in the typed model.
core::Problem shape(int64_t n, int64_t k, int64_t group = 128) {
  core::Problem p;
  p.n = n;
  p.k = k;
  p.scheme.groupSize = group;
  return p;
}

// The tuner's per-SM table and the compiler's per-block opt-in maxima
// (nvrtc::maxSharedBytesPerBlock, which decides what `lowbit compile` skips)
// are one table: a block may use its SM's shared memory less the 1 KiB the
// system reserves for it.
TEST(SearchSpace, SharedMemoryPerSmAgreesWithTheCompilersPerBlockLimit) {
  for (nvrtc::Arch arch :
       {nvrtc::Arch::Sm80, nvrtc::Arch::Sm86, nvrtc::Arch::Sm89, nvrtc::Arch::Sm90a}) {
    Expected<ArchLimits> limits = archLimits(nvrtc::archName(arch));
    ASSERT_TRUE(limits.ok()) << limits.error();
    EXPECT_EQ(limits->sharedPerSm - 1024, nvrtc::maxSharedBytesPerBlock(arch))
        << nvrtc::archName(arch);
  }
}

TEST(SearchSpace, EveryAcceptedScheduleSatisfiesTheCompilerRules) {
  ArchLimits limits = *archLimits("sm_90a");
  for (core::Problem p : {shape(28672, 8192), shape(8192, 28672), shape(4096, 4096, 64),
                          shape(4096, 14336, 32), shape(96, 1056, 32)}) {
    SearchSpace space = enumerateSchedules(p, limits);
    ASSERT_FALSE(space.accepted.empty()) << p.n << "x" << p.k;
    for (const Schedule &s : space.accepted) {
      Status rules = core::checkSchedule(p, s);
      EXPECT_TRUE(rules.ok()) << s.text() << ": " << rules.error();
      EXPECT_LE(s.threads(), 1024) << s.text();
      EXPECT_LE(estimatedRegisters(s), 255) << s.text();
    }
  }
}

// Every code type the fragment facts describe gets schedules in every
// family, with f16 and bf16 activations; narrower codes stage fewer bytes,
// so no width gets fewer staged-mma schedules than W8.
TEST(SearchSpace, EveryIntegerWidthGetsSchedulesInEveryFamily) {
  ArchLimits limits = *archLimits("sm_90a");
  std::vector<formats::DataFormat> codes = {
      formats::DataFormat::unsignedInt(1), formats::DataFormat::unsignedInt(2),
      formats::DataFormat::unsignedInt(4), formats::DataFormat::unsignedInt(8),
      formats::DataFormat::signedInt(4),   formats::DataFormat::int8(),
      formats::DataFormat::ternary()};
  auto count = [](const SearchSpace &space, Family family, bool splitK) {
    int64_t n = 0;
    for (const Schedule &s : space.accepted)
      n += s.family == family && (s.splitK > 1) == splitK;
    return n;
  };
  core::Problem w8 = shape(4096, 4096);
  w8.code = formats::DataFormat::unsignedInt(8);
  int64_t w8Mma = count(enumerateSchedules(w8, limits), Family::Mma, false);
  for (const formats::DataFormat &code : codes)
    for (core::Activation activation : {core::Activation::F16, core::Activation::BF16}) {
      core::Problem p = shape(4096, 4096);
      p.code = code;
      p.activation = activation;
      SearchSpace space = enumerateSchedules(p, limits);
      EXPECT_GT(count(space, Family::Gemv, false), 0) << code.name();
      EXPECT_GT(count(space, Family::GemvTiled, false) + count(space, Family::GemvTiled, true), 0)
          << code.name();
      EXPECT_GT(count(space, Family::Mma, true), 0) << code.name();
      EXPECT_GE(count(space, Family::Mma, false), w8Mma) << code.name();
    }
}

TEST(SearchSpace, RingsCountAsDynamicSharedMemory) {
  ArchLimits sm90 = *archLimits("sm_90a"), sm86 = *archLimits("sm_86");
  // 16 x 64 x 128, stages 2, 8 warps: 8 warps x 8 slots x (1024 + 1024) bytes.
  Schedule ring{Family::Mma, 16, 64, 128, 1, 1, 2, 8};
  const core::Problem w4 = shape(4096, 4096);
  EXPECT_EQ(core::dynamicSharedBytes(ring, w4), 131072);
  EXPECT_EQ(core::staticSharedBytes(ring, 4), 32768); // the partial sums, static
  EXPECT_TRUE(checkArchLimits(sm90, ring, w4).ok());
  Status onSm86 = checkArchLimits(sm86, ring, w4);
  ASSERT_FALSE(onSm86.ok());
  EXPECT_NE(onSm86.error().find("163840 bytes of shared memory"), std::string::npos)
      << onSm86.error();
  Schedule direct{Family::Mma, 16, 64, 128, 1, 1, 1, 8};
  EXPECT_EQ(core::dynamicSharedBytes(direct, w4), 0);
}

TEST(SearchSpace, CompilerDefaultSchedulesAreAccepted) {
  // What `lowbit compile` uses when a spec names no schedules, on a
  // Llama-3-8B shape.
  for (const Schedule &s : core::defaultSchedules()) {
    Status ok = checkSchedule(shape(14336, 4096), *archLimits("sm_90a"), s);
    EXPECT_TRUE(ok.ok()) << s.text() << ": " << ok.error();
  }
}

TEST(SearchSpace, OverBudgetScheduleIsRejectedWithItsReason) {
  // 4 x (128 x 128 x 2 + 128 x 128 / 2) = 160 KiB of shared memory.
  Schedule big{Family::Mma, 128, 128, 128, 4, 2, 4, 1};
  Status why = checkSchedule(shape(4096, 4096), *archLimits("sm_90a"), big);
  ASSERT_FALSE(why.ok());
  EXPECT_NE(why.error().find("163840 bytes of shared memory"), std::string::npos) << why.error();

  // Fits shared memory, but one warp would hold 128 x 256 accumulators.
  Schedule spills{Family::Mma, 128, 256, 64, 1, 1, 2, 1};
  ASSERT_TRUE(core::checkSchedule(shape(4096, 4096), spills).ok());
  Status regs = checkSchedule(shape(4096, 4096), *archLimits("sm_90a"), spills);
  ASSERT_FALSE(regs.ok());
  EXPECT_NE(regs.error().find("registers"), std::string::npos) << regs.error();

  // And the enumeration lists it among the rejected, with the same reason.
  SearchSpaceOptions only;
  only.mmaTileM = {128}, only.mmaTileN = {128}, only.mmaTileK = {128};
  only.mmaWarpsM = {4}, only.mmaWarpsN = {2}, only.mmaStages = {4};
  SearchSpace space = enumerateMma(shape(4096, 4096), *archLimits("sm_90a"), only);
  EXPECT_TRUE(space.accepted.empty());
  ASSERT_EQ(space.rejected.size(), 1u);
  EXPECT_EQ(space.rejected[0].reason, why.error());
}

// Asked for both tile schedulers of wgmma, the tuner pairs each accepted
// grid schedule without a cluster with its persistent twin, and rejects
// persistent ones with clusters with the rules' reason. By default it
// searches grid and stream-K blocks, not persistent ones (grid blocks
// measured faster).
TEST(SearchSpace, WgmmaSearchesPersistentBlocksWithoutClustersWhenAsked) {
  SearchSpace byDefault = enumerateWgmma(shape(8192, 8192), *archLimits("sm_90a"));
  EXPECT_TRUE(std::none_of(byDefault.accepted.begin(), byDefault.accepted.end(),
                           [](const Schedule &s) { return s.walksTiles() && !s.streamK(); }));
  EXPECT_TRUE(std::any_of(byDefault.accepted.begin(), byDefault.accepted.end(),
                          [](const Schedule &s) { return s.streamK(); }));
  SearchSpaceOptions both;
  both.wgmmaSchedulers = {core::TileScheduler::Grid, core::TileScheduler::Persistent};
  SearchSpace space = enumerateWgmma(shape(8192, 8192), *archLimits("sm_90a"), both);
  int64_t grid = 0, persistent = 0;
  for (const Schedule &s : space.accepted) {
    if (!s.walksTiles()) {
      grid += s.clusterK == 1;
      continue;
    }
    ++persistent;
    EXPECT_EQ(s.clusterK, 1) << s.text();
    Schedule twin = s;
    twin.scheduler = core::TileScheduler::Grid;
    EXPECT_NE(std::find(space.accepted.begin(), space.accepted.end(), twin),
              space.accepted.end())
        << s.text();
  }
  EXPECT_GT(persistent, 0);
  EXPECT_EQ(persistent, grid);
  EXPECT_TRUE(std::any_of(space.rejected.begin(), space.rejected.end(), [](const auto &r) {
    return r.reason.find("scheduler = persistent is not implemented with cluster_k > 1") !=
           std::string::npos;
  }));
}

// With stream-K (lowbit tune's default, --schedulers grid,stream_k), the
// tuner offers each unclustered wgmma schedule of f16 activations as a stream-K
// kernel too, and none for s8 activations, with the rules' reason.
TEST(SearchSpace, WgmmaSearchesStreamKWhenAsked) {
  SearchSpaceOptions streamK;
  streamK.wgmmaSchedulers = {core::TileScheduler::Grid, core::TileScheduler::StreamK};
  SearchSpace space = enumerateWgmma(shape(8192, 8192), *archLimits("sm_90a"), streamK);
  const auto split = std::count_if(space.accepted.begin(), space.accepted.end(),
                                   [](const Schedule &s) { return s.streamK(); });
  const auto grid =
      std::count_if(space.accepted.begin(), space.accepted.end(),
                    [](const Schedule &s) { return !s.walksTiles() && s.clusterK == 1; });
  EXPECT_GT(split, 0);
  EXPECT_EQ(split, grid);
  core::Problem s8 = shape(8192, 8192);
  s8.activation = core::Activation::S8;
  core::setOutput(s8, core::Output::F16);
  SearchSpace bytes = enumerateWgmma(s8, *archLimits("sm_90a"), streamK);
  EXPECT_TRUE(std::none_of(bytes.accepted.begin(), bytes.accepted.end(),
                           [](const Schedule &s) { return s.streamK(); }));
  EXPECT_TRUE(std::any_of(bytes.rejected.begin(), bytes.rejected.end(), [](const auto &r) {
    return r.reason.find("stream_k is implemented for f16 and bf16") != std::string::npos;
  }));
}

TEST(SearchSpace, UnsupportedProblemsGiveTheCompilersReason) {
  // A 7-bit minifloat: no plane split stores 7 bits.
  core::Problem fp7 = shape(4096, 4096);
  Expected<formats::DataFormat> e3m3 = formats::parseFormat("float<3,3,3>");
  ASSERT_TRUE(e3m3.ok()) << e3m3.error();
  fp7.code = *e3m3;
  Schedule gemv{Family::Gemv, 1, 4, 1024, 1, 4, 1, 1};
  Status why = checkSchedule(fp7, *archLimits("sm_80"), gemv);
  ASSERT_FALSE(why.ok());
  EXPECT_EQ(why.error(), core::checkSchedule(fp7, gemv).error());
  EXPECT_NE(why.error().find("gemv schedule: no register decode for 7-bit"), std::string::npos)
      << why.error();
  EXPECT_TRUE(enumerateSchedules(fp7, *archLimits("sm_80")).accepted.empty());

  // Act-order has no kernels yet; quantized zero codes do (every family).
  core::Problem actOrder = shape(4096, 4096);
  actOrder.scheme.actOrder = true;
  EXPECT_TRUE(enumerateSchedules(actOrder, *archLimits("sm_80")).accepted.empty());
  core::Problem gptq = shape(4096, 4096);
  gptq.scheme.zero = formats::ZeroMode::SubtractCode;
  gptq.scheme.zeroCodes = formats::DataFormat::unsignedInt(4);
  SearchSpace space = enumerateSchedules(gptq, *archLimits("sm_80"));
  for (Family family : {Family::Gemv, Family::GemvTiled, Family::Mma})
    EXPECT_TRUE(std::any_of(space.accepted.begin(), space.accepted.end(), [&](const Schedule &s) {
      return s.family == family;
    })) << familyName(family);
  EXPECT_FALSE(archLimits("sm_75").ok());
}

} // namespace
} // namespace lowbit::tuner
