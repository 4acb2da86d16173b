#include "core/formats/ScaleSearch.h"

#include <algorithm>
#include <cmath>

namespace lowbit::formats::search {

namespace {

// The candidate grid around an end level: the slot's largest |w| lands on
// end ± 1 in steps of a tenth. Landing beyond the end clamps that weight
// (and its near neighbours) to the end code but makes every step finer;
// landing short of it leaves headroom that the rounding of a coarse scale
// format may need. Both pay on some slots, so both are tried.
constexpr int kGridSteps = 10;
constexpr double kGridSpacing = 0.1;

// Rounds `t` (in levels) to the nearest level, clamped to the element's
// range. Halves round up, not to even as the final encode does: at a tie
// both neighbours are equally far, so every error the search adds up is
// the same either way. (Truncating a positive number is floor, and much
// cheaper than nearbyint, which is a library call on baseline x86-64; this
// loop is the whole cost of the search.)
int nearestLevel(double t, const Levels &levels) {
  if (!(t > levels.lo)) // also NaN, which a zero step cannot make (callers guard it)
    return levels.lo;
  if (t >= levels.hi)
    return levels.hi;
  return levels.lo + int(t - levels.lo + 0.5);
}

// A value of a scale format, or the real number itself when there is no
// format (the per-group scales inside a super-block before their codes).
struct Encoded {
  uint32_t code = 0;
  double value = 0;
};

std::optional<Encoded> encodeScale(const DataFormat *format, double scale, Rounding rounding) {
  if (!std::isfinite(scale))
    return std::nullopt;
  if (!format)
    return Encoded{0, scale};
  Expected<uint32_t> code = format->encode(scale, rounding, OnOverflow::Error);
  if (!code)
    return std::nullopt;
  const double value = format->decode(*code);
  if (!std::isfinite(value))
    return std::nullopt;
  return Encoded{*code, value};
}

// searchScale, with scaleFormat == nullptr meaning real-valued scales.
std::optional<ScaleChoice> bestScale(const double *x, size_t n, const Levels &levels,
                                     const DataFormat *scaleFormat) {
  std::optional<ScaleChoice> best;
  auto consider = [&](double scale, Rounding rounding) {
    std::optional<Encoded> encoded = encodeScale(scaleFormat, scale, rounding);
    if (!encoded)
      return;
    const double error = roundingError(x, n, levels, encoded->value);
    if (!best || error < best->error)
      best = ScaleChoice{encoded->code, encoded->value, error};
  };
  // The least-squares scale for the codes `scale` rounds to: a different
  // scale than the grid point, and often a better one, since the grid only
  // decides which weights clamp.
  auto considerRefit = [&](double scale) {
    const double inverse = 1.0 / (scale * levels.unit);
    double sumXL = 0, sumLL = 0;
    for (size_t i = 0; i < n; ++i) {
      const double l = nearestLevel(x[i] * inverse, levels);
      sumXL += x[i] * l;
      sumLL += l * l;
    }
    if (sumLL > 0)
      consider(sumXL / sumLL / levels.unit, Rounding::NearestEven);
  };

  double lo = 0, hi = 0, extreme = 0;
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    if (std::fabs(x[i]) > std::fabs(extreme))
      extreme = x[i];
  }
  // The range fit's scale, rounded up as it rounds it: nothing clamps, and
  // the search can only improve on it.
  double range = 0;
  if (hi > 0)
    range = hi / (levels.hi * levels.unit);
  if (lo < 0)
    range = std::max(range, lo / (levels.lo * levels.unit));
  if (extreme == 0) {
    consider(1.0, Rounding::NearestEven); // all zero: any scale is exact
    return best;
  }
  consider(range, Rounding::TowardPositive);
  const bool negativeScales = !scaleFormat || scaleFormat->minFinite() < 0;
  for (int end : {levels.lo, levels.hi}) {
    if (end == 0)
      continue;
    // The extreme keeps its sign under a positive scale; a negative one
    // sends it to the end of the other sign.
    const double sign = (extreme > 0) == (end > 0) ? 1.0 : -1.0;
    if (sign < 0 && !negativeScales)
      continue;
    for (int i = -kGridSteps; i <= kGridSteps; ++i) {
      const double reach = std::abs(end) + kGridSpacing * i;
      if (reach < 0.5)
        continue;
      const double scale = sign * std::fabs(extreme) / (reach * levels.unit);
      consider(scale, Rounding::NearestEven);
      considerRefit(scale);
    }
  }
  return best;
}

struct Affine {
  double step = 0; // per element level
  double min = 0;  // w = step * l - min, min >= 0
};

// A group of a q·s - z scheme, in real numbers: the affine map with codes
// 0..top that minimizes a weighted squared error. Codes are proposed by
// stretching the group's range [min(lo, 0), hi] over top - 1 .. top + 1
// levels (stretching past `top` clamps the extremes, and the map is then
// refitted by weighted least squares for the codes it got). The weights,
// the group's rms plus |w|, favour the large weights a little: their error
// is what the later rounding of the step and min to codes hurts most, and
// this choice is what llama.cpp's Q4_K reference settled on.
Affine fitAffine(const double *x, size_t n, const Levels &element) {
  double lo = 0, hi = -INFINITY, sumSquares = 0;
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sumSquares += x[i] * x[i];
  }
  if (!(hi > lo))
    return Affine{0, -lo};
  const double rms = std::sqrt(sumSquares / double(n));
  std::vector<double> weight(n);
  double sumW = 0, sumWX = 0;
  for (size_t i = 0; i < n; ++i) {
    weight[i] = rms + std::fabs(x[i]);
    sumW += weight[i];
    sumWX += weight[i] * x[i];
  }
  const Levels codes{0, element.hi, 1};
  auto weightedError = [&](const Affine &fit, const std::vector<int> *given) {
    double error = 0;
    for (size_t i = 0; i < n; ++i) {
      const int l = given ? (*given)[i]
                          : (fit.step > 0 ? nearestLevel((x[i] + fit.min) / fit.step, codes) : 0);
      const double e = fit.step * l - fit.min - x[i];
      error += weight[i] * e * e;
    }
    return error;
  };
  Affine best{(hi - lo) / element.hi, -lo};
  double bestError = weightedError(best, nullptr);
  std::vector<int> levels(n);
  for (int s = 0; s <= 2 * kGridSteps; ++s) {
    const double inverse = (element.hi - 1 + kGridSpacing * s) / (hi - lo);
    double sumL = 0, sumLL = 0, sumXL = 0;
    for (size_t i = 0; i < n; ++i) {
      levels[i] = nearestLevel(inverse * (x[i] - lo), codes);
      sumL += weight[i] * levels[i];
      sumLL += weight[i] * levels[i] * levels[i];
      sumXL += weight[i] * levels[i] * x[i];
    }
    const double det = sumW * sumLL - sumL * sumL;
    if (!(det > 0))
      continue;
    Affine fit{(sumW * sumXL - sumWX * sumL) / det, -(sumLL * sumWX - sumL * sumXL) / det};
    if (fit.min < 0) // the zero format holds no negative mins: pin it at 0
      fit = Affine{sumXL / sumLL, 0};
    const double error = weightedError(fit, &levels);
    if (error < bestError) {
      bestError = error;
      best = fit;
    }
  }
  return best;
}

