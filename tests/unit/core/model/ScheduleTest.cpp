#include "core/Schedule.h"

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {

// Kernel databases store the text form: it stays byte-identical to the
// dialect's `#lb.schedule<...>` spelling.
TEST(Schedule, PrintsAsTheDialectSpellsIt) {
  Schedule mma{Family::Mma, 16, 64, 128, 1, 1, 4, 1};
  EXPECT_EQ(mma.text(), "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], "
                        "stages = 4, split_k = 1>");
  Schedule tiled{Family::GemvTiled, 2, 64, 256, 1, 1, 2, 8};
  EXPECT_EQ(tiled.text(), "#lb.schedule<family = gemv_tiled, tile = [2, 64, 256], warps = [1, "
                          "1], stages = 2, split_k = 8>");
  for (const Schedule &s : {mma, tiled}) {
    Expected<Schedule> back = parseSchedule(s.text());
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(tiled.threads(), 256);
}

// cluster_k is spelled only when it is not 1, so every schedule (and kernel
// id) from before it existed reads and prints as it did.
TEST(Schedule, SpellsClusterKOnlyWhenItSplits) {
  Schedule clustered{Family::GemvTiled, 1, 64, 128, 1, 1, 1, 8, 4};
  EXPECT_EQ(clustered.text(), "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = "
                              "[1, 1], stages = 1, split_k = 8, cluster_k = 4>");
  EXPECT_EQ(clustered.kSlices(), 32);
  // The cluster's blocks are launched separately: a block's threads stay
  // its split_k warps.
  EXPECT_EQ(clustered.threads(), 256);
  Expected<Schedule> back = parseSchedule(clustered.text());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, clustered);
  Schedule unclustered = clustered;
  unclustered.clusterK = 1;
  EXPECT_NE(unclustered, clustered);
  EXPECT_EQ(unclustered.text().find("cluster_k"), std::string::npos);
  Expected<Schedule> spelled = parseSchedule(
      "#lb.schedule<family=gemv_tiled,tile=[1,64,128],warps=[1,1],stages=1,split_k=8,cluster_k=1>");
  ASSERT_TRUE(spelled.ok()) << spelled.error();
  EXPECT_EQ(*spelled, unclustered);
}

// The tile scheduler is spelled only when a block walks tiles, after
// cluster_k, so grid schedules keep their text and kernel ids.
TEST(Schedule, SpellsThePersistentSchedulerOnlyWhenItIsOne) {
  Schedule persistent{Family::Wgmma, 128, 256, 64, 1, 8, 8, 1};
  EXPECT_EQ(persistent.text().find("scheduler"), std::string::npos);
  persistent.scheduler = TileScheduler::Persistent;
  EXPECT_TRUE(persistent.walksTiles());
  EXPECT_FALSE(persistent.streamK());
  EXPECT_EQ(persistent.text(), "#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = [1, "
                               "8], stages = 8, split_k = 1, scheduler = persistent>");
  Expected<Schedule> back = parseSchedule(persistent.text());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, persistent);
  Schedule grid = persistent;
  grid.scheduler = TileScheduler::Grid;
  EXPECT_NE(grid, persistent);
  Expected<Schedule> spelled = parseSchedule(
      "#lb.schedule<family=wgmma,tile=[128,256,64],warps=[1,8],stages=8,scheduler=grid>");
  ASSERT_TRUE(spelled.ok()) << spelled.error();
  EXPECT_EQ(*spelled, grid);
  Expected<Schedule> streamK = parseSchedule(
      "#lb.schedule<family=wgmma,tile=[128,256,64],warps=[1,8],stages=8,scheduler=stream_k>");
  ASSERT_TRUE(streamK.ok()) << streamK.error();
  EXPECT_TRUE(streamK->streamK() && streamK->walksTiles());
  EXPECT_EQ(streamK->text(), "#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = [1, "
                             "8], stages = 8, split_k = 1, scheduler = stream_k>");
  Expected<Schedule> unknown = parseSchedule(
      "#lb.schedule<family=wgmma,tile=[128,256,64],warps=[1,8],stages=8,scheduler=split>");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("unknown tile scheduler 'split'"), std::string::npos)
      << unknown.error();
}

TEST(Schedule, ParsesWithoutSplitKAndRejectsUnknownFields) {
  auto s = parseSchedule("#lb.schedule<family=mma,tile=[16,64,128],warps=[1,1],stages=4>");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->splitK, 1);
  EXPECT_EQ(s->tileK, 128);
  EXPECT_FALSE(parseSchedule("#lb.schedule<family = mma, tile = [16, 64], warps = [1, 1], "
                             "stages = 4>")
                   .ok());
  EXPECT_FALSE(parseSchedule("#lb.schedule<family = tma, tile = [16, 64, 64], warps = [1, 1], "
                             "stages = 4>")
                   .ok());
  EXPECT_FALSE(parseSchedule("#lb.schedule<family = mma, tile = [16, 64, 64], warps = [1, 1], "
                             "stages = 4, cluster = 2>")
                   .ok());
  EXPECT_FALSE(parseSchedule("#lb.schedule<family = mma, tile = [16, 64, x], warps = [1, 1], "
                             "stages = 4>")
                   .ok());
}

// Every family the dialect spells round-trips through its name.
TEST(Schedule, EveryFamilyTheDialectSpellsParses) {
  for (Family family : {Family::Gemv, Family::Mma, Family::GemvTiled, Family::Wgmma}) {
    Expected<Family> back = parseFamily(familyName(family));
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(*back, family);
  }
}

// Schedule.cpp drops a default that does not parse; none may.
TEST(Schedule, EveryDefaultScheduleParsesAndPrintsBack) {
  const std::vector<Schedule> &defaults = defaultSchedules();
  EXPECT_EQ(defaults.size(), 39u);
  for (const Schedule &schedule : defaults) {
    Expected<Schedule> again = parseSchedule(schedule.text());
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(*again, schedule);
  }
}

} // namespace
} // namespace lowbit::core
