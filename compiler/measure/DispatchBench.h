// `lowbit bench --db`: for each problem of a kernel database and each M, the
// kernel the runtime would dispatch on this device, next to cuBLAS.
//
// "Would dispatch" is decided by the runtime's own plan builder
// (api::buildPlanSpec): the tuning_db lookup with its tiers (exact device,
// same compute capability and SM count, same compute capability, built-in
// heuristic), then the substitutions a plan makes so that one packed weight
// buffer serves every M. Each row says which tier answered, which M range
// the kernel serves, and whether it is loaded from PTX. Measuring uses the
// same BenchFixture as `lowbit tune` and `lowbit bench --kernels`.
#pragma once

#include "compiler/measure/KernelBench.h"
#include "tuning_db/Database.h"
#include "tuning_db/Fingerprint.h"

#include <ostream>
#include <string>
#include <vector>

namespace lowbit::measure {

struct DispatchBenchOptions {
  std::vector<int64_t> rowCounts = {1, 16, 64, 256};
  std::string problemFilter; // substring of the problem name
  size_t rotationBytes = 512u << 20;
  int replays = 9;
  // Seconds after which no new measurement starts (0: no limit); the rows
  // measured so far are kept and the rest are left out.
  double budgetSeconds = 0;
};

struct DispatchBenchResult {
  std::vector<BenchRow> rows;
  // The plans' notes (substituted kernels, PTX fallbacks, skipped tables)
  // and problems that could not be planned, one line each.
  std::vector<std::string> notes;
  bool budgetSpent = false;
};

// The problems of `database`, named as their kernels name them, sorted by
// name; those whose name does not contain `filter` are left out.
Expected<std::vector<kernels::ProblemDesc>> databaseProblems(const db::Database &database,
                                                             const std::string &filter = "");

// Errors are for the database and the device (launch failures, out of
// memory). A problem that cannot be planned or measured here gets rows with
// a note instead, and a dispatched kernel that fails its reference check a
// row marked failed: both are findings, not reasons to stop.
Expected<DispatchBenchResult> benchDispatched(const cuda::DriverApi &api,
                                              const db::Database &database,
                                              const db::DeviceFingerprint &device,
                                              const DispatchBenchOptions &options, double copyGBs,
                                              const Cublas *cublas, std::ostream &progress);

} // namespace lowbit::measure
