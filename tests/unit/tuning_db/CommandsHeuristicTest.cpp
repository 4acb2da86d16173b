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

KernelRecord kernelWith(const std::string &problem, const std::string &tag,
                        const std::string &family, const std::string &schedule,
                        const std::string &gridRule, int threads, int registers,
                        int64_t staticShared, int64_t dynamicShared) {
  KernelRecord k = makeKernel(problem, tag, "sm_90a", family);
  k.entry = tag;
  k.scheduleJson = R"({"schedule":")" + schedule + R"("})";
  k.launch.gridRule = gridRule;
  k.launch.blockX = threads;
  k.registers = registers;
  k.sharedBytes = staticShared;
  k.launch.dynamicSharedBytes = dynamicShared;
  return k;
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
  core::Problem shape;
  shape.name = "w4";
  shape.n = 14336;
  shape.k = 4096;
  shape.code = formats::DataFormat::unsignedInt(4);
  std::string problem = *db.putProblem(core::signature(shape));
  std::string mma = *db.putKernel(kernelWith(
      problem, "mma_t32k4", "mma",
      "#lb.schedule<family = mma, tile = [32, 64, 128], warps = [1, 1], stages = 1, split_k = 4>",
      "n_tile=64;m_tile=32;split_k=1", 128, 186, 32768, 0));
  std::string wgmma = *db.putKernel(kernelWith(
      problem, "wgmma_t64c2", "wgmma",
      "#lb.schedule<family = wgmma, tile = [64, 256, 64], warps = [1, 8], stages = 8, "
      "split_k = 1, cluster_k = 2>",
      "n_tile=256;m_tile=64;split_k=2", 384, 168, 128, 197632));
  std::string offDefaults = *db.putKernel(kernelWith(
      problem, "mma_t32k4_s2", "mma",
      "#lb.schedule<family = mma, tile = [32, 64, 128], warps = [1, 1], stages = 2, split_k = 4>",
      "n_tile=64;m_tile=32;split_k=1", 128, 190, 65536, 0));
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
  EXPECT_TRUE(contains(*text, "0 of 2 points within 15% of the fastest measured kernel (the "
                              "heuristic choosing among the default schedules); at 1 the "
                              "heuristic's kernel was not measured"))
      << *text;
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
