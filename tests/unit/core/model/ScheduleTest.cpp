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
  EXPECT_EQ(defaults.size(), 24u);
  for (const Schedule &schedule : defaults) {
    Expected<Schedule> again = parseSchedule(schedule.text());
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(*again, schedule);
  }
}

} // namespace
} // namespace lowbit::core
