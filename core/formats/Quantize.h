// Reference quantize and dequantize. Everything is computed in double; a
// stored scale, zero or code is always the code of its declared format, so
// dequantize() is exactly what a kernel computes before its own rounding.
#pragma once

#include "core/formats/Scheme.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace lowbit::formats {

// W[N][K] in a scheme. Codes are kept one per byte (unpacked); Pack.h packs
// them. Scale and zero slots are laid out [scaleRows][scaleCols]:
//   per-tensor 1 x 1, per-channel N x 1, per-group N x (K / groupSize).
struct QuantizedMatrix {
  QuantScheme scheme;
  int64_t rows = 0; // N
  int64_t cols = 0; // K
  std::vector<uint8_t> codes;          // N * K element codes, row-major
  std::vector<uint32_t> scales;        // scaleFormat codes, one per slot
  std::vector<uint32_t> zeros;         // zeroFormat codes, one per slot (zero modes only)
  std::vector<uint32_t> superScales;   // N x (K / superBlock.size) superScaleFormat codes
  std::vector<uint32_t> superMins;     // same shape, superMinFormat codes (q·s - z only)
  uint32_t tensorScale = 0;            // f32 bits (tensorScale schemes only)
  std::vector<int32_t> groupIndex;     // g_idx: K entries, act-order only

  int64_t scaleRows() const;
  int64_t scaleCols() const;
  // The slot (index into scales / zeros) of weight (n, k).
  int64_t slotOf(int64_t n, int64_t k) const;
};

// How quantize() picks scales (and zeros, mins and super-block steps).
enum class ScaleFit {
  // The default. Integer elements without a zero point (one-level or in
  // super-blocks) and two-level schemes with mins (GGUF Q4_K, the compact
  // int4 encoding) get the searches of ScaleSearch.h: each slot's scale, or
  // super-block's sub-scale codes, mins and steps, are chosen to make its
  // round-to-nearest squared error small, so an outlying weight may be
  // clamped to an end code when that makes every other step finer. Elements
  // are then rounded to nearest with saturation. Per slot (one-level) or per
  // super-block, the search never does worse than Range, whose choice is
  // one of its candidates; on GGUF Q4_0 and Q4_K it matches or beats
  // llama.cpp's reference quantizers (SchemeQualityTest). Other schemes
  // (minifloats, tables, MX, NVFP4, one-level zero points) take Range.
  Search,
  // The range fit below: no weight is ever clamped.
  Range,
};

struct QuantizeOptions {
  ScaleFit fit = ScaleFit::Search;
  // Act-order: the group of column k (values in [0, K / groupSize)). Required
  // when the scheme has actOrder, rejected otherwise.
  std::vector<int32_t> groupIndex;
  // NVFP4 (tensorScale schemes): the f32 bits of the tensor scale to use
  // instead of the one the weights' own amax gives, so that blocks of rows
  // quantized apart share the whole matrix's (nvfp4TensorScale). Rejected
  // for other schemes.
  std::optional<uint32_t> tensorScale;
};

// NVFP4's tensor scale for a matrix whose largest |w| is `amax`: the f32 bits
// of amax / (element max · scale max), 1 for an all-zero matrix.
Expected<uint32_t> nvfp4TensorScale(const QuantScheme &scheme, double amax);

// Round-to-nearest reference quantization of W[N][K] (row-major).
//
// options.fit = ScaleFit::Search (the default) searches the scales of the
// schemes it names (see ScaleFit). The range fit, which ScaleFit::Range
// asks for and every other scheme gets:
// generic schemes pick each slot's scale so that every weight is in range
// and then round the scale *up* to its stored format, so no weight is ever
// clamped: |w - dequant(w)| <= half the local step (s/2 for integers).
//  - zero none: s = max(max(w)/maxValue, min(w)/minValue) over the slot
//    (symmetric for signed elements);
//  - (q - z)·s and q·s - z: the slot range is widened to include 0, then
//    s = (hi - lo) / (maxValue - minValue) and z puts lo on the lowest code;
//    if rounding z to its format pushes an extreme out of range the scale is
//    bumped to its next representable value.
//  - super-blocks (GGUF k-quants): super-scale = max sub-scale / max sub-code,
//    each rounded up, mins first so the scales can cover them.
// MX (OCP MX v1.0 section 6.3): X = 2^(floor(log2(amax)) - emax_elem), elements
// = RNE(v / X) saturated to the element's max normal, as the spec says.
// NVFP4: tensor scale = amax / (6 * 448) in f32 (or options.tensorScale),
// block scale = e4m3(block amax / 6 / tensor scale), elements RNE with
// saturation.
Expected<QuantizedMatrix> quantize(const double *weights, int64_t rows, int64_t cols,
                                   const QuantScheme &scheme, const QuantizeOptions &options = {});

// Checks every shape, code and slot, then decodes to f64 W[N][K]. A NaN code
// or scale is an error (it names the position), never a silent NaN.
Expected<std::vector<double>> dequantize(const QuantizedMatrix &matrix);
// Structural checks only (sizes, code validity, g_idx range).
Status validateQuantizedMatrix(const QuantizedMatrix &matrix);
// Every code of a row-major rows x cols matrix, one per byte, is a valid
// code of `element` that decodes to a finite value (NaN and Inf codes are no
// weights): a byte with bits set above the width, or
// ternary's unused code 3, is an error that names the first such position
// and what the valid codes are.
Status checkElementCodes(const DataFormat &element, const uint8_t *codes, int64_t rows,
                         int64_t cols);

struct QualityReport {
  double snrDb = 0;           // 10 log10(sum w^2 / sum (w - w')^2); +inf when exact
  double maxRelativeError = 0; // max |w - w'| / |w| over weights with w != 0
  double meanRelativeError = 0;
  double maxAbsoluteError = 0;
  double relativeFrobeniusError = 0; // ||W - W'|| / ||W||
};

QualityReport measureQuality(const double *reference, const double *approximation, size_t count);
// quantize -> dequantize on the matrix, then measureQuality.
Expected<QualityReport> quantizationQuality(const double *weights, int64_t rows, int64_t cols,
                                            const QuantScheme &scheme,
                                            const QuantizeOptions &options = {});

} // namespace lowbit::formats
