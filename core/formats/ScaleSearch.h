// Error-minimizing scale fits: what quantize() does under ScaleFit::Search
// (its default) for integer elements without a zero point and for two-level
// (super-block) schemes. Each fit picks the stored scale codes that make the
// slot's or super-block's round-to-nearest squared error smallest, clamping
// a few outliers to the end codes where that pays, instead of covering the
// slot's whole range as the range fit does.
//
// Quantize.cpp calls these; they are declared here so that file stays one
// screenful per quantizer and the searches can be read apart.
#pragma once

#include "core/formats/Scheme.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace lowbit::formats::search {

// An integer element's values: l * unit for every integer l in [lo, hi].
struct Levels {
  int lo = 0, hi = 0;
  double unit = 1;
};

// The levels of an integer element; nullopt for minifloats and tables.
std::optional<Levels> integerLevels(const DataFormat &element);

// The squared error of x[0..n) rounded to nearest (clamped to the levels)
// under `scale`; `offset` is subtracted after scaling (w = scale * l - offset).
double roundingError(const double *x, size_t n, const Levels &levels, double scale,
                     double offset = 0);

struct ScaleChoice {
  uint32_t code = 0; // in the scale format
  double scale = 0;  // its value
  double error = 0;  // roundingError at that scale
};

// One slot of a one-level scheme with no zero point. Candidates are the
// range fit's scale (rounded up as the range fit rounds it, so the search
// never does worse than that fit), and a grid of scales that put
// the slot's largest |w| on or near either end level (a negative scale maps
// it onto the far end when the scale format has negative values: int4's
// -8 holds one more level than its 7), each refined by least squares for
// its codes. nullopt when no candidate's scale is representable (too large
// for the format): the caller's range fit then names the problem.
std::optional<ScaleChoice> searchScale(const double *x, size_t n, const Levels &levels,
                                       const DataFormat &scaleFormat);

// One super-block: per group, a scale code (and min code with q·s - z) of
// the scheme's integer sub-scale format, and the super-block's float steps.
struct SuperBlockFit {
  uint32_t superScaleCode = 0, superMinCode = 0;
  std::vector<uint32_t> scaleCodes, minCodes; // one per group
  std::vector<double> scales, mins;           // effective: step * code
  double error = 0;
};

// `x` holds the super-block's weights (superBlock->size of them, groups in
// order). Fails when a step does not fit its float format.
Expected<SuperBlockFit> searchSuperBlock(const double *x, const QuantScheme &scheme);

} // namespace lowbit::formats::search