// Super-block state while its codes are chosen: the steps' values and each
// group's sub-scale and min levels.
struct TwoLevelState {
  double superScale = 0, superMin = 0;
  std::vector<int> scaleLevels, minLevels;
};

class SuperBlockSearch {
public:
  SuperBlockSearch(const double *x, const QuantScheme &scheme)
      : x_(x), scheme_(scheme), super_(*scheme.superBlock), groupSize_(size_t(scheme.groupSize)),
        groups_(size_t(super_.size / scheme.groupSize)), element_(*integerLevels(scheme.element)),
        subScale_(*integerLevels(scheme.scaleFormat)),
        withMins_(scheme.zeroMode == ZeroMode::SubtractScaled) {
    if (withMins_)
      subMin_ = *integerLevels(*scheme.zeroFormat);
  }

  Expected<SuperBlockFit> run() {
    std::vector<double> scales(groups_), mins(groups_, 0.0);
    for (size_t j = 0; j < groups_; ++j) {
      const double *group = x_ + j * groupSize_;
      if (withMins_) {
        Affine fit = fitAffine(group, groupSize_, element_);
        scales[j] = fit.step / element_.unit;
        mins[j] = fit.min;
      } else {
        std::optional<ScaleChoice> fit = bestScale(group, groupSize_, element_, nullptr);
        scales[j] = fit ? fit->scale : 0;
      }
    }
    std::optional<TwoLevelState> best;
    double bestError = INFINITY;
    for (const TwoLevelState &start : startingSteps(scales, mins)) {
      TwoLevelState state = start;
      assignLevels(state, scales, mins);
      double error = refine(state);
      if (error < bestError) {
        bestError = error;
        best = state;
      }
    }
    if (!best)
      return makeError("no " + super_.superScaleFormat.name() + " super-scale fits");
    return finish(*best, bestError);
  }

private:
  double effectiveScale(const TwoLevelState &s, int level) const {
    return s.superScale * level * subScale_.unit;
  }
  double effectiveMin(const TwoLevelState &s, int level) const {
    return withMins_ ? s.superMin * level * subMin_.unit : 0.0;
  }
  double errorOf(const TwoLevelState &s, size_t j, int scaleLevel, int minLevel) const {
    return roundingError(x_ + j * groupSize_, groupSize_, element_, effectiveScale(s, scaleLevel),
                         effectiveMin(s, minLevel));
  }
  double totalError(const TwoLevelState &s) const {
    double error = 0;
    for (size_t j = 0; j < groups_; ++j)
      error += errorOf(s, j, s.scaleLevels[j], withMins_ ? s.minLevels[j] : 0);
    return error;
  }

