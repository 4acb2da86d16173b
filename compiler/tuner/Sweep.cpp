#include "compiler/tuner/Sweep.h"

#include "runtime/kernels/KernelRecordCodec.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <set>

namespace lowbit::tuner {

double SteadyClock::seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

namespace {

std::string problemLabel(const SweepProblem &p) {
  return p.problem.name.empty() ? p.problemId.substr(0, 12) : p.problem.name;
}

} // namespace

const char *stopReasonName(StopReason reason) {
  switch (reason) {
  case StopReason::Completed: return "completed";
  case StopReason::Budget: return "time budget spent";
  case StopReason::Cancelled: return "cancelled";
  case StopReason::MeasurerFailed: return "measurer failed";
  }
  return "unknown";
}

std::string FailedCandidate::text() const {
  const std::string &reason = record.reason;
  std::string firstLine = reason.substr(0, reason.find('\n'));
  return problem + " · " + record.schedule + " · " + record.arch + ": " + record.stage +
         " failed: " + firstLine;
}

Expected<std::vector<SweepProblem>> loadSweepProblems(const db::Database &database,
                                                      const std::string &arch,
                                                      const std::vector<std::string> &only) {
  auto problems = database.problems();
  if (!problems)
    return makeError(problems.error());
  std::vector<SweepProblem> sweep;
  for (const db::ProblemRecord &record : *problems) {
    auto kernelRows = database.kernelsForProblem(record.id);
    if (!kernelRows)
      return makeError(kernelRows.error());
    auto failures = database.candidateFailures(record.id, arch);
    if (!failures)
      return makeError(failures.error());
    SweepProblem problem;
    problem.problemId = record.id;
    // A problem whose every candidate failed has no kernel to name it; its
    // signature still says what it is.
    if (Expected<core::Problem> parsed = core::parseSignature(record.signature); parsed)
      problem.problem = *parsed;
    for (const db::KernelRecord &kernel : *kernelRows) {
      if (kernel.arch != arch)
        continue;
      auto entry = kernels::kernelEntry(kernel);
      if (!entry)
        return makeError(entry.error());
      problem.problem = entry->problem;
      problem.candidates.push_back({kernel.id, std::move(*entry), {}});
    }
    bool wanted = only.empty() ||
                  std::find(only.begin(), only.end(), record.id) != only.end() ||
                  (!problem.problem.name.empty() &&
                   std::find(only.begin(), only.end(), problem.problem.name) != only.end());
    for (const db::CandidateFailureRecord &failure : *failures)
      problem.failed.push_back({problemLabel(problem), failure});
    if (wanted && (!problem.candidates.empty() || !problem.failed.empty()))
      sweep.push_back(std::move(problem));
  }
  return sweep;
}

size_t candidatesWithinCut(const SweepProblem &problem, int64_t maxCandidates) {
  size_t defaults = std::count_if(
      problem.candidates.begin(), problem.candidates.end(), [](const SweepCandidate &c) {
        Expected<core::Schedule> s = core::parseSchedule(c.entry.schedule);
        return s.ok() && core::isDefaultSchedule(*s);
      });
  return candidateCut(problem.candidates.size(), defaults, maxCandidates);
}

void orderByCostModel(SweepProblem &problem, const std::vector<int64_t> &mPoints,
                      const DeviceModel &device) {
  std::vector<core::Schedule> schedules;
  std::vector<SweepCandidate> unparsed;
  std::vector<std::pair<core::Schedule, SweepCandidate>> parsed;
  for (SweepCandidate &c : problem.candidates) {
    auto s = core::parseSchedule(c.entry.schedule);
    if (s) {
      schedules.push_back(*s);
      parsed.emplace_back(*s, std::move(c));
    } else {
      unparsed.push_back(std::move(c));
    }
  }
  std::vector<SweepCandidate> ordered;
  std::vector<bool> used(parsed.size(), false);
  std::vector<RankedSchedule> ranked = rankSchedules(problem.problem, schedules, mPoints, device);
  putDefaultsFirst(ranked);
  for (const RankedSchedule &r : ranked)
    for (size_t i = 0; i < parsed.size(); ++i)
      if (!used[i] && parsed[i].first == r.schedule) {
        used[i] = true;
        ordered.push_back(std::move(parsed[i].second));
      }
  // Schedules the model cannot run still get measured, after the rest: the
  // model may be wrong, the measurement is not.
  for (size_t i = 0; i < parsed.size(); ++i)
    if (!used[i])
      ordered.push_back(std::move(parsed[i].second));
  for (SweepCandidate &c : unparsed)
    ordered.push_back(std::move(c));
  problem.candidates = std::move(ordered);
}

namespace {

// Best-so-far per (problem index, M), and the reference there.
struct Scoreboard {
  std::map<std::pair<size_t, int64_t>, BestPoint> best;
  std::map<std::pair<size_t, int64_t>, std::optional<double>> reference;

