// The inputs and the reference every measurement of a problem uses: the
// benchmark (BenchFixture), the tuner's measurer (through it) and the GPU
// tests. Plain C++ over core (no CUDA, no LLVM).
//
// The weights are real ones: normally distributed W[N][K], quantized by the
// formats library with the problem's own scheme (core::quantScheme), so the
// codes, scales and zeros are what a quantizer would ship, never random codes
// (which would leave scales and zeros untested and run unrealistically). The
// reference is the formats library's f64 dequantize of those same codes,
// scales and zeros, then an f64 dot product with the activations.
//
// Large problems (28672 x 8192 has 235 M weights) are quantized in blocks of
// rows on every core, and only the reference rows (every `referenceStride`-th
// output column n) keep their dequantized f64 weights.
#pragma once

#include "core/Problem.h"
#include "core/formats/Quantize.h"
#include "core/layout/WeightLayout.h"

#include <cstdint>
#include <vector>

namespace lowbit::measure {

struct ProblemInputOptions {
  uint64_t seed = 0x1b17;
  // Output columns n with n % referenceStride == 0 get a reference: 7 keeps
  // the check cheap next to a timing while crossing every N tile; the GPU
  // tests check every column with 1.
  int64_t referenceStride = 7;
  // Weights quantized per block of rows (one block per thread at a time);
  // tests make it small so that blocks start at every phase of the stride.
  int64_t blockWeights = int64_t{1} << 22;
};

// What a kernel reads, laid out as it reads it (the kernel ABI is x, packed
// w, scales, [zeros,] y, M):
//  - codes: N x K, one code per byte (the format's code bits), for
//    layout::packWeights with the kernel's weight layout;
//  - scales: [N][K / group] (per channel [N], per tensor [1]) elements of the
//    scale dtype, little-endian bit patterns (f16, bf16, f32, or one byte of
//    e8m0 / e4m3fn), then with a tensor scale its f32 at
//    core::tensorScaleOffset (core::scaleBytes in all);
//  - zeros: the scales' shape, in the scale dtype, or for quantized zeros
//    their codes packed as core::packZeroCodes says (two uint4 codes a byte);
//    empty without zero points.
struct ProblemInputs {
  core::Problem problem;
  std::vector<uint8_t> codes;
  std::vector<uint8_t> scales;
  std::vector<uint8_t> zeros;
  int64_t referenceStride = 7;
  // The dequantized f64 weights of the reference columns, K each, column
  // n = referenceStride * i at [i * K, (i + 1) * K).
  std::vector<double> referenceWeights;

  int64_t referenceColumns() const { return (problem.n + referenceStride - 1) / referenceStride; }
  // Σ_k x[k] · W[n, k] in f64, for a reference column n (n % stride == 0).
  double reference(const double *x, int64_t n) const;
  // The codes packed for `layout`.
  Expected<std::vector<uint8_t>> packed(const layout::WeightLayout &layout) const;
};

// Quantizes fresh normal weights for `problem`. Fails, naming the problem,
// when the formats library has no scheme for it (core::quantScheme) or a
// code is wider than a byte.
Expected<ProblemInputs> makeProblemInputs(const core::Problem &problem,
                                          const ProblemInputOptions &options = {});

// The same from codes, scales and zeros the caller chose instead of a
// quantizer (the GPU decode test's every code at every position, under scale
// 1): `quantized` must be the problem's N x K matrix in its scheme (element,
// granularity, scale and zero formats); the reference is its f64 dequantize.
Expected<ProblemInputs> problemInputsFromQuantized(const core::Problem &problem,
                                                   const formats::QuantizedMatrix &quantized,
                                                   int64_t referenceStride = 1);

// ‖got − ref‖ / ‖ref‖ over the reference columns of `rows` output rows: `x`
// holds those rows' activations (rows x K, as f64) and `y` their outputs
// (rows x N, decoded to f64). A NaN or infinite output counts as a huge
// error. Spread over the host's cores for large problems.
double relativeError(const ProblemInputs &inputs, const std::vector<double> &x,
                     const std::vector<double> &y, int64_t rows);

// The tolerance of that relative error for the compute dtype: 2e-3 for f16,
// 1e-2 for bf16 (8 mantissa bits against f16's 11).
double defaultTolerance(core::Activation activation);

// 64 random bits from `state` (splitmix64): cheap, seedable, and good enough
// for test data.
uint64_t randomBits(uint64_t &state);

// f16 / bf16 bit patterns and their values (round to nearest even).
uint16_t activationBits(double value, core::Activation activation);
double activationValue(uint16_t bits, core::Activation activation);
// Element `index` of y's bytes in `output` (f16, bf16 or f32), as f64.
double outputValue(const std::vector<uint8_t> &y, size_t index, core::Output output);

} // namespace lowbit::measure
