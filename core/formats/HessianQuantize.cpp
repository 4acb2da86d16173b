#include "core/formats/HessianQuantize.h"

#include "core/support/FormatNumber.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lowbit::formats {

namespace {

// Every scheme decodes a weight as an affine map of its element's value,
// w = a·v + b, with a and b fixed per slot (scale, zero, super-scale and
// tensor scale folded in). Reading a and b off dequantize() at two element
// codes keeps this file free of any scheme's arithmetic: the formats library
// stays the one statement of what a code means.
struct SlotMap {
  std::vector<double> slope, offset;
};

Expected<SlotMap> slotMaps(const QuantizedMatrix &fitted) {
  const DataFormat &element = fitted.scheme.element;
  Expected<uint32_t> low = element.encode(element.minFinite());
  Expected<uint32_t> high = element.encode(element.maxFinite());
  if (!low || !high)
    return makeError("element " + element.name() + " cannot encode its own range");
  const double lowValue = element.decode(*low), highValue = element.decode(*high);
  QuantizedMatrix probe = fitted;
  std::fill(probe.codes.begin(), probe.codes.end(), uint8_t(*low));
  Expected<std::vector<double>> atLow = dequantize(probe);
  std::fill(probe.codes.begin(), probe.codes.end(), uint8_t(*high));
  Expected<std::vector<double>> atHigh = dequantize(probe);
  if (!atLow)
    return makeError(atLow.error());
  if (!atHigh)
    return makeError(atHigh.error());
  const size_t slots = size_t(fitted.scaleRows() * fitted.scaleCols());
  SlotMap map{std::vector<double>(slots), std::vector<double>(slots)};
  for (int64_t n = 0; n < fitted.rows; ++n)
    for (int64_t k = 0; k < fitted.cols; ++k) {
      const size_t i = size_t(n * fitted.cols + k), slot = size_t(fitted.slotOf(n, k));
      map.slope[slot] = ((*atHigh)[i] - (*atLow)[i]) / (highValue - lowValue);
      map.offset[slot] = (*atLow)[i] - map.slope[slot] * lowValue;
    }
  return map;
}

// The code of `element` whose decoded weight a·v + b is nearest to w,
// saturating: a clipped slot rounds its outliers to its extreme codes. The
// slope may be negative (quantize()'s scale search gives int4 slots led by a
// positive weight a negative scale, so that weight lands on -8).
uint8_t nearestCode(const DataFormat &element, double slope, double offset, double w,
                    uint8_t fallback) {
  if (slope == 0 || !std::isfinite(slope))
    return fallback;
  Expected<uint32_t> code =
      element.encode((w - offset) / slope, Rounding::NearestEven, OnOverflow::Saturate);
  return code ? uint8_t(*code) : fallback;
}

// Fits the slots at every clipping ratio and keeps, per slot, the fit with
// the lowest round-to-nearest squared error. (Weighting it by H's diagonal
// measured worse on all-MiniLM-L6-v2: the sweep already spends the loud
// channels' error elsewhere.)
Expected<QuantizedMatrix> fitSlots(const double *weights, int64_t rows, int64_t cols,
                                   const QuantScheme &scheme,
                                   const std::vector<double> &clipRatios) {
  QuantizedMatrix best;
  std::vector<double> bestError;
  std::vector<double> clipped(size_t(rows * cols));
  for (double ratio : clipRatios) {
    for (size_t i = 0; i < clipped.size(); ++i)
      clipped[i] = weights[i] * ratio;
    Expected<QuantizedMatrix> fitted = quantize(clipped.data(), rows, cols, scheme);
    if (!fitted)
      return makeError("clipping ratio " + formatDouble(ratio) + ": " + fitted.error());
    Expected<SlotMap> map = slotMaps(*fitted);
    if (!map)
      return makeError(map.error());
    std::vector<double> error(map->slope.size(), 0.0);
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t k = 0; k < cols; ++k) {
        const size_t slot = size_t(fitted->slotOf(n, k)), i = size_t(n * cols + k);
        const double w = weights[i];
        // Only the error is kept: the sweep sets every code afterwards.
        uint8_t code = nearestCode(scheme.element, map->slope[slot], map->offset[slot], w,
                                   fitted->codes[i]);
        const double e = w - (map->slope[slot] * scheme.element.decode(code) + map->offset[slot]);
        error[slot] += e * e;
      }
    if (bestError.empty()) {
      best = std::move(*fitted);
      bestError = std::move(error);
      continue;
    }
    for (size_t slot = 0; slot < error.size(); ++slot)
      if (error[slot] < bestError[slot]) {
        bestError[slot] = error[slot];
        best.scales[slot] = fitted->scales[slot];
        if (!best.zeros.empty())
          best.zeros[slot] = fitted->zeros[slot];
      }
  }
  return best;
}

