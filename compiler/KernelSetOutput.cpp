#include "compiler/KernelSetOutput.h"

#include "runtime/kernels/KernelRecordCodec.h"
#include "runtime/kernels/ProblemJson.h"
#include "tuning_db/Database.h"
#include "tuning_db/Sha256.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iomanip>

namespace lowbit::compiler {

Status writeFile(const std::filesystem::path &path, const void *data, size_t size) {
  std::ofstream file(path, std::ios::binary);
  file.write(static_cast<const char *>(data), static_cast<std::streamsize>(size));
  if (!file)
    return makeError("cannot write " + path.string());
  return Status::success();
}

kernels::KernelEntry kernelEntryOf(const CompiledKernel &k) {
  kernels::KernelEntry e;
  e.problem = k.spec;
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
  e.dynamicSharedBytes = k.dynamicSharedBytes;
  return e;
}

Status writeManifest(const KernelSetReport &report, const std::filesystem::path &directory) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const CompiledKernel &k : report.kernels) {
    nlohmann::json kernel = {{"name", k.name},
                       {"arch", k.arch},
                       {"family", k.family},
                       {"schedule", k.schedule},
                       {"weight_layout", k.weightLayout},
                       {"block_threads", k.blockThreads},
                       {"grid_tile", k.gridTile},
                       {"registers", k.registers},
                       {"shared_bytes", k.sharedBytes},
                       {"dynamic_shared_bytes", k.dynamicSharedBytes},
                       {"spill_bytes", k.spillBytes},
                       {"stack_bytes", k.stackBytes},
                       {"cubin", k.name + "." + k.arch + ".cubin"},
                       {"ptx", k.name + "." + k.arch + ".ptx"}};
    // The problem's fields beside the kernel's, its name under "problem"
    // (kernels::readKernelSet reads them back the same way).
    core::Problem problem = k.spec;
    problem.name = k.problem;
    kernels::writeProblemJson(problem, "problem", kernel);
    kernels.push_back(std::move(kernel));
  }
  std::string text = nlohmann::json{{"kernels", kernels}}.dump(2) + "\n";
  return writeFile(directory / "kernels.json", text.data(), text.size());
}

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
      kernels::KernelEntry entry = kernelEntryOf(k);
      Expected<std::string> problem =
          database->putProblem(core::signature(entry.problem));
      if (!problem.ok())
        return makeError(problem.error());
      db::KernelRecord record = kernels::kernelRecord(entry, k.cubin, k.ptx,
                                                      db::sha256Hex(k.source), version);
      record.stackBytes = k.stackBytes;
      Expected<std::string> id = database->putKernel(record);
      if (!id.ok())
        return makeError(k.name + " (" + k.arch + "): " + id.error());
      if (Status s = database->clearCandidateFailure(*problem, k.arch, k.schedule); !s)
        return s;
    }
    for (const FailedKernel &f : report.failed) {
      Expected<std::string> problem = database->putProblem(core::signature(f.spec));
      if (!problem.ok())
        return makeError(problem.error());
      if (Status s = database->putCandidateFailure(
              {*problem, f.arch, f.schedule, f.name, f.stage, f.reason, version, ""});
          !s)
        return s;
    }
    return Status::success();
  });
}

bool launchableOn(const CompiledKernel &kernel, nvrtc::Arch arch, std::ostream &diagnostics) {
  Status fits = nvrtc::checkSharedBytesPerBlock(arch, kernel.sharedBytes, kernel.dynamicSharedBytes);
  if (!fits.ok())
    diagnostics << "skipped " << kernel.name << " for " << nvrtc::archName(arch) << ": "
                << fits.error() << "\n";
  return fits.ok();
}

void printKernelSetReport(const KernelSetReport &report, std::ostream &os) {
  // smem: static (ptxas); dsmem: dynamic, passed at launch. The name column
  // is as wide as the longest name, so no name runs into its arch.
  size_t nameWidth = 58;
  for (const CompiledKernel &k : report.kernels)
    nameWidth = std::max(nameWidth, k.name.size() + 2);
  const int width = static_cast<int>(nameWidth);
  os << std::left << std::setw(width) << "kernel" << std::setw(8) << "arch" << std::right
     << std::setw(6) << "regs" << std::setw(8) << "smem" << std::setw(8) << "dsmem"
     << std::setw(7) << "spill" << std::setw(9) << "cubin" << "\n";
  for (const CompiledKernel &k : report.kernels)
    os << std::left << std::setw(width) << k.name << std::setw(8) << k.arch << std::right
       << std::setw(6) << k.registers << std::setw(8) << k.sharedBytes << std::setw(8)
       << k.dynamicSharedBytes << std::setw(7) << k.spillBytes << std::setw(9)
       << k.cubin.size() << "\n";
  os << report.kernels.size() << " kernels for " << report.problems.size() << " problems, "
     << report.failures() << " failures\n";
}

} // namespace lowbit::compiler
