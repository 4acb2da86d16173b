// Calibrated quantization: GPTQ (Frantar et al., "GPTQ: Accurate
// Post-Training Quantization for Generative Pre-trained Transformers", 2022)
// over any one-scheme matrix the formats library quantizes.
//
// Round-to-nearest minimizes each weight's own error. What a layer is judged
// on is its output error ||X·(W - W')ᵀ||² over real inputs X, which is the
// quadratic form of H = XᵀX on each row's error. GPTQ quantizes one column
// at a time and spreads that column's rounding error over the columns not yet
// quantized, along H⁻¹'s Cholesky factor, so later roundings cancel it.
//
// The slots' scales and zeros are fitted before the column sweep and never
// change ("static groups"), and columns keep their group k / groupSize even
// when they are swept in another order. So the result is a plain grouped
// matrix: the kernels need no act-order permutation for it.
#pragma once

#include "core/formats/Quantize.h"

#include <vector>

namespace lowbit::formats {

struct HessianQuantizeOptions {
  // Added to H's diagonal, as a fraction of its mean diagonal: calibration
  // rarely excites every input channel, and without it H is singular.
  double damping = 0.01;
  // Sweep columns in order of decreasing H[k][k] (GPTQ's "act-order"): the
  // channels with the largest inputs are rounded first, while most columns
  // are still free to absorb their error.
  bool descendingActivationOrder = true;
  // Candidate clipping ratios c in (0, 1]: each slot's scale (and zero) is
  // fitted to its range times c, and the c with the lowest round-to-nearest
  // squared error is kept. {1} is the plain fit. Ratios below 1 need
  // a one-level scheme (no super-block, tensor scale or MX block scale).
  std::vector<double> clipRatios = {1.0};
};

// The clipping ratios 1, 0.98, ..., 0.72: the search AWQ and GPTQ's MSE mode use.
std::vector<double> defaultClipRatios();

// Cost, in double on one thread: O(K³) to factor H and O(N·K²) for the
// sweep (the 36 layers of all-MiniLM-L6-v2, K <= 1536, take seconds).
//
// W[N][K] (row-major) quantized with GPTQ under H[K][K] (row-major,
// symmetric positive semi-definite, e.g. the sum of xᵀx over calibration
// inputs x). Errors name the bad argument: a non-finite or negative-diagonal
// H, an H that stays singular after damping, an act-order scheme (this
// quantizer's groups are static), bad ratios.
Expected<QuantizedMatrix> quantizeWithHessian(const double *weights, int64_t rows, int64_t cols,
                                              const double *hessian, const QuantScheme &scheme,
                                              const HessianQuantizeOptions &options = {});

} // namespace lowbit::formats
