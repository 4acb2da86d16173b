#include "TestSupport.h"

#include "tuning_db/Commands.h"

#include "core/Problem.h"

#include <gtest/gtest.h>

namespace lowbit::db {
namespace {
using namespace lowbit::db::testing;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// A W4 problem of N x 4096 in `db`.
std::string putW4Problem(Database &db, int64_t n) {
  core::Problem shape;
  shape.name = "w4";
  shape.n = n;
  shape.k = 4096;
  shape.code = formats::DataFormat::unsignedInt(4);
  return *db.putProblem(core::signature(shape));
}

// A split-K mma kernel of `problem` at `stages` (1 is a default schedule, 2
// is not), as lowbit compiles it.
std::string putSplitKMma(Database &db, const std::string &problem, const std::string &tag,
                         int stages) {
  return *db.putKernel(makeSm90aKernel(
      problem, tag, "mma",
      "#lb.schedule<family = mma, tile = [32, 64, 128], warps = [1, 1], stages = " +
          std::to_string(stages) + ", split_k = 4>",
      "n_tile=64;m_tile=32;split_k=1", 128, stages == 1 ? 186 : 190, 32768 * stages, 0));
}

// 14336 x 4096 W4 on an H100 with two default schedules (the split-K mma
// and a shared-tile wgmma cluster, the launches lowbit compiles for them)
// and one schedule off the defaults, measured fastest at M = 64. The
// heuristic, choosing among the defaults as an untuned device would, takes
// the wgmma kernel (LookupTest's case); the report compares it with the
// fastest measured kernel, and at M = 16, where it takes the mma, says that
// its pick was not measured there.
TEST(HeuristicCheck, ComparesTheUntunedPickWithTheFastestMeasuredKernel) {
  TempDir dir;
  Database db = openOrDie(dir.file("tuned.db"));
  std::string problem = putW4Problem(db, 14336);
  std::string mma = putSplitKMma(db, problem, "mma_t32k4", 1);
  std::string wgmma = *db.putKernel(makeSm90aKernel(
      problem, "wgmma_t64c2", "wgmma",
      "#lb.schedule<family = wgmma, tile = [64, 256, 64], warps = [1, 8], stages = 8, "
      "split_k = 1, cluster_k = 2>",
      "n_tile=256;m_tile=64;split_k=2", 384, 168, 128, 197632));
  std::string offDefaults = putSplitKMma(db, problem, "mma_t32k4_s2", 2);
  ASSERT_TRUE(db.putDevice(h100()).ok());
  ASSERT_TRUE(db.addResult(makeResult(mma, h100().id(), 64, 35.9)).ok());
  ASSERT_TRUE(db.addResult(makeResult(wgmma, h100().id(), 64, 25.6)).ok());
  ASSERT_TRUE(db.addResult(makeResult(offDefaults, h100().id(), 64, 20.0)).ok());
  ASSERT_TRUE(db.addResult(makeResult(offDefaults, h100().id(), 16, 9.0)).ok());
  // A failed check never counts as the fastest.
  ASSERT_TRUE(db.addResult(makeResult(mma, h100().id(), 64, 1.0, /*passed=*/false)).ok());

  Expected<std::string> text = heuristicCheckText({&db}, {/*defaultsOnly=*/true});
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_TRUE(contains(*text, "NVIDIA H100 80GB HBM3 (132 SMs)")) << *text;
  EXPECT_TRUE(contains(*text, "14336x4096 " + problem.substr(0, 12))) << *text;
  EXPECT_TRUE(contains(*text, "25.6       20.0   1.28  wgmma_t64c2 / mma_t32k4_s2")) << *text;
  EXPECT_TRUE(contains(*text, "mma_t32k4 (not measured)")) << *text;
  EXPECT_TRUE(contains(*text, "0 of 1 timed points within 15% of the fastest measured kernel "
                              "(the heuristic choosing among the default schedules); at 1 more "
                              "the heuristic's kernel was not measured"))
      << *text;
  // Looser, the one timed point counts.
  text = heuristicCheckText({&db}, {/*defaultsOnly=*/true, /*tolerance=*/1.3});
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_TRUE(contains(*text, "1 of 1 timed points within 30%")) << *text;
  // Among every kernel, the heuristic may take the one off the defaults.
  text = heuristicCheckText({&db}, {/*defaultsOnly=*/false});
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_TRUE(contains(*text, "(the heuristic choosing among every kernel)")) << *text;
}

// A pick that was measured but never passed the reference check is named
// as such (not "not measured", not counted as timed), and a problem that
// has no kernel the heuristic may pick gets its row without ending the
// report.
TEST(HeuristicCheck, NamesFailedPicksAndProblemsWithoutACandidate) {
  TempDir dir;
  Database db = openOrDie(dir.file("tuned.db"));
  std::string problem = putW4Problem(db, 14336);
  std::string mma = putSplitKMma(db, problem, "mma_t32k4", 1);
  std::string other = putSplitKMma(db, problem, "mma_t32k4_s2", 2);
  std::string offDefaultsOnly = putW4Problem(db, 4096);
  std::string lone = putSplitKMma(db, offDefaultsOnly, "lone_s2", 2);
  ASSERT_TRUE(db.putDevice(h100()).ok());
  ASSERT_TRUE(db.addResult(makeResult(mma, h100().id(), 16, 7.0, /*passed=*/false)).ok());
  ASSERT_TRUE(db.addResult(makeResult(other, h100().id(), 16, 9.0)).ok());
  ASSERT_TRUE(db.addResult(makeResult(lone, h100().id(), 16, 5.0)).ok());

  Expected<std::string> text = heuristicCheckText({&db}, {/*defaultsOnly=*/true});
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_TRUE(contains(*text, "mma_t32k4 (failed the reference check)")) << *text;
  EXPECT_TRUE(contains(*text, "4096x4096 " + offDefaultsOnly.substr(0, 12))) << *text;
  EXPECT_TRUE(contains(*text, "no kernel for the heuristic among the default schedules")) << *text;
  EXPECT_TRUE(contains(*text, "0 of 0 timed points")) << *text;
  EXPECT_TRUE(contains(*text, "at 1 it failed the reference check")) << *text;
  EXPECT_TRUE(contains(*text, "1 problem(s) had no kernel for it")) << *text;
}

TEST(HeuristicCheck, NeedsAPassingMeasurement) {
  TempDir dir;
  Database db = openOrDie(dir.file("untuned.db"));
  std::string problem = *db.putProblem("int4 g128 f16 N=4096 K=4096");
  ASSERT_TRUE(db.putKernel(makeKernel(problem, "k", "sm_90a", "mma")).ok());
  ASSERT_TRUE(db.putDevice(h100()).ok());
  Expected<std::string> text = heuristicCheckText({&db}, {});
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(contains(text.error(), "no passing measurement")) << text.error();
}

} // namespace
} // namespace lowbit::db
