#include "core/checkpoint/PackedLayerShapes.h"

namespace lowbit::checkpoint {
namespace {

std::string str(int64_t value) {
  return std::to_string(value);
}

std::string misfit(const Shape &qweight, const Shape &qzeros, const Shape &scales) {
  return "shapes qweight " + shapeText(qweight) + ", qzeros " + shapeText(qzeros) + ", scales " +
         shapeText(scales) + " do not fit together";
}

} // namespace

std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + str(shape[i]);
  return text + "]";
}

Expected<formats::GptqCheckpoint> gptqLayerShape(const Shape &qweight, const Shape &qzeros,
                                                 const Shape &scales, bool v2) {
  if (qweight.size() != 2 || qzeros.size() != 2 || scales.size() != 2)
    return makeError(misfit(qweight, qzeros, scales) + " (each has 2 dimensions)");
  const int64_t n = scales[1], groups = scales[0];
  // Every product below is of dimensions below 2^56 times 32 at most, so it
  // cannot overflow.
  if (n < 1 || groups < 1 || qweight[1] != n || qzeros[0] != groups || qzeros[1] < 1 ||
      qweight[0] < 1 || qzeros[1] > (int64_t{1} << 56) || qweight[0] > (int64_t{1} << 56) ||
      (qzeros[1] * 32) % n != 0)
    return makeError(misfit(qweight, qzeros, scales));
  const int64_t bits = qzeros[1] * 32 / n;
  if (bits != 2 && bits != 4 && bits != 8)
    return makeError(str(bits) + "-bit codes (from qzeros' shape); lowbit imports 2, 4 and 8 bits");
  const int64_t k = qweight[0] * 32 / bits;
  if (k % groups != 0)
    return makeError("K = " + str(k) + " is not " + str(groups) + " whole groups");
  formats::GptqCheckpoint c;
  c.bits = int(bits);
  c.inFeatures = k;
  c.outFeatures = n;
  c.groupSize = int(k / groups);
  c.zeroPointPlusOne = !v2;
  return c;
}

Expected<formats::AwqCheckpoint> awqLayerShape(const Shape &qweight, const Shape &qzeros,
                                               const Shape &scales) {
  if (qweight.size() != 2 || qzeros.size() != 2 || scales.size() != 2)
    return makeError(misfit(qweight, qzeros, scales) + " (each has 2 dimensions)");
  const int64_t k = qweight[0], n = scales[1], groups = scales[0];
  if (groups < 1 || k < 1 || k % groups != 0 || n < 8 || n % 8 != 0 || qweight[1] != n / 8 ||
      qzeros[0] != groups || qzeros[1] != n / 8)
    return makeError(misfit(qweight, qzeros, scales));
  formats::AwqCheckpoint c;
  c.inFeatures = k;
  c.outFeatures = n;
  c.groupSize = int(k / groups);
  return c;
}

} // namespace lowbit::checkpoint
