#include "compiler/tools/lowbit/TuneCompile.h"

#include "compiler/measure/TunePlan.h"
#include "compiler/tuner/SearchSpace.h"
#include "compiler/tuner/Sweep.h"
#include "tuning_db/Database.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace lowbit::cli {

int compileCandidates(CompileMain compileMain, const std::vector<kernels::ProblemDesc> &problems,
                      const std::string &arch, const std::vector<int64_t> &mPoints,
                      const tuner::DeviceModel &model, int64_t maxCandidates,
                      const std::vector<core::TileScheduler> &wgmmaSchedulers,
                      const std::string &database) {
  Expected<tuner::ArchLimits> limits = tuner::archLimits(arch);
  tuner::SearchSpaceOptions options;
  options.wgmmaSchedulers = wgmmaSchedulers;
  int clean = 0;
  for (const kernels::ProblemDesc &problem : problems) {
    // The search space asks the schedule rules of the typed problem.
    tuner::SearchSpace space =
        tuner::enumerateSchedules(problem, limits.ok() ? *limits : model.limits, options);
    std::vector<tuner::RankedSchedule> ranked =
        tuner::rankSchedules(problem, space.accepted, mPoints, model);
    // The defaults first, and always compiled (tuner::putDefaultsFirst).
    tuner::putDefaultsFirst(ranked);
    size_t defaults = std::count_if(ranked.begin(), ranked.end(), [](const auto &r) {
      return core::isDefaultSchedule(r.schedule);
    });
    std::vector<std::string> schedules;
    for (size_t i = 0; i < tuner::candidateCut(ranked.size(), defaults, maxCandidates); ++i)
      schedules.push_back(ranked[i].schedule.text());
    std::cerr << "compiling " << problem.name << " (" << problem.n << "x" << problem.k << "): "
              << schedules.size() << " of " << space.accepted.size() << " schedules\n";
    if (schedules.empty()) {
      // Say why, with the rules' reason (the first rejection; the rest are
      // usually the same words for other sizes).
      if (!space.rejected.empty())
        std::cerr << "lowbit tune: " << problem.name << ": every schedule was rejected, e.g. "
                  << space.rejected.front().reason << "\n";
      continue;
    }
    // One spec per problem goes through a temporary file: the plugin's entry
    // point takes command-line arguments, and applies one schedule list to a
    // whole spec.
    std::string path = (std::filesystem::temp_directory_path() / "lowbit-tune-XXXXXX.toml").string();
    int fd = mkstemps(path.data(), 5);
    if (fd < 0) {
      std::cerr << "lowbit tune: cannot create a temporary spec file\n";
      continue;
    }
    close(fd);
    {
      std::ofstream spec(path);
      spec << tune::oneProblemSpecText(problem, arch);
    }
    int rc = runCompileMain(compileMain, "lowbit tune",
                            tune::compileArgs(path, database, schedules));
    std::filesystem::remove(path);
    if (rc == 0)
      ++clean;
    else
      std::cerr << "lowbit tune: some candidates of " << problem.name
                << " did not compile (recorded as failed); the others are in the database\n";
  }
  return clean;
}

int printCompileFailures(const std::string &path,
                         const std::vector<kernels::ProblemDesc> &problems,
                         const std::string &arch, std::ostream &out) {
  Expected<db::Database> database = db::Database::open(path, {db::OpenMode::ReadOnly});
  if (!database.ok()) {
    out << "lowbit tune: " << database.error() << "\n";
    return -1;
  }
  int count = 0;
  for (const kernels::ProblemDesc &problem : problems) {
    Expected<std::vector<db::CandidateFailureRecord>> failures =
        database->candidateFailures(tune::problemIdOf(problem), arch);
    if (!failures.ok()) {
      out << "lowbit tune: " << failures.error() << "\n";
      return -1;
    }
    for (const db::CandidateFailureRecord &failure : *failures) {
      out << "lowbit tune: recorded as failed: " << tuner::FailedCandidate{problem.name, failure}.text()
          << "\n";
      ++count;
    }
  }
  return count;
}

int printProblemsWithoutCandidates(const std::string &path,
                                   const std::vector<kernels::ProblemDesc> &problems,
                                   const std::string &arch, std::ostream &out) {
  Expected<db::Database> database = db::Database::open(path, {db::OpenMode::ReadOnly});
  if (!database.ok()) {
    for (const kernels::ProblemDesc &problem : problems)
      out << "lowbit tune: " << problem.name << ": no " << arch << " candidate is in " << path
          << " (" << database.error() << ")\n";
    return static_cast<int>(problems.size());
  }
  int missing = 0;
  for (const kernels::ProblemDesc &problem : problems) {
    Expected<std::vector<db::KernelRecord>> kernels =
        database->kernelsForProblem(tune::problemIdOf(problem));
    if (!kernels.ok()) {
      out << "lowbit tune: " << kernels.error() << "\n";
      return -1;
    }
    if (std::none_of(kernels->begin(), kernels->end(),
                     [&](const db::KernelRecord &k) { return k.arch == arch; })) {
      out << "lowbit tune: " << problem.name << ": no " << arch << " candidate is in " << path
          << " (no schedule fits the problem, or every candidate failed; see above)\n";
      ++missing;
    }
  }
  return missing;
}

} // namespace lowbit::cli
