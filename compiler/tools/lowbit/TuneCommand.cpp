// `lowbit tune`: compile candidate schedules per problem (where the compiler
// is), measure them on the GPU (where the GPU is), and store results and
// dispatch ranges in the kernel database. docs/architecture.md, "Layers": this
// binary links no LLVM; candidates are compiled through liblowbit_compiler.so,
// loaded with dlopen only when there is something to compile.
#include "compiler/tools/lowbit/Command.h"
#include "compiler/tools/lowbit/TuneCompile.h"

#include "compiler/measure/CopyBandwidth.h"
#include "compiler/measure/KernelMeasurer.h"
#include "compiler/measure/TunePlan.h"
#include "compiler/spec/KernelSetSpec.h"
#include "compiler/tuner/Progress.h"
#include "compiler/tuner/Prune.h"
#include "compiler/tuner/Report.h"
#include "core/Problem.h"

#include <algorithm>
#include "runtime/kernels/KernelRecordCodec.h"
#include "runtime/cuda/Driver.h"
#include "tuning_db/Fingerprint.h"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace lowbit::cli {
namespace {

struct TuneArgs {
  std::string db, spec, model, shapes, format = "w4a16-g128";
  bool compileOnly = false, measureOnly = false, resume = false, dryRun = false, noPtx = false;
  double pruneRatio = 3;
  std::string runId, mList, report, arch;
  // wgmma's tile schedulers to search, comma-separated (SearchSpaceOptions'
  // default).
  std::string schedulers = "grid,stream_k";
  double budget = 0, tolerance = 0;
  int64_t maxCandidates = 32;
};

// Set from SIGINT: the sweep stops before its next measurement, keeping
// everything it committed.
std::atomic<bool> cancelRequested{false};
extern "C" void onInterrupt(int) { cancelRequested.store(true); }

// The problems to tune, from exactly one of --spec, --model, --shapes.
Expected<std::vector<kernels::ProblemDesc>> plannedProblems(const TuneArgs &args) {
  int sources = !args.spec.empty() + !args.model.empty() + !args.shapes.empty();
  if (sources != 1)
    return makeError("give exactly one of --spec, --model and --shapes");
  std::vector<kernels::ProblemDesc> problems;
  if (!args.spec.empty()) {
    Expected<spec::KernelSetSpec> set = spec::loadKernelSetSpec(args.spec);
    if (!set.ok())
      return makeError(set.error());
    return set->problems;
  }
  Expected<tune::Format> format = tune::parseFormat(args.format);
  if (!format.ok())
    return makeError(format.error());
  std::string prefix = format->name;
  std::vector<tune::Shape> shapes;
  if (!args.model.empty()) {
    Expected<tune::ModelPreset> preset = tune::findModelPreset(args.model);
    if (!preset.ok())
      return makeError(preset.error());
    prefix = preset->key;
    shapes = preset->shapes;
  } else {
    Expected<std::vector<tune::Shape>> parsed = tune::parseShapes(args.shapes);
    if (!parsed.ok())
      return makeError(parsed.error());
    shapes = *parsed;
  }
  for (const tune::Shape &shape : shapes)
    problems.push_back(tune::problemFor(tune::problemName(prefix, shape), shape, *format));
  return problems;
}

std::string defaultRunId() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "tune-%Y%m%dT%H%M%SZ", &utc);
  return text;
}

// The GPU side: device 0's context, fingerprint, arch and copy bandwidth.
struct Gpu {
  const cuda::DriverApi *api = nullptr;
  db::DeviceFingerprint fingerprint;
  std::string arch;
  double copyGBs = 0;
};

