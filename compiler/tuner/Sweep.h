// A tuning sweep: problems x candidate kernels x M points, measured one at a
// time and committed to the kernel database as each is measured, so an
// interrupted sweep (budget, Ctrl-C, a lost device) keeps all it measured and
// `--resume` continues where it stopped.
//
// Measuring is behind the Measurer interface: tests use synthetic timings,
// `lowbit tune` a measurer over compiler/measure (GraphTimer + reference
// check) on the GPU.
#pragma once

#include "compiler/tuner/CostModel.h"
#include "compiler/tuner/Ranges.h"
#include "runtime/kernels/KernelSet.h"
#include "core/support/Expected.h"
#include "tuning_db/Database.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::tuner {

struct Measurement {
  double medianUs = 0, p10Us = 0, p90Us = 0;
  double maxRelError = 0;
  bool passed = false; // the reference check; a failing kernel is recorded, never dispatched
};

class Measurer {
public:
  virtual ~Measurer() = default;
  // Times `kernel` at M rows and checks it against the reference. A kernel
  // that runs but computes wrong values is a Measurement with passed =
  // false. An error (the kernel does not launch, or faults) is recorded by
  // the sweep as this candidate's failure and the sweep goes on; only
  // kFailingCandidatesInARow different candidates erring one after another
  // (the device is gone, not a kernel) stop it.
  virtual Expected<Measurement> measure(const kernels::KernelEntry &kernel, int64_t m) = 0;
  // The dense reference (cuBLAS f16) at the problem's shape, for speedups.
  virtual Expected<double> referenceUs(const kernels::ProblemDesc &, int64_t) {
    return makeError("no reference timing available");
  }
};

// Seconds since an arbitrary origin; injected so tests control the budget.
class Clock {
public:
  virtual ~Clock() = default;
  virtual double seconds() = 0;
};
class SteadyClock : public Clock {
public:
  double seconds() override;
};

struct SweepCandidate {
  std::string kernelId;
  kernels::KernelEntry entry;
  // M points this candidate is not measured at (prunePoints, Prune.h): it
  // cannot win there. Neither measured nor stored; the others still are.
  std::vector<int64_t> prunedM;

  bool pruned(int64_t m) const {
    return std::find(prunedM.begin(), prunedM.end(), m) != prunedM.end();
  }
};

// A candidate that never became a kernel (its compile failed or ptxas
// spilled), as the compiler recorded it in the database: the sweep cannot
// measure it, and reports it as failed.
struct FailedCandidate {
  std::string problem; // the problem's name, or its id's first 12 digits
  db::CandidateFailureRecord record;

  // "problem · #lb.schedule<...> · sm_90a: compile failed: <first line>".
  std::string text() const;
};

struct SweepProblem {
  std::string problemId;
  kernels::ProblemDesc problem;
  std::vector<SweepCandidate> candidates;
  std::vector<FailedCandidate> failed;
};

// The problems in the database (all, or those whose id or name is listed)
// with their kernels for `arch` as candidates and their failed candidates
// for `arch`; a problem with either is loaded. A kernel row that does not
// decode is an error naming it.
Expected<std::vector<SweepProblem>> loadSweepProblems(const db::Database &database,
                                                      const std::string &arch,
                                                      const std::vector<std::string> &only = {});

// How many of the problem's candidates (ordered by orderByCostModel) a
// max-candidates cut measures: the default schedules and maxCandidates more.
size_t candidatesWithinCut(const SweepProblem &problem, int64_t maxCandidates);

// Puts likely winners first (rankSchedules); candidates whose schedule does
// not parse keep their relative order at the end.
void orderByCostModel(SweepProblem &problem, const std::vector<int64_t> &mPoints,
                      const DeviceModel &device);

struct SweepProgress {
  int64_t candidatesDone = 0, candidatesTotal = 0;
  // (kernel, M) pairs, resumed ones included, pruned ones not.
  int64_t pointsDone = 0, pointsTotal = 0;
  int64_t measuredNow = 0;                 // measured by this invocation
  double elapsedSeconds = 0;
  // Over the (problem, M) points with a reference: the best kernel so far
  // against the reference; geometric mean and the worst point.
  std::optional<double> geomeanSpeedup, worstSpeedup;
  std::string current; // "problem · kernel · M"
  bool finished = false; // the last update of the sweep, whatever stopped it
};

class SweepObserver {
public:
  virtual ~SweepObserver() = default;
  virtual void onProgress(const SweepProgress &progress) = 0;
};

