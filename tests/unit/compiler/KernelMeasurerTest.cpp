// KernelMeasurer over a fake driver whose "kernels" really compute (on the
// CPU, in the layout their cubin was built for), so the reference check and
// the packing per layout are tested without a GPU.
//
// The regression: on the H200, TuneGpu.AKernelGivenWrongWeightsIsRejected
// measured an mma entry, then a copy of it carrying the gemv weight layout.
// The copy has the same name and schedule, so the measurer reused the
// module it had cached for the first entry, and the fixture took the weight
// layout from the cached module's entry: the copy got the mma packing and
// passed. The layout must come from the entry being measured.
#include "compiler/measure/KernelMeasurer.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "FakeComputeDriver.h"
#include "core/layout/WeightLayout.h"
#include "tests/unit/compiler/tuner/TunerTestSupport.h"

#include <gtest/gtest.h>

#include <map>

namespace lowbit::testing {
namespace {

kernels::ProblemDesc smallProblem() {
  return tuner::testing::w4a16(128, 256, "measurer-test");
}

kernels::KernelEntry entry(const std::string &name, const std::string &family,
                           const std::string &layout, int64_t tileN, int64_t tileM) {
  return fakeKernelEntry(smallProblem(), name, family, layout, tileM, tileN);
}

class KernelMeasurerTest : public ::testing::Test {
protected:
  void SetUp() override {
    gemv_ = entry("lb_gemv", "gemv", kGemvLayout, 4, 1);
    mma_ = entry("lb_mma", "mma", kMmaLayout, 64, 16);
    // The cubin a name stands for, as a database would hold it: compiled for
    // that kernel's own layout.
    cubinLayouts_ = {{gemv_.name, kGemvLayout}, {mma_.name, kMmaLayout}};
    options_.rotationBytes = 1; // two copies: enough to exercise the rotation
    options_.replays = 7;
  }

  measure::CubinLoader loader() {
    return [this](const kernels::KernelEntry &e) -> Expected<std::vector<char>> {
      ++cubinReads_;
      auto layout = cubinLayouts_.find(e.name);
      if (layout == cubinLayouts_.end())
        return makeError("no cubin for " + e.name);
      // The image's static shared memory is the entry's ptxas figure, as a
      // compiled cubin's would be.
      return makeFakeCubin(e.problem, layout->second, "", e.sharedBytes);
    };
  }

