// M points to measure, and dispatch ranges derived from what was measured.
//
// The rule (deriveRanges):
// 1. Only passing measurements count. At each measured M, a kernel is
//    acceptable when its median is within `tolerance` of the best median
//    there (t <= best x (1 + tolerance)); a kernel not measured at M is not
//    acceptable at M.
// 2. The measured points are split into as few runs as possible, each served
//    by one kernel acceptable at every point of its run. Greedy from the
//    smallest M: pick the acceptable kernel whose run reaches furthest
//    (that is optimal for the fewest runs); among equals, the one with the
//    lowest mean ratio to the best over the run, then the smaller id. Fewer
//    ranges means fewer kernels loaded per plan and no flip-flopping between
//    near-equal kernels on measurement noise.
// 3. A boundary between run A (last point a) and run B (first point b) lies
//    in (a, b]: at the first integer past the M where the straight lines
//    through A's and B's medians at a and b cross, when both kernels were
//    measured at both points and the lines cross inside [a, b); otherwise at ceil(sqrt(a x b)), the midpoint
//    on the log M axis the points are spaced on.
// 4. The first range starts at M = 1 and the last is open-ended; adjacent
//    ranges with the same kernel are merged. The result passes
//    db::validateRanges.
#pragma once

#include "core/support/Expected.h"
#include "tuning_db/Records.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::tuner {

// {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096}.
std::vector<int64_t> defaultMPoints();

// Parses "1,2,4,16-64" style lists: numbers and inclusive ranges of powers
// of two ("16-64" = 16, 32, 64). Sorted, unique, every value >= 1.
Expected<std::vector<int64_t>> parseMPoints(const std::string &text);

struct TimedPoint {
  std::string kernelId;
  int64_t m = 0;
  double medianUs = 0;
  bool passed = true;
};

struct RangeOptions {
  double tolerance = 0.03;
};

Expected<std::vector<db::DispatchRange>> deriveRanges(const std::vector<TimedPoint> &points,
                                                      const RangeOptions &options = {});

// The kernel `ranges` choose at each measured M and its ratio to the best
// there: what `lowbit tune` prints and what the tests check.
struct RangeCheck {
  int64_t m = 0;
  std::string chosen, best;
  double chosenUs = 0, bestUs = 0; // 0 chosenUs: the chosen kernel has no result at m
  double ratio = 0; // chosen / best median; 1 when chosen is best
};
std::vector<RangeCheck> checkRanges(const std::vector<db::DispatchRange> &ranges,
                                    const std::vector<TimedPoint> &points);

} // namespace lowbit::tuner
