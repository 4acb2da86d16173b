// The sweep's pruning rule (Prune.h): a (candidate, M) point is measured only
// when the cost model estimates the candidate within `ratio` of the best
// candidate there.
#include "compiler/tuner/Prune.h"
#include "TunerTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace lowbit::tuner {
namespace {

using core::Family;
using core::Schedule;
using testing::w4a16;

TEST(Prune, PointsBeyondTheRatioOfTheBestEstimateArePruned) {
  const std::vector<int64_t> ms = {1, 64, 4096};
  // Candidate 0 wins at M = 1, 2 at 4096; 1 is never best; 3 has no estimate.
  std::vector<std::vector<double>> estimates = {
      {10, 40, 5000},
      {25, 20, 3000},
      {40, 19, 1000},
      {-1, -1, -1},
  };
  auto pruned = prunedByEstimates(estimates, ms, 3.0);
  ASSERT_EQ(pruned.size(), 4u);
  EXPECT_EQ(pruned[0], (std::vector<int64_t>{4096})); // 5000 > 3 x 1000; 40 <= 3 x 19 = 57
  EXPECT_EQ(pruned[1], (std::vector<int64_t>{}));     // 25 <= 30, 3000 <= 3000: the bound is kept
  EXPECT_EQ(pruned[2], (std::vector<int64_t>{1}));    // 40 > 30
  EXPECT_TRUE(pruned[3].empty());                     // no estimate: always measured
  // A tighter ratio prunes more, never the best of a point.
  auto tight = prunedByEstimates(estimates, ms, 1.5);
  EXPECT_EQ(tight[1], (std::vector<int64_t>{1, 4096}));
  for (size_t i = 0; i < ms.size(); ++i) {
    size_t best = 0;
    for (size_t c = 1; c < 3; ++c)
      if (estimates[c][i] < estimates[best][i])
        best = c;
    EXPECT_EQ(std::count(tight[best].begin(), tight[best].end(), ms[i]), 0);
  }
  // Ratios below 1 (0 included) turn pruning off.
  for (double off : {0.0, 0.5, -1.0})
    for (const auto &p : prunedByEstimates(estimates, ms, off))
      EXPECT_TRUE(p.empty());
}

SweepProblem problemWith(const kernels::ProblemDesc &p, const std::vector<std::string> &schedules) {
  SweepProblem problem;
  problem.problem = p;
  for (const std::string &text : schedules) {
    SweepCandidate c;
    c.entry.problem = p;
    c.entry.name = text;
    c.entry.schedule = text;
    problem.candidates.push_back(c);
  }
  return problem;
}

// With the real cost model on a Llama-3-70B shape: gemv kernels (tile M <= 8)
// are not measured at large M, the 128-row mma is not measured at M = 1, and
// every M point keeps candidates.
TEST(Prune, WithTheCostModelGemvIsNotMeasuredAtLargeMNorTallMmaAtMOne) {
  const Schedule gemv{Family::Gemv, 1, 4, 4096, 1, 4, 1, 1};
  const Schedule gemv8{Family::Gemv, 8, 4, 1024, 1, 4, 1, 1};
  const Schedule mma16{Family::Mma, 16, 64, 128, 1, 1, 4, 1};
  const Schedule mma128{Family::Mma, 128, 128, 64, 4, 2, 2, 1};
  const std::string gemvTiled =
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, "
      "split_k = 8>";
  const Schedule splitKMma{Family::Mma, 16, 64, 256, 1, 1, 1, 8};
  SweepProblem problem =
      problemWith(w4a16(28672, 8192), {gemv.text(), gemv8.text(), mma16.text(), mma128.text(),
                                       gemvTiled, splitKMma.text()});
  const std::vector<int64_t> ms = defaultMPoints();
  int64_t pruned = prunePoints(problem, ms, DeviceModel::h200());
  EXPECT_GT(pruned, 0);
  const auto &c = problem.candidates;
  for (int64_t m : {256, 1024, 4096}) {
    EXPECT_TRUE(c[0].pruned(m)) << "gemv at M = " << m;
    EXPECT_TRUE(c[1].pruned(m)) << "gemv (8 rows) at M = " << m;
    EXPECT_FALSE(c[3].pruned(m)) << "mma 128 at M = " << m;
  }
  EXPECT_FALSE(c[0].pruned(1));
  EXPECT_TRUE(c[3].pruned(1)) << "a 128-row mma tile at M = 1";
  // The split-K families are modelled too: measured where they can win,
  // and gemv_tiled (1 row a block) not at M = 4096.
  EXPECT_FALSE(c[4].pruned(1)) << "gemv_tiled at M = 1";
  EXPECT_TRUE(c[4].pruned(4096)) << "gemv_tiled at M = 4096";
  EXPECT_FALSE(c[5].pruned(16)) << "split-K mma at M = 16";
  for (int64_t m : ms) {
    int kept = 0;
    for (size_t i = 0; i < 4; ++i)
      kept += !c[i].pruned(m);
    EXPECT_GE(kept, 1) << "M = " << m;
  }
  int64_t counted = 0;
  for (const SweepCandidate &candidate : c)
    counted += int64_t(candidate.prunedM.size());
  EXPECT_EQ(counted, pruned);
}

TEST(Prune, OnlyTheCandidatesTheSweepMeasuresCount) {
  // The gemv is the best at M = 1 but lies past maxCandidates: the mma must
  // then not be pruned against it (nobody would measure M = 1).
  // (Neither is a default schedule, which every cut keeps.)
  const Schedule mma128{Family::Mma, 128, 128, 64, 4, 2, 3, 1};
  const Schedule gemv{Family::Gemv, 1, 4, 2048, 1, 4, 1, 1};
  SweepProblem problem = problemWith(w4a16(28672, 8192), {mma128.text(), gemv.text()});
  PruneOptions options;
  options.maxCandidates = 1;
  EXPECT_EQ(prunePoints(problem, {1, 4096}, DeviceModel::h200(), options), 0);
  EXPECT_TRUE(problem.candidates[0].prunedM.empty());
  EXPECT_TRUE(problem.candidates[1].prunedM.empty());
}

} // namespace
} // namespace lowbit::tuner
