#include "FormatTestUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace lowbit::formats::test {

double halfBitsToDouble(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return double(h);
}

uint16_t doubleToHalfBits(double value) {
  _Float16 h = _Float16(value);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

double bf16BitsToDouble(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16; // bf16 is the top half of an f32
  float f;
  std::memcpy(&f, &wide, 4);
  return double(f);
}

std::vector<double> gaussianMatrix(int64_t rows, int64_t cols, uint32_t seed, double sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, sigma);
  std::vector<double> w(size_t(rows * cols));
  for (double &x : w)
    x = normal(rng);
  return w;
}

double halfStepAt(const QuantizedMatrix &m, int64_t n, int64_t k) {
  const QuantScheme &scheme = m.scheme;
  int64_t slot = m.slotOf(n, k);
  double scale = scheme.scaleFormat.decode(m.scales[size_t(slot)]);
  if (scheme.superBlock)
    scale *= scheme.superBlock->superScaleFormat.decode(
        m.superScales[size_t(n * (m.cols / scheme.superBlock->size) + k / scheme.superBlock->size)]);
  if (scheme.tensorScale)
    scale *= DataFormat::f32().decode(m.tensorScale);
  std::vector<double> values;
  for (uint32_t code = 0; code < scheme.element.codeCount(); ++code)
    if (scheme.element.isValidCode(code) && !scheme.element.isNanCode(code))
      values.push_back(scheme.element.decode(code));
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  double v = scheme.element.decode(m.codes[size_t(n * m.cols + k)]);
  auto it = std::lower_bound(values.begin(), values.end(), v);
  double gap = 0;
  if (it != values.begin())
    gap = std::max(gap, v - *(it - 1));
  if (it + 1 != values.end())
    gap = std::max(gap, *(it + 1) - v);
  return gap / 2 * std::fabs(scale);
}

} // namespace lowbit::formats::test