Expected<Gpu> openGpu() {
  Gpu gpu;
  gpu.api = cuda::loadDriver();
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (!gpu.api || gpu.api->cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      gpu.api->cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      gpu.api->cuCtxSetCurrent(context) != CUDA_SUCCESS)
    return makeError("cannot use device 0");
  Expected<db::DeviceFingerprint> fingerprint = db::readFingerprint(0);
  if (!fingerprint.ok())
    return makeError(fingerprint.error());
  gpu.fingerprint = *fingerprint;
  const db::DeviceFingerprint &f = gpu.fingerprint;
  // The spec's arch names: Hopper kernels are built for sm_90a (wgmma).
  gpu.arch = "sm_" + std::to_string(f.ccMajor) + std::to_string(f.ccMinor) +
             (f.ccMajor == 9 ? "a" : "");
  // Tuning only orders candidates by it, so a copy kernel that cannot run
  // here costs the cost model its bandwidth (the H200's is assumed), not the
  // sweep; `lowbit bench`, which reports against it, fails instead.
  Expected<measure::CopyBandwidth> copy = measure::measureCopyBandwidth(*gpu.api, device);
  if (copy.ok())
    gpu.copyGBs = copy->gbps;
  else
    std::cerr << "lowbit tune: " << copy.error() << "; the cost model assumes the H200's\n";
  return gpu;
}

Status writeReports(const std::string &dir, const tuner::SweepSummary &summary, double copyGBs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return makeError("cannot create " + dir + ": " + ec.message());
  std::vector<tuner::ReportRow> rows = tuner::reportRows(summary.best, copyGBs);
  std::ofstream csv(dir + "/tune.csv"), json(dir + "/tune.json"), svg(dir + "/tune.svg");
  tuner::writeCsv(rows, csv);
  tuner::writeJson(rows, copyGBs, json, summary.failedCandidates);
  tuner::SvgOptions options;
  options.copyGBs = copyGBs;
  tuner::writeSvg(rows, options, svg);
  if (!csv || !json || !svg)
    return makeError("cannot write the reports in " + dir);
  return {};
}

// Per (problem, M): what the dispatch table serves, which is what a plan
// gets. Where the fastest kernel measured is another one (of another weight
// layout, since a plan packs its weights once, or one within the ranges'
// tolerance), that kernel follows, so what sharing costs is in plain sight.
void printBest(const tuner::SweepSummary &summary, std::ostream &out) {
  out << std::left << std::setw(28) << "problem" << std::right << std::setw(6) << "M"
      << std::setw(11) << "served us" << std::setw(11) << "cuBLAS us" << std::setw(9)
      << "speedup" << "  kernel\n";
  for (const tuner::BestPoint &b : summary.best) {
    bool served = !b.servedKernelId.empty();
    double us = served ? b.servedUs : b.medianUs;
    out << std::left << std::setw(28) << b.problem.name << std::right << std::setw(6) << b.m
        << std::fixed << std::setprecision(1) << std::setw(11) << us;
    if (b.referenceUs)
      out << std::setw(11) << *b.referenceUs << std::setprecision(2) << std::setw(9)
          << *b.referenceUs / us;
    else
      out << std::setw(11) << "-" << std::setw(9) << "-";
    out << "  " << (served ? b.servedKernelId : b.kernelId).substr(0, 12);
    if (!served)
      out << "  (best measured; no dispatch table)";
    else if (b.servedKernelId != b.kernelId)
      out << "  (fastest measured: " << std::setprecision(1) << b.medianUs << " us, "
          << b.kernelId.substr(0, 12) << "; the table keeps one weight layout and few ranges)";
    out << "\n";
  }
}

// Before measuring: how many measurements, per problem and in all.
void printPlan(const tuner::SweepPlan &plan, const TuneArgs &args, std::ostream &out) {
  for (const tuner::SweepPlanRow &row : plan.problems)
    out << "  " << std::left << std::setw(28) << row.problem << std::right << std::setw(4)
        << row.candidates << " candidates, " << std::setw(5) << row.points
        << " measurements, " << row.pruned << " pruned\n";
  out << "lowbit tune: " << (args.dryRun ? "would make " : "plans ") << plan.points
      << " measurements (" << plan.problems.size() << " problems, " << plan.candidates
      << " candidates; " << plan.pruned << " (kernel, M) points pruned";
  if (args.pruneRatio >= 1)
    out << ": estimated over " << args.pruneRatio << "x the best at their M";
  out << ")" << (args.resume ? "; points this run already stored are skipped" : "") << "\n";
  if (args.budget > 0)
    out << "lowbit tune: budget " << args.budget << " s, shared between the problems\n";
}