struct SweepOptions {
  std::string runId;    // required; results carry it, --resume matches it
  std::string deviceId; // required; must be in the devices table
  std::vector<int64_t> mPoints = defaultMPoints();
  // Skip (kernel, device, M) already stored for runId. Without it every
  // point is measured and stored again (the database keeps every row; range
  // derivation takes each kernel's best), so a new sweep should use a new id.
  bool resume = false;
  // 0: no limit; checked before each measurement. Shared between problems:
  // problem i stops measuring at budget x (i + 1) / problems (runSweep).
  double budgetSeconds = 0;
  int64_t maxCandidates = 0; // per problem, in the given order; 0: all
  const std::atomic<bool> *cancel = nullptr; // set from a signal handler
};

enum class StopReason { Completed, Budget, Cancelled, MeasurerFailed };
const char *stopReasonName(StopReason reason);

// The best passing kernel at one (problem, M), for reports.
struct BestPoint {
  std::string problemId;
  kernels::ProblemDesc problem;
  int64_t m = 0;
  std::string kernelId, schedule;
  double medianUs = 0;
  std::optional<double> referenceUs;
  // What the committed dispatch table serves at m (commitDispatch's
  // served), which a plan gets: its kernel may differ from the best one when
  // the best is of a weight layout the table could not use. Empty until set.
  std::string servedKernelId;
  double servedUs = 0;
};

// Different candidates whose measurements err one after another before the
// sweep takes the device, not the kernels, for broken and stops.
constexpr int kFailingCandidatesInARow = 4;

struct SweepSummary {
  StopReason stop = StopReason::Completed;
  std::string stopDetail; // the measurer's message, for MeasurerFailed
  // skipped: already stored for this run (resume); pruned: not worth
  // measuring; failedChecks: wrong results and measurement errors (both
  // stored as failed); measurementErrors: "problem · kernel · M: why" for the
  // errors among them (a launch the driver refused, a fault).
  int64_t measured = 0, skipped = 0, pruned = 0, failedChecks = 0;
  std::vector<std::string> measurementErrors;
  // Every problem's candidates that failed to compile (SweepProblem::failed).
  std::vector<FailedCandidate> failedCandidates;
  int64_t problemsCut = 0; // problems stopped at their share of the budget
  std::vector<BestPoint> best; // sorted by problem order, then M
  bool complete() const { return stop == StopReason::Completed; }
};

// Adds `part` (a sweep over later problems) to `total`: counts add up, best
// points append, and the stop reason is the most serious one (a failed
// measurer over a cancel over a budget stop over completion).
void mergeSummary(SweepSummary &total, const SweepSummary &part);

// What a sweep over `problems` with `options` will measure, before it starts
// (runSweep's own count): candidates within maxCandidates, and their (kernel,
// M) points without the pruned ones. Points a resumed run already stored are
// counted here too; runSweep skips them.
struct SweepPlanRow {
  std::string problem; // name, or the id's first 12 digits
  int64_t candidates = 0, points = 0, pruned = 0;
};
struct SweepPlan {
  std::vector<SweepPlanRow> problems;
  int64_t candidates = 0, points = 0, pruned = 0; // totals
};
SweepPlan planSweep(const std::vector<SweepProblem> &problems, const SweepOptions &options);

// Runs the sweep. Errors are for the database only (a result that cannot be
// stored); every other stop is a summary with its reason.
Expected<SweepSummary> runSweep(db::Database &database, const std::vector<SweepProblem> &problems,
                                Measurer &measurer, const SweepOptions &options,
                                Clock &clock, SweepObserver *observer = nullptr);

// Derives the problem's dispatch ranges on the device from the passing
// results in the database (of `runId`, or of every run when it is empty)
// and stores them with setDispatch. A plan serves every M from one packed
// weight buffer, so the table uses kernels of one weight layout: the layout
// whose best kernels lose least to the overall best, summed over the
// measured M points (chooseWeightLayout).
// The weight layout whose kernels serve the measured M points best: the
// smallest sum over M of log(best time in the layout / best time overall),
// an M the layout has no passing result for costing as much as 1000x.
// `layoutOf` maps a kernel id to its layout. Empty when no point passed.
std::string chooseWeightLayout(const std::vector<TimedPoint> &points,
                               const std::map<std::string, std::string> &layoutOf);

// What commitDispatch stored, and what that serves at each measured M: the
// dispatched kernel against the best one of any weight layout (checkRanges),
// so that `lowbit tune` reports what a plan gets, not a kernel it cannot use.
struct CommittedDispatch {
  std::vector<db::DispatchRange> ranges;
  std::vector<RangeCheck> served;
};
Expected<CommittedDispatch> commitDispatch(db::Database &database,
                                                        const SweepProblem &problem,
                                                        const std::string &deviceId,
                                                        const std::string &runId,
                                                        const RangeOptions &options = {});

} // namespace lowbit::tuner
