#include "compiler/tuner/Sweep.h"
#include "TunerTestSupport.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

namespace lowbit::tuner {
namespace {

using namespace testing;
using core::Family;
using core::Schedule;

class FakeClock : public Clock {
public:
  double now = 1000;
  double seconds() override { return now; }
};

// Synthetic timings from the schedule: gemv is fast at small M, mma at
// large M, bigger mma tiles later still. Each measurement takes one second
// of the fake clock. After `failAfter` measurements it fails (or throws).
class FakeMeasurer : public Measurer {
public:
  explicit FakeMeasurer(FakeClock &clock) : clock_(clock) {}
  int failAfter = -1;
  bool throwInstead = false;
  std::string wrongKernel; // entry name whose reference check fails
  std::string unlaunchableKernel; // entry name whose every measurement errs
  std::vector<std::pair<std::string, int64_t>> calls;

  Expected<Measurement> measure(const kernels::KernelEntry &kernel, int64_t m) override {
    if (failAfter >= 0 && int(calls.size()) >= failAfter) {
      if (throwInstead)
        throw std::runtime_error("device lost");
      return makeError("device lost");
    }
    if (kernel.name == unlaunchableKernel)
      return makeError("launch " + kernel.name + ": CUDA_ERROR_INVALID_VALUE");
    calls.emplace_back(kernel.name, m);
    clock_.now += 1;
    Schedule s = *core::parseSchedule(kernel.schedule);
    double us = s.family == Family::Gemv ? (s.tileM == 1 ? 30.0 + 4.0 * m : 32.0 + 3.0 * m)
                                         : 40.0 + double(s.tileM) + 20.0 * m / double(s.tileM);
    Measurement r;
    r.medianUs = us;
    r.p10Us = us * 0.98;
    r.p90Us = us * 1.02;
    r.maxRelError = 1e-3;
    r.passed = kernel.name != wrongKernel;
    return r;
  }
  Expected<double> referenceUs(const kernels::ProblemDesc &, int64_t m) override {
    return 100.0 + double(m);
  }

private:
  FakeClock &clock_;
};

class SweepFixture : public ::testing::Test {
protected:
  void SetUp() override {
    auto opened = db::Database::open(dir.file("kernels.db"));
    ASSERT_TRUE(opened.ok()) << opened.error();
    database.emplace(std::move(*opened));
    ASSERT_TRUE(database->putDevice(testDevice()).ok());
    deviceId = testDevice().id();
    // Only the first is a default schedule (which every max-candidates cut
    // keeps).
    std::vector<Schedule> schedules = {
        {Family::Gemv, 1, 4, 4096, 1, 4, 1, 1},
        {Family::Gemv, 4, 4, 1024, 1, 4, 1, 1},
        {Family::Mma, 16, 64, 128, 1, 1, 4, 1},
        {Family::Mma, 64, 128, 64, 2, 2, 4, 1},
    };
    kernelIds = storeKernels(*database, w4a16(4096, 4096, "square"), schedules);
    auto more = storeKernels(*database, w4a16(14336, 4096, "up"),
                             {schedules[0], schedules[3]});
    kernelIds.insert(kernelIds.end(), more.begin(), more.end());
    ASSERT_EQ(kernelIds.size(), 6u);
    auto loaded = loadSweepProblems(*database, "sm_90a");
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    problems = *loaded;
    ASSERT_EQ(problems.size(), 2u);
    options.runId = "run-1";
    options.deviceId = deviceId;
    options.mPoints = {1, 16, 256};
  }

  // Rows per (kernel, M) for this device and run.
  std::map<std::pair<std::string, int64_t>, int> storedRows(const std::string &runId) {
    std::map<std::pair<std::string, int64_t>, int> rows;
    for (const std::string &id : kernelIds) {
      auto results = database->results(id, deviceId);
      EXPECT_TRUE(results.ok());
      for (const db::ResultRecord &r : *results)
        if (r.runId == runId)
          ++rows[{id, r.m}];
    }
    return rows;
  }

