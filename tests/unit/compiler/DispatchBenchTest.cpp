// `lowbit bench --db` on the fake computing driver: a real kernel database,
// the runtime's plan builder deciding what is dispatched, and kernels that
// really compute, so the rows' kernels, tiers, ranges and reference checks
// are all tested without a GPU.
#include "compiler/measure/DispatchBench.h"
#include "FakeComputeDriver.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tests/unit/compiler/tuner/TunerTestSupport.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lowbit::testing {
namespace {

using tuner::testing::ScratchDir;
using tuner::testing::testDevice;
using tuner::testing::w4a16;

class DispatchBenchTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto opened = db::Database::open(dir_.file("kernels.db"));
    ASSERT_TRUE(opened.ok()) << opened.error();
    database_.emplace(std::move(*opened));
    ASSERT_TRUE(database_->putDevice(testDevice()).ok());
    problem_ = w4a16(128, 256, "bench-test.128x256");
    auto id = database_->putProblem(core::signature(problem_));
    ASSERT_TRUE(id.ok()) << id.error();
    problemId_ = *id;
    options_.rowCounts = {1, 16, 32, 100};
    options_.rotationBytes = 1; // two copies
    options_.replays = 7;
  }

  // Stores a kernel whose cubin reads `cubinLayout` while its row says
  // `rowLayout` (equal unless a test wants a lying row).
  std::string putKernel(const std::string &name, const std::string &family, int64_t tileM,
                        int64_t tileN, const std::string &rowLayout,
                        const std::string &cubinLayout = "") {
    kernels::KernelEntry e = fakeKernelEntry(problem_, name, family, rowLayout, tileM, tileN);
    auto cubin = makeFakeCubin(problem_, cubinLayout.empty() ? rowLayout : cubinLayout, name);
    auto id = database_->putKernel(kernels::kernelRecord(e, cubin, "", "src", "test"));
    EXPECT_TRUE(id.ok()) << id.error();
    return id.ok() ? *id : "";
  }

  void dispatch(const std::vector<db::DispatchRange> &ranges) {
    Status s = database_->setDispatch(problemId_, testDevice().id(), ranges);
    ASSERT_TRUE(s.ok()) << s.error();
  }

  Expected<measure::DispatchBenchResult> bench() {
    return measure::benchDispatched(fakeComputeDriver(), *database_, testDevice(), options_, 1000,
                                    nullptr, progress_);
  }

  ScratchDir dir_;
  std::optional<db::Database> database_;
  kernels::ProblemDesc problem_;
  std::string problemId_;
  measure::DispatchBenchOptions options_;
  std::ostringstream progress_;
};

TEST_F(DispatchBenchTest, EachMIsServedByTheTunedTablesKernel) {
  std::string small = putKernel("lb_mma16", "mma", 16, 64, kMmaLayout);
  std::string large = putKernel("lb_mma64", "mma", 64, 64, kMmaLayout);
  dispatch({{1, 32, small}, {32, std::nullopt, large}});

  Expected<measure::DispatchBenchResult> result = bench();
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result->rows.size(), 4u) << progress_.str();
  const char *expected[] = {"lb_mma16", "lb_mma16", "lb_mma64", "lb_mma64"};
  for (size_t i = 0; i < 4; ++i) {
    const measure::BenchRow &row = result->rows[i];
    EXPECT_EQ(row.m, options_.rowCounts[i]);
    EXPECT_EQ(row.kernel, expected[i]) << "M = " << row.m;
    EXPECT_EQ(row.kernelId, i < 2 ? small : large);
    EXPECT_EQ(row.tier, "exact device");
    EXPECT_EQ(row.rangeLo, i < 2 ? 1 : 32);
    EXPECT_EQ(row.rangeHi, i < 2 ? 32 : -1);
    EXPECT_FALSE(row.failed) << row.note;
    EXPECT_FALSE(row.jit);
    EXPECT_GT(row.medianUs, 0);
    EXPECT_GT(row.gbps, 0);
    EXPECT_NEAR(row.copyFraction, row.gbps / 1000, 1e-12);
    EXPECT_TRUE(row.note.empty()) << row.note;
  }
}

// No table for this device: the built-in heuristic prefers the mma family at
// every M (an 8-row split-K mma beats gemv even at M = 1), so the plan, like
// the runtime's, serves every M with the one mma kernel in its layout, and
// the gemv kernel (another layout) is never run. The bench measures what the
// plan would run.
TEST_F(DispatchBenchTest, WithoutATableTheHeuristicPlanIsMeasuredAsTheRuntimeWouldRunIt) {
  putKernel("lb_gemv1", "gemv", 1, 4, kGemvLayout);
  putKernel("lb_mma16", "mma", 16, 64, kMmaLayout);
  Expected<measure::DispatchBenchResult> result = bench();
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result->rows.size(), 4u);
  for (const measure::BenchRow &row : result->rows) {
    EXPECT_EQ(row.tier, "built-in heuristic");
    EXPECT_FALSE(row.failed) << "M = " << row.m << ": " << row.kernel;
    EXPECT_GT(row.medianUs, 0) << "M = " << row.m << ": " << row.note;
    EXPECT_EQ(row.kernel, "lb_mma16") << "M = " << row.m;
  }
}

// A dispatched kernel that computes wrong values is a finding the bench
// must show, not a row with a time.
TEST_F(DispatchBenchTest, ADispatchedKernelThatComputesWrongValuesIsMarkedFailed) {
  // Its row claims the mma layout, its code reads the gemv one.
  std::string liar = putKernel("lb_liar", "mma", 16, 64, kMmaLayout, kGemvLayout);
  dispatch({{1, std::nullopt, liar}});
  Expected<measure::DispatchBenchResult> result = bench();
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result->rows.size(), 4u);
  for (const measure::BenchRow &row : result->rows) {
    EXPECT_TRUE(row.failed) << "M = " << row.m;
    EXPECT_EQ(row.medianUs, 0);
    EXPECT_GT(row.maxRelativeError, 2e-3);
    EXPECT_NE(row.note.find("FAILED"), std::string::npos);
  }
}

TEST_F(DispatchBenchTest, AProblemWithoutARunnableKernelGetsRowsThatSayWhy) {
  // Only an sm_80 kernel without PTX: nothing runs on the sm_90 device.
  std::string id = putKernel("lb_mma16", "mma", 16, 64, kMmaLayout);
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(sqlite3_exec(database_->handle(), "UPDATE kernels SET arch = 'sm_80'", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  Expected<measure::DispatchBenchResult> result = bench();
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result->rows.size(), 4u);
  EXPECT_EQ(result->rows.front().medianUs, 0);
  EXPECT_NE(result->rows.front().note.find("no plan"), std::string::npos)
      << result->rows.front().note;
  ASSERT_EQ(result->notes.size(), 1u);
}

TEST_F(DispatchBenchTest, FilterAndBudget) {
  putKernel("lb_mma16", "mma", 16, 64, kMmaLayout);
  options_.problemFilter = "no-such-problem";
  Expected<measure::DispatchBenchResult> none = bench();
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_TRUE(none->rows.empty());

  options_.problemFilter = "bench-test";
  options_.budgetSeconds = 1e-9; // spent before the first measurement
  Expected<measure::DispatchBenchResult> cut = bench();
  ASSERT_TRUE(cut.ok()) << cut.error();
  EXPECT_TRUE(cut->budgetSpent);
  EXPECT_TRUE(cut->rows.empty());
}

} // namespace
} // namespace lowbit::testing
