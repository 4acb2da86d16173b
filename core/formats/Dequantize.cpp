#include "core/formats/Quantize.h"

#include "core/support/CheckedMath.h"

#include <cmath>
#include <limits>

namespace lowbit::formats {

int64_t QuantizedMatrix::scaleRows() const {
  return scheme.granularity == Granularity::PerTensor ? 1 : rows;
}

int64_t QuantizedMatrix::scaleCols() const {
  return scheme.granularity == Granularity::PerGroup ? cols / scheme.groupSize : 1;
}

int64_t QuantizedMatrix::slotOf(int64_t n, int64_t k) const {
  switch (scheme.granularity) {
  case Granularity::PerTensor:
    return 0;
  case Granularity::PerChannel:
    return n;
  case Granularity::PerGroup:
    break;
  }
  int64_t group = scheme.actOrder ? groupIndex[size_t(k)] : k / scheme.groupSize;
  return n * scaleCols() + group;
}

namespace {

std::string position(int64_t n, int64_t k) {
  return "(" + std::to_string(n) + ", " + std::to_string(k) + ")";
}

// What a caller may pass, for the message that rejects something else.
std::string validCodesText(const DataFormat &element) {
  const IntFormat *integer = element.asInt();
  if (integer && integer->ternary)
    return "ternary codes are 0, 1 and 2, meaning -1, 0 and 1";
  const std::string range = element.name() + " codes are 0 to " +
                            std::to_string(element.codeCount() - 1) + ", one per byte";
  if (integer && integer->isSigned)
    return range + ", two's complement in the low " + std::to_string(integer->bits) +
           " bits, not sign-extended";
  return range;
}

Status checkSize(const char *what, size_t actual, int64_t expected) {
  if (int64_t(actual) != expected)
    return makeError(std::string(what) + " has " + std::to_string(actual) +
                     " entries; expected " + std::to_string(expected));
  return Status::success();
}

Status checkCodes(const char *what, const std::vector<uint32_t> &codes, const DataFormat &format) {
  for (size_t i = 0; i < codes.size(); ++i) {
    if (!format.isValidCode(codes[i]))
      return makeError(std::string(what) + " " + std::to_string(i) + " has code " +
                       std::to_string(codes[i]) + ", not a valid " + format.name() + " code");
    if (format.isNanCode(codes[i]))
      return makeError(std::string(what) + " " + std::to_string(i) + " is NaN (" +
                       format.name() + " code " + std::to_string(codes[i]) + ")");
    // An infinite scale makes Inf · 0 = NaN weights: as silent as a NaN one.
    if (!std::isfinite(format.decode(codes[i])))
      return makeError(std::string(what) + " " + std::to_string(i) + " is infinite (" +
                       format.name() + " code " + std::to_string(codes[i]) +
                       "); it would dequantize to NaN or Inf");
  }
  return Status::success();
}

} // namespace

Status validateQuantizedMatrix(const QuantizedMatrix &m) {
  const QuantScheme &scheme = m.scheme;
  // validateScheme bounds rows * cols * 8, so no product below can wrap.
  if (Status status = validateScheme(scheme, m.rows, m.cols); !status)
    return status;
  if (Status s = checkSize("codes", m.codes.size(), m.rows * m.cols); !s)
    return s;
  int64_t slots = m.scaleRows() * m.scaleCols();
  if (Status s = checkSize("scales", m.scales.size(), slots); !s)
    return s;
  if (Status s = checkCodes("scale", m.scales, scheme.scaleFormat); !s)
    return s;
  if (scheme.zeroMode != ZeroMode::None) {
    if (Status s = checkSize("zeros", m.zeros.size(), slots); !s)
      return s;
    if (Status s = checkCodes("zero", m.zeros, *scheme.zeroFormat); !s)
      return s;
  } else if (!m.zeros.empty()) {
    return makeError("zeros given but the scheme has zero mode none");
  }
  if (scheme.superBlock) {
    int64_t superBlocks = m.rows * (m.cols / scheme.superBlock->size);
    if (Status s = checkSize("super-scales", m.superScales.size(), superBlocks); !s)
      return s;
    if (Status s = checkCodes("super-scale", m.superScales, scheme.superBlock->superScaleFormat); !s)
      return s;
    if (scheme.zeroMode == ZeroMode::SubtractScaled) {
      if (Status s = checkSize("super-mins", m.superMins.size(), superBlocks); !s)
        return s;
      if (Status s = checkCodes("super-min", m.superMins, scheme.superBlock->superMinFormat); !s)
        return s;
    }
  }
  if (scheme.tensorScale) {
    double tensorScale = DataFormat::f32().decode(m.tensorScale);
    if (!std::isfinite(tensorScale))
      return makeError("the per-tensor scale is not finite");
  }
  if (scheme.actOrder) {
    if (Status s = checkSize("g_idx", m.groupIndex.size(), m.cols); !s)
      return s;
    for (size_t k = 0; k < m.groupIndex.size(); ++k)
      if (m.groupIndex[k] < 0 || m.groupIndex[k] >= m.scaleCols())
        return makeError("g_idx[" + std::to_string(k) + "] = " + std::to_string(m.groupIndex[k]) +
                         " is outside [0, " + std::to_string(m.scaleCols()) + ")");
  } else if (!m.groupIndex.empty()) {
    return makeError("g_idx given but the scheme has no act-order");
  }
  return checkElementCodes(scheme.element, m.codes.data(), m.rows, m.cols);
}

Status checkElementCodes(const DataFormat &element, const uint8_t *codes, int64_t rows,
                         int64_t cols) {
  // One table lookup per code: the runtime's packer checks every weight of
  // matrices of hundreds of millions.
  // NaN and Inf codes are refused too: no weight of a matmul means them, and
  // the kernels' minifloat decodes only map finite codes.
  // The shape is the caller's; a product that wrapped would check a prefix
  // of the codes and report success.
  Expected<int64_t> count = checkedMul(rows, cols, "element codes rows * cols");
  if (!count)
    return makeError(count.error());
  enum : uint8_t { kValid, kInvalid, kNan, kInf };
  uint8_t kind[256];
  for (uint32_t code = 0; code < 256; ++code)
    kind[code] = !element.isValidCode(code)              ? kInvalid
                 : element.isNanCode(code)               ? kNan
                 : !std::isfinite(element.decode(code)) ? kInf
                                                         : kValid;
  for (int64_t i = 0; i < *count; ++i) {
    const uint8_t code = codes[i];
    if (kind[code] == kValid)
      continue;
    const std::string where =
        "code " + std::to_string(code) + " at " + position(i / cols, i % cols);
    if (kind[code] == kNan)
      return makeError(where + " is NaN in " + element.name());
    if (kind[code] == kInf)
      return makeError(where + " is infinite in " + element.name() + "; a weight must be finite");
    return makeError(where + " is not a valid " + element.name() + " code (" +
                     validCodesText(element) + ")");
  }
  return Status::success();
}

namespace {

Expected<std::vector<double>> dequantizeValid(const QuantizedMatrix &m) {
  const QuantScheme &scheme = m.scheme;
  const double tensorScale = scheme.tensorScale ? DataFormat::f32().decode(m.tensorScale) : 1.0;
  const int64_t superPerRow = scheme.superBlock ? m.cols / scheme.superBlock->size : 0;
  std::vector<double> out(size_t(m.rows * m.cols));
  for (int64_t n = 0; n < m.rows; ++n) {
    for (int64_t k = 0; k < m.cols; ++k) {
      int64_t slot = m.slotOf(n, k);
      double scale = scheme.scaleFormat.decode(m.scales[size_t(slot)]);
      double zero = scheme.zeroMode == ZeroMode::None ? 0.0
                                                      : scheme.zeroFormat->decode(m.zeros[size_t(slot)]);
      if (scheme.superBlock) {
        size_t super = size_t(n * superPerRow + k / scheme.superBlock->size);
        scale *= scheme.superBlock->superScaleFormat.decode(m.superScales[super]);
        if (scheme.zeroMode == ZeroMode::SubtractScaled)
          zero *= scheme.superBlock->superMinFormat.decode(m.superMins[super]);
      }
      scale *= tensorScale;
      double q = scheme.element.decode(m.codes[size_t(n * m.cols + k)]);
      double w = 0;
      switch (scheme.zeroMode) {
      case ZeroMode::None:
        w = q * scale;
        break;
      case ZeroMode::SubtractCode:
        w = (q - zero) * scale;
        break;
      case ZeroMode::SubtractScaled:
        w = q * scale - zero;
        break;
      }
      out[size_t(n * m.cols + k)] = w;
    }
  }
  return out;
}

} // namespace

Expected<std::vector<double>> dequantize(const QuantizedMatrix &m) {
  // Validation bounds rows * cols * 8 (validateScheme), so the output's size
  // cannot wrap; the allocation itself can still fail.
  if (Status status = validateQuantizedMatrix(m); !status)
    return makeError(status.error());
  return catchingBadAlloc("dequantize " + std::to_string(m.rows) + " x " +
                              std::to_string(m.cols) + " " + m.scheme.name,
                          [&] { return dequantizeValid(m); });
}

QualityReport measureQuality(const double *reference, const double *approximation, size_t count) {
  QualityReport report;
  double signal = 0, noise = 0, relativeSum = 0;
  size_t nonzero = 0;
  for (size_t i = 0; i < count; ++i) {
    double error = std::fabs(reference[i] - approximation[i]);
    signal += reference[i] * reference[i];
    noise += error * error;
    report.maxAbsoluteError = std::max(report.maxAbsoluteError, error);
    if (reference[i] != 0) {
      double relative = error / std::fabs(reference[i]);
      report.maxRelativeError = std::max(report.maxRelativeError, relative);
      relativeSum += relative;
      ++nonzero;
    }
  }
  report.meanRelativeError = nonzero ? relativeSum / double(nonzero) : 0.0;
  report.snrDb = noise == 0 ? std::numeric_limits<double>::infinity()
                            : 10.0 * std::log10(signal / noise);
  report.relativeFrobeniusError = signal == 0 ? (noise == 0 ? 0.0 : INFINITY)
                                              : std::sqrt(noise / signal);
  return report;
}

Expected<QualityReport> quantizationQuality(const double *weights, int64_t rows, int64_t cols,
                                            const QuantScheme &scheme,
                                            const QuantizeOptions &options) {
  Expected<QuantizedMatrix> quantized = quantize(weights, rows, cols, scheme, options);
  if (!quantized)
    return makeError(quantized.error());
  Expected<std::vector<double>> restored = dequantize(*quantized);
  if (!restored)
    return makeError(restored.error());
  return measureQuality(weights, restored->data(), restored->size());
}

} // namespace lowbit::formats
