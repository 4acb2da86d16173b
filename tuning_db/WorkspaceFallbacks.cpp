#include "tuning_db/WorkspaceFallbacks.h"

#include "core/Schedule.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace lowbit::db {

bool takesWorkspace(const KernelRecord &kernel) {
  std::optional<core::Schedule> schedule = kernelSchedule(kernel);
  if (!schedule)
    return kernel.family == "dequant";
  return schedule->takesWorkspace();
}

Status assignMeasuredFallbacks(const Database &db, const std::string &problemId,
                               const std::string &deviceId, std::vector<Choice> &ranges) {
  auto kernels = db.kernelsForProblem(problemId);
  if (!kernels)
    return std::move(kernels).takeError();
  std::set<std::string> workspaceKernels;
  for (const KernelRecord &kernel : *kernels)
    if (takesWorkspace(kernel))
      workspaceKernels.insert(kernel.id);
  bool wanted = false;
  for (const Choice &choice : ranges)
    wanted = wanted || workspaceKernels.count(choice.kernelId) > 0;
  if (!wanted)
    return Status();

  // The passing measurements of the kernels that take no workspace: kernel
  // id -> M -> median.
  std::map<std::string, std::map<int64_t, double>> medians;
  std::map<int64_t, double> fastest;
  for (const KernelRecord &kernel : *kernels) {
    if (workspaceKernels.count(kernel.id))
      continue;
    auto results = db.results(kernel.id, deviceId);
    if (!results)
      return std::move(results).takeError();
    for (const ResultRecord &r : *results) {
      if (!r.passed || !(r.medianUs > 0))
        continue;
      auto [at, inserted] = medians[kernel.id].emplace(r.m, r.medianUs);
      if (!inserted)
        at->second = std::min(at->second, r.medianUs);
      auto [best, first] = fastest.emplace(r.m, at->second);
      if (!first)
        best->second = std::min(best->second, at->second);
    }
  }
  for (Choice &choice : ranges) {
    if (!workspaceKernels.count(choice.kernelId))
      continue;
    std::vector<std::pair<int64_t, double>> points;
    for (const auto &[m, best] : fastest)
      if (choice.contains(m))
        points.emplace_back(m, best);
    double bestScore = std::numeric_limits<double>::infinity();
    for (const auto &[id, byM] : medians) {
      double score = 0;
      bool measured = false;
      for (const auto &[m, best] : points) {
        auto at = byM.find(m);
        measured = measured || at != byM.end();
        score += std::log(at != byM.end() ? at->second / best : 2.0);
      }
      if (measured && score < bestScore) {
        bestScore = score;
        choice.fallbackKernelId = id;
      }
    }
  }
  return Status();
}

} // namespace lowbit::db
