#include "compiler/tools/lowbit/TuneCompile.h"

#include "compiler/measure/TunePlan.h"
#include "compiler/tuner/SearchSpace.h"
#include "compiler/tuner/Sweep.h"
#include "tuning_db/Database.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

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

int compileForTune(const std::vector<kernels::ProblemDesc> &problems,
                   const TuneCompileOptions &options, BackgroundCompile &background,
                   bool &overlapped) {
  const char *me = "lowbit tune: ";
  std::string whyNot;
  CompileMain compileMain = loadCompilerPlugin(whyNot);
  if (!compileMain && options.compileOnly) {
    std::cerr << me << "the compiler is not available on this machine (" << whyNot << ").\n"
              << "It needs LLVM/MLIR 19; compile candidates on a machine that has them.\n";
    return 2;
  }
  if (!compileMain) {
    std::cerr << me << "no compiler on this machine (" << whyNot << "); measuring the "
              << "candidates already in " << options.db << "\n";
    return 0;
  }
  auto compile = [compileMain, &options](const std::vector<kernels::ProblemDesc> &some) {
    compileCandidates(compileMain, some, options.arch, options.mPoints, options.model,
                      options.maxCandidates, options.schedulers, options.db);
  };
  overlapped = !options.compileOnly && !options.noPtx && problems.size() > 1;
  if (overlapped) {
    // Compiler and GPU share this machine: the first problem's candidates
    // now, the others on a thread while the GPU measures earlier ones.
    compile({problems.front()});
    background.compiled = 1;
    background.thread = std::thread([&problems, &background, compile, me] {
      for (size_t i = 1; i < problems.size(); ++i) {
        auto begin = std::chrono::steady_clock::now();
        compile({problems[i]});
        std::chrono::duration<double> took = std::chrono::steady_clock::now() - begin;
        size_t measuring = background.measuring.load();
        std::ostringstream line; // one write: the measuring thread logs too
        line << me << "compiled problem " << i + 1 << "/" << problems.size() << " in " << std::fixed
             << std::setprecision(1) << took.count() << " s, "
             << (measuring ? "while measuring problem " + std::to_string(measuring)
                           : std::string("while the GPU was idle"))
             << "\n";
        std::cerr << line.str();
        std::lock_guard<std::mutex> lock(background.mutex);
        ++background.compiled;
        background.changed.notify_all();
      }
    });
    return 0;
  }
  compile(problems);
  if (!options.noPtx)
    return 0;
  Expected<db::Database> database = db::Database::open(options.db);
  std::vector<std::string> ids;
  for (const kernels::ProblemDesc &p : problems)
    ids.push_back(tune::problemIdOf(p));
  Expected<int64_t> dropped = database.ok() ? tune::dropPtx(*database, ids, options.arch)
                                            : Expected<int64_t>(makeError(database.error()));
  if (!dropped.ok()) {
    std::cerr << me << dropped.error() << "\n";
    return 1;
  }
  std::cerr << me << "dropped the PTX of " << *dropped << " kernel(s): " << options.db << " serves "
            << options.arch << " only, from cubins\n";
  return 0;
}

int reportCompileOnly(const std::string &database,
                      const std::vector<kernels::ProblemDesc> &problems, const std::string &arch) {
  const char *me = "lowbit tune: ";
  int missing = printProblemsWithoutCandidates(database, problems, arch, std::cerr);
  if (missing < 0)
    return 1;
  // Without a database there are no failures recorded either.
  if (missing < static_cast<int>(problems.size()) &&
      printCompileFailures(database, problems, arch, std::cerr) < 0)
    return 1;
  if (missing > 0) {
    std::cerr << me << missing << " of " << problems.size() << " problem(s) have no candidates in "
              << database << "\n";
    return 1;
  }
  std::cerr << me << "candidates for " << problems.size() << " problem(s) are in " << database
            << "; measure them with --measure-only on the GPU host\n";
  return 0;
}

} // namespace lowbit::cli
