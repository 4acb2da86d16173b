// Helpers shared by the format tests: independent reference conversions and
// random matrices.
#pragma once

#include "core/formats/Quantize.h"

#include <cstdint>
#include <vector>

namespace lowbit::formats::test {

// IEEE f16 and bf16 through the compiler's own types, independent of
// MiniFloat.
double halfBitsToDouble(uint16_t bits);
uint16_t doubleToHalfBits(double value); // RNE via _Float16
double bf16BitsToDouble(uint16_t bits);

std::vector<double> gaussianMatrix(int64_t rows, int64_t cols, uint32_t seed, double sigma = 1.0);

// Half the larger gap between the value of the code at (n, k) and its
// neighbours in the element's value set, times the effective scale: the
// largest error round-to-nearest may make there.
double halfStepAt(const QuantizedMatrix &m, int64_t n, int64_t k);

} // namespace lowbit::formats::test
