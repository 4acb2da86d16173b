#include "compiler/KernelSetCompiler.h"

#include "codegen/emit/CudaEmitter.h"
#include "codegen/nvrtc/NvrtcCompiler.h"
#include "compiler/ProblemModule.h"
#include "ir/LbDialect.h"
#include "ir/LbOps.h"
#include "passes/Passes.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tuning_db/Database.h"
#include "tuning_db/Sha256.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iomanip>
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

Status writeFile(const std::filesystem::path &path, const void *data, size_t size) {
  std::ofstream file(path, std::ios::binary);
  file.write(static_cast<const char *>(data), static_cast<std::streamsize>(size));
  if (!file)
    return makeError("cannot write " + path.string());
  return Status::success();
}

Status writeManifest(const KernelSetReport &report, const std::filesystem::path &directory) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const CompiledKernel &k : report.kernels)
    kernels.push_back({{"problem", k.problem},
                       {"n", k.spec.n},
                       {"k", k.spec.k},
                       {"activation", k.spec.activation},
                       {"weight", k.spec.weight},
                       {"scale", k.spec.scale},
                       {"granularity", k.spec.granularity},
                       {"group_size", k.spec.granularity == "group" ? k.spec.groupSize : 0},
                       {"zero", k.spec.zero},
                       {"name", k.name},
                       {"arch", k.arch},
                       {"family", k.family},
                       {"schedule", k.schedule},
                       {"weight_layout", k.weightLayout},
                       {"block_threads", k.blockThreads},
                       {"grid_tile", k.gridTile},
                       {"registers", k.registers},
                       {"shared_bytes", k.sharedBytes},
                       {"spill_bytes", k.spillBytes},
                       {"stack_bytes", k.stackBytes},
                       {"cubin", k.name + "." + k.arch + ".cubin"},
                       {"ptx", k.name + "." + k.arch + ".ptx"}});
  std::string text = nlohmann::json{{"kernels", kernels}}.dump(2) + "\n";
  return writeFile(directory / "kernels.json", text.data(), text.size());
}

kernels::KernelEntry entryOf(const CompiledKernel &k) {
  kernels::KernelEntry e;
  e.problem = {k.spec.name,   k.spec.n,           k.spec.k,
               k.spec.activation, k.spec.weight,  k.spec.scale,
               k.spec.granularity,
               k.spec.granularity == "group" ? k.spec.groupSize : 0, k.spec.zero};
  e.name = k.name;
  e.arch = k.arch;
  e.family = k.family;
  e.schedule = k.schedule;
  e.weightLayout = k.weightLayout;
  e.blockThreads = k.blockThreads;
  e.gridTile = k.gridTile;
  e.registers = k.registers;
  e.sharedBytes = k.sharedBytes;
  e.spillBytes = k.spillBytes;
  return e;
}

// Every problem and kernel in one transaction: a database never holds half a
// kernel set. Kernels that spilled are not stored.
Status writeDatabase(const KernelSetReport &report, const std::string &path,
                     std::ostream &diagnostics) {
  Expected<db::Database> database = db::Database::open(path);
  if (!database.ok())
    return makeError(path + ": " + database.error());
  for (const std::string &note : database->notes())
    diagnostics << path << ": " << note << "\n";
  std::string version = "lowbit " LOWBIT_VERSION_STRING " nvrtc " + nvrtc::nvrtcVersion();
  return database->transaction([&]() -> Status {
    for (const CompiledKernel &k : report.kernels) {
      if (k.spillBytes > 0)
        continue;
      kernels::KernelEntry entry = entryOf(k);
      Expected<std::string> problem =
          database->putProblem(kernels::problemSignature(entry.problem));
      if (!problem.ok())
        return makeError(problem.error());
      db::KernelRecord record = kernels::kernelRecord(entry, k.cubin, k.ptx,
                                                      db::sha256Hex(k.source), version);
      record.stackBytes = k.stackBytes;
      Expected<std::string> id = database->putKernel(record);
      if (!id.ok())
        return makeError(k.name + " (" + k.arch + "): " + id.error());
    }
    return Status::success();
  });
}

// The family the runtime's M ranges know: both CUDA-core designs (gemv over
// rows, gemv_tiled over the mma layout) serve the small-M range as "gemv",
// which lets a plan swap one for the other when it needs a single layout.
std::string dispatchFamily(const std::string &scheduleText) {
  if (scheduleText.find("family = gemv") != std::string::npos)
    return "gemv";
  if (scheduleText.find("family = mma") != std::string::npos)
    return "mma";
  return "wgmma";
}

} // namespace

