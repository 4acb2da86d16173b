#include "compiler/KernelSetCompiler.h"

#include "codegen/emit/CudaEmitter.h"
#include "codegen/nvrtc/NvrtcCompiler.h"
#include "compiler/ProblemModule.h"
#include "core/Schedule.h"
#include "core/ScheduleRules.h"
#include "ir/CoreConversion.h"
#include "ir/LbDialect.h"
#include "ir/LbOps.h"
#include "passes/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

using namespace mlir;

namespace lowbit::compiler {
namespace {

void registerDialects(MLIRContext &context) {
  DialectRegistry registry;
  registry.insert<lb::LbDialect, arith::ArithDialect, func::FuncDialect,
                  memref::MemRefDialect, scf::SCFDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

// The family the runtime's M ranges know: both CUDA-core designs (gemv over
// rows, gemv_tiled over the mma layout) serve the small-M range as "gemv",
// which lets a plan swap one for the other when it needs a single layout.
std::string dispatchFamily(lb::KernelFamily family) {
  switch (family) {
  case lb::KernelFamily::gemv:
  case lb::KernelFamily::gemv_tiled: return "gemv";
  case lb::KernelFamily::mma: return "mma";
  case lb::KernelFamily::wgmma: return "wgmma";
  case lb::KernelFamily::dequant: return "dequant";
  }
  return "wgmma";
}

std::string firstLine(const std::string &text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "rejected" : line;
}

std::string joinArchs(const std::vector<std::string> &archs) {
  std::string out;
  for (const std::string &arch : archs)
    out += (out.empty() ? "" : ", ") + arch;
  return out;
}

std::string noKernelsError(const std::string &problem, const std::vector<std::string> &rejections) {
  std::string out = "problem '" + problem + "' gets no kernels: every schedule rejected it";
  for (const std::string &why : rejections)
    out += "\n  " + why;
  return out;
}

} // namespace

std::vector<std::string> defaultSchedules() {
  std::vector<std::string> texts;
  for (const core::Schedule &schedule : core::defaultSchedules())
    texts.push_back(schedule.text());
  return texts;
}

Expected<KernelSetReport> compileKernelSet(const spec::KernelSetSpec &spec,
                                           const KernelSetOptions &options,
                                           std::ostream &diagnostics) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  registerDialects(context);
  std::string diagnosticText;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    llvm::raw_string_ostream os(diagnosticText);
    os << diagnostic.getLocation() << ": " << diagnostic << "\n";
    return success();
  });

  bool toDatabase = options.output.size() > 3 &&
                    options.output.compare(options.output.size() - 3, 3, ".db") == 0;
  std::filesystem::path directory(options.output);
  if (!toDatabase) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error)
      return makeError("cannot create " + directory.string() + ": " + error.message());
  }

  std::vector<nvrtc::Arch> archs;
  for (const std::string &name : spec.archs) {
    Expected<nvrtc::Arch> arch = nvrtc::parseArch(name);
    if (!arch.ok())
      return makeError(arch.error());
    archs.push_back(*arch);
  }

  // 1. MLIR, one module at a time (one context, not thread-safe): every
  // kernel's CUDA source, and one NVRTC job per (kernel, arch).
  struct CompileJob {
    const core::Problem *problem;
    lb::KernelFamily family; // the schedule's, from the parsed attribute
    codegen::KernelLaunchInfo info;
    std::shared_ptr<const std::string> source;
    nvrtc::Arch arch;
    Expected<nvrtc::CompileResult> result = makeError("not compiled");
  };
  KernelSetReport report;
  std::vector<CompileJob> jobs;
  std::vector<std::string> schedules =
      options.schedules.empty() ? defaultSchedules() : options.schedules;
  for (const core::Problem &problem : spec.problems) {
    report.problems.push_back(problem.name);
    const size_t jobsBefore = jobs.size();
    std::vector<std::string> rejections; // one line per schedule that skipped it
    std::map<nvrtc::Arch, std::string> archRejections; // the first reason an arch gave
    for (const std::string &scheduleText : schedules) {
      diagnosticText.clear();
      Attribute schedule = parseAttribute(scheduleText, &context);
      if (!isa_and_nonnull<lb::ScheduleAttr>(schedule))
        return makeError("bad schedule '" + scheduleText + "': " + diagnosticText);
      FailureOr<OwningOpRef<ModuleOp>> module = buildProblemModule(context, {problem}, schedule);
      if (failed(module))
        return makeError("problem '" + problem.name + "': " + diagnosticText);
      PassManager pm(&context);
      passes::buildKernelPipeline(pm);
      if (failed(pm.run(**module))) {
        // A schedule whose family cannot serve this problem is skipped, with
        // the reason, rather than compiled wrong.
        diagnostics << "skipped " << problem.name << " with " << scheduleText << ":\n  "
                    << diagnosticText;
        rejections.push_back(scheduleText + ": " + firstLine(diagnosticText));
        continue;
      }
      std::string source;
      llvm::raw_string_ostream sourceStream(source);
      FailureOr<std::vector<codegen::KernelLaunchInfo>> infos = codegen::kernelLaunchInfo(**module);
      if (failed(infos) || failed(codegen::emitCuda(**module, sourceStream)))
        return makeError("lb-to-cuda failed for " + problem.name + ": " + diagnosticText);
      auto shared = std::make_shared<const std::string>(std::move(source));
      for (const codegen::KernelLaunchInfo &info : *infos) {
        if (!toDatabase)
          if (Status written =
                  writeFile(directory / (info.name + ".cu"), shared->data(), shared->size());
              !written.ok())
            return makeError(written.error());
        for (nvrtc::Arch arch : archs) {
          // A family the arch lacks (wgmma before sm_90a) is skipped there,
          // with the reason, like a schedule the problem does not fit.
          Expected<core::TargetArch> target = core::findTargetArch(nvrtc::archName(arch));
          if (!target.ok())
            return makeError(target.error());
          Status onArch =
              core::checkScheduleArch(problem, lb::coreSchedule(cast<lb::ScheduleAttr>(schedule)),
                                      *target);
          if (!onArch.ok()) {
            diagnostics << "skipped " << info.name << " for " << target->name << ": "
                        << onArch.error() << "\n";
            archRejections.emplace(arch, onArch.error());
            continue;
          }
          jobs.push_back(
              CompileJob{&problem, cast<lb::ScheduleAttr>(schedule).getFamily(), info, shared, arch});
        }
      }
    }
    // A problem no schedule serves would leave a kernel set that every host
    // app's plan creation fails on; say so here, with every reason.
    if (jobs.size() == jobsBefore)
      return makeError(noKernelsError(problem.name, rejections));
    // Served on some archs only (e4m3 activations on sm_80): not an error,
    // since the set serves the others, but said once, not only in the
    // skipped lines.
    for (nvrtc::Arch arch : archs)
      if (std::none_of(jobs.begin() + static_cast<std::ptrdiff_t>(jobsBefore), jobs.end(),
                       [&](const CompileJob &job) { return job.arch == arch; })) {
        auto why = archRejections.find(arch);
        diagnostics << "note: problem '" << problem.name << "' gets no kernels for "
                    << nvrtc::archName(arch)
                    << (why == archRejections.end() ? std::string() : ": " + why->second) << "\n";
      }
  }

  // 2. NVRTC on a pool of threads: programs are independent, and NVRTC is
  // thread-safe across programs. Most of a kernel set's time is spent here.
  {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < jobs.size(); i = next++) {
        nvrtc::CompileRequest request;
        request.source = *jobs[i].source;
        request.sourceName = jobs[i].info.name + ".cu";
        request.arch = jobs[i].arch;
        jobs[i].result = options.compile ? options.compile(request) : nvrtc::compile(request);
      }
    };
    size_t workers = std::min<size_t>(
        jobs.size(), std::max(1u, options.jobs > 0 ? unsigned(options.jobs)
                                                   : std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (size_t w = 1; w < workers; ++w)
      pool.emplace_back(work);
    work();
    for (std::thread &t : pool)
      t.join();
  }

  // 3. The results in the order they were asked for.
  for (CompileJob &job : jobs) {
    const codegen::KernelLaunchInfo &info = job.info;
    if (!job.result.ok()) {
      diagnostics << "error: " << job.result.error() << "\n";
      report.failed.push_back({*job.problem, info.name, nvrtc::archName(job.arch),
                               info.scheduleText, "compile", job.result.error()});
      continue;
    }
    nvrtc::CompileResult &compiled = *job.result;
    CompiledKernel kernel;
    kernel.spec = *job.problem;
    kernel.problem = job.problem->name;
    kernel.name = info.name;
    kernel.arch = nvrtc::archName(job.arch);
    kernel.schedule = info.scheduleText;
    kernel.family = dispatchFamily(job.family);
    kernel.weightLayout = info.weightLayout;
    kernel.blockThreads = info.blockThreads;
    kernel.gridTile = info.gridTile;
    kernel.dynamicSharedBytes = info.dynamicSharedBytes;
    for (const nvrtc::KernelResources &r : compiled.resources)
      if (r.kernelName == info.name) {
        kernel.registers = r.registers;
        kernel.sharedBytes = r.sharedBytes;
        kernel.spillBytes = r.spillStoreBytes + r.spillLoadBytes;
        kernel.stackBytes = r.stackFrameBytes;
      }
    // Checked before spills: a kernel that cannot launch on this arch is
    // not kept, so whether it spills there does not matter.
    if (!launchableOn(kernel, job.arch, diagnostics))
      continue;
    if (kernel.spillBytes > 0) {
      std::string spills = "spills " + std::to_string(kernel.spillBytes) + " bytes";
      diagnostics << "error: " << kernel.name << " for " << kernel.arch << " " << spills << "\n";
      report.failed.push_back(
          {*job.problem, kernel.name, kernel.arch, kernel.schedule, "spill", spills});
    }
    kernel.cubin = std::move(compiled.cubin);
    kernel.ptx = std::move(compiled.ptx);
    std::string stem = kernel.name + "." + kernel.arch;
    if (!toDatabase)
      for (Status st : {writeFile(directory / (stem + ".cubin"), kernel.cubin.data(),
                                  kernel.cubin.size()),
                        writeFile(directory / (stem + ".ptx"), kernel.ptx.data(),
                                  kernel.ptx.size())})
        if (!st.ok())
          return makeError(st.error());
    kernel.source = *job.source;
    report.kernels.push_back(std::move(kernel));
  }
  // Compiled, but none launchable on any of the archs (launchableOn said why
  // for each, above): no kernels either.
  for (const core::Problem &problem : spec.problems)
    if (std::none_of(report.kernels.begin(), report.kernels.end(),
                     [&](const CompiledKernel &k) { return k.problem == problem.name; }) &&
        std::none_of(jobs.begin(), jobs.end(), [&](const CompileJob &job) {
          return job.problem == &problem && !job.result.ok();
        }))
      return makeError("problem '" + problem.name +
                       "' gets no kernels: none of its kernels can launch on " +
                       joinArchs(spec.archs) + " (see the reasons above)");
  if (toDatabase) {
    if (Status s = writeDatabase(report, options.output, diagnostics); !s.ok())
      return makeError(s.error());
  } else if (Status s = writeManifest(report, directory); !s.ok()) {
    return makeError(s.error());
  }
  return report;
}

} // namespace lowbit::compiler