  kernels::KernelEntry gemv_, mma_;
  std::map<std::string, std::string> cubinLayouts_;
  measure::FixtureOptions options_;
  int cubinReads_ = 0;
};

// The premise of the wrong-weights tests: the two layouts pack the same codes
// into different bytes, so a kernel reading one packing as the other reads
// wrong codes. (Were the packings equal, passing would be correct.)
TEST_F(KernelMeasurerTest, TheTwoLayoutsPackDifferently) {
  auto gemv = layout::parseWeightLayout(kGemvLayout);
  auto mma = layout::parseWeightLayout(kMmaLayout);
  ASSERT_TRUE(gemv.ok()) << gemv.error();
  ASSERT_TRUE(mma.ok()) << mma.error();
  const kernels::ProblemDesc p = smallProblem();
  std::vector<uint8_t> codes(static_cast<size_t>(p.n * p.k));
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<uint8_t>((i * 7 + i / 13) & 15);
  std::vector<uint8_t> a(codes.size() / 2), b(codes.size() / 2);
  ASSERT_TRUE(layout::packWeights(*gemv, p.n, p.k, codes.data(), a.data(), a.size()).ok());
  ASSERT_TRUE(layout::packWeights(*mma, p.n, p.k, codes.data(), b.data(), b.size()).ok());
  EXPECT_NE(a, b);
}

TEST_F(KernelMeasurerTest, KernelsGivenTheirOwnLayoutPass) {
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  for (int64_t m : {1, 3}) {
    Expected<tuner::Measurement> gemv = measurer.measure(gemv_, m);
    ASSERT_TRUE(gemv.ok()) << gemv.error();
    EXPECT_TRUE(gemv->passed) << "M = " << m << ": relative error " << gemv->maxRelError;
    EXPECT_GT(gemv->medianUs, 0);
  }
  Expected<tuner::Measurement> mma = measurer.measure(mma_, 17);
  ASSERT_TRUE(mma.ok()) << mma.error();
  EXPECT_TRUE(mma->passed) << "relative error " << mma->maxRelError;
  EXPECT_LT(mma->maxRelError, 2e-3);
  EXPECT_EQ(measurer.rejected(), 0);
}

TEST_F(KernelMeasurerTest, AnEntryWithAnotherLayoutIsRejectedAfterItsCubinWasCached) {
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  Expected<tuner::Measurement> good = measurer.measure(mma_, 16);
  ASSERT_TRUE(good.ok()) << good.error();
  ASSERT_TRUE(good->passed) << "relative error " << good->maxRelError;

  kernels::KernelEntry wrong = mma_;
  wrong.weightLayout = kGemvLayout;
  Expected<tuner::Measurement> bad = measurer.measure(wrong, 16);
  ASSERT_TRUE(bad.ok()) << bad.error();
  EXPECT_FALSE(bad->passed);
  EXPECT_GT(bad->maxRelError, 2e-3);
  EXPECT_EQ(bad->medianUs, 0); // a failing kernel is never timed
  EXPECT_EQ(measurer.rejected(), 1);
  // One module for both entries: the cache stays keyed by the cubin.
  EXPECT_EQ(cubinReads_, 1);

  // And the right entry still passes after the wrong one.
  Expected<tuner::Measurement> again = measurer.measure(mma_, 32);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again->passed) << "relative error " << again->maxRelError;
}

TEST_F(KernelMeasurerTest, AnEntryWithAnotherLayoutIsRejectedWhenMeasuredFirst) {
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  kernels::KernelEntry wrong = mma_;
  wrong.weightLayout = kGemvLayout;
  Expected<tuner::Measurement> bad = measurer.measure(wrong, 16);
  ASSERT_TRUE(bad.ok()) << bad.error();
  EXPECT_FALSE(bad->passed);
  // The module was loaded for the wrong entry; the right one must not
  // inherit that entry's packing either.
  Expected<tuner::Measurement> good = measurer.measure(mma_, 16);
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_TRUE(good->passed) << "relative error " << good->maxRelError;
  EXPECT_EQ(measurer.rejected(), 1);
}

// The reference check is split over threads for large shapes; one wrong
// checked column anywhere must still fail it.
TEST_F(KernelMeasurerTest, TheCheckCoversEveryCheckedColumnOfALargeShape) {
  kernels::ProblemDesc large = tuner::testing::w4a16(2048, 8192, "measurer-test-large");
  kernels::KernelEntry gemv = fakeKernelEntry(large, "lb_gemv", "gemv", kGemvLayout, 1, 4);
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  Expected<tuner::Measurement> clean = measurer.measure(gemv, 1);
  ASSERT_TRUE(clean.ok()) << clean.error();
  EXPECT_TRUE(clean->passed) << "relative error " << clean->maxRelError;
  const int64_t checkedColumns = (large.n + 6) / 7;
  for (int64_t column : {int64_t{0}, checkedColumns / 2, checkedColumns - 1}) {
    fakeDriverCounters().corruptColumn = 7 * column;
    Expected<tuner::Measurement> corrupt = measurer.measure(gemv, 1);
    fakeDriverCounters().corruptColumn = -1;
    ASSERT_TRUE(corrupt.ok()) << corrupt.error();
    EXPECT_FALSE(corrupt->passed) << "output column " << 7 * column << " was not checked";
  }
}

TEST_F(KernelMeasurerTest, ACubinThatDoesNotLoadIsAFailedKernelNotAnError) {
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  kernels::KernelEntry missing = gemv_;
  missing.name = "lb_not_in_the_database";
  Expected<tuner::Measurement> result = measurer.measure(missing, 1);
  ASSERT_TRUE(result.ok()) << result.error();
  EXPECT_FALSE(result->passed);
  EXPECT_EQ(measurer.rejected(), 1);
}

// A split-K ring in dynamic shared memory: the entry's bytes reach the
// launch, and past 48 KiB the function is opted in first (the fake driver,
// like a GPU, fails the launch otherwise, which would make this an error).
TEST_F(KernelMeasurerTest, AnEntryWithDynamicSharedMemoryOptsInAndLaunchesWithIt) {
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  kernels::KernelEntry ring = mma_;
  ring.dynamicSharedBytes = 100000;
  const int optInsBefore = fakeDriverCounters().dynamicSharedOptIns;
  Expected<tuner::Measurement> measured = measurer.measure(ring, 16);
  ASSERT_TRUE(measured.ok()) << measured.error();
  EXPECT_TRUE(measured->passed) << "relative error " << measured->maxRelError;
  EXPECT_EQ(fakeDriverCounters().lastSharedBytes, 100000);
  EXPECT_GT(fakeDriverCounters().dynamicSharedOptIns, optInsBefore);

  // Up to 48 KiB needs no opt-in; without dynamic shared memory none is passed.
  kernels::KernelEntry small = gemv_;
  small.dynamicSharedBytes = 48 * 1024;
  const int optInsAfterRing = fakeDriverCounters().dynamicSharedOptIns;
  Expected<tuner::Measurement> smallMeasured = measurer.measure(small, 1);
  ASSERT_TRUE(smallMeasured.ok()) << smallMeasured.error();
  EXPECT_EQ(fakeDriverCounters().lastSharedBytes, 48 * 1024);
  EXPECT_EQ(fakeDriverCounters().dynamicSharedOptIns, optInsAfterRing);
  Expected<tuner::Measurement> plain = measurer.measure(gemv_, 1);
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_EQ(fakeDriverCounters().lastSharedBytes, 0);
}

// The H200's failure (mma_t32x64x128_w1x1_s2_k2): 16 KiB of static and
// 48 KiB of dynamic shared memory. The 48 KiB default limits the sum, so the
// function must opt in although the dynamic bytes alone are within it; the
// opt-in used to look at those alone, and the launch failed.
TEST_F(KernelMeasurerTest, StaticPlusDynamicSharedMemoryPast48KiBOptsIn) {
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  kernels::KernelEntry ring = mma_;
  ring.sharedBytes = 16 * 1024;
  ring.dynamicSharedBytes = 48 * 1024;
  const int optInsBefore = fakeDriverCounters().dynamicSharedOptIns;
  Expected<tuner::Measurement> measured = measurer.measure(ring, 16);
  ASSERT_TRUE(measured.ok()) << measured.error();
  EXPECT_TRUE(measured->passed) << "relative error " << measured->maxRelError;
  EXPECT_EQ(fakeDriverCounters().lastSharedBytes, 48 * 1024);
  EXPECT_GT(fakeDriverCounters().dynamicSharedOptIns, optInsBefore);
}

// Zero points, the usual GPTQ / AWQ asymmetric formats, used to be refused
// ("the benchmark covers W4 without zero points"): every zero mode is
// measured, on weights the formats library quantized, and the check still
// catches a wrong output.
TEST_F(KernelMeasurerTest, ZeroPointProblemsAreMeasuredAndChecked) {
  for (const char *zero : {"sub_code", "sub_value", "quantized"}) {
    kernels::KernelEntry e = gemv_;
    core::ZeroSpelling spelled = *core::parseZero(zero);
    e.problem.scheme.zero = spelled.mode;
    if (spelled.quantized)
      e.problem.scheme.zeroCodes = formats::DataFormat::unsignedInt(4);
    measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
    Expected<tuner::Measurement> measured = measurer.measure(e, 3);
    ASSERT_TRUE(measured.ok()) << zero << ": " << measured.error();
    EXPECT_TRUE(measured->passed) << zero << ": relative error " << measured->maxRelError;
    EXPECT_GT(measured->medianUs, 0) << zero;
    fakeDriverCounters().corruptColumn = 7;
    Expected<tuner::Measurement> corrupt = measurer.measure(e, 3);
    fakeDriverCounters().corruptColumn = -1;
    ASSERT_TRUE(corrupt.ok()) << corrupt.error();
    EXPECT_FALSE(corrupt->passed) << zero;
  }
}

// A 2-bit kernel (its layout packs 16 codes per word) is measured on 2-bit
// codes the formats library quantized, in bf16 to cover the other dtype.
TEST_F(KernelMeasurerTest, TwoBitProblemsAreMeasured) {
  const char *twoBitLayout = "lbwl1;bits=2;tile=1x32;basis=4,1,2,8,16";
  kernels::KernelEntry e = gemv_;
  e.name = "lb_gemv_w2";
  e.weightLayout = twoBitLayout;
  e.problem.code = formats::DataFormat::unsignedInt(2);
  e.problem.activation = core::Activation::BF16;
  e.problem.scheme.scale = formats::DataFormat::bf16();
  cubinLayouts_[e.name] = twoBitLayout;
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  Expected<tuner::Measurement> measured = measurer.measure(e, 2);
  ASSERT_TRUE(measured.ok()) << measured.error();
  EXPECT_TRUE(measured->passed) << "relative error " << measured->maxRelError;
}

// A problem the formats library makes no inputs for (act-order needs a g_idx)
// cannot have a checked kernel: its candidates fail, as results, so the
// sweep goes on to the next problem.
TEST_F(KernelMeasurerTest, AProblemWithoutInputsFailsItsKernelsNotTheSweep) {
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  kernels::KernelEntry e = gemv_;
  e.problem.scheme.actOrder = true;
  for (int64_t m : {1, 2}) {
    Expected<tuner::Measurement> measured = measurer.measure(e, m);
    ASSERT_TRUE(measured.ok()) << measured.error();
    EXPECT_FALSE(measured->passed);
  }
  EXPECT_EQ(measurer.rejected(), 2);
  Expected<tuner::Measurement> other = measurer.measure(gemv_, 1);
  ASSERT_TRUE(other.ok()) << other.error();
  EXPECT_TRUE(other->passed);
}

// A kernel the driver will not launch is an error for that measurement
// (the sweep records it as failed and goes on, SweepTest.cpp); the measurer
// itself stays usable for the next candidate.
TEST_F(KernelMeasurerTest, ALaunchFailureDoesNotBreakTheMeasurer) {
  measure::KernelMeasurer measurer(fakeComputeDriver(), loader(), nullptr, options_);
  fakeDriverCounters().failLaunchesOf = gemv_.name;
  Expected<tuner::Measurement> failed = measurer.measure(gemv_, 1);
  fakeDriverCounters().failLaunchesOf.clear();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find(gemv_.name), std::string::npos) << failed.error();
  Expected<tuner::Measurement> next = measurer.measure(mma_, 16);
  ASSERT_TRUE(next.ok()) << next.error();
  EXPECT_TRUE(next->passed);
}

