#include "compiler/measure/DispatchBench.h"

#include "compiler/measure/BenchFixture.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tuning_db/Lookup.h"

#include <algorithm>
#include <chrono>
#include <memory>

namespace lowbit::measure {
namespace {

BenchRow emptyRow(const kernels::ProblemDesc &p, int64_t m, const std::string &note) {
  BenchRow row;
  row.problem = p.name;
  row.n = p.n;
  row.k = p.k;
  row.m = m;
  row.note = note;
  return row;
}

// The plan's kernels loaded once per problem, in plan order; a null entry is
// a kernel whose image did not load here, with the reason in `errors`.
struct LoadedPlanKernels {
  std::vector<std::unique_ptr<LoadedKernel>> modules;
  std::vector<std::string> errors;
};

LoadedPlanKernels loadPlanKernels(const cuda::DriverApi &api, const api::PlanSpec &plan) {
  LoadedPlanKernels loaded;
  for (const api::PlannedKernel &k : plan.kernels) {
    std::vector<char> image(k.image.begin(), k.image.end());
    Expected<std::unique_ptr<LoadedKernel>> module = LoadedKernel::load(api, k.entry, image);
    loaded.errors.push_back(module.ok() ? "" : module.error());
    loaded.modules.push_back(module.ok() ? std::move(*module) : nullptr);
  }
  return loaded;
}

} // namespace

Expected<std::vector<kernels::ProblemDesc>> databaseProblems(const db::Database &database,
                                                             const std::string &filter) {
  auto records = database.problems();
  if (!records)
    return makeError(records.error());
  std::vector<kernels::ProblemDesc> problems;
  for (const db::ProblemRecord &record : *records) {
    auto kernelRows = database.kernelsForProblem(record.id, /*withBlobs=*/false);
    if (!kernelRows)
      return makeError(kernelRows.error());
    // The problem's formats and name come from its kernels; a problem
    // without kernels has nothing to dispatch.
    for (const db::KernelRecord &row : *kernelRows) {
      Expected<kernels::KernelEntry> entry = kernels::kernelEntry(row);
      if (!entry.ok())
        continue;
      if (filter.empty() || entry->problem.name.find(filter) != std::string::npos)
        problems.push_back(entry->problem);
      break;
    }
  }
  std::sort(
      problems.begin(), problems.end(),
      [](const kernels::ProblemDesc &a, const kernels::ProblemDesc &b) { return a.name < b.name; });
  return problems;
}

Expected<DispatchBenchResult> benchDispatched(const cuda::DriverApi &api,
                                              const db::Database &database,
                                              const db::DeviceFingerprint &device,
                                              const DispatchBenchOptions &options, double copyGBs,
                                              const Cublas *cublas, std::ostream &progress) {
  Expected<std::vector<kernels::ProblemDesc>> problems =
      databaseProblems(database, options.problemFilter);
  if (!problems.ok())
    return makeError(problems.error());
  const auto started = std::chrono::steady_clock::now();
  auto budgetSpent = [&] {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return options.budgetSeconds > 0 && elapsed >= options.budgetSeconds;
  };
  FixtureOptions fixtureOptions;
  fixtureOptions.rotationBytes = options.rotationBytes;
  fixtureOptions.replays = options.replays;
  fixtureOptions.cublas = cublas;
  fixtureOptions.smCount = device.smCount;

  DispatchBenchResult result;
  const std::vector<const db::Database *> databases = {&database};
  for (const kernels::ProblemDesc &p : *problems) {
    if (budgetSpent()) {
      result.budgetSpent = true;
      break;
    }
    // What lowbit_plan_create would decide on this device.
    api::Result<api::PlanSpec> plan = api::buildPlanSpec(databases, p, device);
    if (!plan.ok()) {
      std::string why = "no plan: " + plan.error().message;
      result.notes.push_back(p.name + ": " + why);
      progress << "problem " << p.name << ": " << why << "\n";
      for (int64_t m : options.rowCounts)
        result.rows.push_back(emptyRow(p, m, why));
      continue;
    }
    for (const std::string &note : plan->notes) {
      result.notes.push_back(p.name + ": " + note);
      progress << "problem " << p.name << ": " << note << "\n";
    }
    progress << "problem " << p.name << ": " << db::tierName(plan->tier)
             << " tier; preparing weights\n"
             << std::flush;
    Expected<std::unique_ptr<BenchFixture>> fixture = BenchFixture::create(api, p, fixtureOptions);
    if (!fixture.ok()) {
      result.notes.push_back(p.name + ": " + fixture.error());
      for (int64_t m : options.rowCounts)
        result.rows.push_back(emptyRow(p, m, fixture.error()));
      continue;
    }
    LoadedPlanKernels loaded = loadPlanKernels(api, *plan);

    for (int64_t m : options.rowCounts) {
      if (budgetSpent()) {
        result.budgetSpent = true;
        break;
      }
      BenchRow row = emptyRow(p, m, "");
      int index = m >= 1 ? plan->rangeIndex(m) : -1;
      if (index < 0) {
        row.note = "no dispatch range holds M = " + std::to_string(m);
        result.rows.push_back(row);
        continue;
      }
      const api::PlannedRange &range = plan->ranges[static_cast<size_t>(index)];
      const api::PlannedKernel &kernel = plan->kernels[range.kernel];
      row.kernel = kernel.name;
      row.kernelId = kernel.id;
      row.family = kernel.family;
      row.tier = db::tierName(plan->tier);
      row.rangeLo = range.mLo;
      row.rangeHi = range.mHi;
      row.jit = kernel.fromPtx;
      const LoadedKernel *module = loaded.modules[range.kernel].get();
      if (!module) {
        row.note = "does not load: " + loaded.errors[range.kernel];
      } else if (Expected<kernels::LaunchShape> shape =
                     kernels::launchShape(kernel.entry, m, device.smCount);
                 !shape.ok()) {
        row.note = "cannot launch: " + shape.error();
      } else {
        Expected<KernelTiming> measured = (*fixture)->measure(*module, m);
        if (!measured.ok())
          return makeError(p.name + " M = " + std::to_string(m) + ": " + measured.error());
        row.kernelsTried = 1;
        row.maxRelativeError = measured->relativeError;
        if (!measured->passed) {
          // The runtime would serve wrong results here: the row says so.
          row.failed = true;
          row.note = "FAILED the reference check";
        } else {
          row.medianUs = measured->timing.medianUs;
          row.p10Us = measured->timing.p10Us;
          row.p90Us = measured->timing.p90Us;
          setRates(row, static_cast<double>((*fixture)->weightCopyBytes()), copyGBs);
        }
      }
      row.cublasUs = (*fixture)->cublasUsOrZero(cublas, m, progress);
      progress << "  M = " << m << ": " << row.medianUs << " us (" << row.kernel << ", M in ["
               << row.rangeLo << ", "
               << (row.rangeHi < 0 ? std::string("inf") : std::to_string(row.rangeHi)) << "))"
               << (row.note.empty() ? "" : " " + row.note) << "\n"
               << std::flush;
      result.rows.push_back(std::move(row));
    }
    if (result.budgetSpent)
      break;
  }
  return result;
}

} // namespace lowbit::measure