  // The super-steps to start from. With mins: the largest group scale on
  // the top sub-scale code and the largest min on the top min code. Without:
  // the group scale of largest magnitude on either end code (a signed
  // sub-scale format has one more negative code, as the elements do).
  std::vector<TwoLevelState> startingSteps(const std::vector<double> &scales,
                                           const std::vector<double> &mins) const {
    std::vector<TwoLevelState> starts;
    if (withMins_) {
      const double maxScale = *std::max_element(scales.begin(), scales.end());
      const double maxMin = *std::max_element(mins.begin(), mins.end());
      std::optional<Encoded> d = encodeScale(&super_.superScaleFormat,
                                             maxScale / (subScale_.hi * subScale_.unit),
                                             Rounding::NearestEven);
      std::optional<Encoded> dmin = encodeScale(
          &super_.superMinFormat, maxMin / (subMin_.hi * subMin_.unit), Rounding::NearestEven);
      if (d && dmin) {
        TwoLevelState s;
        s.superScale = d->value;
        s.superMin = dmin->value;
        starts.push_back(s);
      }
      return starts;
    }
    double extreme = 0;
    for (double s : scales)
      if (std::fabs(s) > std::fabs(extreme))
        extreme = s;
    for (int end : {subScale_.lo, subScale_.hi}) {
      if (end == 0)
        continue;
      const double step = extreme / (end * subScale_.unit);
      if (step < 0 && super_.superScaleFormat.minFinite() >= 0)
        continue;
      if (std::optional<Encoded> d =
              encodeScale(&super_.superScaleFormat, step, Rounding::NearestEven)) {
        TwoLevelState s;
        s.superScale = d->value;
        starts.push_back(s);
      }
    }
    return starts;
  }

  void assignLevels(TwoLevelState &s, const std::vector<double> &scales,
                    const std::vector<double> &mins) const {
    s.scaleLevels.assign(groups_, 0);
    s.minLevels.assign(groups_, 0);
    for (size_t j = 0; j < groups_; ++j) {
      s.scaleLevels[j] = s.superScale != 0
                             ? nearestLevel(scales[j] / (s.superScale * subScale_.unit), subScale_)
                             : nearestLevel(0, subScale_);
      if (withMins_)
        s.minLevels[j] = s.superMin != 0
                             ? nearestLevel(mins[j] / (s.superMin * subMin_.unit), subMin_)
                             : nearestLevel(0, subMin_);
    }
  }

  // Each group's codes are rounded from real numbers one at a time; a
  // neighbouring sub-scale or min code is sometimes better once the
  // elements are re-rounded under it. Then the two super-steps are refitted
  // by least squares for all the codes (the sub-codes were chosen against
  // steps that only had to cover the largest group), and the better of the
  // two is kept, twice.
  double refine(TwoLevelState &s) const {
    double error = improveGroups(s);
    for (int round = 0; round < 2; ++round) {
      TwoLevelState refit = s;
      if (!refitSteps(refit))
        break;
      double refitError = improveGroups(refit);
      if (!(refitError < error))
        break;
      s = refit;
      error = refitError;
    }
    return error;
  }

  double improveGroups(TwoLevelState &s) const {
    double total = 0;
    for (size_t j = 0; j < groups_; ++j) {
      const int scale0 = s.scaleLevels[j], min0 = s.minLevels[j];
      double best = errorOf(s, j, scale0, min0);
      for (int ds = -1; ds <= 1; ++ds)
        for (int dm = withMins_ ? -1 : 0; dm <= (withMins_ ? 1 : 0); ++dm) {
          const int scale = std::clamp(scale0 + ds, subScale_.lo, subScale_.hi);
          const int min = withMins_ ? std::clamp(min0 + dm, subMin_.lo, subMin_.hi) : 0;
          const double error = errorOf(s, j, scale, min);
          if (error < best) {
            best = error;
            s.scaleLevels[j] = scale;
            s.minLevels[j] = min;
          }
        }
      total += best;
    }
    return total;
  }