// Orders, prunes, prints the plan of and measures one batch of problems
// within `budgetSeconds` (0: none), then commits each problem's dispatch from
// this run's results and adds the batch's summary to `total`. Returns the
// exit code so far: non-zero only for a database error.
int measureBatch(std::vector<tuner::SweepProblem> &sweep, const TuneArgs &args, const Gpu &gpu,
                 db::Database &database, const tuner::DeviceModel &model, measure::Cublas *cublas,
                 tuner::SweepOptions options, tuner::Clock &clock, double budgetSeconds,
                 tuner::SweepSummary &total) {
  const char *me = "lowbit tune: ";
  tuner::PruneOptions prune;
  prune.ratio = args.pruneRatio;
  prune.maxCandidates = args.maxCandidates;
  for (tuner::SweepProblem &p : sweep) {
    tuner::orderByCostModel(p, options.mPoints, model);
    tuner::prunePoints(p, options.mPoints, model, prune);
  }
  printPlan(tuner::planSweep(sweep, options), args, std::cerr);
  if (args.dryRun)
    return 0;
  if (args.budget > 0 && budgetSeconds <= 0) {
    tuner::SweepSummary cut;
    cut.stop = tuner::StopReason::Budget;
    cut.problemsCut = int64_t(sweep.size());
    tuner::mergeSummary(total, cut);
    return 0;
  }
  options.budgetSeconds = budgetSeconds;
  measure::FixtureOptions fixture;
  fixture.tolerance = args.tolerance;
  fixture.smCount = gpu.fingerprint.smCount;
  const bool tty = isatty(2);
  // Rejections go to the log only when it is not a rewritten progress bar.
  measure::KernelMeasurer measurer(*gpu.api, measure::databaseCubins(database, sweep), cublas,
                                   fixture, tty ? nullptr : &std::cerr);
  cancelRequested.store(false);
  auto previous = std::signal(SIGINT, onInterrupt);
  tuner::ProgressPrinter printer(std::cerr, tty);
  std::cerr << me << "run " << options.runId << " on " << gpu.fingerprint.name << ", copy "
            << "bandwidth " << std::fixed << std::setprecision(0) << gpu.copyGBs << " GB/s\n";
  Expected<tuner::SweepSummary> summary =
      tuner::runSweep(database, sweep, measurer, options, clock, &printer);
  printer.finish();
  std::signal(SIGINT, previous);
  if (!summary.ok()) {
    std::cerr << me << summary.error() << "\n";
    return 1;
  }
  // Dispatch from every passing result of this run stored so far, also after
  // a budget stop or Ctrl-C: what was measured is real.
  for (const tuner::SweepProblem &p : sweep) {
    Expected<tuner::CommittedDispatch> committed =
        tuner::commitDispatch(database, p, options.deviceId, options.runId);
    if (!committed.ok()) {
      std::cerr << me << "no dispatch for " << p.problem.name << ": " << committed.error() << "\n";
      continue;
    }
    std::cerr << me << p.problem.name << ": " << committed->ranges.size()
              << " dispatch range(s)\n";
    for (tuner::BestPoint &b : summary->best)
      for (const tuner::RangeCheck &c : committed->served)
        if (b.problemId == p.problemId && b.m == c.m && c.chosenUs > 0) {
          b.servedKernelId = c.chosen;
          b.servedUs = c.chosenUs;
        }
  }
  tuner::mergeSummary(total, *summary);
  return 0;
}

