// How well each built-in scheme keeps a seeded Gaussian matrix: bits per
// weight and the SNR of quantize -> dequantize, what `lowbit formats --snr`
// prints. The matrix is reproducible outside lowbit (a small C program can
// generate the same numbers), so other quantizers, llama.cpp's reference
// ones say, can be measured on exactly the same data.
#pragma once

#include "core/formats/Quantize.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::formats {

// rows x cols standard normal values, row-major: splitmix64 draws two
// uniforms u1, u2 (the top 53 bits of each output, times 2^-53), and
// Box-Muller turns them into sqrt(-2 ln(1 - u1)) · cos(2π u2) and the same
// times sin(2π u2), in that order; each value is then rounded to f32, so a
// tool that reads f32 (llama.cpp's quantizers) sees exactly these weights.
std::vector<double> seededGaussianMatrix(int64_t rows, int64_t cols, uint64_t seed);

struct QualityMatrix {
  int64_t rows = 256;
  int64_t cols = 4096;
  uint64_t seed = 17;
};

struct SchemeQuality {
  std::string scheme;
  double bitsPerWeight = 0; // bitsPerWeight(scheme): metadata included
  double snrDb = 0;         // quantize (default options) -> dequantize
  std::string error;        // why the scheme could not quantize the matrix; empty on success

  bool ok() const { return error.empty(); }
};

// One entry per builtinSchemes() scheme, in that order.
std::vector<SchemeQuality> builtinSchemeQuality(const QualityMatrix &matrix = {});

} // namespace lowbit::formats
