#include "core/checkpoint/KernelWeights.h"

#include "core/FragmentFacts.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lowbit::checkpoint {
namespace {

using formats::DataFormat;
using formats::QuantizedMatrix;

std::string str(int64_t value) {
  return std::to_string(value);
}

// The code of `value` in `format` when it holds it exactly.
Expected<uint32_t> exactCode(const DataFormat &format, double value, const std::string &what) {
  Expected<uint32_t> code = format.encode(value);
  if (!code || format.decode(*code) != value)
    return makeError(what + " " + std::to_string(value) + " is not exactly a " + format.name());
  return *code;
}

// GGUF's second level multiplied out: scale = step(super-block) · code, in
// f32; the same for q·s − z's mins.
Status expandSuperBlocks(QuantizedMatrix &m, KernelWeights &out) {
  const formats::SuperBlock super = *m.scheme.superBlock;
  const int64_t groups = m.scaleCols();
  const int64_t superBlocks = m.cols / super.size;
  const DataFormat f32 = DataFormat::f32();
  auto multiply = [&](std::vector<uint32_t> &codes, const DataFormat &codeFormat,
                      const std::vector<uint32_t> &steps, const DataFormat &stepFormat,
                      const char *what) -> Status {
    for (int64_t n = 0; n < m.rows; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        const size_t slot = size_t(n * groups + g);
        const size_t step = size_t(n * superBlocks + g * m.scheme.groupSize / super.size);
        const double value = stepFormat.decode(steps[step]) * codeFormat.decode(codes[slot]);
        Expected<uint32_t> code = exactCode(f32, value, what);
        if (!code)
          return makeError(std::string(what) + " of row " + str(n) + ", group " + str(g) + ": " +
                           code.error());
        codes[slot] = *code;
      }
    return Status::success();
  };
  if (Status s = multiply(m.scales, m.scheme.scaleFormat, m.superScales, super.superScaleFormat,
                          "the scale");
      !s)
    return s;
  if (m.scheme.zeroMode != formats::ZeroMode::None) {
    if (Status s =
            multiply(m.zeros, *m.scheme.zeroFormat, m.superMins, super.superMinFormat, "the min");
        !s)
      return s;
    m.scheme.zeroFormat = f32;
  }
  out.notes.push_back(m.scheme.scaleFormat.name() + " scales times " +
                      super.superScaleFormat.name() + " steps per " + str(super.size) +
                      " weights, multiplied out into f32 scales" +
                      (m.scheme.zeroMode != formats::ZeroMode::None ? " and mins" : ""));
  m.scheme.scaleFormat = f32;
  m.scheme.superBlock.reset();
  m.superScales.clear();
  m.superMins.clear();
  return Status::success();
}

// Integer codes of a width no kernel decodes, as int8 (or uint8) codes of
// the same values.
Status widenCodes(QuantizedMatrix &m, KernelWeights &out) {
  const formats::IntFormat *from = m.scheme.element.asInt();
  if (!from || from->fractionBits || from->ternary)
    return makeError(m.scheme.element.name() + " codes have no kernel decode");
  const DataFormat to = from->minValue() >= 0 && from->maxValue() <= 255
                            ? DataFormat::unsignedInt(8)
                        : from->minValue() >= -128 && from->maxValue() <= 127 ? DataFormat::int8()
                                                                              : m.scheme.element;
  if (to == m.scheme.element)
    return makeError(m.scheme.element.name() + " codes have no kernel decode, and their "
                                               "values fit neither int8 nor uint8");
  std::vector<uint32_t> table(m.scheme.element.codeCount());
  for (uint32_t code = 0; code < table.size(); ++code)
    if (m.scheme.element.isValidCode(code)) {
      Expected<uint32_t> wide = exactCode(to, m.scheme.element.decode(code), "the code value");
      if (!wide)
        return makeError(wide.error());
      table[code] = *wide;
    }
  for (uint8_t &code : m.codes)
    code = uint8_t(table[code]);
  out.notes.push_back(m.scheme.element.name() + " codes re-encoded as " + to.name() +
                      " codes of the same values (" + str(m.scheme.element.bits()) + " -> 8 bits)");
  m.scheme.element = to;
  return Status::success();
}

// Two-level sub-scale and min codes as the byte codes kernels read
// (core::kernelScheme): the same integers, so Q4_K's 6-bit codes are
// unchanged and Q3_K's excess-32 ones become int8 two's complement.
Status recodeSubBlockCodes(QuantizedMatrix &m, const core::Scheme &kernel) {
  auto recode = [](std::vector<uint32_t> &codes, const DataFormat &from, const DataFormat &to,
                   const char *what) -> Status {
    if (from == to)
      return Status::success();
    for (uint32_t &code : codes) {
      Expected<uint32_t> wide = exactCode(to, from.decode(code), what);
      if (!wide)
        return makeError(wide.error());
      code = *wide;
    }
    return Status::success();
  };
  if (Status s = recode(m.scales, m.scheme.scaleFormat, kernel.scale, "the sub-scale"); !s)
    return s;
  if (kernel.hasZeros())
    return recode(m.zeros, *m.scheme.zeroFormat, DataFormat::unsignedInt(8), "the min");
  return Status::success();
}

// Excess-2^(b-1) codes (GGUF's Q4_0 q - 8, Q6_K q - 32, Q3_K q - 4) hold
// exactly the values of b-bit two's complement: flipping each code's top bit
// makes them int<b> codes, the same bits and the same values, which the C
// ABI names (LOWBIT_WEIGHT_INT4, INT6, ...) and every kernel decodes.
void excessToTwosComplement(QuantizedMatrix &m, KernelWeights &out) {
  const formats::IntFormat *from = m.scheme.element.asInt();
  if (!from || from->isSigned || from->ternary || from->fractionBits || from->bits < 2 ||
      from->offset != -(1 << (from->bits - 1)))
    return;
  const uint8_t top = uint8_t(1u << (from->bits - 1));
  for (uint8_t &code : m.codes)
    code ^= top;
  const DataFormat to = DataFormat::signedInt(from->bits);
  out.notes.push_back(m.scheme.element.name() + " codes stored as " + to.name() +
                      " (each code's top bit flipped: the same values, " +
                      str(from->bits) + " bits)");
  m.scheme.element = to;
}

// Zero codes kernels read are plain uint4 or uint8; others become uint8
// codes of the same integers, or zeros in the scale dtype.
Status normalizeZeroCodes(QuantizedMatrix &m, KernelWeights &out) {
  const DataFormat from = *m.scheme.zeroFormat;
  const DataFormat uint4 = DataFormat::unsignedInt(4), uint8 = DataFormat::unsignedInt(8);
  if (from == uint4 || from == uint8 || from == m.scheme.scaleFormat)
    return Status::success();
  // The narrowest codes that hold every zero: GPTQ v1's z = stored + 1 is
  // 1..16, and fits uint4 whenever no group stored 15 (symmetric
  // checkpoints store 7 everywhere), which halves the zero bytes.
  bool integral = from.asInt() != nullptr;
  double largest = 0;
  for (uint32_t z : m.zeros) {
    const double value = from.decode(z);
    integral = integral && value >= 0 && value == std::floor(value);
    largest = std::max(largest, value);
  }
  const bool fitsByte = integral && largest <= 255;
  const DataFormat to = !fitsByte ? m.scheme.scaleFormat : largest <= 15 ? uint4 : uint8;
  for (uint32_t &z : m.zeros) {
    Expected<uint32_t> code = exactCode(to, from.decode(z), "the zero point");
    if (!code)
      return makeError(code.error());
    z = *code;
  }
  out.notes.push_back("zero points stored as " + from.name() + " re-encoded as " + to.name() +
                      (fitsByte ? " codes" : " values") + " of the same values");
  m.scheme.zeroFormat = to;
  return Status::success();
}

void appendLittleEndian(std::vector<uint8_t> &bytes, uint32_t value, int size) {
  for (int i = 0; i < size; ++i)
    bytes.push_back(uint8_t(value >> (8 * i)));
}

} // namespace

