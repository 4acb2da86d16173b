#include "compiler/tuner/SearchSpace.h"
#include "TunerTestSupport.h"
#include "codegen/nvrtc/NvrtcCompiler.h"

#include <gtest/gtest.h>

namespace lowbit::tuner {
namespace {

using testing::w4a16;

// The compiler's rules as the task states them, written out independently of
// SearchSpace.cpp: passes/TileGemv.cpp checkGemv and passes/TileMma.cpp
// checkMma, for 4-bit integer codes, f16/bf16 activations, no quantized zeros
// and no act-order.
bool gemvRulesHold(const ProblemShape &p, const Schedule &s) {
  return s.family == Family::Gemv && s.warpsM == 1 && s.warpsN == s.tileN && s.tileM >= 1 &&
         s.tileM <= 8 && s.tileK > 0 && s.tileK % 1024 == 0 && s.splitK == 1 && p.k % 32 == 0 &&
         p.n % s.tileN == 0 && (p.granularity != "group" || p.groupSize % 32 == 0);
}

bool mmaRulesHold(const ProblemShape &p, const Schedule &s) {
  int64_t shared = s.stages * (s.tileM * s.tileK * 2 + s.tileN * s.tileK / 2);
  return s.family == Family::Mma && s.tileM % (16 * s.warpsM) == 0 &&
         s.tileN % (64 * s.warpsN) == 0 && s.tileK % 64 == 0 && s.stages >= 2 &&
         s.splitK == 1 && shared <= 48 * 1024 && p.n % s.tileN == 0 && p.k % s.tileK == 0 &&
         (p.granularity != "group" || p.groupSize % s.tileK == 0);
}

// passes/SplitKLoops.cpp checkSplitKProblem: whole 32-wide blocks (two k16
// steps of the paired K order) in a chunk, whole chunks in K, chunk and
// group dividing one another, 1..4 stages.
bool splitKRulesHold(const ProblemShape &p, const Schedule &s) {
  bool groupFits = p.granularity != "group" ||
                   (p.groupSize % 32 == 0 && (s.tileK % p.groupSize == 0 || p.groupSize % s.tileK == 0));
  return s.warpsM == 1 && s.warpsN == 1 && s.splitK >= 1 && s.splitK <= 32 && s.stages >= 1 &&
         s.stages <= 4 && p.n % 64 == 0 && s.tileK >= 32 && s.tileK % 32 == 0 &&
         p.k % s.tileK == 0 && groupFits;
}

// passes/TileGemvTiled.cpp checkGemvTiled: 64 columns, 1..8 rows, partial
// sums [split_k, rows x 8 subtiles, 8 groups] of f32 in 48 KB.
bool gemvTiledRulesHold(const ProblemShape &p, const Schedule &s) {
  return s.family == Family::GemvTiled && s.tileN == 64 && s.tileM >= 1 && s.tileM <= 8 &&
         s.splitK * s.tileM * 8 * 8 * 4 <= 48 * 1024 && splitKRulesHold(p, s);
}

// passes/TileMmaSplitK.cpp checkMmaSplitK: 8, 16 or 32 rows, 64 or 128 columns,
// partial sums [split_k, fragments x subtiles, 32 lanes x 4] of f32 in 48 KB.
// With stages > 1 each warp has a ring of stages x tile K / 32 slots (at
// most 16) of 64 x 32 codes per 64 columns and tile M x 32 activations, and
// rings plus partial sums fit sm_90's 227 KiB.
bool mmaSplitKRulesHold(const ProblemShape &p, const Schedule &s) {
  int64_t partials = s.splitK * (s.tileN / 16) * (s.tileM / 8) * 512;
  int64_t slots = s.stages * s.tileK / 32;
  int64_t ring = s.stages > 1 ? s.splitK * slots * (s.tileN * 16 + s.tileM * 64) : 0;
  return s.family == Family::Mma && s.splitK > 1 && (s.tileM == 8 || s.tileM == 16 || s.tileM == 32) &&
         (s.tileN == 64 || s.tileN == 128) && p.n % s.tileN == 0 && partials <= 48 * 1024 &&
         splitKRulesHold(p, s) && (s.stages == 1 || slots <= 16) && partials + ring <= 232448;
}

bool compilerRulesHold(const ProblemShape &p, const Schedule &s) {
  switch (s.family) {
  case Family::Gemv: return gemvRulesHold(p, s);
  case Family::GemvTiled: return gemvTiledRulesHold(p, s);
  case Family::Mma: return s.splitK > 1 ? mmaSplitKRulesHold(p, s) : mmaRulesHold(p, s);
  }
  return false;
}

ProblemShape shape(int64_t n, int64_t k, int64_t group = 128) {
  kernels::ProblemDesc d = w4a16(n, k);
  d.scheme.groupSize = group;
  return shapeOf(d);
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
  for (ProblemShape p : {shape(28672, 8192), shape(8192, 28672), shape(4096, 4096, 64),
                         shape(4096, 14336, 32), shape(96, 1056, 32)}) {
    SearchSpace space = enumerateSchedules(p, limits);
    ASSERT_FALSE(space.accepted.empty()) << p.n << "x" << p.k;
    for (const Schedule &s : space.accepted) {
      EXPECT_TRUE(compilerRulesHold(p, s)) << s.text();
      EXPECT_LE(s.threads(), 1024) << s.text();
      EXPECT_LE(estimatedRegisters(s), 255) << s.text();
    }
  }
}

TEST(SearchSpace, CompilerChecksMirrorTheRulesExactly) {
  // Over a grid much wider than the enumeration (including invalid values),
  // the family checks accept exactly what the written-out rules accept.
  SearchSpaceOptions wide;
  wide.gemvTileM = {0, 1, 3, 8, 9};
  wide.gemvWarps = {1, 3, 4, 7};
  wide.gemvUnroll = {1, 3};
  wide.mmaTileM = {16, 24, 32, 48, 256};
  wide.mmaTileN = {64, 96, 128, 192, 512};
  wide.mmaTileK = {32, 64, 96, 128, 512};
  wide.mmaWarpsM = {1, 2, 3};
  wide.mmaWarpsN = {1, 2};
  wide.mmaStages = {1, 2, 6};
  for (ProblemShape p : {shape(28672, 8192), shape(4096, 4096, 64), shape(192, 3072, 96)}) {
    for (const Schedule &s : enumerateSchedules(p, *archLimits("sm_80"), wide).accepted)
      EXPECT_TRUE(compilerRulesHold(p, s)) << s.text();
    // And the reverse, on the compiler rules alone (no arch limits).
    for (int64_t tm : wide.mmaTileM)
      for (int64_t tn : wide.mmaTileN)
        for (int64_t tk : wide.mmaTileK)
          for (int64_t wm : wide.mmaWarpsM)
            for (int64_t wn : wide.mmaWarpsN)
              for (int64_t stages : wide.mmaStages) {
                Schedule s{Family::Mma, tm, tn, tk, wm, wn, stages, 1};
                EXPECT_EQ(checkMmaSchedule(p, s).ok(), mmaRulesHold(p, s)) << s.text();
              }
    for (int64_t tm : wide.gemvTileM)
      for (int64_t w : wide.gemvWarps)
        for (int64_t tk : {512, 1024, 3072}) {
          Schedule s{Family::Gemv, tm, w, tk, 1, w, 1, 1};
          EXPECT_EQ(checkGemvSchedule(p, s).ok(), gemvRulesHold(p, s)) << s.text();
          Schedule skewed{Family::Gemv, tm, w, tk, 2, w, 1, 1};
          EXPECT_FALSE(checkGemvSchedule(p, skewed).ok());
        }
  }
}

TEST(SearchSpace, SplitKMmaChecksMirrorTheRulesExactly) {
  // Including rings too deep (stages 3 of 256-wide chunks: 24 slots) or too
  // big for any GPU (8 warps x 16 slots of 16 x 128 blocks).
  for (ProblemShape p : {shape(28672, 8192), shape(4096, 4096, 64), shape(192, 3072, 96)})
    for (int64_t tm : {8, 16, 24, 32})
      for (int64_t tn : {64, 128, 192})
        for (int64_t tk : {32, 64, 96, 128, 256, 512})
          for (int64_t splitK : {2, 4, 8, 16})
            for (int64_t stages : {1, 2, 3, 4, 5}) {
              Schedule s{Family::Mma, tm, tn, tk, 1, 1, stages, splitK};
              EXPECT_EQ(checkMmaSplitKSchedule(p, s).ok(), mmaSplitKRulesHold(p, s)) << s.text();
            }
}

TEST(SearchSpace, RingsCountAsDynamicSharedMemory) {
  ArchLimits sm90 = *archLimits("sm_90a"), sm86 = *archLimits("sm_86");
  // 16 x 64 x 128, stages 2, 8 warps: 8 warps x 8 slots x (1024 + 1024) bytes.
  Schedule ring{Family::Mma, 16, 64, 128, 1, 1, 2, 8};
  EXPECT_EQ(estimatedDynamicSharedBytes(ring, 4), 131072);
  EXPECT_EQ(estimatedSharedBytes(ring, 4), 32768); // the partial sums, static
  EXPECT_TRUE(checkArchLimits(sm90, ring, 4).ok());
  Status onSm86 = checkArchLimits(sm86, ring, 4);
  ASSERT_FALSE(onSm86.ok());
  EXPECT_NE(onSm86.error().find("163840 bytes of shared memory"), std::string::npos)
      << onSm86.error();
  Schedule direct{Family::Mma, 16, 64, 128, 1, 1, 1, 8};
  EXPECT_EQ(estimatedDynamicSharedBytes(direct, 4), 0);
}

TEST(SearchSpace, CompilerDefaultSchedulesAreAccepted) {
  // compiler/KernelSetCompiler.cpp defaultSchedules(), for a Llama-3-8B shape.
  const char *defaults[] = {
      "#lb.schedule<family = gemv, tile = [1, 4, 4096], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = gemv, tile = [8, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 4, split_k = 1>",
      "#lb.schedule<family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 3, split_k = 1>",
      "#lb.schedule<family = mma, tile = [128, 128, 64], warps = [4, 2], stages = 2, split_k = 1>",
  };
  for (const char *text : defaults) {
    auto s = parseSchedule(text);
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_EQ(s->text(), text);
    Status ok = checkSchedule(shape(14336, 4096), *archLimits("sm_90a"), *s);
    EXPECT_TRUE(ok.ok()) << text << ": " << ok.error();
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
  ASSERT_TRUE(checkCompilerRules(shape(4096, 4096), spills).ok());
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

TEST(SearchSpace, UnsupportedProblemsGiveTheCompilersReason) {
  kernels::ProblemDesc w2 = w4a16(4096, 4096);
  w2.code = formats::DataFormat::unsignedInt(2);
  Schedule gemv{Family::Gemv, 1, 4, 1024, 1, 4, 1, 1};
  Status why = checkSchedule(shapeOf(w2), *archLimits("sm_80"), gemv);
  ASSERT_FALSE(why.ok());
  EXPECT_NE(why.error().find("only 4-bit integer codes"), std::string::npos);
  EXPECT_TRUE(enumerateSchedules(shapeOf(w2), *archLimits("sm_80")).accepted.empty());
  EXPECT_FALSE(archLimits("sm_75").ok());
}

TEST(Schedule, ParsesWithoutSplitKAndRejectsUnknownFields) {
  auto s = parseSchedule("#lb.schedule<family=mma,tile=[16,64,128],warps=[1,1],stages=4>");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->splitK, 1);
  EXPECT_EQ(s->tileK, 128);
  EXPECT_FALSE(parseSchedule("#lb.schedule<family = mma, tile = [16, 64], warps = [1, 1], "
                             "stages = 4>")
                   .ok());
  EXPECT_FALSE(parseSchedule("#lb.schedule<family = wgmma, tile = [16, 64, 64], warps = [1, 1], "
                             "stages = 4>")
                   .ok());
  EXPECT_FALSE(parseSchedule("#lb.schedule<family = mma, tile = [16, 64, 64], warps = [1, 1], "
                             "stages = 4, cluster = 2>")
                   .ok());
}

} // namespace
} // namespace lowbit::tuner
