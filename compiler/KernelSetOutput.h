// What `lowbit compile` produces and where it goes: the compiled kernels, the
// kernel-set directory's kernels.json or a kernel database, the printed table
// and the per-arch check that decides whether a kernel is kept at all.
//
// Apart from KernelSetCompiler.cpp (MLIR), so these are tested without LLVM
// on hand-built kernels.
#pragma once

#include "codegen/nvrtc/NvrtcCompiler.h"
#include "compiler/spec/KernelSetSpec.h"
#include "runtime/kernels/KernelSet.h"
#include "core/support/Expected.h"

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace lowbit::compiler {

struct CompiledKernel {
  core::Problem spec;    // the problem it computes
  std::string problem;   // its name
  std::string name;      // entry point
  std::string arch;
  std::string family;
  std::string schedule;  // #lb.schedule, printed
  std::string weightLayout;
  int64_t blockThreads = 0;
  std::vector<int64_t> gridTile;
  int registers = 0, sharedBytes = 0, spillBytes = 0, stackBytes = 0; // ptxas; shared: static
  // Dynamic shared memory each launch passes (KernelLaunchInfo).
  int64_t dynamicSharedBytes = 0;
  std::vector<char> cubin;
  std::string ptx;
  std::string source;
};

// A kernel that was asked for and not made: NVRTC refused its source (stage
// "compile") or ptxas spilled (stage "spill"). A kernel database records it
// as a failed candidate, so `lowbit tune` reports it instead of losing it.
struct FailedKernel {
  core::Problem spec;
  std::string name; // the entry point it would have had
  std::string arch;
  std::string schedule;
  std::string stage;
  std::string reason;
};

struct KernelSetReport {
  std::vector<CompiledKernel> kernels; // spilled ones too (also in `failed`), never stored
  std::vector<std::string> problems;
  std::vector<FailedKernel> failed;
  int failures() const { return static_cast<int>(failed.size()); }
};

Status writeFile(const std::filesystem::path &path, const void *data, size_t size);

// The launchable description of a kernel, as kernels.json and the database
// store it.
kernels::KernelEntry kernelEntryOf(const CompiledKernel &kernel);

// <directory>/kernels.json for every kernel of the report.
Status writeManifest(const KernelSetReport &report, const std::filesystem::path &directory);

// Every problem and kernel in one transaction: a database never holds half a
// kernel set. Kernels that spilled are not stored; every failed kernel is
// recorded as a failed candidate (db::CandidateFailureRecord), and a stored
// kernel clears an earlier failure of its (problem, arch, schedule).
Status writeDatabase(const KernelSetReport &report, const std::string &path,
                     std::ostream &diagnostics);

// False, with "skipped <kernel> for <arch>: needs N bytes of shared memory per
// block; <arch> allows at most M" in `diagnostics`, when the kernel's static
// plus dynamic shared memory exceeds what a block may have on `arch`. Such a
// kernel is not wrong, only not for this arch: it is skipped like a schedule
// that cannot serve a problem, not counted as a failure.
bool launchableOn(const CompiledKernel &kernel, nvrtc::Arch arch, std::ostream &diagnostics);

void printKernelSetReport(const KernelSetReport &report, std::ostream &os);

} // namespace lowbit::compiler
