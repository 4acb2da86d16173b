#include "compiler/tuner/Ranges.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace lowbit::tuner {
namespace {

// Synthetic timings: each kernel's µs as a function of M, at the given points.
std::vector<TimedPoint> timings(const std::vector<int64_t> &ms,
                                const std::vector<std::pair<std::string,
                                                            std::function<double(int64_t)>>> &ks) {
  std::vector<TimedPoint> points;
  for (const auto &[kernel, time] : ks)
    for (int64_t m : ms)
      points.push_back({kernel, m, time(m), true});
  return points;
}

void expectWithinTolerance(const std::vector<db::DispatchRange> &ranges,
                           const std::vector<TimedPoint> &points, double tolerance) {
  ASSERT_TRUE(db::validateRanges(ranges).ok()) << db::validateRanges(ranges).error();
  for (const RangeCheck &c : checkRanges(ranges, points))
    EXPECT_LE(c.ratio, 1 + tolerance + 1e-12) << "M = " << c.m << " chose " << c.chosen;
}

TEST(Ranges, DefaultMPoints) {
  std::vector<int64_t> expected = {1,  2,  4,   8,   16,  24,   32,   48,  64,
                                   96, 128, 192, 256, 512, 1024, 2048, 4096};
  EXPECT_EQ(defaultMPoints(), expected);
  auto parsed = parseMPoints("1, 3,16-64,8,3");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(*parsed, (std::vector<int64_t>{1, 3, 8, 16, 32, 64}));
  EXPECT_FALSE(parseMPoints("0").ok());
  EXPECT_FALSE(parseMPoints("4,x").ok());
  EXPECT_FALSE(parseMPoints("64-16").ok());
}

// What `lowbit tune` prints per M: the served kernel's own time beside the
// best one's, also where the table could not use the best kernel (here it
// only has "mma", as when the faster gemv is of another weight layout).
TEST(Ranges, ChecksReportTheServedAndTheBestTimes) {
  std::vector<TimedPoint> points = {{"gemv", 1, 20.0, true}, {"mma", 1, 32.0, true},
                                    {"mma", 16, 40.0, true}, {"gemv", 16, 90.0, true}};
  std::vector<db::DispatchRange> onlyMma = {{1, std::nullopt, "mma"}};
  std::vector<RangeCheck> checks = checkRanges(onlyMma, points);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].m, 1);
  EXPECT_EQ(checks[0].chosen, "mma");
  EXPECT_EQ(checks[0].best, "gemv");
  EXPECT_DOUBLE_EQ(checks[0].chosenUs, 32.0);
  EXPECT_DOUBLE_EQ(checks[0].bestUs, 20.0);
  EXPECT_DOUBLE_EQ(checks[0].ratio, 1.6);
  EXPECT_EQ(checks[1].chosen, checks[1].best);
  EXPECT_DOUBLE_EQ(checks[1].chosenUs, 40.0);
  EXPECT_DOUBLE_EQ(checks[1].ratio, 1.0);
  // A range whose kernel has no result at M: nothing served is claimed.
  std::vector<db::DispatchRange> unmeasured = {{1, std::nullopt, "wgmma"}};
  for (const RangeCheck &c : checkRanges(unmeasured, points)) {
    EXPECT_EQ(c.chosenUs, 0.0);
    EXPECT_TRUE(std::isinf(c.ratio));
  }
}

TEST(Ranges, SingleKernelGivesOneOpenRange) {
  auto points = timings(defaultMPoints(), {{"only", [](int64_t m) { return 10.0 + m; }}});
  auto ranges = deriveRanges(points);
  ASSERT_TRUE(ranges.ok()) << ranges.error();
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ((*ranges)[0].mLo, 1);
  EXPECT_FALSE((*ranges)[0].mHi.has_value());
  EXPECT_EQ((*ranges)[0].kernelId, "only");
}

TEST(Ranges, CrossoversBecomeBoundariesBetweenTheMeasuredPoints) {
  // gemv is flat then grows fast; mma starts slower and grows slowly; a
  // large-tile mma wins from 512 up.
  std::vector<int64_t> ms = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  auto points = timings(ms, {{"gemv", [](int64_t m) { return 30.0 + 4.0 * m; }},
                             {"mma", [](int64_t m) { return 60.0 + 0.5 * m; }},
                             {"mma-big", [](int64_t m) { return 200.0 + 0.2 * m; }}});
  auto ranges = deriveRanges(points, {0.03});
  ASSERT_TRUE(ranges.ok()) << ranges.error();
  ASSERT_EQ(ranges->size(), 3u);
  EXPECT_EQ((*ranges)[0].kernelId, "gemv");
  EXPECT_EQ((*ranges)[1].kernelId, "mma");
  EXPECT_EQ((*ranges)[2].kernelId, "mma-big");
  // gemv and mma cross at M = 30/3.5 = 8.57: the boundary lies in (8, 16],
  // at the first integer past the crossing of the interpolated lines.
  EXPECT_EQ((*ranges)[0].mHi, 9);
  // mma and mma-big cross at M = 466.7, inside (256, 512].
  EXPECT_EQ((*ranges)[1].mHi, 467);
  EXPECT_FALSE((*ranges)[2].mHi.has_value());
  expectWithinTolerance(*ranges, points, 0.03);
}