// The H200's sweep: one candidate that does not launch stopped it ("measurer
// failed"). Through the real measurer, the fake driver and a database, that
// candidate is stored as failed and the other one still gets measured.
TEST_F(KernelMeasurerTest, ALaunchFailureOfOneCandidateDoesNotStopTheSweep) {
  tuner::testing::ScratchDir dir;
  Expected<db::Database> database = db::Database::open(dir.file("k.db"));
  ASSERT_TRUE(database.ok()) << database.error();
  ASSERT_TRUE(database->putDevice(tuner::testing::testDevice()).ok());
  ASSERT_TRUE(database->putProblem(core::signature(smallProblem())).ok());
  std::map<std::string, std::string> ids;
  for (const kernels::KernelEntry &e : {gemv_, mma_}) {
    Expected<std::string> id = database->putKernel(
        kernels::kernelRecord(e, makeFakeCubin(e.problem, e.weightLayout, e.name), "", "s", "t"));
    ASSERT_TRUE(id.ok()) << id.error();
    ids[e.name] = *id;
  }
  Expected<std::vector<tuner::SweepProblem>> problems = tuner::loadSweepProblems(*database, "sm_90a");
  ASSERT_TRUE(problems.ok()) << problems.error();
  measure::KernelMeasurer measurer(fakeComputeDriver(), measure::databaseCubins(*database, *problems),
                                   nullptr, options_);
  tuner::SweepOptions sweep;
  sweep.runId = "run";
  sweep.deviceId = tuner::testing::testDevice().id();
  sweep.mPoints = {1, 16};
  tuner::SteadyClock clock;
  fakeDriverCounters().failLaunchesOf = gemv_.name;
  Expected<tuner::SweepSummary> summary = tuner::runSweep(*database, *problems, measurer, sweep, clock);
  fakeDriverCounters().failLaunchesOf.clear();
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_TRUE(summary->complete()) << summary->stopDetail;
  EXPECT_EQ(summary->measured, 4);
  EXPECT_EQ(summary->measurementErrors.size(), 2u);
  for (const auto &[name, id] : ids) {
    auto results = database->results(id, sweep.deviceId);
    ASSERT_TRUE(results.ok());
    ASSERT_EQ(results->size(), 2u) << name;
    for (const db::ResultRecord &r : *results)
      EXPECT_EQ(r.passed, name == mma_.name) << name << " M=" << r.m;
  }
}

} // namespace
} // namespace lowbit::testing