int runTune(const TuneArgs &args) {
  const char *me = "lowbit tune: ";
  if (args.compileOnly && (args.measureOnly || args.dryRun)) {
    std::cerr << me << "--compile-only excludes --measure-only and --dry-run\n";
    return 2;
  }
  if (args.resume && args.runId.empty()) {
    std::cerr << me << "--resume needs the --run-id of the sweep to continue\n";
    return 2;
  }
  Expected<std::vector<kernels::ProblemDesc>> problems = plannedProblems(args);
  if (!problems.ok()) {
    std::cerr << me << problems.error() << "\n";
    return 2;
  }
  std::vector<core::TileScheduler> schedulers;
  for (size_t begin = 0; begin <= args.schedulers.size();) {
    size_t end = std::min(args.schedulers.find(',', begin), args.schedulers.size());
    Expected<core::TileScheduler> scheduler =
        core::parseTileScheduler(args.schedulers.substr(begin, end - begin));
    if (!scheduler.ok()) {
      std::cerr << me << "--schedulers: " << scheduler.error() << "\n";
      return 2;
    }
    schedulers.push_back(*scheduler);
    begin = end + 1;
  }
  std::vector<int64_t> mPoints = tuner::defaultMPoints();
  if (!args.mList.empty()) {
    Expected<std::vector<int64_t>> parsed = tuner::parseMPoints(args.mList);
    if (!parsed.ok()) {
      std::cerr << me << "--m: " << parsed.error() << "\n";
      return 2;
    }
    mPoints = *parsed;
  }

  // The GPU first: without one only --compile-only (and --dry-run) can do
  // anything, and saying so before compiling for minutes is the useful order.
  Gpu gpu;
  if (args.dryRun && cuda::deviceCount() == 0) {
    std::cerr << me << "no GPU: planning with the H200 cost model for "
              << (args.arch.empty() ? "sm_90a" : args.arch) << "\n";
  } else if (!args.compileOnly) {
    std::string whyNot;
    if (cuda::deviceCount(&whyNot) == 0) {
      std::cerr << me << "no GPU: " << whyNot << "\n"
                << "Measuring needs a GPU; use --compile-only to generate candidates here.\n";
      return 2;
    }
    Expected<Gpu> opened = openGpu();
    if (!opened.ok()) {
      std::cerr << me << opened.error() << "\n";
      return 2;
    }
    gpu = *opened;
  }
  std::string arch = !args.arch.empty() ? args.arch : !gpu.arch.empty() ? gpu.arch : "sm_90a";
  tuner::DeviceModel model = tuner::DeviceModel::h200();
  if (gpu.api) {
    Expected<tuner::DeviceModel> fromDevice =
        tuner::DeviceModel::fromFingerprint(gpu.fingerprint, gpu.copyGBs > 0
                                                                 ? gpu.copyGBs
                                                                 : tuner::DeviceModel().copyGBs);
    if (fromDevice.ok())
      model = *fromDevice;
  } else if (Expected<tuner::ArchLimits> limits = tuner::archLimits(arch); limits.ok()) {
    model.limits = *limits; // H200 throughputs, the target arch's limits
  }

  // Compile (before the database is opened here: the plugin writes it).
  // `compile` outlives `background`, whose thread reads it.
  bool overlapped = false;
  TuneCompileOptions compile;
  BackgroundCompile background;
  if (!args.measureOnly && !args.dryRun) {
    compile.db = args.db;
    compile.arch = arch;
    compile.mPoints = mPoints;
    compile.model = model;
    compile.maxCandidates = args.maxCandidates;
    compile.schedulers = schedulers;
    compile.compileOnly = args.compileOnly;
    compile.noPtx = args.noPtx;
    if (int code = compileForTune(*problems, compile, background, overlapped); code != 0)
      return code;
  }
  if (args.compileOnly)
    return reportCompileOnly(args.db, *problems, arch);

  db::OpenOptions openOptions;
  if (args.dryRun)
    openOptions.mode = db::OpenMode::ReadOnly;
  Expected<db::Database> database = db::Database::open(args.db, openOptions);
  if (!database.ok()) {
    std::cerr << me << database.error() << "\n";
    return 1;
  }
  for (const std::string &note : database->notes())
    std::cerr << me << note << "\n";
  if (gpu.api) {
    if (Status s = database->putDevice(gpu.fingerprint); !s.ok()) {
      std::cerr << me << s.error() << "\n";
      return 1;
    }
  }
  // The problems are measured in batches: all at once, or, while a
  // background thread compiles, one by one as their candidates arrive.
  std::vector<std::vector<std::string>> batches(1);
  for (const kernels::ProblemDesc &p : *problems) {
    if (overlapped && !batches.back().empty())
      batches.emplace_back();
    batches.back().push_back(tune::problemIdOf(p));
  }
  Expected<std::unique_ptr<measure::Cublas>> cublas =
      args.dryRun ? Expected<std::unique_ptr<measure::Cublas>>(makeError("dry run"))
                  : measure::Cublas::load(*gpu.api);
  if (!args.dryRun && !cublas.ok())
    std::cerr << me << "no cuBLAS baseline: " << cublas.error() << "\n";
  tuner::SweepOptions options;
  options.mPoints = mPoints;
  options.maxCandidates = args.maxCandidates;
  options.runId = args.runId.empty() ? defaultRunId() : args.runId;
  options.deviceId = gpu.fingerprint.id();
  options.resume = args.resume;
  options.cancel = &cancelRequested;
  tuner::SteadyClock clock;
  const double started = clock.seconds();
  tuner::SweepSummary total;
  std::vector<tuner::SweepProblem> measuredProblems;
  int exitCode = 0;
  double waitedForCompile = 0;
  for (size_t b = 0; b < batches.size() && exitCode == 0; ++b) {
    if (overlapped) {
      const double waitFrom = clock.seconds();
      std::unique_lock<std::mutex> lock(background.mutex);
      background.changed.wait(lock, [&] { return background.compiled > b; });
      waitedForCompile += clock.seconds() - waitFrom;
    }
    Expected<std::vector<tuner::SweepProblem>> sweep =
        tuner::loadSweepProblems(*database, arch, batches[b]);
    if (!sweep.ok()) {
      std::cerr << me << sweep.error() << "\n";
      exitCode = 1;
      break;
    }
    // A spec problem without candidates here is named, never skipped
    // silently (NVFP4's once were, under a signature that lost its tensor
    // scale).
    // (Overlapped, a problem whose candidates did not compile said why.)
    if (!overlapped)
      for (const kernels::ProblemDesc &p : *problems) {
        const std::string id = tune::problemIdOf(p);
        if (std::none_of(sweep->begin(), sweep->end(),
                         [&](const tuner::SweepProblem &s) { return s.problemId == id; }))
          std::cerr << me << p.name << ": " << args.db << " has no " << arch
                    << " candidates for it (" << core::signature(p)
                    << "); generate them with --compile-only\n";
      }
    if (sweep->empty()) {
      if (overlapped)
        continue; // that problem's candidates did not compile; it said why
      std::cerr << me << args.db << " has no " << arch << " kernels for these problems; "
                << "generate them with --compile-only where the compiler is\n";
      exitCode = 1;
      break;
    }
    background.measuring.store(overlapped ? b + 1 : 0);
    exitCode = measureBatch(*sweep, args, gpu, *database, model,
                            cublas.ok() ? cublas->get() : nullptr, options, clock,
                            args.budget > 0 ? (args.budget - (clock.seconds() - started)) /
                                                  double(batches.size() - b)
                                            : 0,
                            total);
    background.measuring.store(0);
    measuredProblems.insert(measuredProblems.end(), sweep->begin(), sweep->end());
    if (total.stop == tuner::StopReason::Cancelled ||
        total.stop == tuner::StopReason::MeasurerFailed)
      break;
  }
  if (background.thread.joinable()) {
    if (exitCode != 0 || total.stop == tuner::StopReason::Cancelled)
      std::cerr << me << "waiting for the candidates being compiled\n";
    background.thread.join();
  }
  if (overlapped)
    std::cerr << me << "compiled " << problems->size() - 1 << " problem(s) in the background; "
              << "the GPU waited " << std::fixed << std::setprecision(1) << waitedForCompile
              << " s for candidates\n";
  if (args.dryRun || exitCode != 0)
    return exitCode;
  const tuner::SweepSummary *summary = &total;
  printBest(*summary, std::cout);
  for (const tuner::FailedCandidate &failed : summary->failedCandidates)
    std::cerr << me << "recorded as failed: " << failed.text() << "\n";
  for (const std::string &error : summary->measurementErrors)
    std::cerr << me << "recorded as failed: " << error << "\n";
  std::cerr << me << tuner::stopReasonName(summary->stop)
            << (summary->stopDetail.empty() ? "" : ": " + summary->stopDetail) << "; measured "
            << summary->measured << ", skipped " << summary->skipped << ", pruned "
            << summary->pruned << ", failed checks " << summary->failedChecks
            << ", failed to compile " << summary->failedCandidates.size() << "\n";
  if (!summary->complete())
    std::cerr << me << "continue with --resume --run-id " << options.runId << "\n";
  if (!args.report.empty()) {
    if (Status s = writeReports(args.report, *summary, gpu.copyGBs); !s.ok()) {
      std::cerr << me << s.error() << "\n";
      return 1;
    }
    std::cerr << me << "reports in " << args.report << "\n";
  }
  switch (summary->stop) {
  case tuner::StopReason::Completed:
  case tuner::StopReason::Budget: return 0;
  case tuner::StopReason::Cancelled: return 130;
  case tuner::StopReason::MeasurerFailed: return 1;
  }
  return 1;
}

} // namespace