  void offer(size_t problemIndex, const SweepProblem &p, const SweepCandidate &c, int64_t m,
             double medianUs) {
    BestPoint &b = best[{problemIndex, m}];
    if (!b.kernelId.empty() && b.medianUs <= medianUs)
      return;
    b.problemId = p.problemId;
    b.problem = p.problem;
    b.m = m;
    b.kernelId = c.kernelId;
    b.schedule = c.entry.schedule;
    b.medianUs = medianUs;
  }

  void speedups(SweepProgress &progress) const {
    double logSum = 0, worst = 0;
    int count = 0;
    for (const auto &[key, point] : best) {
      auto ref = reference.find(key);
      if (ref == reference.end() || !ref->second || !(point.medianUs > 0))
        continue;
      double speedup = *ref->second / point.medianUs;
      logSum += std::log(speedup);
      worst = count == 0 ? speedup : std::min(worst, speedup);
      ++count;
    }
    if (count > 0) {
      progress.geomeanSpeedup = std::exp(logSum / count);
      progress.worstSpeedup = worst;
    }
  }

  std::vector<BestPoint> points() const {
    std::vector<BestPoint> out;
    for (const auto &[key, point] : best) {
      BestPoint p = point;
      auto ref = reference.find(key);
      if (ref != reference.end())
        p.referenceUs = ref->second;
      out.push_back(std::move(p));
    }
    return out;
  }
};

db::ResultRecord resultRecord(const SweepProblem &problem, const SweepCandidate &candidate,
                              int64_t m, const Measurement &measured,
                              const SweepOptions &options) {
  db::ResultRecord r;
  r.kernelId = candidate.kernelId;
  r.deviceId = options.deviceId;
  r.m = m;
  r.medianUs = measured.medianUs;
  r.p10Us = measured.p10Us;
  r.p90Us = measured.p90Us;
  if (measured.medianUs > 0) {
    // Bytes per µs is MB/s; / 1e3 gives GB/s. Flops per µs / 1e6 is TFLOP/s.
    r.gbps = idealBytes(problem.problem, m).total() / measured.medianUs / 1e3;
    r.tflops = problemFlops(problem.problem, m) / measured.medianUs / 1e6;
  }
  r.maxRelError = measured.maxRelError;
  r.passed = measured.passed;
  r.runId = options.runId;
  return r;
}

size_t candidatesMeasured(const SweepProblem &p, const SweepOptions &options) {
  return candidatesWithinCut(p, options.maxCandidates);
}

} // namespace

SweepPlan planSweep(const std::vector<SweepProblem> &problems, const SweepOptions &options) {
  SweepPlan plan;
  for (const SweepProblem &p : problems) {
    SweepPlanRow row;
    row.problem = problemLabel(p);
    row.candidates = int64_t(candidatesMeasured(p, options));
    for (size_t ci = 0; ci < candidatesMeasured(p, options); ++ci)
      for (int64_t m : options.mPoints)
        ++(p.candidates[ci].pruned(m) ? row.pruned : row.points);
    plan.candidates += row.candidates;
    plan.points += row.points;
    plan.pruned += row.pruned;
    plan.problems.push_back(std::move(row));
  }
  return plan;
}

Expected<SweepSummary> runSweep(db::Database &database, const std::vector<SweepProblem> &problems,
                                Measurer &measurer, const SweepOptions &options, Clock &clock,
                                SweepObserver *observer) {
  if (options.runId.empty() || options.deviceId.empty())
    return makeError("a sweep needs a run id and a device id");
  if (options.mPoints.empty())
    return makeError("a sweep needs at least one M point");
  const double start = clock.seconds();
  SweepSummary summary;
  Scoreboard board;
  SweepProgress progress;
  auto candidatesOf = [&](const SweepProblem &p) { return candidatesMeasured(p, options); };
  const SweepPlan plan = planSweep(problems, options);
  progress.candidatesTotal = plan.candidates;
  progress.pointsTotal = plan.points;
  auto report = [&](const std::string &current) {
    if (!observer)
      return;
    progress.elapsedSeconds = clock.seconds() - start;
    progress.measuredNow = summary.measured;
    progress.current = current;
    board.speedups(progress);
    observer->onProgress(progress);
  };
  auto fetchReference = [&](size_t index, const SweepProblem &p, int64_t m) {
    auto key = std::make_pair(index, m);
    if (board.reference.count(key))
      return;
    std::optional<double> value;
    try {
      auto reference = measurer.referenceUs(p.problem, m);
      if (reference && *reference > 0)
        value = *reference;
    } catch (...) {
      // A reference is optional; its failure only leaves the speedup blank.
    }
    board.reference[key] = value;
  };
  auto stopWith = [&](StopReason reason, std::string detail = "") {
    summary.stop = reason;
    summary.stopDetail = std::move(detail);
    summary.best = board.points();
    progress.finished = true;
    report(std::string("stopped: ") + stopReasonName(reason));
    return summary;
  };

  // The budget is shared: problem i must be done by start + budget x (i + 1)
  // / problems, so one slow problem cannot starve the ones after it (its
  // candidates come likely-winners first, so a cut keeps the best of it);
  // time a problem leaves unused goes to the next ones.
  auto shareEnds = [&](size_t pi) {
    return options.budgetSeconds * double(pi + 1) / double(problems.size());
  };
  const SweepCandidate *lastErringCandidate = nullptr;
  int erringCandidatesInARow = 0;
  struct PendingError {
    db::ResultRecord record;
    std::string error;
  };
  std::vector<PendingError> pending;
  auto storePending = [&]() -> Status {
    for (const PendingError &e : pending) {
      if (Status s = database.addResult(e.record); !s)
        return makeError("storing " + e.error + ": " + s.error());
      ++summary.measured;
      ++summary.failedChecks;
      summary.measurementErrors.push_back(e.error);
    }
    pending.clear();
    return Status::success();
  };
  for (const SweepProblem &problem : problems)
    summary.failedCandidates.insert(summary.failedCandidates.end(), problem.failed.begin(),
                                    problem.failed.end());
  report("starting");
  for (size_t pi = 0; pi < problems.size(); ++pi) {
    const SweepProblem &problem = problems[pi];
    bool problemCut = false;
    for (size_t ci = 0; ci < candidatesOf(problem); ++ci) {
      const SweepCandidate &candidate = problem.candidates[ci];
      // Resume: what this run already stored, passing or not, is done. Its
      // passing medians still count toward the best-so-far.
      std::set<int64_t> done;
      if (options.resume) {
        auto stored = database.results(candidate.kernelId, options.deviceId);
        if (!stored)
          return makeError(stored.error());
        for (const db::ResultRecord &r : *stored) {
          if (r.runId != options.runId)
            continue;
          done.insert(r.m);
          if (r.passed)
            board.offer(pi, problem, candidate, r.m, r.medianUs);
        }
      }
      for (int64_t m : options.mPoints) {
        std::string current =
            problemLabel(problem) + " · " + candidate.entry.name + " · M=" + std::to_string(m);
        // Pruned points are neither measured nor counted in the progress
        // (a stored result of one still counted toward the best, above).
        if (candidate.pruned(m)) {
          ++summary.pruned;
          continue;
        }
        if (done.count(m)) {
          fetchReference(pi, problem, m); // so resumed points still get a speedup
          ++summary.skipped;
          ++progress.pointsDone;
          continue;
        }
        if (options.cancel && options.cancel->load()) {
          if (Status st = storePending(); !st)
            return makeError(st.error());
          return stopWith(StopReason::Cancelled);
        }
        if (options.budgetSeconds > 0) {
          const double elapsed = clock.seconds() - start;
          if (elapsed >= options.budgetSeconds) {
            if (Status st = storePending(); !st)
              return makeError(st.error());
            return stopWith(StopReason::Budget);
          }
          if (!problemCut && elapsed >= shareEnds(pi)) {
            problemCut = true;
            ++summary.problemsCut;
          }
          if (problemCut)
            continue; // left for --resume
        }
        fetchReference(pi, problem, m);
        Expected<Measurement> measured = makeError("not measured");
        try {
          measured = measurer.measure(candidate.entry, m);
        } catch (const std::exception &e) {
          measured = makeError(std::string("measurer threw: ") + e.what());
        } catch (...) {
          measured = makeError("measurer threw an unknown exception");
        }
        if (!measured) {
          // This candidate's failure (a launch the driver refuses, a kernel
          // that faults) is stored as failed, so it is never dispatched and
          // a resume does not retry it, and the sweep goes on. But different
          // candidates erring one after another mean the device is gone, not
          // the kernels: then the sweep stops and stores none of that run of
          // errors, so a resume on a healthy device measures them. Errors
          // wait in `pending` until a measurement succeeds or the sweep ends.
          if (lastErringCandidate != &candidate) {
            lastErringCandidate = &candidate;
            ++erringCandidatesInARow;
          }
          if (erringCandidatesInARow >= kFailingCandidatesInARow)
            return stopWith(StopReason::MeasurerFailed,
                            std::to_string(erringCandidatesInARow) +
                                " candidates in a row failed to measure; the last: " + current +
                                ": " + measured.error());
          Measurement failed;
          failed.maxRelError = 1e30; // stored and printed: keep it finite
          pending.push_back({resultRecord(problem, candidate, m, failed, options),
                             current + ": " + measured.error()});
          ++progress.pointsDone;
          report(current);
          continue;
        }
        erringCandidatesInARow = 0;
        lastErringCandidate = nullptr;
        if (Status s = storePending(); !s)
          return makeError(s.error());
        // Committed before the next measurement: an interruption loses at
        // most the one in flight.
        if (Status s = database.addResult(resultRecord(problem, candidate, m, *measured, options));
            !s)
          return makeError("storing " + current + ": " + s.error());
        ++summary.measured;
        ++progress.pointsDone;
        if (measured->passed)
          board.offer(pi, problem, candidate, m, measured->medianUs);
        else
          ++summary.failedChecks;
        report(current);
      }
      ++progress.candidatesDone;
    }
  }
  // Fewer than kFailingCandidatesInARow at the end: the kernels' failures.
  if (Status s = storePending(); !s)
    return makeError(s.error());
  if (summary.problemsCut > 0)
    return stopWith(StopReason::Budget, std::to_string(summary.problemsCut) +
                                            " problem(s) stopped at their share of the budget");
  return stopWith(StopReason::Completed);
}

void mergeSummary(SweepSummary &total, const SweepSummary &part) {
  auto severity = [](StopReason r) {
    switch (r) {
    case StopReason::Completed: return 0;
    case StopReason::Budget: return 1;
    case StopReason::Cancelled: return 2;
    case StopReason::MeasurerFailed: return 3;
    }
    return 3;
  };
  if (severity(part.stop) > severity(total.stop)) {
    total.stop = part.stop;
    total.stopDetail = part.stopDetail;
  }
  total.measured += part.measured;
  total.skipped += part.skipped;
  total.pruned += part.pruned;
  total.failedChecks += part.failedChecks;
  total.measurementErrors.insert(total.measurementErrors.end(), part.measurementErrors.begin(),
                                 part.measurementErrors.end());
  total.failedCandidates.insert(total.failedCandidates.end(), part.failedCandidates.begin(),
                                part.failedCandidates.end());
  total.problemsCut += part.problemsCut;
  total.best.insert(total.best.end(), part.best.begin(), part.best.end());
}

std::string chooseWeightLayout(const std::vector<TimedPoint> &points,
                               const std::map<std::string, std::string> &layoutOf) {
  std::map<int64_t, double> bestAtM;
  std::map<std::string, std::map<int64_t, double>> bestInLayout;
  for (const TimedPoint &point : points) {
    if (!point.passed || point.medianUs <= 0)
      continue;
    auto found = layoutOf.find(point.kernelId);
    std::string layout = found == layoutOf.end() ? "" : found->second;
    auto [overall, firstOverall] = bestAtM.emplace(point.m, point.medianUs);
    if (!firstOverall)
      overall->second = std::min(overall->second, point.medianUs);
    auto [inLayout, first] = bestInLayout[layout].emplace(point.m, point.medianUs);
    if (!first)
      inLayout->second = std::min(inLayout->second, point.medianUs);
  }
  const double missing = std::log(1000.0);
  std::string chosen;
  double chosenLoss = std::numeric_limits<double>::infinity();
  for (const auto &[layout, best] : bestInLayout) {
    double loss = 0;
    for (const auto &[m, overall] : bestAtM) {
      auto at = best.find(m);
      loss += at == best.end() ? missing : std::log(at->second / overall);
    }
    if (loss < chosenLoss)
      chosen = layout, chosenLoss = loss;
  }
  return chosen;
}

Expected<CommittedDispatch> commitDispatch(db::Database &database,
                                                        const SweepProblem &problem,
                                                        const std::string &deviceId,
                                                        const std::string &runId,
                                                        const RangeOptions &options) {
  std::vector<TimedPoint> points;
  std::map<std::string, std::string> layoutOf;
  for (const SweepCandidate &c : problem.candidates) {
    layoutOf[c.kernelId] = c.entry.weightLayout;
    auto stored = database.results(c.kernelId, deviceId);
    if (!stored)
      return makeError(stored.error());
    for (const db::ResultRecord &r : *stored)
      if (runId.empty() || r.runId == runId)
        points.push_back({r.kernelId, r.m, r.medianUs, r.passed});
  }
  std::string layout = chooseWeightLayout(points, layoutOf);
  std::vector<TimedPoint> ofLayout;
  for (const TimedPoint &point : points)
    if (layoutOf[point.kernelId] == layout)
      ofLayout.push_back(point);
  auto ranges = deriveRanges(ofLayout, options);
  if (!ranges)
    return makeError("problem " + problem.problemId.substr(0, 12) + ": " + ranges.error());
  if (Status s = database.setDispatch(problem.problemId, deviceId, *ranges); !s)
    return makeError("problem " + problem.problemId.substr(0, 12) + ": " + s.error());
  return CommittedDispatch{*ranges, checkRanges(*ranges, points)};
}

} // namespace lowbit::tuner
