// `lowbit tune`'s compile half: each problem's best-ranked candidate
// schedules compiled into the kernel database through the compiler plugin,
// and the candidates the compiler recorded as failed.
#pragma once

#include "compiler/tools/lowbit/CompilerPlugin.h"
#include "compiler/tuner/CostModel.h"
#include "runtime/kernels/KernelSet.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace lowbit::cli {

// Compiles each problem with its own schedule list: the default schedules
// and the cost model's first `maxCandidates` others (0: all) of the
// schedules the search space accepts (its wgmma schedules with each of
// `wgmmaSchedulers`). A
// candidate that fails to compile is recorded as failed in `database` by the
// compiler, and the others are compiled all the same. Returns the number of
// problems whose every candidate compiled.
int compileCandidates(CompileMain compileMain, const std::vector<kernels::ProblemDesc> &problems,
                      const std::string &arch, const std::vector<int64_t> &mPoints,
                      const tuner::DeviceModel &model, int64_t maxCandidates,
                      const std::vector<core::TileScheduler> &wgmmaSchedulers,
                      const std::string &database);

// Prints "lowbit tune: recorded as failed: ..." for every candidate of
// `problems` on `arch` that `database` records as failed to compile; returns
// how many, or -1 (with the reason printed) when the database cannot be read.
int printCompileFailures(const std::string &database,
                         const std::vector<kernels::ProblemDesc> &problems,
                         const std::string &arch, std::ostream &out);

// Prints "lowbit tune: NAME: no ARCH candidate is in DB ..." for every
// problem with no kernel for `arch` in `database` (no schedule fits, every
// candidate failed, or nothing could be written: then every problem); returns
// how many, or -1 when the database cannot be queried. `lowbit tune --compile-only` fails when
// any is missing: it once exited 0 having stored nothing.
int printProblemsWithoutCandidates(const std::string &database,
                                   const std::vector<kernels::ProblemDesc> &problems,
                                   const std::string &arch, std::ostream &out);

} // namespace lowbit::cli
