// `lowbit db heuristic`: how close the built-in heuristic lands to the
// fastest measured kernel, from a tuned database alone (no GPU: the device's
// fingerprint is in the database).
#include "tuning_db/Commands.h"
#include "tuning_db/Lookup.h"

#include "core/Problem.h"
#include "core/Schedule.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

namespace lowbit::db {
namespace {

struct Measured {
  // Per M: the fastest passing median of each kernel.
  std::map<int64_t, std::map<std::string, double>> byM;
  // Per M: the kernels measured there that never passed the reference check.
  std::map<int64_t, std::set<std::string>> failedAt;
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
        if (!result.passed) {
          measured.failedAt[result.m].insert(kernel.id);
          continue;
        }
        auto [at, added] = measured.byM[result.m].emplace(kernel.id, result.medianUs);
        if (!added)
          at->second = std::min(at->second, result.medianUs);
      }
    }
  }
  // A kernel that passed at M in any run counts as passing there.
  for (auto &[m, failed] : measured.failedAt)
    for (auto it = failed.begin(); it != failed.end();)
      it = measured.byM[m].count(*it) ? failed.erase(it) : std::next(it);
  return measured;
}

// printf into a string (the rows' fixed columns; names go after them).
template <typename... Args> std::string format(const char *pattern, Args... args) {
  char text[160];
  std::snprintf(text, sizeof text, pattern, args...);
  return text;
}

std::string shapeOf(const ProblemRecord &problem) {
  Expected<core::Problem> parsed = core::parseSignature(problem.signature);
  std::string id = problem.id.substr(0, 12);
  if (!parsed)
    return id;
  return std::to_string(parsed->n) + "x" + std::to_string(parsed->k) + " " + id;
}

bool hasDefaultSchedule(const KernelRecord &kernel) {
  std::optional<core::Schedule> schedule = kernelSchedule(kernel);
  return schedule && core::isDefaultSchedule(*schedule);
}

} // namespace

Expected<std::string> heuristicCheckText(const std::vector<const Database *> &databases,
                                         const HeuristicCheckOptions &options) {
  std::ostringstream out;
  int within = 0, points = 0, unmeasured = 0, failed = 0, unresolved = 0;
  std::vector<std::string> devicesSeen;
  KernelFilter keep;
  if (options.defaultsOnly)
    keep = hasDefaultSchedule;
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
  for (const Database *database : databases) {
    auto devices = database->devices();
    if (!devices)
      return std::move(devices).takeError();
    for (const DeviceRecord &device : *devices) {
      if (std::find(devicesSeen.begin(), devicesSeen.end(), device.id) != devicesSeen.end())
        continue;
      devicesSeen.push_back(device.id);
      std::ostringstream rows;
      for (const ProblemRecord &problem : problems) {
        auto measured = measuredOn(databases, problem.id, device.id);
        if (!measured)
          return std::move(measured).takeError();
        if (measured->byM.empty())
          continue;
        const std::string shape = shapeOf(problem);
        auto resolution = resolveUntuned(databases, problem.id, device.fingerprint, keep);
        if (!resolution) {
          // One problem the heuristic cannot serve (with --defaults: none of
          // its kernels has a default schedule) does not end the report.
          ++unresolved;
          rows << format("%-24s %6s %12s %10s %6s  ", shape.c_str(), "-", "-", "-", "-")
               << "no kernel for the heuristic"
               << (options.defaultsOnly ? " among the default schedules" : "") << ": "
               << resolution.error() << "\n";
          continue;
        }
        for (const std::string &note : resolution->notes)
          rows << "  note: " << note << "\n";
        for (const auto &[m, times] : measured->byM) {
          if (times.empty())
            continue;
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
            const bool failedHere = measured->failedAt[m].count(choice->kernelId) > 0;
            ++(failedHere ? failed : unmeasured);
            rows << format("%-24s %6lld %12s %10.1f %6s  ", shape.c_str(),
                           static_cast<long long>(m), "-", fastest->second, "-")
                 << kernels
                 << (failedHere ? " (failed the reference check)" : " (not measured)") << "\n";
            continue;
          }
          double ratio = picked->second / fastest->second;
          within += ratio <= options.tolerance;
          if (choice->kernelId != fastest->first)
            kernels += " / " + measured->entries[fastest->first];
          rows << format("%-24s %6lld %12.1f %10.1f %6.2f  ", shape.c_str(),
                         static_cast<long long>(m), picked->second, fastest->second, ratio)
               << kernels << "\n";
        }
      }
      if (rows.tellp() <= 0)
        continue;
      out << "device " << device.fingerprint.name << " (" << device.fingerprint.smCount
          << " SMs), " << device.id.substr(0, 12) << "\n"
          << format("%-24s %6s %12s %10s %6s  ", "problem", "M", "heuristic us", "best us",
                    "ratio")
          << "heuristic kernel / fastest measured\n"
          << rows.str();
    }
  }
  if (points == 0 && unresolved == 0)
    return makeError("no passing measurement in the databases: tune first (lowbit tune)");
  const int timed = points - unmeasured - failed;
  out << within << " of " << timed << " timed points within "
      << format("%.0f%%", (options.tolerance - 1) * 100) << " of the fastest measured kernel ("
      << (options.defaultsOnly ? "the heuristic choosing among the default schedules"
                               : "the heuristic choosing among every kernel")
      << ")";
  if (unmeasured)
    out << "; at " << unmeasured << " more the heuristic's kernel was not measured";
  if (failed)
    out << "; at " << failed << " it failed the reference check";
  if (unresolved)
    out << "; " << unresolved << " problem(s) had no kernel for it";
  out << "\n";
  return out.str();
}

} // namespace lowbit::db