Expected<std::vector<int32_t>> sortColumnsByGroup(QuantizedMatrix &m) {
  const int64_t groupSize = m.scheme.groupSize;
  if (!m.scheme.actOrder || int64_t(m.groupIndex.size()) != m.cols || groupSize < 1)
    return makeError("act-order needs a group index of K entries and a positive group size");
  std::vector<int32_t> perm(size_t(m.cols));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int32_t a, int32_t b) { return m.groupIndex[a] < m.groupIndex[b]; });
  for (int64_t j = 0; j < m.cols; ++j)
    if (m.groupIndex[size_t(perm[size_t(j)])] != j / groupSize)
      return makeError("act-order groups of unequal sizes: sorted column " + str(j) +
                       " is in group " + str(m.groupIndex[size_t(perm[size_t(j)])]) + ", not " +
                       str(j / groupSize) + " (each group must hold " + str(groupSize) +
                       " columns)");
  std::vector<uint8_t> row(size_t(m.cols));
  for (int64_t n = 0; n < m.rows; ++n) {
    uint8_t *codes = m.codes.data() + n * m.cols;
    for (int64_t j = 0; j < m.cols; ++j)
      row[size_t(j)] = codes[perm[size_t(j)]];
    std::copy(row.begin(), row.end(), codes);
  }
  m.scheme.actOrder = false;
  m.groupIndex.clear();
  return perm;
}

