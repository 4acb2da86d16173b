#include "core/formats/Quantize.h"

#include "core/formats/ScaleSearch.h"

#include <algorithm>
#include <cmath>

namespace lowbit::formats {

namespace {

// How many times a scale may be bumped to its next representable value before
// we give up; each bump grows the range by one ulp of the scale format, and
// one or two always suffice for a zero point that rounded the wrong way.
constexpr int kMaxScaleBumps = 64;

struct SlotRange {
  double lo = 0, hi = 0; // widened to include 0
  double amax() const { return std::max(-lo, hi); }
  void add(double w) {
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
};

Error withContext(const std::string &context, const std::string &message) {
  return makeError(context + ": " + message);
}

std::string slotName(int64_t slot) { return "scale slot " + std::to_string(slot); }

// The next representable value strictly above `code`'s value.
Expected<uint32_t> nextScaleUp(const DataFormat &format, uint32_t code) {
  double value = format.decode(code);
  return format.encode(std::nextafter(value, INFINITY), Rounding::TowardPositive);
}

// The value a weight maps to before rounding to an element code.
double elementTarget(ZeroMode mode, double w, double scale, double zero) {
  if (scale == 0)
    return 0;
  switch (mode) {
  case ZeroMode::None:
    return w / scale;
  case ZeroMode::SubtractCode:
    return w / scale + zero;
  case ZeroMode::SubtractScaled:
    return (w + zero) / scale;
  }
  return 0;
}

struct SlotParams {
  uint32_t scaleCode = 0, zeroCode = 0;
  double scale = 0, zero = 0;
};

// Picks the stored scale (and zero) of one slot of a one-level scheme so that
// both extremes of the slot encode without overflow.
Expected<SlotParams> fitSlot(const QuantScheme &scheme, const SlotRange &range, int64_t slot) {
  const DataFormat &element = scheme.element;
  const double elemMin = element.minFinite(), elemMax = element.maxFinite();
  double scale = 0;
  if (scheme.zeroMode == ZeroMode::None) {
    if (range.hi > 0)
      scale = range.hi / elemMax;
    if (range.lo < 0) {
      if (elemMin >= 0)
        return withContext(slotName(slot), "element " + element.name() +
                                               " has no negative values but the slot holds " +
                                               std::to_string(range.lo) + "; use a zero point");
      scale = std::max(scale, range.lo / elemMin);
    }
  } else {
    scale = (range.hi - range.lo) / (elemMax - elemMin);
  }
  if (scale == 0)
    scale = 1; // an all-zero slot: any scale decodes it exactly
  Expected<uint32_t> scaleCode =
      scheme.scaleFormat.encode(scale, Rounding::TowardPositive, OnOverflow::Error);
  if (!scaleCode)
    return withContext(slotName(slot), scaleCode.error());
  for (int attempt = 0; attempt < kMaxScaleBumps; ++attempt) {
    SlotParams params;
    params.scaleCode = *scaleCode;
    params.scale = scheme.scaleFormat.decode(*scaleCode);
    if (scheme.zeroMode != ZeroMode::None) {
      double zero = scheme.zeroMode == ZeroMode::SubtractCode ? elemMin - range.lo / params.scale
                                                              : elemMin * params.scale - range.lo;
      Expected<uint32_t> zeroCode = scheme.zeroFormat->encode(zero);
      if (!zeroCode)
        return withContext(slotName(slot), "zero point: " + zeroCode.error());
      params.zeroCode = *zeroCode;
      params.zero = scheme.zeroFormat->decode(*zeroCode);
      // A coarse float zero (bf16) rounded to nearest can miss by most of a
      // step, putting the slot's low end below the lowest code, and raising
      // the scale cannot repair that: the zero follows the low end. Rounded
      // up it cannot; the high end's extra fraction of a step is what the
      // scale bumps absorb.
      if (!element.encode(elementTarget(scheme.zeroMode, range.lo, params.scale, params.zero))) {
        zeroCode = scheme.zeroFormat->encode(zero, Rounding::TowardPositive);
        if (!zeroCode)
          return withContext(slotName(slot), "zero point: " + zeroCode.error());
        params.zeroCode = *zeroCode;
        params.zero = scheme.zeroFormat->decode(*zeroCode);
      }
    }
    bool fits = true;
    for (double w : {range.lo, range.hi})
      fits = fits && element.encode(elementTarget(scheme.zeroMode, w, params.scale, params.zero)).ok();
    if (fits)
      return params;
    scaleCode = nextScaleUp(scheme.scaleFormat, *scaleCode);
    if (!scaleCode)
      return withContext(slotName(slot), scaleCode.error());
  }
  return withContext(slotName(slot), "no " + scheme.scaleFormat.name() +
                                         " scale fits the range [" + std::to_string(range.lo) +
                                         ", " + std::to_string(range.hi) + "]");
}

Status encodeElements(QuantizedMatrix &m, const double *weights,
                      const std::vector<SlotParams> &params, OnOverflow onOverflow,
                      double extraScale = 1.0) {
  const QuantScheme &scheme = m.scheme;
  for (int64_t n = 0; n < m.rows; ++n)
    for (int64_t k = 0; k < m.cols; ++k) {
      const SlotParams &p = params[size_t(m.slotOf(n, k))];
      double w = weights[n * m.cols + k];
      double target = elementTarget(scheme.zeroMode, w, p.scale * extraScale, p.zero);
      Expected<uint32_t> code = scheme.element.encode(target, Rounding::NearestEven, onOverflow);
      if (!code)
        return makeError("weight (" + std::to_string(n) + ", " + std::to_string(k) +
                         "): " + code.error());
      m.codes[size_t(n * m.cols + k)] = uint8_t(*code);
    }
  return Status::success();
}

std::vector<SlotRange> slotRanges(const QuantizedMatrix &m, const double *weights) {
  std::vector<SlotRange> ranges(size_t(m.scaleRows() * m.scaleCols()));
  for (int64_t n = 0; n < m.rows; ++n)
    for (int64_t k = 0; k < m.cols; ++k)
      ranges[size_t(m.slotOf(n, k))].add(weights[n * m.cols + k]);
  return ranges;
}

// Whether ScaleFit::Search searches a one-level scheme's scales: integer
// elements with levels of both signs and no zero point.
bool searchesOneLevel(const QuantScheme &scheme, ScaleFit fit) {
  std::optional<search::Levels> levels = search::integerLevels(scheme.element);
  return fit == ScaleFit::Search && scheme.zeroMode == ZeroMode::None && levels &&
         levels->lo < 0 && levels->hi > 0;
}

Status quantizeGeneric(QuantizedMatrix &m, const double *weights, ScaleFit fit) {
  std::vector<SlotRange> ranges = slotRanges(m, weights);
  std::vector<SlotParams> params(ranges.size());
  const bool searched = searchesOneLevel(m.scheme, fit);
  std::vector<std::vector<double>> slotWeights(searched ? ranges.size() : 0);
  if (searched)
    for (int64_t n = 0; n < m.rows; ++n)
      for (int64_t k = 0; k < m.cols; ++k)
        slotWeights[size_t(m.slotOf(n, k))].push_back(weights[n * m.cols + k]);
  for (size_t slot = 0; slot < ranges.size(); ++slot) {
    if (searched) {
      const std::vector<double> &x = slotWeights[slot];
      std::optional<search::ScaleChoice> choice = search::searchScale(
          x.data(), x.size(), *search::integerLevels(m.scheme.element), m.scheme.scaleFormat);
      if (choice) {
        params[slot].scaleCode = m.scales[slot] = choice->code;
        params[slot].scale = choice->scale;
        continue;
      }
      // No searched scale is representable: the range fit says why.
    }
    Expected<SlotParams> fitted = fitSlot(m.scheme, ranges[slot], int64_t(slot));
    if (!fitted)
      return makeError(fitted.error());
    params[slot] = *fitted;
    m.scales[slot] = fitted->scaleCode;
    if (m.scheme.zeroMode != ZeroMode::None)
      m.zeros[slot] = fitted->zeroCode;
  }
  // A searched scale may leave outliers past the end codes on purpose.
  return encodeElements(m, weights, params, searched ? OnOverflow::Saturate : OnOverflow::Error);
}

// OCP MX v1.0, section 6.3: shared exponent = floor(log2(amax)) - emax of the
// element type, clamped to e8m0's range; elements are the RNE of v / 2^exp
// with saturation to the largest normal.
Status quantizeMx(QuantizedMatrix &m, const double *weights) {
  const int elementMaxExponent = std::ilogb(m.scheme.element.maxFinite());
  std::vector<SlotRange> ranges = slotRanges(m, weights);
  std::vector<SlotParams> params(ranges.size());
  for (size_t slot = 0; slot < ranges.size(); ++slot) {
    double amax = ranges[slot].amax();
    int sharedExponent = amax == 0 ? -127 : std::ilogb(amax) - elementMaxExponent;
    if (sharedExponent > 127)
      return withContext(slotName(int64_t(slot)),
                         "block amax " + std::to_string(amax) + " needs scale 2^" +
                             std::to_string(sharedExponent) + ", beyond e8m0's 2^127");
    sharedExponent = std::max(sharedExponent, -127);
    params[slot].scaleCode = uint32_t(sharedExponent + 127);
    params[slot].scale = std::ldexp(1.0, sharedExponent);
    m.scales[slot] = params[slot].scaleCode;
  }
  return encodeElements(m, weights, params, OnOverflow::Saturate);
}

// NVFP4: a per-tensor f32 scale brings the block scales into e4m3's range,
// tensor = amax / (6 * 448); block = e4m3(block amax / 6 / tensor). Both the
// scale cast and the element cast saturate, as in NVIDIA's reference recipe.
Status quantizeTensorScaled(QuantizedMatrix &m, const double *weights,
                            std::optional<uint32_t> givenTensorScale) {
  const DataFormat &scaleFormat = m.scheme.scaleFormat;
  const double elemMax = m.scheme.element.maxFinite();
  uint32_t tensorCode = givenTensorScale.value_or(0);
  if (!givenTensorScale) {
    double amax = 0;
    for (int64_t i = 0; i < m.rows * m.cols; ++i)
      amax = std::max(amax, std::fabs(weights[i]));
    Expected<uint32_t> fitted = nvfp4TensorScale(m.scheme, amax);
    if (!fitted)
      return makeError(fitted.error());
    tensorCode = *fitted;
  }
  const double tensorScale = DataFormat::f32().decode(tensorCode);
  if (!std::isfinite(tensorScale) || tensorScale <= 0)
    return makeError("per-tensor scale " + std::to_string(tensorScale) +
                     " is not a positive finite f32");
  m.tensorScale = tensorCode;
  std::vector<SlotRange> ranges = slotRanges(m, weights);
  std::vector<SlotParams> params(ranges.size());
  for (size_t slot = 0; slot < ranges.size(); ++slot) {
    double blockScale = ranges[slot].amax() / elemMax / tensorScale;
    Expected<uint32_t> code =
        scaleFormat.encode(blockScale, Rounding::NearestEven, OnOverflow::Saturate);
    if (!code)
      return withContext(slotName(int64_t(slot)), code.error());
    params[slot].scaleCode = *code;
    params[slot].scale = scaleFormat.decode(*code);
    m.scales[slot] = *code;
  }
  return encodeElements(m, weights, params, OnOverflow::Saturate, tensorScale);
}

// Picks a float super-scale d and integer sub-codes c_j with d * c_j >= x_j
// for every j, rounding both up; bumps d when the division rounded the wrong
// way.
Status fitTwoLevel(const DataFormat &superFormat, const DataFormat &subFormat,
                   const std::vector<double> &targets, uint32_t &superCode,
                   std::vector<uint32_t> &subCodes, std::vector<double> &effective,
                   const std::string &context) {
  double largest = *std::max_element(targets.begin(), targets.end());
  subCodes.assign(targets.size(), 0);
  effective.assign(targets.size(), 0);
  Expected<uint32_t> code = superFormat.encode(largest / subFormat.maxFinite(),
                                               Rounding::TowardPositive, OnOverflow::Error);
  if (!code)
    return withContext(context, code.error());
  if (largest == 0) {
    superCode = *code;
    Expected<uint32_t> zero = subFormat.encode(0);
    if (!zero)
      return withContext(context, zero.error());
    subCodes.assign(targets.size(), *zero);
    return Status::success();
  }
  for (int attempt = 0; attempt < kMaxScaleBumps; ++attempt) {
    double super = superFormat.decode(*code);
    bool fits = super > 0;
    for (size_t j = 0; j < targets.size() && fits; ++j) {
      Expected<uint32_t> sub = subFormat.encode(targets[j] / super, Rounding::TowardPositive);
      fits = sub.ok();
      if (fits) {
        subCodes[j] = *sub;
        effective[j] = super * subFormat.decode(*sub);
      }
    }
    if (fits) {
      superCode = *code;
      return Status::success();
    }
    code = nextScaleUp(superFormat, *code);
    if (!code)
      return withContext(context, code.error());
  }
  return withContext(context, "no " + superFormat.name() + " super-scale fits");
}

// The range fit of one super-block: every group's range is covered, the
// mins (rounded up) first.
Status fitSuperBlockRange(const QuantScheme &scheme, const SlotRange *ranges,
                          const std::string &context, search::SuperBlockFit &fit) {
  const SuperBlock &super = *scheme.superBlock;
  const size_t groups = size_t(super.size / scheme.groupSize);
  const double elemMin = scheme.element.minFinite(), elemMax = scheme.element.maxFinite();
  std::vector<double> mins(groups, 0.0);
  fit.mins.assign(groups, 0.0);
  if (scheme.zeroMode == ZeroMode::SubtractScaled) {
    for (size_t j = 0; j < groups; ++j)
      mins[j] = -ranges[j].lo;
    if (Status s = fitTwoLevel(super.superMinFormat, *scheme.zeroFormat, mins, fit.superMinCode,
                               fit.minCodes, fit.mins, context + " mins");
        !s)
      return s;
  }
  // Scales are chosen after the mins are rounded up, so that they cover
  // the range the rounded mins actually shift the weights into.
  std::vector<double> scales(groups, 0.0);
  for (size_t j = 0; j < groups; ++j) {
    const SlotRange &range = ranges[j];
    if (scheme.zeroMode == ZeroMode::SubtractScaled) {
      scales[j] = (range.hi + fit.mins[j]) / elemMax;
    } else {
      if (range.hi > 0)
        scales[j] = range.hi / elemMax;
      if (range.lo < 0) {
        if (elemMin >= 0)
          return withContext(context, "element " + scheme.element.name() +
                                          " has no negative values");
        scales[j] = std::max(scales[j], range.lo / elemMin);
      }
    }
  }
  return fitTwoLevel(super.superScaleFormat, scheme.scaleFormat, scales, fit.superScaleCode,
                     fit.scaleCodes, fit.scales, context + " scales");
}

// Whether ScaleFit::Search searches a super-block scheme: integer elements,
// and mins when there are any (validateScheme makes the sub-scales and mins
// integer codes).
bool searchesSuperBlocks(const QuantScheme &scheme, ScaleFit fit) {
  return fit == ScaleFit::Search && search::integerLevels(scheme.element) &&
         (scheme.zeroMode == ZeroMode::SubtractScaled ||
          search::integerLevels(scheme.element)->lo < 0);
}

// The squared error of a super-block's weights under a fit.
double superBlockError(const QuantScheme &scheme, const double *x,
                       const search::SuperBlockFit &fit) {
  const search::Levels levels = *search::integerLevels(scheme.element);
  double error = 0;
  for (size_t j = 0; j < fit.scales.size(); ++j)
    error += search::roundingError(x + j * size_t(scheme.groupSize), size_t(scheme.groupSize),
                                   levels, fit.scales[j], fit.mins.empty() ? 0.0 : fit.mins[j]);
  return error;
}

Status quantizeSuperBlocks(QuantizedMatrix &m, const double *weights, ScaleFit fit) {
  const QuantScheme &scheme = m.scheme;
  const SuperBlock &super = *scheme.superBlock;
  const int64_t groupsPerSuper = super.size / scheme.groupSize;
  const int64_t superPerRow = m.cols / super.size;
  const bool searched = searchesSuperBlocks(scheme, fit);
  const bool withMins = scheme.zeroMode == ZeroMode::SubtractScaled;
  std::vector<SlotRange> ranges = slotRanges(m, weights);
  std::vector<SlotParams> params(ranges.size());
  for (int64_t n = 0; n < m.rows; ++n) {
    for (int64_t b = 0; b < superPerRow; ++b) {
      const std::string context =
          "super-block " + std::to_string(b) + " of row " + std::to_string(n);
      const size_t firstSlot = size_t(n * m.scaleCols() + b * groupsPerSuper);
      const double *x = weights + n * m.cols + b * super.size;
      search::SuperBlockFit chosen;
      Status range = fitSuperBlockRange(scheme, &ranges[firstSlot], context, chosen);
      if (searched) {
        // The search's fit unless the range fit's is closer (or the search
        // found no steps that fit their format and the range fit did).
        Expected<search::SuperBlockFit> found = search::searchSuperBlock(x, scheme);
        if (found && (!range || found->error < superBlockError(scheme, x, chosen))) {
          chosen = std::move(found).value();
          range = Status::success();
        }
      }
      if (!range)
        return range;
      m.superScales[size_t(n * superPerRow + b)] = chosen.superScaleCode;
      if (withMins)
        m.superMins[size_t(n * superPerRow + b)] = chosen.superMinCode;
      for (size_t j = 0; j < size_t(groupsPerSuper); ++j) {
        m.scales[firstSlot + j] = chosen.scaleCodes[j];
        params[firstSlot + j].scale = chosen.scales[j];
        if (withMins) {
          m.zeros[firstSlot + j] = chosen.minCodes[j];
          params[firstSlot + j].zero = chosen.mins[j];
        }
      }
    }
  }
  return encodeElements(m, weights, params, searched ? OnOverflow::Saturate : OnOverflow::Error);
}

} // namespace

Expected<uint32_t> nvfp4TensorScale(const QuantScheme &scheme, double amax) {
  const double tensorScale =
      amax == 0 ? 1.0 : amax / (scheme.element.maxFinite() * scheme.scaleFormat.maxFinite());
  Expected<uint32_t> tensorCode = DataFormat::f32().encode(tensorScale);
  if (!tensorCode)
    return makeError("per-tensor scale: " + tensorCode.error());
  if (DataFormat::f32().decode(*tensorCode) == 0)
    return makeError("per-tensor scale underflows f32 (tensor amax " + std::to_string(amax) + ")");
  return tensorCode;
}

Expected<QuantizedMatrix> quantize(const double *weights, int64_t rows, int64_t cols,
                                   const QuantScheme &scheme, const QuantizeOptions &options) {
  if (Status status = validateScheme(scheme, rows, cols); !status)
    return makeError(status.error());
  QuantizedMatrix m;
  m.scheme = scheme;
  m.rows = rows;
  m.cols = cols;
  if (scheme.actOrder) {
    if (int64_t(options.groupIndex.size()) != cols)
      return makeError("act-order needs g_idx with K = " + std::to_string(cols) +
                       " entries; got " + std::to_string(options.groupIndex.size()));
    for (size_t k = 0; k < options.groupIndex.size(); ++k)
      if (options.groupIndex[k] < 0 || options.groupIndex[k] >= m.scaleCols())
        return makeError("g_idx[" + std::to_string(k) + "] = " +
                         std::to_string(options.groupIndex[k]) + " is outside [0, " +
                         std::to_string(m.scaleCols()) + ")");
    m.groupIndex = options.groupIndex;
  } else if (!options.groupIndex.empty()) {
    return makeError("g_idx given but scheme '" + scheme.name + "' has no act-order");
  }
  if (options.tensorScale && !scheme.tensorScale)
    return makeError("a tensor scale given but scheme '" + scheme.name + "' has none");
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(weights[i]))
      return makeError("weight (" + std::to_string(i / cols) + ", " + std::to_string(i % cols) +
                       ") is not finite");
  m.codes.assign(size_t(rows * cols), 0);
  size_t slots = size_t(m.scaleRows() * m.scaleCols());
  m.scales.assign(slots, 0);
  if (scheme.zeroMode != ZeroMode::None)
    m.zeros.assign(slots, 0);
  if (scheme.superBlock) {
    size_t superBlocks = size_t(rows * (cols / scheme.superBlock->size));
    m.superScales.assign(superBlocks, 0);
    if (scheme.zeroMode == ZeroMode::SubtractScaled)
      m.superMins.assign(superBlocks, 0);
  }
  Status status;
  if (isMxScheme(scheme))
    status = quantizeMx(m, weights);
  else if (scheme.tensorScale)
    status = quantizeTensorScaled(m, weights, options.tensorScale);
  else if (scheme.superBlock)
    status = quantizeSuperBlocks(m, weights, options.fit);
  else
    status = quantizeGeneric(m, weights, options.fit);
  if (!status)
    return makeError(status.error());
  return m;
}

} // namespace lowbit::formats
