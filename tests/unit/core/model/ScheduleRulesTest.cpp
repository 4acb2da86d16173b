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
  // Except bf16 zero values at the split-K mma's widest tile.
  Problem bf16Values = problem(formats::DataFormat::unsignedInt(2), 4096, 1024);
  bf16Values.activation = Activation::BF16;
  bf16Values.scheme.zero = formats::ZeroMode::SubtractCode;
  const Schedule wide{Family::Mma, 32, 128, 128, 1, 1, 1, 2};
  EXPECT_EQ(checkSchedule(bf16Values, wide).error(),
            "mma schedule with split_k > 1: sub_code zero values with bf16 activations at tile M "
            "32 and tile N 128 need more registers than a thread gets");
  bf16Values.activation = Activation::F16;
  EXPECT_TRUE(checkSchedule(bf16Values, wide).ok());
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

  // A lookup table in groups shorter than tile K: two rows, not four.
  Problem nf4 = problem(formats::DataFormat::nf4(), 4096, 1024);
  nf4.scheme.groupSize = 64;
  EXPECT_EQ(checkSchedule(nf4, fourRows).error(),
            "gemv_tiled schedule: lookup tables in groups shorter than tile K with tile M > 2 "
            "need more than the 128 registers a thread gets, got tile M 4");
  EXPECT_TRUE(checkSchedule(nf4, twoRows).ok());
  nf4.scheme.groupSize = 128;
  Status wholeGroups = checkSchedule(nf4, fourRows);
  EXPECT_TRUE(wholeGroups.ok()) << wholeGroups.error();
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
