// The wgmma family's schedule rules (core/WgmmaRules.cpp): codes, warpgroups
// and shared layout tiles, clusters, the tile schedulers, and what a
// consumer keeps live.
#include "core/DecodeFacts.h"
#include "tests/unit/core/model/ScheduleRulesTestSupport.h"

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {
// wgmma: every code the fragment facts describe, one or two consumer
// warpgroups, and the registers two of them leave a thread.
TEST(WgmmaRules, WgmmaServesEveryCodeWithWholeLayoutTilesPerWarp) {
  for (const formats::DataFormat &code : formats::builtinElementFormats()) {
    Problem p = problem(code);
    p.scheme.granularity = formats::Granularity::PerGroup;
    p.scheme.groupSize = 128;
    Schedule small = kWgmma;
    small.tileM = 48;
    EXPECT_EQ(checkSchedule(p, small).ok(), checkDecodable(code, p.activation).ok()) << code.name();
  }
  Problem p = problem(formats::DataFormat::unsignedInt(4));
  EXPECT_TRUE(checkSchedule(p, kWgmma).ok());
  Schedule oneGroup{Family::Wgmma, 64, 256, 64, 1, 4, 8, 1};
  EXPECT_TRUE(checkSchedule(p, oneGroup).ok());
  Schedule wideN = oneGroup;
  wideN.tileN = 512;
  EXPECT_EQ(checkSchedule(p, wideN).error(),
            "wgmma schedule: each consumer warp owns one 64-column layout tile (tile N = 256), or "
            "two warpgroups share four (tile N = 256 over warps [1, 8]), got 512");
  Schedule tallM = kWgmma;
  tallM.tileM = 72;
  EXPECT_NE(checkSchedule(p, tallM).error().find("tile M must be a multiple of 8 in 8 .. 64"),
            std::string::npos);
  Schedule shortK = kWgmma;
  shortK.tileK = 32;
  EXPECT_EQ(checkSchedule(p, shortK).error(),
            "wgmma schedule: tile K must be 64 (one swizzled row of activations), got 32");
  // Zero points with two warpgroups: tile M 56 fits, 64 does not.
  Problem zeros = p;
  zeros.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_FALSE(checkSchedule(zeros, kWgmma).ok());
  Schedule fits = kWgmma;
  fits.tileM = 56;
  EXPECT_TRUE(checkSchedule(zeros, fits).ok());
  EXPECT_TRUE(checkSchedule(zeros, oneGroup).ok()) << "one warpgroup has 255 registers";
  // The ring: stages x tile M x 128 bytes and the 1 KiB that aligns it.
  EXPECT_EQ(wgmmaRingBytes(kWgmma, Activation::F16), 8 * 64 * 128 + 1024);
  EXPECT_EQ(dynamicSharedBytes(kWgmma, p), wgmmaRingBytes(kWgmma, Activation::F16));
  // s8 rows are 64 bytes.
  EXPECT_EQ(wgmmaRingBytes(kWgmma, Activation::S8), 8 * 64 * 64 + 1024);
  EXPECT_EQ(kWgmma.threads(), 8 * 32 + 128) << "the producer warpgroup";
}

// Two warpgroups sharing four layout tiles: tile M up to 128 (two slices a
// warp, the same accumulator floats as four at 64), the register rules at
// half the tile M, clusters with two accumulators a warp in the partials,
// no quantized activations, and the block's codes in a weight ring after
// the activation ring.
TEST(WgmmaRules, WgmmaWarpgroupsShareLayoutTilesUpToTileM128) {
  Problem p = problem(formats::DataFormat::unsignedInt(4));
  p.scheme.granularity = formats::Granularity::PerGroup;
  p.scheme.groupSize = 128;
  Schedule shared{Family::Wgmma, 128, 256, 64, 1, 8, 8, 1};
  EXPECT_TRUE(checkScheduleStructure(shared).ok()) << checkScheduleStructure(shared).error();
  EXPECT_TRUE(wgmmaSharesTiles(shared));
  EXPECT_EQ(wgmmaSlicesPerWarp(shared), 2);
  EXPECT_FALSE(wgmmaSharesTiles(kWgmma));
  EXPECT_EQ(wgmmaSlicesPerWarp(kWgmma), 4);
  EXPECT_TRUE(checkSchedule(p, shared).ok()) << checkSchedule(p, shared).error();
  Schedule taller = shared;
  taller.tileM = 136;
  EXPECT_NE(checkSchedule(p, taller).error().find("tile M must be a multiple of 8 in 8 .. 128"),
            std::string::npos)
      << checkSchedule(p, taller).error();
  // K across a cluster: the partials are each warp's two accumulators
  // (8 warps x 2 x 64 floats a lane x 32 lanes x 4 bytes), after both
  // rings; at 8 stages they do not fit, at 4 they do.
  Schedule clustered = shared;
  clustered.clusterK = 2;
  EXPECT_EQ(wgmmaClusterPartialBytes(clustered), 8 * 2 * 64 * 32 * 4);
  EXPECT_NE(checkSchedule(p, clustered)
                .error()
                .find("the activation ring and the weight ring and "
                      "the cluster's partial sums need 328704 bytes"),
            std::string::npos)
      << checkSchedule(p, clustered).error();
  clustered.stages = 4;
  EXPECT_TRUE(checkSchedule(p, clustered).ok()) << checkSchedule(p, clustered).error();
  EXPECT_EQ(dynamicSharedBytes(clustered, p),
            wgmmaRingBytes(clustered, Activation::F16) + 4 * 256 * 64 / 2 + 8 * 2 * 64 * 32 * 4);
  clustered.clusterK = 4;
  EXPECT_NE(checkSchedule(p, clustered).error().find("cluster_k > 2 needs tile M <= 64"),
            std::string::npos)
      << checkSchedule(p, clustered).error();
  clustered.tileM = 64;
  EXPECT_TRUE(checkSchedule(p, clustered).ok()) << checkSchedule(p, clustered).error();
  clustered.clusterK = 3;
  EXPECT_NE(checkSchedule(p, clustered).error().find("cluster_k must divide a layout tile's 4"),
            std::string::npos)
      << checkSchedule(p, clustered).error();
  Problem s8 = p;
  s8.activation = Activation::S8;
  s8.scheme.granularity = formats::Granularity::PerChannel;
  Schedule s8Tile = shared;
  s8Tile.tileM = 64;
  EXPECT_NE(checkSchedule(s8, s8Tile).error().find("f16 and bf16 activations only"),
            std::string::npos)
      << checkSchedule(s8, s8Tile).error();
  // Zero points: tile M 112 holds what 56 did with four slices a warp.
  Problem zeros = p;
  zeros.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_NE(checkSchedule(zeros, shared).error().find("need tile M <= 56 (112 where they share"),
            std::string::npos)
      << checkSchedule(zeros, shared).error();
  Schedule fits = shared;
  fits.tileM = 112;
  EXPECT_TRUE(checkSchedule(zeros, fits).ok()) << checkSchedule(zeros, fits).error();
  // The weight ring: stages x 256 columns x 64 codes, after the activation
  // ring (128-byte carved).
  EXPECT_EQ(wgmmaWeightRingBytes(shared, 4), 8 * 256 * 64 / 2);
  EXPECT_EQ(wgmmaWeightRingBytes(kWgmma, 4), 0);
  EXPECT_EQ(dynamicSharedBytes(shared, p),
            wgmmaRingBytes(shared, Activation::F16) + 8 * 256 * 64 / 2);
  Problem bytes = p;
  bytes.code = formats::DataFormat::unsignedInt(8);
  Schedule byteTile = shared;
  byteTile.tileM = 64;
  EXPECT_TRUE(checkSchedule(bytes, byteTile).ok()) << checkSchedule(bytes, byteTile).error();
  byteTile.stages = 12; // 12 x 8 KiB of x (and 1 KiB) + 12 x 16 KiB of codes
  EXPECT_NE(checkSchedule(bytes, byteTile)
                .error()
                .find("the activation ring and the weight ring need 295936 bytes"),
            std::string::npos)
      << checkSchedule(bytes, byteTile).error();
}

// wgmma with cluster_k: equal runs of K tiles a block, each block's rank
// adding whole slices (so 2 or 4), f16 and bf16 activations only, and the
// partials in shared memory after the ring.
TEST(WgmmaRules, WgmmaSplitsKAcrossClustersOfTwoOrFourBlocks) {
  Problem p = problem(formats::DataFormat::unsignedInt(4));
  p.scheme.granularity = formats::Granularity::PerGroup;
  p.scheme.groupSize = 128;
  for (int64_t clusterK : {2, 4}) {
    Schedule s = kWgmma;
    s.clusterK = clusterK;
    EXPECT_TRUE(checkScheduleStructure(s).ok()) << checkScheduleStructure(s).error();
    EXPECT_TRUE(checkSchedule(p, s).ok()) << checkSchedule(p, s).error();
  }
  Schedule three = kWgmma;
  three.clusterK = 3;
  EXPECT_EQ(checkSchedule(p, three).error(),
            "wgmma schedule: cluster_k must divide a layout tile's 4 slices (2 or 4), got 3");
  Schedule four = kWgmma;
  four.clusterK = 4;
  Problem oddK = problem(formats::DataFormat::unsignedInt(4), 4096, 4224);
  EXPECT_EQ(checkSchedule(oddK, four).error(),
            "wgmma schedule: cluster_k = 4 needs K a multiple of 256 (equal runs of 64-wide K "
            "tiles), got 4224");
  Schedule two = kWgmma;
  two.clusterK = 2;
  EXPECT_TRUE(checkSchedule(oddK, two).ok()) << "33 K tiles a block";
  Problem s8 = p;
  s8.activation = Activation::S8;
  Schedule s8Tile = two;
  s8Tile.tileM = 32;
  EXPECT_NE(checkSchedule(s8, s8Tile).error().find("cluster_k > 1 with quantized activations"),
            std::string::npos);
  // 8-bit codes, zero points and groups shorter than tile K: the epilogue
  // spilled.
  Problem bytes = p;
  bytes.code = formats::DataFormat::signedInt(8);
  Problem zeros = p;
  zeros.scheme.zero = formats::ZeroMode::SubtractCode;
  Problem shortGroups = p;
  shortGroups.scheme.groupSize = 32;
  Schedule oneGroup{Family::Wgmma, 32, 256, 64, 1, 4, 8, 1, 2};
  for (const Problem &heavy : {bytes, zeros, shortGroups})
    EXPECT_NE(checkSchedule(heavy, oneGroup)
                  .error()
                  .find("cluster_k > 1 is for codes of at most "
                        "4 bits without zero points"),
              std::string::npos);
  EXPECT_TRUE(checkSchedule(p, oneGroup).ok()) << checkSchedule(p, oneGroup).error();
  // Every consumer warp's four m64 x 64 f32 accumulators, after the ring.
  EXPECT_EQ(wgmmaClusterPartialBytes(two), 8 * 4 * 32 * 128);
  EXPECT_EQ(wgmmaClusterPartialBytes(kWgmma), 0);
  EXPECT_EQ(dynamicSharedBytes(two, p), wgmmaRingBytes(two, Activation::F16) + 8 * 4 * 32 * 128);
  Schedule deep = two;
  deep.stages = 13;
  EXPECT_NE(checkSchedule(p, deep).error().find("the activation ring and the cluster's partial "
                                                "sums need 238592 bytes"),
            std::string::npos)
      << checkSchedule(p, deep).error();
}

// A block an SM walking the output tiles: wgmma alone, without clusters
// (whose barriers would hold the producer at each tile's epilogue); every
// code and activation wgmma serves otherwise.
TEST(WgmmaRules, PersistentSchedulerIsWgmmaWithoutClusters) {
  Problem p = problem(formats::DataFormat::unsignedInt(4));
  Schedule persistent = kWgmma;
  persistent.scheduler = TileScheduler::Persistent;
  EXPECT_TRUE(checkSchedule(p, persistent).ok()) << checkSchedule(p, persistent).error();
  Problem s8 = p;
  s8.activation = Activation::S8;
  Schedule s8Tile = persistent;
  s8Tile.tileM = 32;
  EXPECT_TRUE(checkSchedule(s8, s8Tile).ok()) << checkSchedule(s8, s8Tile).error();
  Schedule clustered = persistent;
  clustered.clusterK = 2;
  EXPECT_NE(checkSchedule(p, clustered)
                .error()
                .find("scheduler = persistent is not implemented "
                      "with cluster_k > 1"),
            std::string::npos)
      << checkSchedule(p, clustered).error();
  Schedule mma = kMma;
  mma.scheduler = TileScheduler::Persistent;
  EXPECT_EQ(checkScheduleStructure(mma).error(),
            "scheduler = persistent (a block an SM walking the output tiles) is for the wgmma "
            "family, got a mma schedule");
  EXPECT_EQ(dynamicSharedBytes(persistent, p), dynamicSharedBytes(kWgmma, p))
      << "one ring a block, whichever tiles it walks";
}

// Stream-K: as persistent, and only for 16-bit activations (its epilogue
// adds f32 partials; the 8-bit operands close their own sums). Its
// workspace: a tile of f32 partials and a flag a consumer warp, a block.
TEST(WgmmaRules, StreamKIsWgmmaWithoutClustersOn16BitActivations) {
  Problem p = problem(formats::DataFormat::unsignedInt(4));
  Schedule streamK = kWgmma;
  streamK.scheduler = TileScheduler::StreamK;
  EXPECT_TRUE(checkSchedule(p, streamK).ok()) << checkSchedule(p, streamK).error();
  Problem s8 = p;
  s8.activation = Activation::S8;
  Schedule s8Tile = streamK;
  s8Tile.tileM = 32;
  EXPECT_NE(checkSchedule(s8, s8Tile)
                .error()
                .find("scheduler = stream_k is implemented for f16 "
                      "and bf16 activations, not s8"),
            std::string::npos)
      << checkSchedule(s8, s8Tile).error();
  Schedule clustered = streamK;
  clustered.clusterK = 2;
  EXPECT_NE(checkSchedule(p, clustered)
                .error()
                .find("scheduler = stream_k is not implemented "
                      "with cluster_k > 1"),
            std::string::npos)
      << checkSchedule(p, clustered).error();
  Schedule mma = kMma;
  mma.scheduler = TileScheduler::StreamK;
  EXPECT_FALSE(checkScheduleStructure(mma).ok());
  EXPECT_EQ(streamKPartialBytes(streamK, 132), 132 * streamK.tileM * streamK.tileN * 4);
  EXPECT_EQ(streamKFlagBytes(streamK, 132), 132 * streamK.warpsN * 4);
  EXPECT_EQ(streamKWorkspaceBytes(kWgmma, 132), 0) << "only stream-K takes a workspace";
}

// Stream-K splits the last full wave and a partial one that is less than
// three-quarters full; it runs every other tile whole.
TEST(WgmmaRules, StreamKSplitsOnlyALastWaveUnderThreeQuartersFull) {
  EXPECT_EQ(streamKWholeTiles(132, 132), 132) << "one full wave";
  EXPECT_EQ(streamKWholeTiles(3 * 132, 132), 3 * 132) << "whole waves";
  EXPECT_EQ(streamKWholeTiles(99, 132), 99) << "99 = 3/4 of 132";
  EXPECT_EQ(streamKWholeTiles(98, 132), 0) << "under 3/4: all split";
  EXPECT_EQ(streamKWholeTiles(16, 132), 0);
  EXPECT_EQ(streamKWholeTiles(132 + 40, 132), 0) << "the full wave splits with the partial one";
  EXPECT_EQ(streamKWholeTiles(5 * 132 + 20, 132), 4 * 132);
  EXPECT_EQ(streamKWholeTiles(7 * 132 + 100, 132), 7 * 132 + 100);
  EXPECT_EQ(streamKWholeTiles(10, 0), 0) << "no blocks";
}

// Only the light decodes keep their wgmmas running across K tiles: each
// heavier one spilled with the extra step's fragments live (sm_90a).
TEST(WgmmaRules, WgmmaOverlapsKTilesOnlyForLightDecodes) {
  const Problem w4 = problem(formats::DataFormat::unsignedInt(4));
  const Schedule oneWarpgroup{Family::Wgmma, 64, 256, 64, 1, 4, 8, 1};
  EXPECT_TRUE(wgmmaOverlapsKTiles(w4, oneWarpgroup));
  EXPECT_FALSE(wgmmaOverlapsKTiles(w4, kWgmma)) << "two warpgroups cover each other's drain";
  EXPECT_TRUE(wgmmaOverlapsKTiles(problem(formats::DataFormat::unsignedInt(2)), oneWarpgroup));
  EXPECT_FALSE(wgmmaOverlapsKTiles(w4, kMma)) << "wgmma only";
  Schedule persistent = oneWarpgroup, streamK = oneWarpgroup, clustered = oneWarpgroup;
  persistent.scheduler = TileScheduler::Persistent;
  streamK.scheduler = TileScheduler::StreamK;
  clustered.clusterK = 2;
  EXPECT_TRUE(wgmmaOverlapsKTiles(w4, persistent));
  EXPECT_FALSE(wgmmaOverlapsKTiles(w4, streamK)) << "its tail's loop spilled";
  EXPECT_FALSE(wgmmaOverlapsKTiles(w4, clustered)) << "the cluster's epilogue spilled";

  Problem zeros = w4;
  zeros.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_FALSE(wgmmaOverlapsKTiles(zeros, oneWarpgroup));
  Problem g32 = w4;
  g32.scheme.groupSize = 32;
  EXPECT_FALSE(wgmmaOverlapsKTiles(g32, oneWarpgroup)) << "two sets of scales a K tile";
  Problem g64 = w4;
  g64.scheme.groupSize = 64;
  EXPECT_TRUE(wgmmaOverlapsKTiles(g64, oneWarpgroup)) << "one set a K tile";
  Problem perChannel = w4;
  perChannel.scheme.granularity = formats::Granularity::PerChannel;
  perChannel.scheme.groupSize = 0;
  EXPECT_TRUE(wgmmaOverlapsKTiles(perChannel, oneWarpgroup));
  Problem twoLevel = g64;
  twoLevel.scheme.superBlock = 128;
  EXPECT_FALSE(wgmmaOverlapsKTiles(twoLevel, oneWarpgroup));
  EXPECT_FALSE(wgmmaOverlapsKTiles(problem(formats::DataFormat::int8()), oneWarpgroup)) << "8 bits";
  EXPECT_FALSE(wgmmaOverlapsKTiles(problem(formats::DataFormat::e2m1()), oneWarpgroup))
      << "minifloat";
  Problem s8 = w4;
  s8.activation = Activation::S8;
  EXPECT_FALSE(wgmmaOverlapsKTiles(s8, oneWarpgroup)) << "quantized activations";
}

// The runtime's fallback and the tuner's measured fallbacks both ask this.
// The heavier decodes that spilled next to the accumulators of tile M 64:
// 8-bit codes with zero points (bf16 ones at any tile M above 16), and 5-
// and 6-bit codes in groups shorter than tile K, on one warpgroup.
TEST(WgmmaRules, HeavyDecodesTakeShorterTiles) {
  const Schedule oneGroup{Family::Wgmma, 64, 256, 64, 1, 4, 8, 1};
  Schedule oneGroup56 = oneGroup, oneGroup16 = oneGroup, twoGroups32 = kWgmma;
  oneGroup56.tileM = 56;
  oneGroup16.tileM = 16;
  twoGroups32.tileM = 32;
  Problem uint8 = problem(formats::DataFormat::unsignedInt(8), 4096, 1024);
  EXPECT_TRUE(checkSchedule(uint8, oneGroup).ok()) << "no zero points";
  for (formats::ZeroMode zero :
       {formats::ZeroMode::SubtractCode, formats::ZeroMode::SubtractScaled}) {
    Problem zeros = uint8;
    zeros.scheme.zero = zero;
    EXPECT_EQ(checkSchedule(zeros, oneGroup).error(),
              "wgmma schedule: 8-bit codes with zero points need tile M <= 56 with f16 "
              "activations on one consumer warpgroup, got 64");
    EXPECT_TRUE(checkSchedule(zeros, oneGroup56).ok());
    EXPECT_TRUE(checkSchedule(zeros, twoGroups32).ok());
    zeros.activation = Activation::BF16;
    EXPECT_EQ(checkSchedule(zeros, oneGroup56).error(),
              "wgmma schedule: 8-bit codes with zero points need tile M <= 16 with bf16 "
              "activations, got 56");
    EXPECT_EQ(checkSchedule(zeros, twoGroups32).error(),
              "wgmma schedule: 8-bit codes with zero points need tile M <= 16 with bf16 "
              "activations, got 32");
    EXPECT_TRUE(checkSchedule(zeros, oneGroup16).ok());
  }
  // f16 minifloats whose bits move, in groups: 56 on one warpgroup; e5m2
  // (its magnitude already in place) and per-channel scales keep 64.
  for (const formats::DataFormat &moved :
       {formats::DataFormat::e4m3fn(), *formats::parseFormat("float<3,4,3>")}) {
    Problem grouped = problem(moved, 4096, 1024);
    EXPECT_EQ(checkSchedule(grouped, oneGroup).error(),
              "wgmma schedule: 8-bit codes (a minifloat in groups) need tile M <= 56 with f16 "
              "activations on one consumer warpgroup, got 64")
        << moved.name();
    EXPECT_TRUE(checkSchedule(grouped, oneGroup56).ok()) << moved.name();
    Problem channel = grouped;
    channel.scheme.granularity = formats::Granularity::PerChannel;
    channel.scheme.groupSize = 0;
    EXPECT_TRUE(checkSchedule(channel, oneGroup).ok()) << moved.name();
  }
  EXPECT_TRUE(checkSchedule(problem(formats::DataFormat::e5m2(), 4096, 1024), oneGroup).ok());
  // bf16 alone: 56 on one warpgroup, 24 on two.
  Problem bf16 = uint8;
  bf16.activation = Activation::BF16;
  EXPECT_EQ(checkSchedule(bf16, oneGroup).error(),
            "wgmma schedule: 8-bit codes need tile M <= 56 with bf16 activations on one consumer "
            "warpgroup, got 64");
  EXPECT_TRUE(checkSchedule(bf16, oneGroup56).ok());
  EXPECT_EQ(checkSchedule(bf16, twoGroups32).error(),
            "wgmma schedule: 8-bit codes need tile M <= 24 with bf16 activations on two consumer "
            "warpgroups, got 32");
  Problem bf16Values = problem(formats::DataFormat::unsignedInt(4), 4096, 1024);
  bf16Values.activation = Activation::BF16;
  bf16Values.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_EQ(checkSchedule(bf16Values, oneGroup).error(),
            "wgmma schedule: sub_code zero values with bf16 activations on one consumer warpgroup "
            "need tile M <= 56, got 64");
  bf16Values.scheme.zeroCodes = formats::DataFormat::unsignedInt(4);
  EXPECT_TRUE(checkSchedule(bf16Values, oneGroup).ok()) << "uint4 zero codes (AWQ) fit";

  Problem gptq = uint8;
  gptq.scheme.zero = formats::ZeroMode::SubtractCode;
  gptq.scheme.zeroCodes = formats::DataFormat::unsignedInt(8);
  EXPECT_FALSE(checkSchedule(gptq, oneGroup).ok());
  EXPECT_TRUE(checkSchedule(gptq, oneGroup56).ok());

  for (const formats::DataFormat &code :
       {formats::DataFormat::unsignedInt(5), formats::DataFormat::signedInt(6),
        formats::DataFormat::e2m3(), formats::DataFormat::e3m2()}) {
    Problem planes = problem(code, 4096, 1024);
    planes.scheme.groupSize = 32;
    EXPECT_EQ(checkSchedule(planes, oneGroup).error(),
              "wgmma schedule: 5- and 6-bit codes (two planes) in groups shorter than tile K on "
              "one consumer warpgroup need tile M <= 56, got 64")
        << code.name();
    EXPECT_TRUE(checkSchedule(planes, oneGroup56).ok()) << code.name();
    planes.scheme.groupSize = 64;
    EXPECT_TRUE(checkSchedule(planes, oneGroup).ok()) << code.name();
  }
  Problem uint3 = problem(formats::DataFormat::unsignedInt(3), 4096, 1024);
  uint3.scheme.groupSize = 32;
  EXPECT_TRUE(checkSchedule(uint3, oneGroup).ok()) << "3-bit units are 3 words";
}

TEST(WgmmaRules, OnlyTheDensePathAndStreamKTakeTheCallersWorkspace) {
  EXPECT_TRUE(kDequant.takesWorkspace());
  Schedule persistent = kWgmma, streamK = kWgmma;
  persistent.scheduler = TileScheduler::Persistent;
  streamK.scheduler = TileScheduler::StreamK;
  EXPECT_TRUE(streamK.takesWorkspace());
  for (const Schedule &s : {kWgmma, persistent, kMma, kMmaSplitK, kGemv, kGemvTiled})
    EXPECT_FALSE(s.takesWorkspace()) << scheduleSubject(s);
}

TEST(WgmmaRules, WgmmaRunsOnlyOnSm90a) {
  for (const TargetArch &arch : targetArchs()) {
    Status onArch = checkScheduleArch(kWgmma, arch);
    EXPECT_EQ(onArch.ok(), arch.name == "sm_90a") << arch.name;
    EXPECT_TRUE(checkScheduleArch(kMma, arch).ok()) << arch.name;
  }
  Expected<TargetArch> ampere = findTargetArch("sm_80");
  ASSERT_TRUE(ampere.ok());
  EXPECT_EQ(checkScheduleArch(kWgmma, *ampere).error(),
            "wgmma schedule: wgmma, TMA and setmaxnreg exist only on sm_90a, not on sm_80");
}

} // namespace
} // namespace lowbit::core
