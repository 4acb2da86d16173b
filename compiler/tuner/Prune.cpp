#include "compiler/tuner/Prune.h"

#include <algorithm>
#include <limits>

namespace lowbit::tuner {

std::vector<std::vector<int64_t>>
prunedByEstimates(const std::vector<std::vector<double>> &estimatesUs,
                  const std::vector<int64_t> &mPoints, double ratio) {
  std::vector<std::vector<int64_t>> pruned(estimatesUs.size());
  if (!(ratio >= 1))
    return pruned;
  for (size_t i = 0; i < mPoints.size(); ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (const std::vector<double> &estimates : estimatesUs)
      if (i < estimates.size() && estimates[i] >= 0)
        best = std::min(best, estimates[i]);
    for (size_t c = 0; c < estimatesUs.size(); ++c) {
      const std::vector<double> &estimates = estimatesUs[c];
      // No estimate: measured. Within the ratio of the best: measured.
      if (i >= estimates.size() || estimates[i] < 0 || estimates[i] <= ratio * best)
        continue;
      pruned[c].push_back(mPoints[i]);
    }
  }
  return pruned;
}

int64_t prunePoints(SweepProblem &problem, const std::vector<int64_t> &mPoints,
                    const DeviceModel &device, const PruneOptions &options) {
  size_t considered = candidatesWithinCut(problem, options.maxCandidates);
  std::vector<std::vector<double>> estimates(considered);
  for (size_t c = 0; c < considered; ++c) {
    Expected<core::Schedule> schedule = core::parseSchedule(problem.candidates[c].entry.schedule);
    // A schedule the model cannot parse has no estimate, so it is always
    // measured.
    const bool modelled = schedule.ok();
    for (int64_t m : mPoints) {
      Expected<CostEstimate> cost = modelled ? estimateCost(problem.problem, *schedule, m, device)
                                             : Expected<CostEstimate>(makeError("not modelled"));
      estimates[c].push_back(cost.ok() ? cost->us : -1.0);
    }
  }
  std::vector<std::vector<int64_t>> pruned = prunedByEstimates(estimates, mPoints, options.ratio);
  int64_t count = 0;
  for (size_t c = 0; c < considered; ++c) {
    problem.candidates[c].prunedM = pruned[c];
    count += int64_t(pruned[c].size());
  }
  return count;
}

} // namespace lowbit::tuner
