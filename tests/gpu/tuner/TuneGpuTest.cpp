// The tuner's measuring half end to end: the kernel database compiled at
// build time (tune-gpu-test.toml, four schedules) is swept by the real
// KernelMeasurer (reference check, graph timing, cuBLAS), the results land in
// the database, and dispatch ranges are derived from them.
#include "compiler/measure/CopyBandwidth.h"
#include "compiler/measure/DispatchBench.h"
#include "compiler/measure/KernelMeasurer.h"
#include "compiler/tuner/Sweep.h"
#include "core/Schedule.h"
#include "core/layout/WeightLayout.h"
#include "tests/gpu/support/GpuTest.h"
#include "tuning_db/Fingerprint.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace lowbit::testing {
namespace {

std::string sourceDatabase() {
  return testKernelsPath("LOWBIT_GPU_TEST_TUNE_DB", "tune-gpu-test.db");
}

// A private copy per test: the sweep writes results and dispatch into it, and
// the build's database must stay as compiled.
class TuneGpu : public ::testing::Test {
protected:
  void SetUp() override {
    source_ = sourceDatabase();
    copy_ = (std::filesystem::temp_directory_path() /
             ("lowbit-tune-gpu-" + std::to_string(getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(copy_); }

  // Null (and the test skipped by the caller) when there is no database.
  bool copyDatabase() {
    if (!std::filesystem::exists(source_))
      return false;
    std::filesystem::copy_file(source_, copy_, std::filesystem::copy_options::overwrite_existing);
    return true;
  }

  std::string source_, copy_;
};

TEST_F(TuneGpu, SweepsOneProblemEndToEnd) {
  LOWBIT_REQUIRE_GPU(api);
  if (!copyDatabase())
    GTEST_SKIP() << "no test database at " << source_ << " (built where the compiler is)";
  Expected<db::Database> database = db::Database::open(copy_);
  ASSERT_TRUE(database.ok()) << database.error();
  Expected<db::DeviceFingerprint> fingerprint = db::readFingerprint(0);
  ASSERT_TRUE(fingerprint.ok()) << fingerprint.error();
  ASSERT_TRUE(database->putDevice(*fingerprint).ok());
  std::string arch = deviceArchName(*api);
  Expected<std::vector<tuner::SweepProblem>> problems = tuner::loadSweepProblems(*database, arch);
  ASSERT_TRUE(problems.ok()) << problems.error();
  if (problems->empty())
    GTEST_SKIP() << "the test database has no kernels for " << arch;
  ASSERT_EQ(problems->size(), 1u);
  const size_t candidates = problems->front().candidates.size();
  ASSERT_GE(candidates, 2u);

  Expected<std::unique_ptr<measure::Cublas>> cublas = measure::Cublas::load(*api);
  measure::KernelMeasurer measurer(*api, measure::databaseCubins(*database, *problems),
                                   cublas.ok() ? cublas->get() : nullptr, {});
  tuner::SweepOptions options;
  options.runId = "gpu-test";
  options.deviceId = fingerprint->id();
  options.mPoints = {1, 16, 64};
  tuner::SteadyClock clock;
  Expected<tuner::SweepSummary> summary =
      tuner::runSweep(*database, *problems, measurer, options, clock);
  ASSERT_TRUE(summary.ok()) << summary.error();
  ASSERT_TRUE(summary->complete()) << tuner::stopReasonName(summary->stop) << ": "
                                   << summary->stopDetail;
  EXPECT_EQ(summary->measured, int64_t(candidates * options.mPoints.size()));
  // Every schedule computes the right values at every M (gemv at M = 64 is
  // slow, mma at M = 1 padded, neither wrong).
  EXPECT_EQ(summary->failedChecks, 0);
  EXPECT_EQ(measurer.rejected(), 0);
  ASSERT_EQ(summary->best.size(), options.mPoints.size());
  for (const tuner::BestPoint &best : summary->best) {
    EXPECT_GT(best.medianUs, 0) << "M = " << best.m;
    if (cublas.ok()) {
      EXPECT_TRUE(best.referenceUs.has_value()) << "M = " << best.m;
    }
  }

  // Committed as measured: one row per (kernel, M), with sane percentiles.
  for (const tuner::SweepCandidate &c : problems->front().candidates) {
    Expected<std::vector<db::ResultRecord>> results = database->results(c.kernelId, options.deviceId);
    ASSERT_TRUE(results.ok()) << results.error();
    ASSERT_EQ(results->size(), options.mPoints.size()) << c.entry.name;
    for (const db::ResultRecord &r : *results) {
      EXPECT_TRUE(r.passed) << c.entry.name << " M = " << r.m;
      EXPECT_LE(r.p10Us, r.medianUs);
      EXPECT_LE(r.medianUs, r.p90Us);
      EXPECT_GT(r.gbps, 0);
    }
  }

  // Resuming the finished run measures nothing again.
  options.resume = true;
  Expected<tuner::SweepSummary> resumed =
      tuner::runSweep(*database, *problems, measurer, options, clock);
  ASSERT_TRUE(resumed.ok()) << resumed.error();
  EXPECT_EQ(resumed->measured, 0);
  EXPECT_EQ(resumed->skipped, int64_t(candidates * options.mPoints.size()));

  Expected<tuner::CommittedDispatch> committed =
      tuner::commitDispatch(*database, problems->front(), options.deviceId, options.runId);
  ASSERT_TRUE(committed.ok()) << committed.error();
  const std::vector<db::DispatchRange> &ranges = committed->ranges;
  ASSERT_FALSE(ranges.empty());
  EXPECT_EQ(ranges.front().mLo, 1);

  // `lowbit bench --db` on the tuned database: the table just committed
  // answers (exact device), and every dispatched kernel passes its check.
  measure::DispatchBenchOptions benchOptions;
  benchOptions.rowCounts = {1, 16, 64};
  std::ostringstream progress;
  Expected<measure::DispatchBenchResult> bench = measure::benchDispatched(
      *api, *database, *fingerprint, benchOptions, 1000, cublas.ok() ? cublas->get() : nullptr,
      progress);
  ASSERT_TRUE(bench.ok()) << bench.error();
  ASSERT_EQ(bench->rows.size(), benchOptions.rowCounts.size()) << progress.str();
  for (const measure::BenchRow &row : bench->rows) {
    EXPECT_EQ(row.tier, "exact device") << "M = " << row.m;
    EXPECT_FALSE(row.failed) << "M = " << row.m << ": " << row.kernel;
    EXPECT_GT(row.medianUs, 0) << "M = " << row.m << ": " << row.note;
    // The table's kernel at M, or the one the plan put in its place so that
    // one packed weight buffer serves every M (a note says so).
    bool inRange = false;
    for (const db::DispatchRange &r : ranges)
      inRange = inRange || (r.kernelId == row.kernelId && r.contains(row.m));
    for (const std::string &note : bench->notes)
      inRange = inRange || note.find("replaced by " + row.kernelId.substr(0, 12)) != std::string::npos;
    EXPECT_TRUE(inRange) << "M = " << row.m << " measured " << row.kernel
                         << ", which neither the table nor the plan dispatches there";
  }
}

// The bandwidth roof: the embedded PTX copy kernel JIT-loads and copies.
TEST(TuneGpuCopy, CopyKernelMeasuresTheBandwidth) {
  LOWBIT_REQUIRE_GPU(api);
  Expected<db::DeviceFingerprint> fingerprint = db::readFingerprint(0);
  ASSERT_TRUE(fingerprint.ok()) << fingerprint.error();
  CUdevice device = 0;
  LOWBIT_CU_ASSERT(api, api->cuDeviceGet(&device, 0));
  Expected<measure::CopyBandwidth> copy = measure::measureCopyBandwidth(*api, device);
  ASSERT_TRUE(copy.ok()) << copy.error();
  EXPECT_GE(copy->bufferBytes, size_t(4 * fingerprint->l2Bytes));
  EXPECT_GT(copy->gbps, 0);
  EXPECT_LE(copy->timing.p10Us, copy->timing.medianUs);
  EXPECT_LE(copy->timing.medianUs, copy->timing.p90Us);
}

// A kernel that computes wrong values must be recorded as failed, never
// timed: here a kernel is handed weights packed for another kernel's layout.
TEST_F(TuneGpu, AKernelGivenWrongWeightsIsRejected) {
  LOWBIT_REQUIRE_GPU(api);
  if (!copyDatabase())
    GTEST_SKIP() << "no test database at " << source_ << " (built where the compiler is)";
  Expected<db::Database> database = db::Database::open(copy_);
  ASSERT_TRUE(database.ok()) << database.error();
  std::string arch = deviceArchName(*api);
  Expected<std::vector<tuner::SweepProblem>> problems = tuner::loadSweepProblems(*database, arch);
  ASSERT_TRUE(problems.ok()) << problems.error();
  if (problems->empty())
    GTEST_SKIP() << "the test database has no kernels for " << arch;
  // A row-major gemv and an mma kernel: their layouts differ. (The entry's
  // family does not say which: gemv_tiled kernels are recorded as "gemv" for
  // dispatch, and they read the mma layout. The schedule says.)
  const kernels::KernelEntry *gemv = nullptr, *mma = nullptr;
  for (const tuner::SweepCandidate &c : problems->front().candidates) {
    Expected<core::Schedule> schedule = core::parseSchedule(c.entry.schedule);
    if (!schedule.ok() || schedule->family == core::Family::GemvTiled)
      continue; // gemv_tiled reads the mma layout; any family the tuner does not know
    const kernels::KernelEntry *&slot = schedule->family == core::Family::Gemv ? gemv : mma;
    if (!slot)
      slot = &c.entry;
  }
  ASSERT_TRUE(gemv && mma) << "the test database needs a gemv and an mma schedule";
  // Weights packed for one layout can only pass as the other's if the two
  // packings are byte for byte equal; make sure they are not.
  const kernels::ProblemDesc &p = mma->problem;
  Expected<layout::WeightLayout> gemvLayout = layout::parseWeightLayout(gemv->weightLayout);
  Expected<layout::WeightLayout> mmaLayout = layout::parseWeightLayout(mma->weightLayout);
  ASSERT_TRUE(gemvLayout.ok()) << gemvLayout.error();
  ASSERT_TRUE(mmaLayout.ok()) << mmaLayout.error();
  std::vector<uint8_t> codes(static_cast<size_t>(p.n * p.k));
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<uint8_t>(((i * 2654435761u) >> 28) & 15); // 4-bit codes
  std::vector<uint8_t> asGemv(static_cast<size_t>(layout::packedBytes(*gemvLayout, p.n, p.k)));
  std::vector<uint8_t> asMma(static_cast<size_t>(layout::packedBytes(*mmaLayout, p.n, p.k)));
  ASSERT_TRUE(layout::packWeights(*gemvLayout, p.n, p.k, codes.data(), asGemv.data(),
                                  asGemv.size()).ok());
  ASSERT_TRUE(layout::packWeights(*mmaLayout, p.n, p.k, codes.data(), asMma.data(),
                                  asMma.size()).ok());
  ASSERT_NE(asGemv, asMma) << gemv->weightLayout << " and " << mma->weightLayout
                           << " pack the same bytes";
  kernels::KernelEntry wrong = *mma;
  wrong.weightLayout = gemv->weightLayout;

  measure::KernelMeasurer measurer(*api, measure::databaseCubins(*database, *problems), nullptr,
                                   {});
  Expected<tuner::Measurement> good = measurer.measure(*mma, 16);
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_TRUE(good->passed) << "relative error " << good->maxRelError;
  Expected<tuner::Measurement> bad = measurer.measure(wrong, 16);
  ASSERT_TRUE(bad.ok()) << bad.error();
  EXPECT_FALSE(bad->passed);
  EXPECT_GT(bad->maxRelError, 2e-3);
  EXPECT_EQ(bad->medianUs, 0);
  EXPECT_EQ(measurer.rejected(), 1);
  // The measurer caches the module by its cubin; the right entry must still
  // get its own packing after the wrong one.
  Expected<tuner::Measurement> again = measurer.measure(*mma, 16);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->passed) << "relative error " << again->maxRelError;
}

} // namespace
} // namespace lowbit::testing