  ScratchDir dir;
  std::optional<db::Database> database;
  std::string deviceId;
  std::vector<std::string> kernelIds;
  std::vector<SweepProblem> problems;
  SweepOptions options;
  FakeClock clock;
};

struct RecordingObserver : SweepObserver {
  std::vector<SweepProgress> updates;
  void onProgress(const SweepProgress &p) override { updates.push_back(p); }
};

TEST_F(SweepFixture, LoadsEveryProblemWithItsKernels) {
  size_t candidates = 0;
  for (const SweepProblem &p : problems)
    candidates += p.candidates.size();
  EXPECT_EQ(candidates, 6u);
  auto onlyUp = loadSweepProblems(*database, "sm_90a", {"up"});
  ASSERT_TRUE(onlyUp.ok());
  ASSERT_EQ(onlyUp->size(), 1u);
  EXPECT_EQ((*onlyUp)[0].problem.name, "up");
  auto otherArch = loadSweepProblems(*database, "sm_80");
  ASSERT_TRUE(otherArch.ok());
  EXPECT_TRUE(otherArch->empty());
}

TEST_F(SweepFixture, CostModelOrderPutsAGemvFirstForSmallM) {
  for (SweepProblem &p : problems) {
    orderByCostModel(p, {1}, DeviceModel::h200());
    EXPECT_EQ(p.candidates.front().entry.family, "gemv") << p.problem.name;
  }
}

TEST_F(SweepFixture, ResumeAfterAFailedMeasurerMeasuresOnlyTheRest) {
  FakeMeasurer failing(clock);
  failing.failAfter = 7;
  auto first = runSweep(*database, problems, failing, options, clock);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(first->stop, StopReason::MeasurerFailed);
  EXPECT_NE(first->stopDetail.find("device lost"), std::string::npos);
  EXPECT_EQ(first->measured, 7);
  EXPECT_EQ(storedRows("run-1").size(), 7u);

  FakeMeasurer healthy(clock);
  options.resume = true;
  auto second = runSweep(*database, problems, healthy, options, clock);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_TRUE(second->complete());
  EXPECT_EQ(second->skipped, 7);
  EXPECT_EQ(second->measured, 6 * 3 - 7);
  EXPECT_EQ(healthy.calls.size(), size_t(6 * 3 - 7));
  // None of what the first run measured was measured again.
  std::set<std::pair<std::string, int64_t>> firstCalls(failing.calls.begin(),
                                                       failing.calls.end());
  for (const auto &call : healthy.calls)
    EXPECT_FALSE(firstCalls.count(call)) << call.first << " M=" << call.second;
  auto rows = storedRows("run-1");
  EXPECT_EQ(rows.size(), 18u);
  for (const auto &[key, count] : rows)
    EXPECT_EQ(count, 1) << key.first << " M=" << key.second;
  // Best-so-far includes the resumed results: every (problem, M) is there.
  EXPECT_EQ(second->best.size(), 2u * 3u);
}

// The H200's sweep stopped at one kernel that did not launch ("measurer
// failed"), leaving four of five problems without a dispatch table. One
// candidate's errors are its own failure: stored as failed, and the sweep
// measures everything else.
TEST_F(SweepFixture, ACandidateThatFailsToLaunchIsRecordedAndTheSweepGoesOn) {
  FakeMeasurer measurer(clock);
  measurer.unlaunchableKernel = problems[0].candidates[1].entry.name;
  auto summary = runSweep(*database, problems, measurer, options, clock);
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_TRUE(summary->complete()) << summary->stopDetail;
  EXPECT_EQ(summary->measured, 6 * 3);
  EXPECT_EQ(summary->failedChecks, 3);
  ASSERT_EQ(summary->measurementErrors.size(), 3u);
  EXPECT_NE(summary->measurementErrors[0].find("CUDA_ERROR_INVALID_VALUE"), std::string::npos);
  EXPECT_EQ(storedRows("run-1").size(), 18u);
  auto stored = database->results(problems[0].candidates[1].kernelId, deviceId);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 3u);
  for (const db::ResultRecord &r : *stored)
    EXPECT_FALSE(r.passed) << "M=" << r.m;
  // Every (problem, M) still has a best kernel.
  EXPECT_EQ(summary->best.size(), 2u * 3u);
}

// A candidate that never compiled has no kernel to measure: the compiler
// recorded it as failed, the sweep loads it with its problem (also a
// problem whose every candidate failed), measures the rest, and reports it.
TEST_F(SweepFixture, CandidatesThatFailedToCompileAreReportedAndTheRestMeasured) {
  const std::string square = db::problemIdForSignature(core::signature(w4a16(4096, 4096)));
  ASSERT_TRUE(database
                  ->putCandidateFailure({square, "sm_90a", "#lb.schedule<family = mma>", "k_mma",
                                         "compile", "nvrtc: error: forced\nthe log", "v", ""})
                  .ok());
  ASSERT_TRUE(database
                  ->putCandidateFailure({square, "sm_80", "#lb.schedule<family = gemv>", "k",
                                         "spill", "spills 8 bytes", "v", ""})
                  .ok());
  kernels::ProblemDesc lonely = w4a16(8192, 4096, "lonely");
  auto lonelyId = database->putProblem(core::signature(lonely));
  ASSERT_TRUE(lonelyId.ok());
  ASSERT_TRUE(database
                  ->putCandidateFailure({*lonelyId, "sm_90a", "#lb.schedule<family = gemv>",
                                         "k_gemv", "spill", "spills 8 bytes", "v", ""})
                  .ok());
  auto loaded = loadSweepProblems(*database, "sm_90a");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_EQ(loaded->size(), 3u);
  std::map<std::string, const SweepProblem *> byId;
  for (const SweepProblem &p : *loaded)
    byId[p.problemId] = &p;
  ASSERT_EQ(byId.at(square)->failed.size(), 1u); // sm_80's is another arch's
  EXPECT_EQ(byId.at(square)->candidates.size(), 4u);
  const SweepProblem &onlyFailed = *byId.at(*lonelyId);
  EXPECT_TRUE(onlyFailed.candidates.empty());
  EXPECT_EQ(onlyFailed.problem.n, 8192); // from the signature: no kernel names it
  ASSERT_EQ(onlyFailed.failed.size(), 1u);

  FakeMeasurer measurer(clock);
  auto summary = runSweep(*database, *loaded, measurer, options, clock);
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_TRUE(summary->complete()) << summary->stopDetail;
  EXPECT_EQ(summary->measured, 6 * 3);
  ASSERT_EQ(summary->failedCandidates.size(), 2u);
  std::set<std::string> texts;
  for (const FailedCandidate &f : summary->failedCandidates)
    texts.insert(f.text());
  EXPECT_TRUE(texts.count("square · #lb.schedule<family = mma> · sm_90a: compile failed: nvrtc: "
                          "error: forced"))
      << *texts.begin();
  EXPECT_TRUE(texts.count(lonelyId->substr(0, 12) +
                          " · #lb.schedule<family = gemv> · sm_90a: spill failed: spills 8 bytes"))
      << *texts.rbegin();
  SweepSummary total;
  mergeSummary(total, *summary);
  EXPECT_EQ(total.failedCandidates.size(), 2u);
}

TEST_F(SweepFixture, AThrowingMeasurerStopsCleanlyToo) {
  FakeMeasurer throwing(clock);
  throwing.failAfter = 4;
  throwing.throwInstead = true;
  auto first = runSweep(*database, problems, throwing, options, clock);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(first->stop, StopReason::MeasurerFailed);
  EXPECT_NE(first->stopDetail.find("threw: device lost"), std::string::npos);
  EXPECT_EQ(storedRows("run-1").size(), 4u);
  FakeMeasurer healthy(clock);
  options.resume = true;
  ASSERT_TRUE(runSweep(*database, problems, healthy, options, clock).ok());
  EXPECT_EQ(healthy.calls.size(), 14u);
  EXPECT_EQ(storedRows("run-1").size(), 18u);
}

TEST_F(SweepFixture, BudgetStopsCleanlyAndAnotherRunIdStartsOver) {
  FakeMeasurer measurer(clock);
  options.budgetSeconds = 4.5; // one fake second per measurement
  auto first = runSweep(*database, problems, measurer, options, clock);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stop, StopReason::Budget);
  EXPECT_EQ(first->measured, 5);
  EXPECT_EQ(storedRows("run-1").size(), 5u);