// In place: A (n x n, row-major, symmetric) becomes its lower Cholesky
// factor L (A = L·Lᵀ); the upper triangle is zeroed.
Status choleskyLower(std::vector<double> &a, int64_t n, const char *what) {
  for (int64_t j = 0; j < n; ++j) {
    double *rowJ = &a[size_t(j * n)];
    double diagonal = rowJ[j];
    for (int64_t k = 0; k < j; ++k)
      diagonal -= rowJ[k] * rowJ[k];
    if (!(diagonal > 0))
      return makeError(std::string(what) + " is not positive definite at column " +
                       std::to_string(j) + " (raise the damping)");
    rowJ[j] = std::sqrt(diagonal);
    for (int64_t i = j + 1; i < n; ++i) {
      double *rowI = &a[size_t(i * n)];
      double sum = rowI[j];
      for (int64_t k = 0; k < j; ++k)
        sum -= rowI[k] * rowJ[k];
      rowI[j] = sum / rowJ[j];
    }
    std::fill(rowJ + j + 1, rowJ + n, 0.0);
  }
  return Status::success();
}

// H⁻¹ = UᵀU with U upper triangular: the factor whose row i says how column
// i's rounding error moves the columns after it, and U[i][i]² the error's
// cost. Computed as chol(H) -> H⁻¹ -> chol(H⁻¹)ᵀ.
Expected<std::vector<double>> inverseUpperFactor(std::vector<double> h, int64_t n) {
  if (Status s = choleskyLower(h, n, "the damped Hessian"); !s)
    return makeError(s.error());
  // L⁻¹ by forward substitution, a row at a time: row i of L·L⁻¹ = I gives
  // L⁻¹[i][·] = -(Σ_{k<i} L[i][k]·L⁻¹[k][·]) / L[i][i] off the diagonal, a
  // sum of earlier rows (contiguous), not a walk down columns.
  std::vector<double> inverse(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double *out = &inverse[size_t(i * n)];
    const double *lowerRow = &h[size_t(i * n)];
    for (int64_t k = 0; k < i; ++k) {
      const double *earlier = &inverse[size_t(k * n)];
      for (int64_t j = 0; j <= k; ++j)
        out[j] -= lowerRow[k] * earlier[j];
    }
    const double diagonal = lowerRow[i];
    for (int64_t j = 0; j < i; ++j)
      out[j] /= diagonal;
    out[i] = 1.0 / diagonal;
  }
  // H⁻¹ = L⁻ᵀ·L⁻¹: entry (i, j) sums over k >= max(i, j) of L⁻¹[k][i]·L⁻¹[k][j].
  std::vector<double> hInverse(size_t(n * n), 0.0);
  for (int64_t k = 0; k < n; ++k) {
    const double *row = &inverse[size_t(k * n)];
    for (int64_t i = 0; i <= k; ++i) {
      double *out = &hInverse[size_t(i * n)];
      for (int64_t j = 0; j <= i; ++j)
        out[j] += row[i] * row[j];
    }
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j)
      hInverse[size_t(j * n + i)] = hInverse[size_t(i * n + j)];
  if (Status s = choleskyLower(hInverse, n, "the inverse Hessian"); !s)
    return makeError(s.error());
  std::vector<double> upper(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j)
      upper[size_t(j * n + i)] = hInverse[size_t(i * n + j)];
  return upper;
}

