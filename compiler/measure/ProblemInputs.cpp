#include "compiler/measure/ProblemInputs.h"

#include "core/formats/Quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

namespace lowbit::measure {
namespace {

// The seed of block `block`'s weights.
uint64_t blockSeed(uint64_t seed, int64_t block) {
  return seed ^ (0x5851F42D4C957F2Dull * static_cast<uint64_t>(block + 1));
}

// A uniform in (0, 1]: never 0, so its logarithm is finite.
double uniform(uint64_t &state) {
  return (static_cast<double>(randomBits(state) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

// Normal weights of the size LLM layers have (σ = 0.02), by Box-Muller.
// `nonNegative` folds them to |w|: unsigned codes without a zero point can
// only mean w = q·s >= 0, and the quantizer rightly refuses anything else.
void normalWeights(uint64_t seed, bool nonNegative, double *out, size_t count) {
  constexpr double kSigma = 0.02;
  constexpr double kTwoPi = 6.283185307179586;
  for (size_t i = 0; i < count; i += 2) {
    double radius = kSigma * std::sqrt(-2.0 * std::log(uniform(seed)));
    double angle = kTwoPi * uniform(seed);
    out[i] = radius * std::cos(angle);
    if (i + 1 < count)
      out[i + 1] = radius * std::sin(angle);
  }
  if (nonNegative)
    for (size_t i = 0; i < count; ++i)
      out[i] = std::fabs(out[i]);
}

// The low `bytes` bytes of each code, little-endian: the bit patterns a
// kernel reads (f16 / bf16 / f32 scales, one byte per zero code).
void storeCodes(const std::vector<uint32_t> &codes, int bytes, uint8_t *out) {
  for (size_t i = 0; i < codes.size(); ++i)
    for (int b = 0; b < bytes; ++b)
      out[i * static_cast<size_t>(bytes) + static_cast<size_t>(b)] =
          static_cast<uint8_t>(codes[i] >> (8 * b));
}

// Runs work(i) for i in [0, count) on up to 16 threads (the calling one
// included); a thread that cannot be started leaves its share to the others.
template <typename Work> void forEachOnCores(int64_t count, const Work &work) {
  std::atomic<int64_t> next{0};
  auto run = [&] {
    for (int64_t i = next++; i < count; i = next++)
      work(i);
  };
  const int64_t threads =
      std::clamp<int64_t>(std::min<int64_t>(std::thread::hardware_concurrency(), 16), 1, count);
  std::vector<std::thread> workers;
  for (int64_t t = 1; t < threads; ++t) {
    try {
      workers.emplace_back(run);
    } catch (const std::system_error &) {
      break;
    }
  }
  run();
  for (std::thread &worker : workers)
    worker.join();
}

// The rows of `block` (whose first row is row0 of the whole matrix) that are
// reference rows, as a matrix of their own: dequantizing only those keeps
// the reference cheap (a seventh of the rows, by default). Scales and zeros
// are per row here, except the one tensor scale.
formats::QuantizedMatrix referenceRows(const formats::QuantizedMatrix &block, int64_t row0,
                                       int64_t stride) {
  formats::QuantizedMatrix out;
  out.scheme = block.scheme;
  out.cols = block.cols;
  const bool perTensor = block.scheme.granularity == formats::Granularity::PerTensor;
  const int64_t slotsPerRow = perTensor ? 0 : block.scaleCols();
  out.tensorScale = block.tensorScale;
  if (perTensor) {
    out.scales = block.scales;
    out.zeros = block.zeros;
  }
  for (int64_t r = (stride - row0 % stride) % stride; r < block.rows; r += stride) {
    ++out.rows;
    out.codes.insert(out.codes.end(), block.codes.begin() + r * block.cols,
                     block.codes.begin() + (r + 1) * block.cols);
    if (perTensor)
      continue;
    out.scales.insert(out.scales.end(), block.scales.begin() + r * slotsPerRow,
                      block.scales.begin() + (r + 1) * slotsPerRow);
    if (!block.zeros.empty())
      out.zeros.insert(out.zeros.end(), block.zeros.begin() + r * slotsPerRow,
                       block.zeros.begin() + (r + 1) * slotsPerRow);
    if (block.scheme.superBlock) {
      const int64_t steps = block.cols / block.scheme.superBlock->size;
      out.superScales.insert(out.superScales.end(), block.superScales.begin() + r * steps,
                             block.superScales.begin() + (r + 1) * steps);
      if (!block.superMins.empty())
        out.superMins.insert(out.superMins.end(), block.superMins.begin() + r * steps,
                             block.superMins.begin() + (r + 1) * steps);
    }
  }
  return out;
}

// `problem`'s inputs with every buffer sized and nothing in it yet.
ProblemInputs sizedInputs(const core::Problem &problem, int64_t referenceStride) {
  ProblemInputs in;
  in.problem = problem;
  in.referenceStride = referenceStride;
  const int64_t n = problem.n, k = problem.k;
  in.codes.resize(static_cast<size_t>(n * k));
  in.scales.resize(static_cast<size_t>(core::scaleBytes(problem)));
  // With super-blocks the zeros buffer is already the kernels' (codes, then
  // steps); quantized zero codes are packed after storing (packZeroCodes).
  in.zeros.resize(static_cast<size_t>(
      problem.scheme.hasSuperBlocks() ? core::zeroBytes(problem)
                                      : core::scaleCount(problem) * core::zeroElementBytes(problem)));
  in.referenceWeights.resize(static_cast<size_t>(in.referenceColumns() * k));
  return in;
}

// NVFP4's tensor scale goes after the block scales, where kernels read it
// (core::tensorScaleOffset); the bytes between stay zero.
void storeTensorScale(ProblemInputs &in, uint32_t bits) {
  const int64_t offset = core::tensorScaleOffset(in.problem);
  if (offset >= 0)
    storeCodes({bits}, 4, &in.scales[static_cast<size_t>(offset)]);
}

// The whole matrix's NVFP4 tensor scale, from the largest |w| of every block
// of rows (each generated as makeProblemInputs generates it), so that blocks
// quantized apart share it.
Expected<uint32_t> wholeTensorScale(const formats::QuantScheme &scheme, int64_t n, int64_t k,
                                    int64_t blockRows, bool nonNegative, uint64_t seed) {
  const int64_t blocks = (n + blockRows - 1) / blockRows;
  std::vector<double> blockMax(static_cast<size_t>(blocks), 0.0);
  forEachOnCores(blocks, [&](int64_t block) {
    const int64_t rows = std::min(blockRows, n - block * blockRows);
    std::vector<double> weights(static_cast<size_t>(rows * k));
    normalWeights(blockSeed(seed, block), nonNegative, weights.data(), weights.size());
    for (double w : weights)
      blockMax[static_cast<size_t>(block)] =
          std::max(blockMax[static_cast<size_t>(block)], std::fabs(w));
  });
  return formats::nvfp4TensorScale(scheme, *std::max_element(blockMax.begin(), blockMax.end()));
}

// Quantized zero codes are stored one a byte (storeBlock), then packed as
// kernels read them (core::packZeroCodes: two uint4 a byte).
Status packZeroCodes(ProblemInputs &in) {
  if (!in.problem.scheme.zeroCodes)
    return Status();
  std::vector<uint8_t> codes = std::move(in.zeros);
  in.zeros.assign(static_cast<size_t>(core::zeroBytes(in.problem)), 0);
  return core::packZeroCodes(in.problem, codes.data(), codes.size(), in.zeros.data(),
                             in.zeros.size());
}

// Stores `q`, the quantized rows [row0, row0 + q.rows) of the whole matrix,
// into `in` as a kernel reads them, with the f64 dequantize of its
// reference rows. Blocks touch disjoint parts of `in`, so several threads
// may store theirs at once.
Status storeBlock(ProblemInputs &in, const formats::QuantizedMatrix &q, int64_t row0) {
  const core::Problem &problem = in.problem;
  const int64_t k = problem.k;
  const int64_t firstReference = (row0 + in.referenceStride - 1) / in.referenceStride;
  if (firstReference * in.referenceStride < row0 + q.rows) {
    Expected<std::vector<double>> reference =
        formats::dequantize(referenceRows(q, row0, in.referenceStride));
    if (!reference)
      return makeError(reference.error());
    std::copy(reference->begin(), reference->end(),
              in.referenceWeights.begin() + firstReference * k);
  }
  std::copy(q.codes.begin(), q.codes.end(), in.codes.begin() + row0 * k);
  const int scaleBytes = core::scaleElementBytes(problem);
  const int zeroBytes = core::zeroElementBytes(problem);
  const int64_t slot0 =
      problem.scheme.granularity == formats::Granularity::PerTensor ? 0 : row0 * q.scaleCols();
  storeCodes(q.scales, scaleBytes, &in.scales[static_cast<size_t>(slot0 * scaleBytes)]);
  if (zeroBytes)
    storeCodes(q.zeros, zeroBytes, &in.zeros[static_cast<size_t>(slot0 * zeroBytes)]);
  if (problem.scheme.hasSuperBlocks()) {
    // The rows' steps after the codes (core::superStepOffset).
    const int stepBytes = problem.scheme.superStep->bits() / 8;
    const size_t at = static_cast<size_t>(core::superStepOffset(problem) +
                                          row0 * (k / problem.scheme.superBlock) * stepBytes);
    storeCodes(q.superScales, stepBytes, &in.scales[at]);
    if (problem.scheme.hasZeros())
      storeCodes(q.superMins, stepBytes, &in.zeros[at]);
  }
  return Status();
}

// What every way of making inputs rejects, as the reason.
Status checkInputProblem(const core::Problem &problem, int64_t referenceStride) {
  if (Status valid = core::validate(problem); !valid)
    return valid;
  if (problem.scheme.actOrder)
    return makeError("act-order inputs (a g_idx permutation) are not made yet");
  if (problem.code.bits() > 8)
    return makeError("codes wider than a byte");
  if (referenceStride < 1)
    return makeError("the reference stride must be positive");
  return Status();
}

} // namespace

uint64_t randomBits(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double ProblemInputs::reference(const double *x, int64_t n) const {
  const double *w = &referenceWeights[static_cast<size_t>(n / referenceStride * problem.k)];
  double sum = 0;
  for (int64_t k = 0; k < problem.k; ++k)
    sum += x[k] * w[k];
  return sum;
}

Expected<std::vector<uint8_t>> ProblemInputs::packed(const layout::WeightLayout &layout) const {
  if (layout.codeBits != problem.codeBits())
    return makeError(problem.name + ": a layout for " + std::to_string(layout.codeBits) +
                     "-bit codes cannot pack " + problem.code.name());
  int64_t bytes = layout::packedBytes(layout, problem.n, problem.k);
  if (bytes < 0)
    return makeError(problem.name + ": " + layout::checkShape(layout, problem.n, problem.k).error());
  std::vector<uint8_t> out(static_cast<size_t>(bytes));
  if (Status s = layout::packWeights(layout, problem.n, problem.k, codes.data(), out.data(),
                                     out.size());
      !s.ok())
    return makeError(problem.name + ": " + s.error());
  return out;
}

Expected<ProblemInputs> makeProblemInputs(const core::Problem &problem,
                                          const ProblemInputOptions &options) {
  auto bad = [&](const std::string &why) {
    return makeError("no inputs for problem " + problem.name + " (" + core::signature(problem) +
                     "): " + why);
  };
  if (Status s = checkInputProblem(problem, options.referenceStride); !s)
    return bad(s.error());
  Expected<formats::QuantScheme> scheme = core::quantScheme(problem);
  if (!scheme)
    return bad(scheme.error());
  if (options.blockWeights < 1)
    return bad("the block size must be positive");

  ProblemInputs in = sizedInputs(problem, options.referenceStride);
  const int64_t n = problem.n, k = problem.k;
  // Channel and group scales are per row, so blocks of rows quantize alone;
  // one tensor scale needs the whole matrix.
  const bool perTensor = problem.scheme.granularity == formats::Granularity::PerTensor;
  const int64_t blockRows = perTensor ? n : std::max<int64_t>(1, options.blockWeights / k);
  const int64_t blocks = (n + blockRows - 1) / blockRows;
  const bool nonNegative = !problem.code.isSigned() && !problem.scheme.hasZeros();
  formats::QuantizeOptions quantizeOptions;
  if (scheme->tensorScale) {
    Expected<uint32_t> tensorScale =
        wholeTensorScale(*scheme, n, k, blockRows, nonNegative, options.seed);
    if (!tensorScale)
      return bad(tensorScale.error());
    quantizeOptions.tensorScale = *tensorScale;
    storeTensorScale(in, *tensorScale);
  }
  std::mutex failureLock;
  std::string failure;
  forEachOnCores(blocks, [&](int64_t block) {
    const int64_t row0 = block * blockRows, rows = std::min(blockRows, n - row0);
    std::vector<double> weights(static_cast<size_t>(rows * k));
    normalWeights(blockSeed(options.seed, block), nonNegative, weights.data(), weights.size());
    Expected<formats::QuantizedMatrix> q =
        formats::quantize(weights.data(), rows, k, *scheme, quantizeOptions);
    Status stored = q ? storeBlock(in, *q, row0) : Status(makeError(q.error()));
    if (!stored) {
      std::lock_guard<std::mutex> lock(failureLock);
      failure = stored.error();
    }
  });
  if (!failure.empty())
    return bad(failure);
  if (Status packed = packZeroCodes(in); !packed)
    return bad(packed.error());
  return in;
}

Expected<ProblemInputs> problemInputsFromQuantized(const core::Problem &problem,
                                                   const formats::QuantizedMatrix &quantized,
                                                   int64_t referenceStride) {
  auto bad = [&](const std::string &why) {
    return makeError("no inputs for problem " + problem.name + " (" + core::signature(problem) +
                     ") from the given codes: " + why);
  };
  if (Status s = checkInputProblem(problem, referenceStride); !s)
    return bad(s.error());
  if (quantized.rows != problem.n || quantized.cols != problem.k)
    return bad("the matrix is " + std::to_string(quantized.rows) + " x " +
               std::to_string(quantized.cols) + ", the problem " + std::to_string(problem.n) +
               " x " + std::to_string(problem.k));
  Expected<core::Scheme> scheme = core::kernelScheme(quantized.scheme);
  if (!scheme)
    return bad(scheme.error());
  if (quantized.scheme.element != problem.code || *scheme != problem.scheme)
    return bad("the matrix is in " + formats::describeScheme(quantized.scheme) +
               ", not the problem's scheme");
  // Sizes and every code's validity, so storing cannot overrun a buffer.
  if (Status s = formats::validateQuantizedMatrix(quantized); !s)
    return bad(s.error());
  ProblemInputs in = sizedInputs(problem, referenceStride);
  if (Status s = storeBlock(in, quantized, 0); !s)
    return bad(s.error());
  storeTensorScale(in, quantized.tensorScale);
  if (Status packed = packZeroCodes(in); !packed)
    return bad(packed.error());
  return in;
}

double relativeError(const ProblemInputs &inputs, const std::vector<double> &x,
                     const std::vector<double> &y, int64_t rows) {
  const int64_t n = inputs.problem.n, k = inputs.problem.k;
  const int64_t columns = inputs.referenceColumns();
  // Column blocks of about a million multiply-adds each.
  const int64_t blocks = std::clamp<int64_t>(rows * columns * k / (1 << 20), 1, 64);
  std::vector<std::pair<double, double>> sums(static_cast<size_t>(blocks));
  forEachOnCores(blocks, [&](int64_t block) {
    double errorSquared = 0, referenceSquared = 0;
    for (int64_t i = columns * block / blocks; i < columns * (block + 1) / blocks; ++i) {
      const int64_t column = i * inputs.referenceStride;
      for (int64_t r = 0; r < rows; ++r) {
        double ref = inputs.reference(&x[static_cast<size_t>(r * k)], column);
        double got = y[static_cast<size_t>(r * n + column)];
        errorSquared += std::isfinite(got) ? (got - ref) * (got - ref) : 1e30;
        referenceSquared += ref * ref;
      }
    }
    sums[static_cast<size_t>(block)] = {errorSquared, referenceSquared};
  });
  double errorSquared = 0, referenceSquared = 0;
  for (const auto &[error, reference] : sums) {
    errorSquared += error;
    referenceSquared += reference;
  }
  return referenceSquared > 0 ? std::sqrt(errorSquared / referenceSquared)
                              : (errorSquared > 0 ? INFINITY : 0);
}

double defaultTolerance(core::Activation activation) {
  return activation == core::Activation::BF16 ? 1e-2 : 2e-3;
}

uint16_t activationBits(double value, core::Activation activation) {
  if (activation == core::Activation::BF16) {
    float v = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
  }
  _Float16 h = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

double activationValue(uint16_t bits, core::Activation activation) {
  if (activation == core::Activation::BF16) {
    uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float v;
    std::memcpy(&v, &wide, 4);
    return v;
  }
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<double>(h);
}

double outputValue(const std::vector<uint8_t> &y, size_t index, core::Output output) {
  if (output == core::Output::F32) {
    float value;
    std::memcpy(&value, y.data() + 4 * index, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, y.data() + 2 * index, 2);
  return activationValue(bits, output == core::Output::BF16 ? core::Activation::BF16
                                                            : core::Activation::F16);
}

} // namespace lowbit::measure
