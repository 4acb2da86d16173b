#include "core/formats/LutFormat.h"
#include "core/support/FormatNumber.h"

#include <algorithm>
#include <cmath>

namespace lowbit::formats {

Status validateLutFormat(const LutFormat &format) {
  if (format.bits < 1 || format.bits > 8)
    return makeError("lookup formats have 1..8 bits; got " + std::to_string(format.bits));
  size_t expected = size_t(1) << format.bits;
  if (format.table.size() != expected)
    return makeError("table for lut<" + std::to_string(format.bits) + "> '" + format.name +
                     "' has " + std::to_string(format.table.size()) + " entries; expected " +
                     std::to_string(expected));
  for (size_t i = 0; i < format.table.size(); ++i)
    if (!std::isfinite(format.table[i]))
      return makeError("table entry " + std::to_string(i) + " of lut '" + format.name +
                       "' is not finite");
  return Status::success();
}

Expected<uint32_t> encodeLut(const LutFormat &format, double value, Rounding rounding,
                             OnOverflow onOverflow) {
  if (!std::isfinite(value))
    return makeError("value is not finite; lut '" + format.name + "' has only finite entries");
  const auto &table = format.table;
  double lowest = *std::min_element(table.begin(), table.end());
  double highest = *std::max_element(table.begin(), table.end());
  int best = -1;
  double bestDistance = INFINITY;
  for (size_t code = 0; code < table.size(); ++code) {
    double entry = table[code];
    if (rounding == Rounding::TowardPositive && entry < value)
      continue;
    double distance = std::fabs(entry - value);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = int(code);
    }
  }
  // Out of range means further from the nearest extreme than that extreme is
  // from its neighbour: a table has no "half step" beyond its ends, so we
  // borrow the outermost gap.
  auto outermostGap = [&](bool top) {
    std::vector<double> sorted(table.begin(), table.end());
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    if (sorted.size() < 2)
      return 0.0;
    return top ? sorted.back() - sorted[sorted.size() - 2] : sorted[1] - sorted[0];
  };
  bool above = value > highest + outermostGap(true) / 2;
  bool below = value < lowest - outermostGap(false) / 2;
  if (best < 0 || above || below) {
    if (onOverflow == OnOverflow::Saturate) {
      double target = value > highest ? highest : lowest;
      return uint32_t(std::find(table.begin(), table.end(), target) - table.begin());
    }
    return makeError("value " + formatDouble(value) + " is outside the range [" +
                     formatDouble(lowest) + ", " + formatDouble(highest) + "] of lut '" +
                     format.name + "'");
  }
  return uint32_t(best);
}

const std::vector<double> &nf4Table() {
  // QLoRA (Dettmers et al. 2023, appendix E) NormalFloat4: quantiles of N(0,1)
  // normalized to [-1, 1], with an exact zero. The values are the float32
  // constants bitsandbytes uses, so a float decode matches it bit for bit.
  static const std::vector<double> table = {
      double(-1.0f),
      double(-0.6961928009986877f),
      double(-0.5250730514526367f),
      double(-0.39491748809814453f),
      double(-0.28444138169288635f),
      double(-0.18477343022823334f),
      double(-0.09105003625154495f),
      double(0.0f),
      double(0.07958029955625534f),
      double(0.16093020141124725f),
      double(0.24611230194568634f),
      double(0.33791524171829224f),
      double(0.44070982933044434f),
      double(0.5626170039176941f),
      double(0.7229568362236023f),
      double(1.0f),
  };
  return table;
}

const std::vector<double> &fp4Table() {
  // The OCP e2m1 values in code order: sign bit 3, then 0, 0.5, 1, 1.5, 2, 3,
  // 4, 6. Written out literally so that a LUT decode can be compared with the
  // minifloat decode.
  static const std::vector<double> table = {0.0,  0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,
                                            -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};
  return table;
}

} // namespace lowbit::formats