Expected<KernelWeights> toKernelWeights(QuantizedMatrix m, core::Activation activation,
                                        core::ActivationScale activationScale,
                                        std::optional<core::Output> output) {
  if (Status valid = formats::validateQuantizedMatrix(m); !valid)
    return makeError(valid.error());
  KernelWeights out;
  if (m.scheme.actOrder) {
    Expected<std::vector<int32_t>> perm = sortColumnsByGroup(m);
    if (!perm)
      return makeError(perm.error());
    out.permutation = std::move(perm).value();
    out.notes.push_back("act-order: columns sorted by group; a plan with act_order = 1 "
                        "gathers x by the layer's permutation");
  }
  // Two-level scales stay two-level where kernels read their codes (bytes):
  // the bytes per weight are the point of them. Only sub-scales no byte
  // holds are multiplied out, and the notes say so.
  if (m.scheme.superBlock && !core::kernelScheme(m.scheme))
    if (Status s = expandSuperBlocks(m, out); !s)
      return makeError(s.error());
  if (!core::codeFragment(m.scheme.element))
    if (Status s = widenCodes(m, out); !s)
      return makeError(s.error());
  excessToTwosComplement(m, out);
  if (m.scheme.zeroMode != formats::ZeroMode::None && m.scheme.zeroFormat &&
      !m.scheme.superBlock)
    if (Status s = normalizeZeroCodes(m, out); !s)
      return makeError(s.error());

  Expected<core::Scheme> scheme = core::kernelScheme(m.scheme);
  if (!scheme)
    return makeError(scheme.error());
  core::Problem &p = out.problem;
  p.n = m.rows;
  p.k = m.cols;
  p.activation = activation;
  p.activationScale = activationScale;
  p.output = output;
  p.code = m.scheme.element;
  p.scheme = *scheme;
  if (Status valid = core::validate(p); !valid)
    return makeError(valid.error());

  if (p.scheme.hasSuperBlocks())
    if (Status s = recodeSubBlockCodes(m, p.scheme); !s)
      return makeError(s.error());
  const int scaleBytes = core::scaleElementBytes(p);
  out.scales.reserve(m.scales.size() * size_t(scaleBytes));
  for (uint32_t scale : m.scales)
    appendLittleEndian(out.scales, scale, scaleBytes);
  if (p.scheme.tensorScale) {
    out.scales.resize(size_t(core::tensorScaleOffset(p)), 0);
    appendLittleEndian(out.scales, m.tensorScale, 4);
  }
  if (p.scheme.hasZeros()) {
    const int zeroBytes = p.scheme.zeroCodes ? 1 : scaleBytes;
    out.zeros.reserve(m.zeros.size() * size_t(zeroBytes));
    for (uint32_t zero : m.zeros)
      appendLittleEndian(out.zeros, zero, zeroBytes);
  }
  if (p.scheme.hasSuperBlocks()) {
    // The steps after their codes (core::superStepOffset).
    const int stepBytes = p.scheme.superStep->bits() / 8;
    out.scales.resize(size_t(core::superStepOffset(p)), 0);
    for (uint32_t step : m.superScales)
      appendLittleEndian(out.scales, step, stepBytes);
    if (p.scheme.hasZeros()) {
      out.zeros.resize(size_t(core::superStepOffset(p)), 0);
      for (uint32_t step : m.superMins)
        appendLittleEndian(out.zeros, step, stepBytes);
    }
    out.notes.push_back(m.scheme.scaleFormat.name() + " sub-scales" +
                        (p.scheme.hasZeros() ? " and mins" : "") + " kept as " +
                        p.scheme.scale.name() + " codes with their " +
                        p.scheme.superStep->name() + " steps per " + str(p.scheme.superBlock) +
                        " weights");
  }
  out.codes = std::move(m.codes);
  return out;
}