  // Resume matches the run id only: a new run measures everything.
  options.budgetSeconds = 0;
  options.resume = true;
  options.runId = "run-2";
  FakeMeasurer fresh(clock);
  auto second = runSweep(*database, problems, fresh, options, clock);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->skipped, 0);
  EXPECT_EQ(second->measured, 18);
}

// Problems share the budget: the first stops at half of it, so the second is
// measured at all (with all of the budget, the 12 points of "square" alone
// would take it whole, whichever comes first); a resume finishes both.
TEST_F(SweepFixture, TheBudgetIsSharedSoEveryProblemGetsMeasured) {
  FakeMeasurer measurer(clock);
  options.budgetSeconds = 8; // one fake second per measurement
  auto cut = runSweep(*database, problems, measurer, options, clock);
  ASSERT_TRUE(cut.ok()) << cut.error();
  EXPECT_EQ(cut->stop, StopReason::Budget);
  EXPECT_EQ(cut->problemsCut, 1);
  std::map<std::string, int> perProblem;
  for (const auto &call : measurer.calls)
    ++perProblem[call.first.substr(0, call.first.rfind('_'))];
  EXPECT_EQ(perProblem["lb_square"], 4); // its share: 4 fake seconds
  EXPECT_EQ(perProblem["lb_up"], 4);     // the rest of the budget
  std::set<std::string> problemsWithABest;
  for (const BestPoint &b : cut->best)
    problemsWithABest.insert(b.problem.name);
  EXPECT_EQ(problemsWithABest.size(), 2u);

  options.budgetSeconds = 0;
  options.resume = true;
  FakeMeasurer rest(clock);
  auto finished = runSweep(*database, problems, rest, options, clock);
  ASSERT_TRUE(finished.ok()) << finished.error();
  EXPECT_TRUE(finished->complete());
  EXPECT_EQ(finished->measured, 18 - 8);
  EXPECT_EQ(storedRows("run-1").size(), 18u);
}