// The runtime's built-in heuristic (no tuned table) takes, per M band, the
// kernel whose tile M suits the band (tuning_db/Lookup.cpp): the 8-row
// split-K mma for M <= 8, the 16-row one up to 256. gemv_tiled, the split-K
// mma and the staged mma share one weight layout, so a plan built from them
// serves every M from one packed copy.
std::vector<std::string> defaultSchedules() {
  return {
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 2, split_k = 8>",
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 4>",
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 2, split_k = 16>",
      "#lb.schedule<family = gemv_tiled, tile = [2, 64, 128], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = gemv_tiled, tile = [4, 64, 128], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 2, split_k = 8>",
      "#lb.schedule<family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 2, split_k = 8>",
      "#lb.schedule<family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 4>",
      "#lb.schedule<family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 2, split_k = 16>",
      "#lb.schedule<family = mma, tile = [16, 128, 128], warps = [1, 1], stages = 1, split_k = 4>",
      "#lb.schedule<family = mma, tile = [16, 128, 128], warps = [1, 1], stages = 2, split_k = 4>",
      "#lb.schedule<family = mma, tile = [32, 64, 128], warps = [1, 1], stages = 1, split_k = 4>",
      "#lb.schedule<family = mma, tile = [32, 128, 128], warps = [1, 1], stages = 1, split_k = 2>",
      "#lb.schedule<family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 3, split_k = 1>",
      "#lb.schedule<family = mma, tile = [128, 128, 64], warps = [4, 2], stages = 2, split_k = 1>",
      "#lb.schedule<family = gemv, tile = [1, 4, 4096], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = gemv, tile = [4, 4, 2048], warps = [1, 4], stages = 1, split_k = 1>",
  };
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
    const spec::ProblemSpec *problem;
    codegen::KernelLaunchInfo info;
    std::shared_ptr<const std::string> source;
    nvrtc::Arch arch;
    Expected<nvrtc::CompileResult> result = makeError("not compiled");
  };
  KernelSetReport report;
  std::vector<CompileJob> jobs;
  std::vector<std::string> schedules =
      options.schedules.empty() ? defaultSchedules() : options.schedules;
  for (const spec::ProblemSpec &problem : spec.problems) {
    report.problems.push_back(problem.name);
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
        for (nvrtc::Arch arch : archs)
          jobs.push_back(CompileJob{&problem, info, shared, arch});
      }
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
        jobs[i].result = nvrtc::compile(request);
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
      ++report.failures;
      continue;
    }
    nvrtc::CompileResult &compiled = *job.result;
    CompiledKernel kernel;
    kernel.spec = *job.problem;
    kernel.problem = job.problem->name;
    kernel.name = info.name;
    kernel.arch = nvrtc::archName(job.arch);
    kernel.schedule = info.scheduleText;
    kernel.family = dispatchFamily(info.scheduleText);
    kernel.weightLayout = info.weightLayout;
    kernel.blockThreads = info.blockThreads;
    kernel.gridTile = info.gridTile;
    for (const nvrtc::KernelResources &r : compiled.resources)
      if (r.kernelName == info.name) {
        kernel.registers = r.registers;
        kernel.sharedBytes = r.sharedBytes;
        kernel.spillBytes = r.spillStoreBytes + r.spillLoadBytes;
        kernel.stackBytes = r.stackFrameBytes;
      }
    if (kernel.spillBytes > 0) {
      diagnostics << "error: " << kernel.name << " for " << kernel.arch << " spills "
                  << kernel.spillBytes << " bytes\n";
      ++report.failures;
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
  if (toDatabase) {
    if (Status s = writeDatabase(report, options.output, diagnostics); !s.ok())
      return makeError(s.error());
  } else if (Status s = writeManifest(report, directory); !s.ok()) {
    return makeError(s.error());
  }
  return report;
}

void printKernelSetReport(const KernelSetReport &report, std::ostream &os) {
  os << std::left << std::setw(58) << "kernel" << std::setw(8) << "arch" << std::right
     << std::setw(6) << "regs" << std::setw(8) << "smem" << std::setw(7) << "spill"
     << std::setw(9) << "cubin" << "\n";
  for (const CompiledKernel &k : report.kernels)
    os << std::left << std::setw(58) << k.name << std::setw(8) << k.arch << std::right
       << std::setw(6) << k.registers << std::setw(8) << k.sharedBytes << std::setw(7)
       << k.spillBytes << std::setw(9) << k.cubin.size() << "\n";
  os << report.kernels.size() << " kernels for " << report.problems.size() << " problems, "
     << report.failures << " failures\n";
}

} // namespace lowbit::compiler