Status checkArguments(const double *hessian, int64_t cols, const QuantScheme &scheme,
                      const HessianQuantizeOptions &options) {
  if (scheme.actOrder)
    return makeError("scheme '" + scheme.name +
                     "' has act-order groups; this quantizer keeps each column in group "
                     "k / groupSize (sweep order is options.descendingActivationOrder)");
  if (!(options.damping >= 0) || !std::isfinite(options.damping))
    return makeError("damping " + formatDouble(options.damping) + " is not a finite value >= 0");
  if (options.clipRatios.empty())
    return makeError("no clipping ratios (use {1} for the plain fit)");
  const bool oneLevel = !scheme.superBlock && !scheme.tensorScale && !isMxScheme(scheme);
  for (double ratio : options.clipRatios) {
    if (!(ratio > 0 && ratio <= 1))
      return makeError("clipping ratio " + formatDouble(ratio) + " is outside (0, 1]");
    if (ratio != 1 && !oneLevel)
      return makeError("clipping ratios below 1 need a one-level scheme; '" + scheme.name +
                       "' has a super-block, tensor or MX scale");
  }
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (!std::isfinite(hessian[i * cols + j]))
        return makeError("H[" + std::to_string(i) + "][" + std::to_string(j) + "] is not finite");
  for (int64_t i = 0; i < cols; ++i)
    if (hessian[i * cols + i] < 0)
      return makeError("H[" + std::to_string(i) + "][" + std::to_string(i) + "] = " +
                       formatDouble(hessian[i * cols + i]) +
                       " is negative: H must be positive semi-definite (a sum of xᵀx)");
  return Status::success();
}

} // namespace

std::vector<double> defaultClipRatios() {
  std::vector<double> ratios;
  for (int i = 0; i < 15; ++i)
    ratios.push_back(1.0 - 0.02 * i);
  return ratios;
}

Expected<QuantizedMatrix> quantizeWithHessian(const double *weights, int64_t rows, int64_t cols,
                                              const double *hessian, const QuantScheme &scheme,
                                              const HessianQuantizeOptions &options) {
  if (Status s = validateScheme(scheme, rows, cols); !s)
    return makeError(s.error());
  if (Status s = checkArguments(hessian, cols, scheme, options); !s)
    return makeError(s.error());
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!std::isfinite(weights[i]))
      return makeError("weight (" + std::to_string(i / cols) + ", " + std::to_string(i % cols) +
                       ") is not finite");

  std::vector<double> diagonal(static_cast<size_t>(cols));
  for (int64_t k = 0; k < cols; ++k)
    diagonal[size_t(k)] = hessian[k * cols + k];
  const double meanDiagonal =
      std::accumulate(diagonal.begin(), diagonal.end(), 0.0) / double(cols);
  Expected<QuantizedMatrix> fitted = fitSlots(weights, rows, cols, scheme, options.clipRatios);
  if (!fitted)
    return makeError(fitted.error());
  Expected<SlotMap> map = slotMaps(*fitted);
  if (!map)
    return makeError(map.error());

  std::vector<int64_t> order(static_cast<size_t>(cols));
  std::iota(order.begin(), order.end(), 0);
  if (options.descendingActivationOrder)
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return diagonal[size_t(a)] > diagonal[size_t(b)]; });

  // H in sweep order, damped; a dead channel gets a unit diagonal so the
  // factorization exists (its error then moves nothing).
  std::vector<double> h(size_t(cols * cols));
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j)
      h[size_t(i * cols + j)] = hessian[order[size_t(i)] * cols + order[size_t(j)]];
  for (int64_t i = 0; i < cols; ++i) {
    double &d = h[size_t(i * cols + i)];
    if (d == 0)
      d = 1;
    d += options.damping * meanDiagonal;
  }
  Expected<std::vector<double>> upper = inverseUpperFactor(std::move(h), cols);
  if (!upper)
    return makeError(upper.error());

  // The sweep: rows are independent, and each keeps its pending weights in
  // sweep order so the error update is one contiguous axpy.
  const DataFormat &element = scheme.element;
  std::vector<double> pending(static_cast<size_t>(cols));
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t i = 0; i < cols; ++i)
      pending[size_t(i)] = weights[n * cols + order[size_t(i)]];
    for (int64_t i = 0; i < cols; ++i) {
      const int64_t k = order[size_t(i)];
      const size_t slot = size_t(fitted->slotOf(n, k)), at = size_t(n * cols + k);
      const double slope = map->slope[slot], offset = map->offset[slot];
      const uint8_t code = nearestCode(element, slope, offset, pending[size_t(i)],
                                       fitted->codes[at]);
      fitted->codes[at] = code;
      const double *factorRow = &(*upper)[size_t(i * cols)];
      const double error =
          (pending[size_t(i)] - (slope * element.decode(code) + offset)) / factorRow[i];
      for (int64_t j = i + 1; j < cols; ++j)
        pending[size_t(j)] -= error * factorRow[j];
    }
  }
  return fitted;
}

} // namespace lowbit::formats
