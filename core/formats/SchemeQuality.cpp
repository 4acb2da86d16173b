#include "core/formats/SchemeQuality.h"

#include <cmath>

namespace lowbit::formats {

namespace {

// splitmix64 (Steele, Lea and Flood's SplittableRandom finalizer): a
// generator so small that anyone can reimplement it bit for bit, unlike
// std::normal_distribution, whose algorithm is the standard library's own.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

private:
  uint64_t state_;
};

} // namespace

std::vector<double> seededGaussianMatrix(int64_t rows, int64_t cols, uint64_t seed) {
  const size_t count = size_t(rows * cols);
  std::vector<double> out(count);
  SplitMix64 random(seed);
  const double twoPi = 6.283185307179586476925286766559;
  for (size_t i = 0; i < count; i += 2) {
    // 1 - u1 is in (0, 1], so the logarithm is finite.
    const double u1 = 1.0 - random.uniform(), u2 = random.uniform();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    out[i] = double(float(radius * std::cos(twoPi * u2)));
    if (i + 1 < count)
      out[i + 1] = double(float(radius * std::sin(twoPi * u2)));
  }
  return out;
}

std::vector<SchemeQuality> builtinSchemeQuality(const QualityMatrix &matrix) {
  std::vector<SchemeQuality> table;
  const std::vector<double> weights =
      seededGaussianMatrix(matrix.rows, matrix.cols, matrix.seed);
  for (const QuantScheme &scheme : builtinSchemes()) {
    SchemeQuality row;
    row.scheme = scheme.name;
    row.bitsPerWeight = bitsPerWeight(scheme);
    Expected<QualityReport> quality =
        quantizationQuality(weights.data(), matrix.rows, matrix.cols, scheme);
    if (quality)
      row.snrDb = quality->snrDb;
    else
      row.error = quality.error();
    table.push_back(std::move(row));
  }
  return table;
}

} // namespace lowbit::formats
