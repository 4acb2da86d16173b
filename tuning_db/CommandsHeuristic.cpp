// `lowbit db heuristic`: how close the built-in heuristic lands to the
// fastest measured kernel, from a tuned database alone (no GPU: the device's
// fingerprint is in the database).
#include "tuning_db/Commands.h"
#include "tuning_db/Lookup.h"

#include "core/Problem.h"
#include "core/Schedule.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace lowbit::db {
namespace {

struct Measured {
  // Per M: the fastest passing median of each kernel.
  std::map<int64_t, std::map<std::string, double>> byM;
  std::map<std::string, std::string> entries; // kernel id -> entry name
};

Expected<Measured> measuredOn(const std::vector<const Database *> &databases,
                              const std::string &problemId, const std::string &deviceId) {
  Measured measured;
  for (const Database *database : databases) {
    auto kernels = database->kernelsForProblem(problemId, false);
    if (!kernels)
      return std::move(kernels).takeError();
    for (const KernelRecord &kernel : *kernels) {
      measured.entries.emplace(kernel.id, kernel.entry);
      auto results = database->results(kernel.id, deviceId);
      if (!results)
        return std::move(results).takeError();
      for (const ResultRecord &result : *results) {
        if (!result.passed)
          continue;
        auto [at, added] = measured.byM[result.m].emplace(kernel.id, result.medianUs);
        if (!added)
          at->second = std::min(at->second, result.medianUs);
      }
    }
  }
  return measured;
}

std::string shapeOf(const ProblemRecord &problem) {
  Expected<core::Problem> parsed = core::parseSignature(problem.signature);
  std::string id = problem.id.substr(0, 12);
  if (!parsed)
    return id;
  return std::to_string(parsed->n) + "x" + std::to_string(parsed->k) + " " + id;
}

bool isDefaultSchedule(const KernelRecord &kernel) {
  std::optional<core::Schedule> schedule = kernelSchedule(kernel);
  if (!schedule)
    return false;
  const std::vector<core::Schedule> &defaults = core::defaultSchedules();
  return std::find(defaults.begin(), defaults.end(), *schedule) != defaults.end();
}

} // namespace

Expected<std::string> heuristicCheckText(const std::vector<const Database *> &databases,
                                         const HeuristicCheckOptions &options) {
  std::ostringstream out;
  int within = 0, points = 0, unmeasured = 0;
  std::vector<std::string> devicesSeen;
  KernelFilter keep;
  if (options.defaultsOnly)
    keep = isDefaultSchedule;
  // Every database's problems, each once.
  std::vector<ProblemRecord> problems;
  for (const Database *database : databases) {
    auto listed = database->problems();
    if (!listed)
      return std::move(listed).takeError();
    for (ProblemRecord &problem : *listed)
      if (std::none_of(problems.begin(), problems.end(),
                       [&](const ProblemRecord &p) { return p.id == problem.id; }))
        problems.push_back(std::move(problem));
  }
  char line[512];
  for (const Database *database : databases) {
    auto devices = database->devices();
    if (!devices)
      return std::move(devices).takeError();
    for (const DeviceRecord &device : *devices) {
      if (std::find(devicesSeen.begin(), devicesSeen.end(), device.id) != devicesSeen.end())
        continue;
      devicesSeen.push_back(device.id);
      out << "device " << device.fingerprint.name << " (" << device.fingerprint.smCount
          << " SMs), " << device.id.substr(0, 12) << "\n";
      std::snprintf(line, sizeof line, "%-24s %6s %12s %10s %6s  %s\n", "problem", "M",
                    "heuristic us", "best us", "ratio", "heuristic kernel / fastest measured");
      out << line;
      for (const ProblemRecord &problem : problems) {
        auto measured = measuredOn(databases, problem.id, device.id);
        if (!measured)
          return std::move(measured).takeError();
        if (measured->byM.empty())
          continue;
        auto resolution = resolveUntuned(databases, problem.id, device.fingerprint, keep);
        if (!resolution)
          return makeError("problem " + problem.id.substr(0, 12) + ": " + resolution.error());
        for (const auto &[m, times] : measured->byM) {
          auto fastest = std::min_element(times.begin(), times.end(), [](auto &a, auto &b) {
            return a.second < b.second;
          });
          auto choice = resolution->at(m);
          if (!choice)
            return std::move(choice).takeError();
          auto picked = times.find(choice->kernelId);
          ++points;
          std::string kernels = measured->entries[choice->kernelId];
          if (picked == times.end()) {
            ++unmeasured;
            std::snprintf(line, sizeof line, "%-24s %6lld %12s %10.1f %6s  %s (not measured)\n",
                          shapeOf(problem).c_str(), static_cast<long long>(m), "-",
                          fastest->second, "-", kernels.c_str());
          } else {
            double ratio = picked->second / fastest->second;
            within += ratio <= options.tolerance;
            if (choice->kernelId != fastest->first)
              kernels += " / " + measured->entries[fastest->first];
            std::snprintf(line, sizeof line, "%-24s %6lld %12.1f %10.1f %6.2f  %s\n",
                          shapeOf(problem).c_str(), static_cast<long long>(m), picked->second,
                          fastest->second, ratio, kernels.c_str());
          }
          out << line;
        }
      }
    }
  }
  if (points == 0)
    return makeError("no passing measurement in the databases: tune first (lowbit tune)");
  std::snprintf(line, sizeof line,
                "%d of %d points within %.0f%% of the fastest measured kernel (%s)", within,
                points, (options.tolerance - 1) * 100,
                options.defaultsOnly ? "the heuristic choosing among the default schedules"
                                     : "the heuristic choosing among every kernel");
  out << line;
  if (unmeasured)
    out << "; at " << unmeasured << " the heuristic's kernel was not measured";
  out << "\n";
  return out.str();
}

} // namespace lowbit::db