TEST(Ranges, TiesWithinToleranceDoNotSplitARange) {
  // "b" is 2% faster at two points in the middle: within 3%, "a" keeps them.
  std::vector<int64_t> ms = {1, 2, 4, 8, 16};
  auto points = timings(ms, {{"a", [](int64_t) { return 100.0; }},
                             {"b", [](int64_t m) { return m == 4 || m == 8 ? 98.0 : 110.0; }}});
  auto ranges = deriveRanges(points, {0.03});
  ASSERT_TRUE(ranges.ok());
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ((*ranges)[0].kernelId, "a");
  // With no tolerance, "b" takes the middle: the lines cross at 3.67
  // (between 2 and 4) and 9.33 (between 8 and 16).
  auto strict = deriveRanges(points, {0.0});
  ASSERT_TRUE(strict.ok());
  ASSERT_EQ(strict->size(), 3u);
  EXPECT_EQ((*strict)[1].kernelId, "b");
  EXPECT_EQ((*strict)[1].mLo, 4);
  EXPECT_EQ((*strict)[1].mHi, 10);
  expectWithinTolerance(*strict, points, 0.0);
}

TEST(Ranges, PrefersTheKernelThatCoversMorePoints) {
  // Both are acceptable at M = 1; "wide" stays acceptable further.
  std::vector<int64_t> ms = {1, 2, 4, 8};
  auto points = timings(ms, {{"narrow", [](int64_t m) { return m == 1 ? 9.9 : 40.0; }},
                             {"wide", [](int64_t m) { return m == 8 ? 30.0 : 10.0; }},
                             {"late", [](int64_t) { return 25.0; }}});
  auto ranges = deriveRanges(points, {0.03});
  ASSERT_TRUE(ranges.ok());
  ASSERT_EQ(ranges->size(), 2u);
  EXPECT_EQ((*ranges)[0].kernelId, "wide");
  EXPECT_EQ((*ranges)[1].kernelId, "late");
  expectWithinTolerance(*ranges, points, 0.03);
}

TEST(Ranges, FailedAndMissingMeasurementsDoNotCount) {
  std::vector<TimedPoint> points = {
      {"fast-but-wrong", 1, 1.0, false}, {"ok", 1, 10.0, true},   {"ok", 16, 20.0, true},
      {"partial", 16, 5.0, true},        {"ok", 256, 90.0, true}, {"partial", 256, 80.0, true},
  };
  auto ranges = deriveRanges(points);
  ASSERT_TRUE(ranges.ok()) << ranges.error();
  ASSERT_EQ(ranges->size(), 2u);
  EXPECT_EQ((*ranges)[0].kernelId, "ok");
  EXPECT_EQ((*ranges)[1].kernelId, "partial");
  // "partial" was not measured at 1, so there is no crossing: the boundary
  // is the log-midpoint of 1 and 16.
  EXPECT_EQ((*ranges)[0].mHi, 4);
  EXPECT_FALSE(deriveRanges({{"x", 1, 5.0, false}}).ok());
  EXPECT_FALSE(deriveRanges({}).ok());
}

TEST(Ranges, SparsePointsStartAtOneAndEndOpen) {
  std::vector<TimedPoint> points = {{"k1", 64, 10.0, true}, {"k2", 64, 12.0, true},
                                    {"k1", 4096, 900.0, true}, {"k2", 4096, 500.0, true}};
  auto ranges = deriveRanges(points);
  ASSERT_TRUE(ranges.ok());
  ASSERT_EQ(ranges->size(), 2u);
  EXPECT_EQ((*ranges)[0].mLo, 1);
  EXPECT_EQ((*ranges)[0].kernelId, "k1");
  EXPECT_GT(*(*ranges)[0].mHi, 64);
  EXPECT_LE(*(*ranges)[0].mHi, 4096);
  EXPECT_FALSE((*ranges)[1].mHi.has_value());
  expectWithinTolerance(*ranges, points, 0.03);
}

} // namespace
} // namespace lowbit::tuner
