// Which (problem, M point, candidate) triples a sweep measures.
//
// The rule: at each M point, a candidate is measured only when the cost
// model's estimate for it is at most `ratio` times the best estimate among
// the problem's candidates that the sweep will measure (the first
// maxCandidates in sweep order). With the default ratio of 3 this drops, for
// example, the CUDA-core gemv kernels (tile M <= 8) at large M, where they
// re-read all weights for every few rows, and mma kernels at M = 1 when a
// gemv is estimated much faster there.
//
// Safe by construction:
// - the best-estimated candidate at every M is kept (its ratio is 1), so
//   every M point is measured by someone;
// - a candidate the model cannot estimate (a schedule the tuner does not
//   parse, or one the model finds unlaunchable) is measured at every M: the
//   model may be wrong, a measurement is not;
// - the estimates only decide what to measure, never what wins.
#pragma once

#include "compiler/tuner/CostModel.h"
#include "compiler/tuner/Sweep.h"

#include <cstdint>
#include <vector>

namespace lowbit::tuner {

struct PruneOptions {
  double ratio = 3.0;        // <= 0 (or below 1): prune nothing
  int64_t maxCandidates = 0; // as SweepOptions::maxCandidates; 0: all
};

// The M points (of `mPoints`) at which `estimatesUs` (per candidate, per M
// point; a negative value is "no estimate") exceed ratio x the best at that
// point, per candidate. The pure core of prunePoints, for tests.
std::vector<std::vector<int64_t>>
prunedByEstimates(const std::vector<std::vector<double>> &estimatesUs,
                  const std::vector<int64_t> &mPoints, double ratio);

// Sets every candidate's prunedM by the rule above (candidates past
// maxCandidates are left alone: the sweep does not measure them anyway).
// Returns the number of (candidate, M) points pruned.
int64_t prunePoints(SweepProblem &problem, const std::vector<int64_t> &mPoints,
                    const DeviceModel &device, const PruneOptions &options = {});

} // namespace lowbit::tuner