// Pruned points are neither measured nor stored nor counted as progress;
// planSweep says beforehand what will be measured.
TEST_F(SweepFixture, PrunedPointsAreNotMeasured) {
  problems[0].candidates[0].prunedM = {16, 256};
  problems[1].candidates[1].prunedM = {1};
  auto plan = planSweep(problems, options);
  EXPECT_EQ(plan.candidates, 6);
  EXPECT_EQ(plan.points, 18 - 3);
  EXPECT_EQ(plan.pruned, 3);
  ASSERT_EQ(plan.problems.size(), 2u);
  EXPECT_EQ(plan.problems[0].problem, problems[0].problem.name);
  EXPECT_EQ(plan.problems[0].points, int64_t(problems[0].candidates.size() * 3) - 2);
  EXPECT_EQ(plan.problems[1].pruned, 1);

  FakeMeasurer measurer(clock);
  RecordingObserver observer;
  auto summary = runSweep(*database, problems, measurer, options, clock, &observer);
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_TRUE(summary->complete());
  EXPECT_EQ(summary->measured, plan.points);
  EXPECT_EQ(summary->pruned, 3);
  const std::string &name0 = problems[0].candidates[0].entry.name;
  const std::string &name1 = problems[1].candidates[1].entry.name;
  for (const auto &[name, m] : measurer.calls) {
    EXPECT_FALSE(name == name0 && (m == 16 || m == 256)) << name << " M=" << m;
    EXPECT_FALSE(name == name1 && m == 1) << name << " M=" << m;
  }
  EXPECT_EQ(storedRows("run-1").size(), size_t(plan.points));
  ASSERT_FALSE(observer.updates.empty());
  EXPECT_EQ(observer.updates.back().pointsTotal, plan.points);
  EXPECT_EQ(observer.updates.back().pointsDone, plan.points);
  // maxCandidates limits the plan as it limits the sweep: each problem's
  // default and one more (square: 1 + 3 points, up: 3 + 2).
  options.maxCandidates = 1;
  EXPECT_EQ(planSweep(problems, options).points, 4 + 5);
}

