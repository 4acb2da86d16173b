#include "core/DecodeFacts.h"
#include "tests/unit/core/model/ScheduleRulesTestSupport.h"

#include <gtest/gtest.h>

#include <limits>

namespace lowbit::core {
namespace {

// The rules accept exactly the code types that decode to the activation
// (the fragment facts, and for minifloats and tables core/DecodeFacts.h),
// in every family and with both activations; the rest get the facts' reason.
TEST(ScheduleRules, AcceptEveryCodeTheFragmentFactsDescribe) {
  for (const formats::DataFormat &code : formats::builtinElementFormats()) {
    for (Activation activation : {Activation::F16, Activation::BF16})
      for (const Schedule &s : {kGemv, kMma, kGemvTiled, kMmaSplitK, kDequant}) {
        Status decodable = checkDecodable(code, activation);
        Problem p = problem(code);
        p.activation = activation;
        Status fits = checkSchedule(p, s);
        EXPECT_EQ(fits.ok(), decodable.ok())
            << code.name() << " " << s.text() << ": " << fits.error();
        if (!decodable) {
          EXPECT_EQ(fits.error(), scheduleSubject(s) + ": " + decodable.error());
        }
      }
  }
}

TEST(ScheduleRules, StagedCodesTakeTileTimesBitsBytes) {
  // 4 stages of 16 x 128 activations (4096 bytes) and 64 x 128 codes.
  EXPECT_EQ(mmaStagedSharedBytes(kMma, 4), 4 * (4096 + 4096));
  EXPECT_EQ(mmaStagedSharedBytes(kMma, 1), 4 * (4096 + 1024));
  EXPECT_EQ(mmaStagedSharedBytes(kMma, 8), 4 * (4096 + 8192));
  // 8 warps x 8 slots of 64 x 32 codes and 16 x 32 activations.
  EXPECT_EQ(mmaSplitKRingBytes(kMmaSplitK, 4), 8 * 8 * (1024 + 1024));
  EXPECT_EQ(mmaSplitKRingBytes(kMmaSplitK, 2), 8 * 8 * (512 + 1024));
  EXPECT_EQ(dynamicSharedBytes(kMmaSplitK, problem(formats::DataFormat::unsignedInt(8))),
            8 * 8 * (2048 + 1024));
  EXPECT_EQ(staticSharedBytes(kMmaSplitK, 8), mmaSplitKPartialBytes(kMmaSplitK));
  EXPECT_EQ(staticSharedBytes(kGemv, 4), 0);
  EXPECT_EQ(staticSharedBytes(kGemvTiled, 4), 8 * 1 * 8 * 8 * 4);

  // 2 stages of 16 x 256 activations (8 KiB) and 256 x 256 codes: the
  // 48 KiB fit at 1 and 2 bits, not at 4.
  Schedule wide{Family::Mma, 16, 256, 256, 1, 1, 2, 1};
  for (int bits : {1, 2, 4, 8}) {
    Problem p = problem(formats::DataFormat::unsignedInt(bits));
    p.scheme.granularity = formats::Granularity::PerChannel;
    p.scheme.groupSize = 0;
    Status fits = checkSchedule(p, wide);
    EXPECT_EQ(fits.ok(), bits <= 2) << bits << ": " << fits.error();
    if (!fits) {
      EXPECT_EQ(fits.error(), "mma schedule: needs " +
                                  std::to_string(mmaStagedSharedBytes(wide, bits)) +
                                  " bytes of shared memory; at most 49152 are supported");
    }
  }
}

// The staged mma's limit, which the tuner's copy of the rules had lost.
TEST(ScheduleRules, StagedMmaTakesTwoToNineStages) {
  Schedule s = kMma;
  s.tileK = 64;
  for (int64_t stages : {1, 2, 9, 10}) {
    s.stages = stages;
    Status fits = checkSchedule(problem(formats::DataFormat::unsignedInt(4)), s);
    EXPECT_EQ(fits.ok(), stages >= 2 && stages <= 9) << stages;
    if (!fits) {
      EXPECT_EQ(fits.error(), "mma schedule: stages must be 2..9, got " + std::to_string(stages));
    }
  }
}

TEST(ScheduleRules, EveryZeroModeIsAcceptedByEveryFamily) {
  for (formats::ZeroMode zero : {formats::ZeroMode::None, formats::ZeroMode::SubtractCode,
                                 formats::ZeroMode::SubtractScaled}) {
    Problem p = problem(formats::DataFormat::unsignedInt(4));
    p.scheme.zero = zero;
    for (const Schedule &s : {kGemv, kMma, kGemvTiled, kMmaSplitK})
      EXPECT_TRUE(checkSchedule(p, s).ok()) << s.text();
  }
  // Quantized zero codes (GPTQ, AWQ), uint4 and uint8, with 4- and 8-bit codes.
  for (int codeBits : {4, 8})
    for (int zeroBits : {4, 8}) {
      Problem gptq = problem(formats::DataFormat::unsignedInt(codeBits));
      gptq.scheme.zero = formats::ZeroMode::SubtractCode;
      gptq.scheme.zeroCodes = formats::DataFormat::unsignedInt(zeroBits);
      for (const Schedule &s : {kGemv, kMma, kGemvTiled, kMmaSplitK}) {
        Status fits = checkSchedule(gptq, s);
        EXPECT_TRUE(fits.ok()) << s.text() << ": " << fits.error();
      }
    }
  Problem actOrder = problem(formats::DataFormat::unsignedInt(4));
  actOrder.scheme.actOrder = true;
  EXPECT_EQ(checkSchedule(actOrder, kMmaSplitK).error(),
            "mma schedule with split_k > 1: act_order is not implemented");
}

TEST(ScheduleRules, StructureComesFirstInTheVerifiersWords) {
  Schedule zeroSplit = kGemv;
  zeroSplit.splitK = 0;
  EXPECT_EQ(checkScheduleStructure(zeroSplit).error(), "split_k must be at least 1, got 0");
  Schedule badMma{Family::Mma, 48, 128, 64, 2, 2, 2, 1};
  EXPECT_EQ(checkSchedule(problem(formats::DataFormat::unsignedInt(4)), badMma).error(),
            "an 'mma' tile must give each warp a multiple of 16x8 and K a multiple of 16, got "
            "tile [48, 128, 64] over warps [2, 2]");
  Schedule wgmma{Family::Wgmma, 12, 64, 64, 1, 1, 4, 1};
  EXPECT_EQ(checkScheduleStructure(wgmma).error(),
            "a 'wgmma' tile needs M a multiple of 8, N of 64 per warp (or 256 over two "
            "warpgroups that share it) and K of 16, got tile [12, 64, 64] over warps [1, 1]");
  Schedule manyWarps{Family::Mma, 16, 64, 64, int64_t{1} << 40, int64_t{1} << 40, 2, 1};
  EXPECT_FALSE(checkScheduleStructure(manyWarps).ok());
}

// Sizes the verifier lets through but no GPU has: rejected, not wrapped.
TEST(ScheduleRules, AbsurdSizesAreRejectedWithoutOverflow) {
  Schedule huge{Family::Mma, int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40, 1, 1, 9, 1};
  EXPECT_EQ(mmaStagedSharedBytes(huge, 8), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(checkSchedule(problem(formats::DataFormat::unsignedInt(8)), huge).ok());
  Schedule ring{Family::Mma, 32, 128, int64_t{1} << 60, 1, 1, 4, 2};
  EXPECT_EQ(mmaSplitKRingBytes(ring, 8), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(checkSchedule(problem(formats::DataFormat::unsignedInt(8)), ring).ok());
}

// K, N and groups that do not divide the tiles are named in the message.
TEST(ScheduleRules, ShapeMismatchesNameTheSizes) {
  Problem p = problem(formats::DataFormat::unsignedInt(2), 4098, 4192);
  p.scheme.groupSize = 32;
  EXPECT_EQ(checkSchedule(p, kGemv).error(),
            "gemv schedule: N = 4098 is not a multiple of tile N = 4");
  EXPECT_EQ(checkSchedule(p, kMma).error(),
            "mma schedule: N = 4098 is not a multiple of tile N = 64");
  EXPECT_EQ(checkSchedule(p, kGemvTiled).error(),
            "gemv_tiled schedule: N = 4098 is not a multiple of 64");
  p.n = 4096;
  EXPECT_EQ(checkSchedule(p, kMma).error(),
            "mma schedule: K = 4192 is not a multiple of tile K = 128");
  Problem grouped = problem(formats::DataFormat::signedInt(4));
  grouped.scheme.groupSize = 96;
  EXPECT_EQ(checkSchedule(grouped, kGemvTiled).error(),
            "gemv_tiled schedule: tile K = 128 and group size 96 must divide one another "
            "(scales are loaded once per group)");
}

const Schedule kWgmma{Family::Wgmma, 64, 512, 64, 1, 8, 8, 1};

// wgmma: every code the fragment facts describe, one or two consumer
// warpgroups, and the registers two of them leave a thread.
TEST(ScheduleRules, WgmmaServesEveryCodeWithWholeLayoutTilesPerWarp) {
  for (const formats::DataFormat &code : formats::builtinElementFormats()) {
    Problem p = problem(code);
    p.scheme.granularity = formats::Granularity::PerGroup;
    p.scheme.groupSize = 128;
    Schedule small = kWgmma;
    small.tileM = 48;
    EXPECT_EQ(checkSchedule(p, small).ok(), checkDecodable(code, p.activation).ok())
        << code.name();
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
TEST(ScheduleRules, WgmmaWarpgroupsShareLayoutTilesUpToTileM128) {
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
  EXPECT_NE(checkSchedule(p, clustered).error().find("the activation ring and the weight ring and "
                                                     "the cluster's partial sums need 328704 bytes"),
            std::string::npos)
      << checkSchedule(p, clustered).error();
  clustered.stages = 4;
  EXPECT_TRUE(checkSchedule(p, clustered).ok()) << checkSchedule(p, clustered).error();
  EXPECT_EQ(dynamicSharedBytes(clustered, p), wgmmaRingBytes(clustered, Activation::F16) +
                                                  4 * 256 * 64 / 2 + 8 * 2 * 64 * 32 * 4);
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
  EXPECT_NE(checkSchedule(bytes, byteTile).error().find("the activation ring and the weight ring need 295936 bytes"), std::string::npos)
      << checkSchedule(bytes, byteTile).error();
}

// wgmma with cluster_k: equal runs of K tiles a block, each block's rank
// adding whole slices (so 2 or 4), f16 and bf16 activations only, and the
// partials in shared memory after the ring.
TEST(ScheduleRules, WgmmaSplitsKAcrossClustersOfTwoOrFourBlocks) {
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
    EXPECT_NE(checkSchedule(heavy, oneGroup).error().find("cluster_k > 1 is for codes of at most "
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
TEST(ScheduleRules, PersistentSchedulerIsWgmmaWithoutClusters) {
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
  EXPECT_NE(checkSchedule(p, clustered).error().find("scheduler = persistent is not implemented "
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
TEST(ScheduleRules, StreamKIsWgmmaWithoutClustersOn16BitActivations) {
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
TEST(ScheduleRules, StreamKSplitsOnlyALastWaveUnderThreeQuartersFull) {
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
TEST(ScheduleRules, WgmmaOverlapsKTilesOnlyForLightDecodes) {
  const Problem w4 = problem(formats::DataFormat::unsignedInt(4));
  EXPECT_TRUE(wgmmaOverlapsKTiles(w4, kWgmma));
  EXPECT_TRUE(wgmmaOverlapsKTiles(problem(formats::DataFormat::unsignedInt(2)), kWgmma));
  EXPECT_FALSE(wgmmaOverlapsKTiles(w4, kMma)) << "wgmma only";
  Schedule persistent = kWgmma, streamK = kWgmma, clustered = kWgmma;
  persistent.scheduler = TileScheduler::Persistent;
  streamK.scheduler = TileScheduler::StreamK;
  clustered.clusterK = 2;
  EXPECT_TRUE(wgmmaOverlapsKTiles(w4, persistent));
  EXPECT_FALSE(wgmmaOverlapsKTiles(w4, streamK)) << "its tail's loop spilled";
  EXPECT_FALSE(wgmmaOverlapsKTiles(w4, clustered)) << "the cluster's epilogue spilled";

  Problem zeros = w4;
  zeros.scheme.zero = formats::ZeroMode::SubtractCode;
  EXPECT_FALSE(wgmmaOverlapsKTiles(zeros, kWgmma));
  Problem g32 = w4;
  g32.scheme.groupSize = 32;
  EXPECT_FALSE(wgmmaOverlapsKTiles(g32, kWgmma)) << "two sets of scales a K tile";
  Problem g64 = w4;
  g64.scheme.groupSize = 64;
  EXPECT_TRUE(wgmmaOverlapsKTiles(g64, kWgmma)) << "one set a K tile";
  Problem perChannel = w4;
  perChannel.scheme.granularity = formats::Granularity::PerChannel;
  perChannel.scheme.groupSize = 0;
  EXPECT_TRUE(wgmmaOverlapsKTiles(perChannel, kWgmma));
  Problem twoLevel = g64;
  twoLevel.scheme.superBlock = 128;
  EXPECT_FALSE(wgmmaOverlapsKTiles(twoLevel, kWgmma));
  EXPECT_FALSE(wgmmaOverlapsKTiles(problem(formats::DataFormat::int8()), kWgmma)) << "8 bits";
  EXPECT_FALSE(wgmmaOverlapsKTiles(problem(formats::DataFormat::e2m1()), kWgmma)) << "minifloat";
  Problem s8 = w4;
  s8.activation = Activation::S8;
  EXPECT_FALSE(wgmmaOverlapsKTiles(s8, kWgmma)) << "quantized activations";
}

// The runtime's fallback and the tuner's measured fallbacks both ask this.
TEST(ScheduleRules, OnlyTheDensePathAndStreamKTakeTheCallersWorkspace) {
  EXPECT_TRUE(kDequant.takesWorkspace());
  Schedule persistent = kWgmma, streamK = kWgmma;
  persistent.scheduler = TileScheduler::Persistent;
  streamK.scheduler = TileScheduler::StreamK;
  EXPECT_TRUE(streamK.takesWorkspace());
  for (const Schedule &s : {kWgmma, persistent, kMma, kMmaSplitK, kGemv, kGemvTiled})
    EXPECT_FALSE(s.takesWorkspace()) << scheduleSubject(s);
}

TEST(ScheduleRules, WgmmaRunsOnlyOnSm90a) {
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

// cluster_k > 1: both split-K families, sm_90 and up, at most 8 blocks, and
// a chunk of K for every slice; the other families have no K split to
// spread over a cluster.
TEST(ScheduleRules, ClustersSplitKOnlyInTheSplitKFamiliesFromSm90) {
  const Problem p = problem(formats::DataFormat::unsignedInt(4), 3584, 8192); // 64 chunks of 128
  for (Schedule s : {kGemvTiled, kMmaSplitK}) {
    s.clusterK = 4;
    SCOPED_TRACE(s.text());
    EXPECT_TRUE(checkSchedule(p, s).ok()) << checkSchedule(p, s).error();
    for (const TargetArch &arch : targetArchs())
      EXPECT_EQ(checkScheduleArch(s, arch).ok(), arch.computeCapability >= 90) << arch.name;
    // 8 warps x 8 blocks = 64 slices fit 64 chunks; half of K does not.
    s.clusterK = 8;
    EXPECT_TRUE(checkSchedule(p, s).ok()) << checkSchedule(p, s).error();
    Status tooFew = checkSchedule(problem(formats::DataFormat::unsignedInt(4), 3584, 4096), s);
    ASSERT_FALSE(tooFew.ok());
    EXPECT_NE(tooFew.error().find("64 slices of K, but K = 4096 has only 32 chunks"),
              std::string::npos)
        << tooFew.error();
    s.clusterK = 9;
    EXPECT_EQ(checkScheduleStructure(s).error(),
              "cluster_k (blocks of a cluster along K) must be 1..8, got 9");
  }
  for (Schedule s : {kGemv, kMma}) {
    s.clusterK = 2;
    Status rejected = checkScheduleStructure(s);
    ASSERT_FALSE(rejected.ok()) << s.text();
    EXPECT_NE(rejected.error().find("only the split-K families (gemv_tiled, and mma with "
                                    "split_k > 1) and wgmma do"),
              std::string::npos)
        << rejected.error();
  }
  Schedule clustered = kMmaSplitK;
  clustered.clusterK = 2;
  Expected<TargetArch> ada = findTargetArch("sm_89");
  ASSERT_TRUE(ada.ok());
  EXPECT_EQ(checkScheduleArch(clustered, *ada).error(),
            "mma schedule with split_k > 1: cluster_k > 1 needs thread-block clusters and "
            "distributed shared memory, which exist from sm_90 on, not on sm_89");
  // A cluster's blocks each have their own shared memory: the partial sums
  // a block needs do not grow with the cluster.
  EXPECT_EQ(staticSharedBytes(clustered, 4), staticSharedBytes(kMmaSplitK, 4));
}

// Groups of 16: gemv splits a lane's unit into two halves of 16 values, each
// with its own scale, for every code width, and the split-K mma scales each
// k16 step of a 32-wide block by its own (up to 8 warps: with 16 a thread's
// 128 registers spilled); gemv_tiled keeps whole blocks and the staged
// families whole K tiles per scale.
TEST(ScheduleRules, GroupsOf16AreGemvsAndSplitKFamilies) {
  for (int bits : {1, 2, 4, 8})
    for (int64_t group : {16, 48, 32}) {
      Problem p = problem(formats::DataFormat::unsignedInt(bits), 4096, 48 * 64);
      p.scheme.groupSize = group;
      Status fits = checkSchedule(p, kGemv);
      EXPECT_TRUE(fits.ok()) << bits << " bits, group " << group << ": " << fits.error();
    }
  Problem g8 = problem(formats::DataFormat::unsignedInt(4));
  g8.scheme.groupSize = 8;
  EXPECT_EQ(checkSchedule(g8, kGemv).error(),
            "gemv schedule: group size 8 is not a multiple of 16 (half a lane's 32 codes)");
  Problem g16 = problem(formats::DataFormat::unsignedInt(4));
  g16.scheme.groupSize = 16;
  // Both split-K families: a lane's 8 K values of a block share a group.
  Status tiled = checkSchedule(g16, kGemvTiled);
  EXPECT_TRUE(tiled.ok()) << tiled.error();
  Schedule fourRows = kGemvTiled;
  fourRows.tileM = 4;
  EXPECT_EQ(checkSchedule(g16, fourRows).error(),
            "gemv_tiled schedule: groups of 16 with tile M > 2 need more than the 128 registers "
            "a thread gets, got tile M 4");
  Status splitK = checkSchedule(g16, kMmaSplitK);
  EXPECT_TRUE(splitK.ok()) << splitK.error();
  Schedule sixteenWarps = kMmaSplitK;
  sixteenWarps.tileM = 8; // 16 warps' partial sums of a 16-row tile do not fit
  sixteenWarps.splitK = 16;
  EXPECT_EQ(checkSchedule(g16, sixteenWarps).error(),
            "mma schedule with split_k > 1: groups of 16 with split_k >= 16 need more than the "
            "128 registers a thread of 16 warps gets");
  Problem g48 = g16;
  g48.scheme.groupSize = 48;
  EXPECT_EQ(checkSchedule(g48, kMmaSplitK).error(),
            "mma schedule with split_k > 1: group size 48 is neither 16 nor a multiple of 32");
  EXPECT_EQ(checkSchedule(g48, kGemvTiled).error(),
            "gemv_tiled schedule: group size 48 is neither 16 nor a multiple of 32");
  // The staged mma and wgmma load a lane's scales per 32-wide block where
  // groups are shorter than the K tile (TileMma.cpp, TileWgmma.cpp).
  Problem g32 = g16;
  g32.scheme.groupSize = 32;
  Problem g64 = g16;
  g64.scheme.groupSize = 64;
  for (const Problem &shorter : {g16, g32, g64})
    for (const Schedule &whole : {kMma, kWgmma}) {
      Status s = checkSchedule(shorter, whole);
      EXPECT_TRUE(s.ok()) << s.error();
    }
  EXPECT_EQ(checkSchedule(g48, kMma).error(),
            "mma schedule: group size 48 is neither 16, a multiple of tile K = 128 nor a "
            "multiple of 32 dividing it (a lane's scales are loaded per K tile or per 32-wide "
            "block)");
  // Two-level mins in groups shorter than the K tile: wgmma keeps a scale
  // and min set per 32-wide block, so one consumer warpgroup and tile M <= 32.
  Problem mins = g32;
  mins.scheme.scale = formats::DataFormat::unsignedInt(8);
  mins.scheme.zero = formats::ZeroMode::SubtractScaled;
  mins.scheme.superBlock = 256;
  mins.scheme.superStep = formats::DataFormat::f16();
  Schedule twoGroups = kWgmma;
  twoGroups.tileM = 32;
  EXPECT_EQ(checkSchedule(mins, twoGroups).error(),
            "wgmma schedule: two-level mins in groups shorter than tile K need one consumer "
            "warpgroup (two scale and min sets a K tile), got 2");
  Schedule oneGroup = kWgmma;
  oneGroup.tileN = 256;
  oneGroup.warpsN = 4;
  oneGroup.tileM = 48;
  EXPECT_EQ(checkSchedule(mins, oneGroup).error(),
            "wgmma schedule: two-level mins in groups shorter than tile K need tile M <= 32 "
            "(two scale and min sets a K tile), got 48");
  oneGroup.tileM = 32;
  Status fits = checkSchedule(mins, oneGroup);
  EXPECT_TRUE(fits.ok()) << fits.error();
  Problem g96 = g16;
  g96.k = 4032;
  g96.scheme.groupSize = 96;
  EXPECT_EQ(checkSchedule(g96, kWgmma).error(),
            "wgmma schedule: group size 96 is neither 16, a multiple of tile K = 64 nor a "
            "multiple of 32 dividing it (a lane's scales are loaded per K tile or per 32-wide "
            "block)");
}

// gemv_tiled's register limits that are not its partial sums: each names the
// spill it was measured from (core/ScheduleRules.cpp).
TEST(ScheduleRules, GemvTiledRowsFitTheRegistersOfTheirDots) {
  Problem e5m2 = problem(formats::DataFormat::e5m2());
  Schedule fourRows = kGemvTiled;
  fourRows.tileM = 4;
  EXPECT_EQ(checkSchedule(e5m2, fourRows).error(),
            "gemv_tiled schedule: f32 dots (e5m2 codes) with tile M > 2 need more than the 128 "
            "registers a thread gets, got tile M 4");
  Schedule twoRows = kGemvTiled;
  twoRows.tileM = 2;
  Status wideTwoRows = checkSchedule(e5m2, twoRows);
  EXPECT_TRUE(wideTwoRows.ok()) << wideTwoRows.error();

  Problem g16 = problem(formats::DataFormat::unsignedInt(4));
  g16.scheme.groupSize = 16;
  Schedule clustered = twoRows;
  clustered.stages = 2;
  clustered.clusterK = 2;
  EXPECT_EQ(checkSchedule(g16, clustered).error(),
            "gemv_tiled schedule: groups of 16 and one-byte block scales with tile M > 1, more "
            "than one chunk in flight and cluster_k > 1 need more than the 128 registers a "
            "thread gets");
  clustered.clusterK = 1;
  Status unclustered = checkSchedule(g16, clustered);
  EXPECT_TRUE(unclustered.ok()) << unclustered.error();
}

// The dense path's dequant kernel: gemv_tiled's 64 x 32 tiles with split_k
// warps along K, one row of blocks whatever M is, and no shared memory.
TEST(ScheduleRules, DequantWritesWholeLayoutTilesAlongK) {
  Problem p = problem(formats::DataFormat::unsignedInt(4), 4096, 4096);
  EXPECT_TRUE(checkSchedule(p, kDequant).ok()) << checkSchedule(p, kDequant).error();
  EXPECT_EQ(kDequant.threads(), 256);
  EXPECT_EQ(staticSharedBytes(kDequant, 4) + dynamicSharedBytes(kDequant, p), 0);
  Schedule wide = kDequant;
  wide.tileN = 128;
  EXPECT_NE(checkScheduleStructure(wide).error().find("'dequant' schedule"), std::string::npos);
  Schedule rows = kDequant;
  rows.tileM = 8;
  EXPECT_FALSE(checkScheduleStructure(rows).ok());
  Schedule clustered = kDequant;
  clustered.clusterK = 2;
  EXPECT_FALSE(checkScheduleStructure(clustered).ok());
  // K must be whole chunks, as in the split-K families.
  Status k = checkSchedule(problem(formats::DataFormat::unsignedInt(4), 4096, 4160), kDequant);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().rfind("dequant schedule: ", 0), 0u) << k.error();
  // No wgmma or cluster: every arch serves it.
  for (const char *name : {"sm_80", "sm_86", "sm_89", "sm_90a"})
    EXPECT_TRUE(checkScheduleArch(kDequant, *findTargetArch(name)).ok()) << name;
}

// A default that spilled: MXFP4 in gemv_tiled with 4 rows (16 bytes on
// sm_90a at 5120 x 13824), so `lowbit compile` of such a problem failed.
TEST(ScheduleRules, OneByteBlockScalesKeepGemvTiledToTwoRows) {
  Problem p = problem(formats::DataFormat::e2m1(), 5120, 13824);
  p.scheme.scale = formats::DataFormat::e8m0();
  p.scheme.groupSize = 32;
  Schedule fourRows{Family::GemvTiled, 4, 64, 128, 1, 1, 1, 8};
  Status four = checkSchedule(p, fourRows);
  ASSERT_FALSE(four.ok());
  EXPECT_NE(four.error().find("one-byte block scales"), std::string::npos) << four.error();
  Schedule twoRows = fourRows;
  twoRows.tileM = 2;
  EXPECT_TRUE(checkSchedule(p, twoRows).ok()) << checkSchedule(p, twoRows).error();
}

// A cluster's reduction on two-level scales with mins (Q5_K's shape here) or
// groups of 16 keeps the split-K mma to tile K 128: at 256 it spilled. Without
// a cluster, or without mins and groups of 16, tile K 256 stays.
TEST(ScheduleRules, HeavyTwoLevelScalesInAClusterKeepTileKTo128) {
  Problem q5k = problem(formats::DataFormat::unsignedInt(5), 4096, 14336);
  q5k.scheme.scale = formats::DataFormat::unsignedInt(8);
  q5k.scheme.groupSize = 32;
  q5k.scheme.zero = formats::ZeroMode::SubtractScaled;
  q5k.scheme.superBlock = 256;
  q5k.scheme.superStep = formats::DataFormat::f16();
  ASSERT_TRUE(validate(q5k).ok()) << validate(q5k).error();
  Schedule wide{Family::Mma, 8, 64, 256, 1, 1, 1, 8};
  wide.clusterK = 2;
  Status rejected = checkSchedule(q5k, wide);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.error().find("in a cluster need more registers"), std::string::npos)
      << rejected.error();
  Schedule narrow = wide;
  narrow.tileK = 128;
  EXPECT_TRUE(checkSchedule(q5k, narrow).ok()) << checkSchedule(q5k, narrow).error();
  Schedule alone = wide;
  alone.clusterK = 1;
  EXPECT_TRUE(checkSchedule(q5k, alone).ok()) << checkSchedule(q5k, alone).error();
  Problem compactSymmetric = q5k;
  compactSymmetric.scheme.zero = formats::ZeroMode::None;
  compactSymmetric.code = formats::DataFormat::signedInt(5);
  EXPECT_TRUE(checkSchedule(compactSymmetric, wide).ok())
      << checkSchedule(compactSymmetric, wide).error();
}

} // namespace
} // namespace lowbit::core