  // w ≈ D·(scale code · element) - Dmin·(min code): linear in (D, Dmin).
  bool refitSteps(TwoLevelState &s) const {
    double uu = 0, uv = 0, vv = 0, ux = 0, vx = 0;
    for (size_t j = 0; j < groups_; ++j) {
      const double scale = effectiveScale(s, s.scaleLevels[j]);
      const double offset = effectiveMin(s, s.minLevels[j]);
      const double step = scale * element_.unit;
      const double minUnits = withMins_ ? -double(s.minLevels[j]) * subMin_.unit : 0.0;
      for (size_t i = 0; i < groupSize_; ++i) {
        const double w = x_[j * groupSize_ + i];
        const int l = step != 0 ? nearestLevel((w + offset) / step, element_) : 0;
        const double u = double(s.scaleLevels[j]) * subScale_.unit * l * element_.unit;
        uu += u * u;
        uv += u * minUnits;
        vv += minUnits * minUnits;
        ux += u * w;
        vx += minUnits * w;
      }
    }
    double d = 0, dmin = 0;
    if (withMins_) {
      const double det = uu * vv - uv * uv;
      if (!(det > 0))
        return false;
      d = (ux * vv - vx * uv) / det;
      dmin = (uu * vx - uv * ux) / det;
      if (!(d > 0) || !(dmin >= 0))
        return false;
    } else {
      if (!(uu > 0))
        return false;
      d = ux / uu;
    }
    std::optional<Encoded> step = encodeScale(&super_.superScaleFormat, d, Rounding::NearestEven);
    std::optional<Encoded> minStep =
        withMins_ ? encodeScale(&super_.superMinFormat, dmin, Rounding::NearestEven) : Encoded{};
    if (!step || !minStep)
      return false;
    s.superScale = step->value;
    s.superMin = minStep->value;
    return true;
  }

  Expected<SuperBlockFit> finish(const TwoLevelState &s, double error) const {
    SuperBlockFit fit;
    fit.error = error;
    Expected<uint32_t> superCode = super_.superScaleFormat.encode(s.superScale);
    if (!superCode)
      return makeError(superCode.error());
    fit.superScaleCode = *superCode;
    if (withMins_) {
      Expected<uint32_t> minCode = super_.superMinFormat.encode(s.superMin);
      if (!minCode)
        return makeError(minCode.error());
      fit.superMinCode = *minCode;
    }
    for (size_t j = 0; j < groups_; ++j) {
      Expected<uint32_t> scaleCode = scheme_.scaleFormat.encode(s.scaleLevels[j] * subScale_.unit);
      if (!scaleCode)
        return makeError(scaleCode.error());
      fit.scaleCodes.push_back(*scaleCode);
      fit.scales.push_back(effectiveScale(s, s.scaleLevels[j]));
      if (withMins_) {
        Expected<uint32_t> minCode = scheme_.zeroFormat->encode(s.minLevels[j] * subMin_.unit);
        if (!minCode)
          return makeError(minCode.error());
        fit.minCodes.push_back(*minCode);
        fit.mins.push_back(effectiveMin(s, s.minLevels[j]));
      }
    }
    return fit;
  }

  const double *x_;
  const QuantScheme &scheme_;
  const SuperBlock &super_;
  const size_t groupSize_, groups_;
  const Levels element_, subScale_;
  Levels subMin_;
  const bool withMins_;
};

} // namespace

std::optional<Levels> integerLevels(const DataFormat &element) {
  const IntFormat *integer = element.asInt();
  if (!integer)
    return std::nullopt;
  return Levels{integer->minValue(), integer->maxValue(), std::ldexp(1.0, -integer->fractionBits)};
}

double roundingError(const double *x, size_t n, const Levels &levels, double scale, double offset) {
  const double step = scale * levels.unit;
  const double inverse = step != 0 ? 1.0 / step : 0.0;
  double error = 0;
  for (size_t i = 0; i < n; ++i) {
    const int l = step != 0 ? nearestLevel((x[i] + offset) * inverse, levels) : 0;
    const double e = x[i] - (step * l - offset);
    error += e * e;
  }
  return error;
}

std::optional<ScaleChoice> searchScale(const double *x, size_t n, const Levels &levels,
                                       const DataFormat &scaleFormat) {
  return bestScale(x, n, levels, &scaleFormat);
}

Expected<SuperBlockFit> searchSuperBlock(const double *x, const QuantScheme &scheme) {
  if (!scheme.superBlock || !integerLevels(scheme.element) || !integerLevels(scheme.scaleFormat) ||
      (scheme.zeroMode == ZeroMode::SubtractScaled && !integerLevels(*scheme.zeroFormat)) ||
      scheme.zeroMode == ZeroMode::SubtractCode)
    return makeError("the super-block search needs integer elements, sub-scales and mins");
  return SuperBlockSearch(x, scheme).run();
}

} // namespace lowbit::formats::search