TEST_F(SweepFixture, MaxCandidatesAndCancel) {
  FakeMeasurer measurer(clock);
  options.maxCandidates = 1;
  auto limited = runSweep(*database, problems, measurer, options, clock);
  ASSERT_TRUE(limited.ok());
  EXPECT_TRUE(limited->complete());
  // Per problem its default schedule and one more, at 3 M points.
  EXPECT_EQ(limited->measured, 2 * 2 * 3);

  std::atomic<bool> cancel{true};
  options.cancel = &cancel;
  options.runId = "run-cancelled";
  auto cancelled = runSweep(*database, problems, measurer, options, clock);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->stop, StopReason::Cancelled);
  EXPECT_EQ(cancelled->measured, 0);
}

TEST_F(SweepFixture, FailedChecksAreStoredButNeverWinAndDispatchIsCommitted) {
  FakeMeasurer measurer(clock);
  // The gemv with 1 row per block is the fastest at M = 1; make it wrong.
  const SweepCandidate *wrong = nullptr;
  for (const SweepCandidate &c : problems[0].candidates)
    if (c.entry.schedule == Schedule{Family::Gemv, 1, 4, 4096, 1, 4, 1, 1}.text())
      wrong = &c;
  ASSERT_NE(wrong, nullptr);
  measurer.wrongKernel = wrong->entry.name;
  RecordingObserver observer;
  auto summary = runSweep(*database, problems, measurer, options, clock, &observer);
  ASSERT_TRUE(summary.ok()) << summary.error();
  EXPECT_EQ(summary->failedChecks, 3);
  for (const BestPoint &b : summary->best) {
    EXPECT_NE(b.kernelId, wrong->kernelId);
    ASSERT_TRUE(b.referenceUs.has_value());
  }
  ASSERT_FALSE(observer.updates.empty());
  const SweepProgress &last = observer.updates.back();
  EXPECT_TRUE(last.finished);
  EXPECT_EQ(last.candidatesDone, 6);
  EXPECT_EQ(last.candidatesTotal, 6);
  EXPECT_EQ(last.pointsDone, 18);
  ASSERT_TRUE(last.geomeanSpeedup.has_value());
  EXPECT_GT(*last.geomeanSpeedup, 1.0);

  for (const SweepProblem &p : problems) {
    auto committed = commitDispatch(*database, p, deviceId, options.runId);
    ASSERT_TRUE(committed.ok()) << committed.error();
    auto stored = database->dispatchRanges(p.problemId, deviceId);
    ASSERT_TRUE(stored.ok());
    ASSERT_EQ(stored->size(), committed->ranges.size());
    EXPECT_TRUE(db::validateRanges(*stored).ok());
    for (const db::DispatchRange &r : *stored)
      EXPECT_NE(r.kernelId, wrong->kernelId);
    // One packed buffer serves the plan: the table uses one weight layout,
    // here the mma one (the gemv layout is 12x slower at M = 4096).
    EXPECT_EQ(stored->front().mLo, 1);
    EXPECT_FALSE(stored->back().mHi.has_value());
    std::set<std::string> layouts;
    for (const db::DispatchRange &r : *stored)
      for (const SweepCandidate &c : p.candidates)
        if (c.kernelId == r.kernelId)
          layouts.insert(c.entry.weightLayout);
    EXPECT_EQ(layouts, std::set<std::string>{"layout-mma"});
    // What it serves, at every measured M: the dispatched kernel's own
    // median, against the best of either layout.
    std::map<std::string, std::string> layoutOf;
    for (const SweepCandidate &c : p.candidates)
      layoutOf[c.kernelId] = c.entry.weightLayout;
    ASSERT_EQ(committed->served.size(), options.mPoints.size());
    for (const RangeCheck &c : committed->served) {
      EXPECT_EQ(layoutOf[c.chosen], "layout-mma") << "M = " << c.m;
      EXPECT_GT(c.bestUs, 0);
      EXPECT_GE(c.chosenUs, c.bestUs) << "M = " << c.m;
      EXPECT_DOUBLE_EQ(c.ratio, c.chosenUs / c.bestUs);
      auto measured = database->results(c.chosen, deviceId);
      ASSERT_TRUE(measured.ok());
      bool found = false;
      for (const db::ResultRecord &r : *measured)
        found |= r.m == c.m && r.passed && r.medianUs == c.chosenUs;
      EXPECT_TRUE(found) << "M = " << c.m << ": the served time is the chosen kernel's";
    }
  }
}