void addTuneCommand(CLI::App &app) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App *tune = app.add_subcommand(
      "tune", "compile candidate schedules and measure them into a kernel database");
  tune->add_option("--db", args->db, "kernel database (*.db)")->required();
  tune->add_option("--spec", args->spec, "kernel-set spec (TOML) listing the problems");
  tune->add_option("--model", args->model,
                   "preset problems: Llama-3-8B, Llama-3-70B, Qwen2.5-7B, Mistral-7B");
  tune->add_option("--shapes", args->shapes, "problems as NxK,NxK,...");
  tune->add_option("--format", args->format,
                   "format of --model/--shapes problems: w<bits>a16|bf16[-g<N>|-ch][-int], or a "
                   "scheme `lowbit formats` lists (mxfp4, nvfp4, gguf-q4_k, ...; :bf16 for bf16 "
                   "activations)")
      ->capture_default_str();
  tune->add_option("--arch", args->arch,
                   "target arch when compiling without a GPU (default: the GPU's, else sm_90a)");
  tune->add_flag("--compile-only", args->compileOnly, "generate candidates; no GPU needed");
  tune->add_flag("--measure-only", args->measureOnly,
                 "measure the candidates already in the database; no compiler needed");
  tune->add_option("--run-id", args->runId, "results' run id (default: tune-<UTC time>)");
  tune->add_flag("--resume", args->resume, "skip points this run id already measured");
  tune->add_option("--budget", args->budget, "stop measuring after this many seconds");
  tune->add_option("--prune-ratio", args->pruneRatio,
                   "skip a kernel at an M where the cost model estimates it over this many "
                   "times the best kernel there (0: measure every point)")
      ->capture_default_str();
  tune->add_flag("--no-ptx", args->noPtx,
                 "after compiling, keep cubins only (a smaller database that serves --arch only)");
  tune->add_flag("--dry-run", args->dryRun,
                 "print what would be measured and stop (no GPU needed)");
  tune->add_option("--max-candidates", args->maxCandidates,
                   "per problem, the default schedules and the best-ranked N others (0: all)")
      ->capture_default_str();
  tune->add_option("--m", args->mList, "M points, e.g. 1,2,4,16-256 (default: 1..4096)");
  tune->add_option("--schedulers", args->schedulers,
                   "wgmma tile schedulers to search: grid, persistent, stream_k, "
                   "comma-separated (default: grid,stream_k)");
  tune->add_option("--tolerance", args->tolerance,
                   "relative error allowed (default: 2e-3 f16, 1e-2 bf16)");
  tune->add_option("--report", args->report, "write tune.csv, tune.json and tune.svg here");
  tune->callback([args] { setExitCode(runTune(*args)); });
}

} // namespace lowbit::cli