Expected<std::vector<double>> dequantizeKernelWeights(const KernelWeights &w) {
  const core::Problem &p = w.problem;
  Expected<formats::QuantScheme> scheme = core::quantScheme(p);
  if (!scheme)
    return makeError(scheme.error());
  QuantizedMatrix m;
  m.scheme = *scheme;
  m.rows = p.n;
  m.cols = p.k;
  m.codes = w.codes;
  const size_t slots = size_t(core::scaleCount(p));
  const int scaleBytes = core::scaleElementBytes(p);
  const int zeroBytes = p.scheme.zeroCodes ? 1 : scaleBytes;
  if (w.scales.size() != size_t(core::scaleBytes(p)) ||
      (p.scheme.hasZeros() && !p.scheme.hasSuperBlocks() &&
       w.zeros.size() != slots * size_t(zeroBytes)) ||
      (p.scheme.hasZeros() && p.scheme.hasSuperBlocks() &&
       w.zeros.size() != size_t(core::zeroBytes(p))))
    return makeError("scales or zeros of another size than the problem's " + std::to_string(slots) +
                     " slots");
  auto read = [](const std::vector<uint8_t> &bytes, size_t i, int size) {
    uint32_t value = 0;
    for (int b = 0; b < size; ++b)
      value |= uint32_t(bytes[i * size_t(size) + size_t(b)]) << (8 * b);
    return value;
  };
  if (p.scheme.tensorScale)
    m.tensorScale = read(w.scales, size_t(core::tensorScaleOffset(p)) / 4, 4);
  for (size_t i = 0; i < slots; ++i) {
    m.scales.push_back(read(w.scales, i, scaleBytes));
    if (p.scheme.hasZeros())
      m.zeros.push_back(read(w.zeros, i, zeroBytes));
  }
  if (p.scheme.hasSuperBlocks()) {
    const int stepBytes = p.scheme.superStep->bits() / 8;
    const size_t first = size_t(core::superStepOffset(p)) / size_t(stepBytes);
    for (size_t i = 0; i < size_t(core::superStepCount(p)); ++i) {
      m.superScales.push_back(read(w.scales, first + i, stepBytes));
      if (p.scheme.hasZeros())
        m.superMins.push_back(read(w.zeros, first + i, stepBytes));
    }
  }
  return formats::dequantize(m);
}

} // namespace lowbit::checkpoint