TEST(MergeSummary, CountsAddAndTheMostSeriousStopWins) {
  SweepSummary total;
  SweepSummary first;
  first.measured = 5, first.skipped = 1, first.pruned = 2, first.failedChecks = 1;
  first.stop = StopReason::Budget;
  first.problemsCut = 1;
  first.best.push_back(BestPoint{});
  mergeSummary(total, first);
  SweepSummary second;
  second.measured = 3;
  second.best.push_back(BestPoint{});
  mergeSummary(total, second);
  EXPECT_EQ(total.measured, 8);
  EXPECT_EQ(total.skipped, 1);
  EXPECT_EQ(total.pruned, 2);
  EXPECT_EQ(total.failedChecks, 1);
  EXPECT_EQ(total.problemsCut, 1);
  EXPECT_EQ(total.best.size(), 2u);
  EXPECT_EQ(total.stop, StopReason::Budget); // a later completion does not hide it
  SweepSummary failed;
  failed.stop = StopReason::MeasurerFailed;
  failed.stopDetail = "device lost";
  mergeSummary(total, failed);
  EXPECT_EQ(total.stop, StopReason::MeasurerFailed);
  EXPECT_EQ(total.stopDetail, "device lost");
}

TEST(ChooseWeightLayout, TheLayoutThatLosesLeastOverTheMPointsWins) {
  std::map<std::string, std::string> layoutOf = {
      {"gemv", "row"}, {"tiled", "tile"}, {"mma", "tile"}};
  // row is best at M = 1 by 10%; tile is close there and far better beyond.
  std::vector<TimedPoint> points = {
      {"gemv", 1, 10.0, true},  {"tiled", 1, 11.0, true}, {"mma", 1, 14.0, true},
      {"gemv", 16, 60.0, true}, {"mma", 16, 15.0, true},  {"mma", 256, 90.0, true},
  };
  EXPECT_EQ(chooseWeightLayout(points, layoutOf), "tile");
  // A layout with no passing result at an M cannot serve it.
  std::vector<TimedPoint> onlyRow = {{"gemv", 1, 10.0, true}, {"mma", 1, 30.0, true},
                                     {"gemv", 64, 100.0, true}, {"mma", 64, 90.0, false}};
  EXPECT_EQ(chooseWeightLayout(onlyRow, layoutOf), "row");
  EXPECT_EQ(chooseWeightLayout({}, layoutOf), "");
}

} // namespace
} // namespace lowbit::tuner
