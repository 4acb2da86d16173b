#include "core/formats/Gptq.h"

#include "core/support/CheckedMath.h"

#include <cmath>
#include <cstdio>

namespace lowbit::formats {

namespace {

Status checkCount(const char *tensor, size_t actual, int64_t expected, const std::string &shape) {
  if (int64_t(actual) != expected)
    return makeError(std::string(tensor) + " has " + std::to_string(actual) +
                     " elements; expected " + shape + " = " + std::to_string(expected));
  return Status::success();
}

// Field j of a packed int32 word, LSB first. The word is reinterpreted as
// unsigned so that the sign bit of a negative int32 is just bit 31.
uint32_t field(int32_t word, int j, int bits) {
  return (uint32_t(word) >> (j * bits)) & ((1u << bits) - 1u);
}

// N and K come from a checkpoint's metadata. Every buffer below (codes,
// qweight, qzeros, scales, g_idx, the f64 dequantize) has at most N * K
// entries of at most 8 bytes, so once N * K * 8 fits in int64 no product of
// N, K and the group count can wrap; a wrapped one would match a small tensor
// and let the unpacking loops over the real N and K run past it.
Status checkShape(const char *format, int64_t N, int64_t K) {
  const std::string shape = std::string(format) + " shape N x K = " + std::to_string(N) + " x " +
                            std::to_string(K);
  if (K < 1 || N < 1)
    return makeError(shape + " is empty");
  if (Expected<int64_t> bytes = checkedProduct({N, K, int64_t(sizeof(double))},
                                               shape + " (its f64 dequantize, N * K * 8 bytes)");
      !bytes)
    return makeError(bytes.error());
  return Status::success();
}

Expected<double> decodeScale(uint16_t bits, int64_t g, int64_t n) {
  double scale = DataFormat::f16().decode(bits);
  if (!std::isfinite(scale)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%04x", unsigned(bits));
    return makeError("scales[" + std::to_string(g) + "][" + std::to_string(n) +
                     "] is not finite (f16 0x" + hex + ")");
  }
  return scale;
}

// The GPTQ tensors unpacked to our layout: codes[N][K], zero codes and scale
// codes [N][G].
struct Unpacked {
  int64_t groups = 0;
  std::vector<uint8_t> codes;
  std::vector<uint32_t> zeroCodes, scaleCodes;
  std::vector<int32_t> groupOf; // [K]
};

Expected<Unpacked> unpackGptq(const GptqCheckpoint &c) {
  if (c.bits != 2 && c.bits != 4 && c.bits != 8)
    return makeError("GPTQ bits " + std::to_string(c.bits) +
                     " is not supported; only 2, 4 and 8 pack whole codes into int32");
  const int perWord = 32 / c.bits;
  const int64_t K = c.inFeatures, N = c.outFeatures;
  if (Status s = checkShape("GPTQ", N, K); !s)
    return makeError(s.error());
  if (K % perWord != 0)
    return makeError("GPTQ in_features " + std::to_string(K) + " is not a multiple of " +
                     std::to_string(perWord) + " codes per int32");
  if (N % perWord != 0)
    return makeError("GPTQ out_features " + std::to_string(N) + " is not a multiple of " +
                     std::to_string(perWord) + " zeros per int32");
  if (c.groupSize != -1 && (c.groupSize < 1 || K % c.groupSize != 0))
    return makeError("group size " + std::to_string(c.groupSize) + " does not divide K = " +
                     std::to_string(K));
  Unpacked u;
  u.groups = c.groupSize == -1 ? 1 : K / c.groupSize;
  if (Status s = checkCount("qweight", c.qweight.size(), K / perWord * N,
                            "[K*bits/32][N]");
      !s)
    return makeError(s.error());
  if (Status s = checkCount("qzeros", c.qzeros.size(), u.groups * (N / perWord),
                            "[G][N*bits/32]");
      !s)
    return makeError(s.error());
  if (Status s = checkCount("scales", c.scales.size(), u.groups * N, "[G][N]"); !s)
    return makeError(s.error());
  u.groupOf.resize(size_t(K));
  if (!c.gIdx.empty()) {
    if (Status s = checkCount("g_idx", c.gIdx.size(), K, "[K]"); !s)
      return makeError(s.error());
    for (int64_t k = 0; k < K; ++k) {
      if (c.gIdx[size_t(k)] < 0 || c.gIdx[size_t(k)] >= u.groups)
        return makeError("g_idx[" + std::to_string(k) + "] = " + std::to_string(c.gIdx[size_t(k)]) +
                         " is outside [0, " + std::to_string(u.groups) + ")");
      u.groupOf[size_t(k)] = c.gIdx[size_t(k)];
    }
  } else {
    for (int64_t k = 0; k < K; ++k)
      u.groupOf[size_t(k)] = int32_t(c.groupSize == -1 ? 0 : k / c.groupSize);
  }
  u.codes.resize(size_t(N * K));
  for (int64_t i = 0; i < K / perWord; ++i)
    for (int64_t n = 0; n < N; ++n)
      for (int j = 0; j < perWord; ++j)
        u.codes[size_t(n * K + i * perWord + j)] =
            uint8_t(field(c.qweight[size_t(i * N + n)], j, c.bits));
  u.zeroCodes.resize(size_t(N * u.groups));
  u.scaleCodes.resize(size_t(N * u.groups));
  for (int64_t g = 0; g < u.groups; ++g)
    for (int64_t n = 0; n < N; ++n) {
      int32_t word = c.qzeros[size_t(g * (N / perWord) + n / perWord)];
      u.zeroCodes[size_t(n * u.groups + g)] = field(word, int(n % perWord), c.bits);
      Expected<double> scale = decodeScale(c.scales[size_t(g * N + n)], g, n);
      if (!scale)
        return makeError(scale.error());
      u.scaleCodes[size_t(n * u.groups + g)] = c.scales[size_t(g * N + n)];
    }
  return u;
}


Expected<std::vector<double>> gptqWeights(const GptqCheckpoint &c) {
  Expected<Unpacked> u = unpackGptq(c);
  if (!u)
    return makeError(u.error());
  const int64_t K = c.inFeatures, N = c.outFeatures;
  std::vector<double> w(size_t(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      int64_t g = u->groupOf[size_t(k)];
      double zero = double(u->zeroCodes[size_t(n * u->groups + g)]) + (c.zeroPointPlusOne ? 1 : 0);
      double scale = DataFormat::f16().decode(c.scales[size_t(g * N + n)]);
      w[size_t(n * K + k)] = scale * (double(u->codes[size_t(n * K + k)]) - zero);
    }
  return w;
}

Expected<QuantizedMatrix> gptqMatrix(const GptqCheckpoint &c) {
  Expected<Unpacked> u = unpackGptq(c);
  if (!u)
    return makeError(u.error());
  QuantizedMatrix m;
  QuantScheme &scheme = m.scheme;
  scheme.name = "gptq-w" + std::to_string(c.bits);
  scheme.element = DataFormat::unsignedInt(c.bits);
  scheme.scaleFormat = DataFormat::f16();
  scheme.zeroMode = ZeroMode::SubtractCode;
  scheme.zeroFormat = DataFormat::unsignedInt(c.bits, c.zeroPointPlusOne ? 1 : 0);
  if (c.groupSize == -1) {
    scheme.granularity = Granularity::PerChannel;
  } else {
    scheme.groupSize = c.groupSize;
    for (int64_t k = 0; k < c.inFeatures; ++k)
      if (u->groupOf[size_t(k)] != k / c.groupSize)
        scheme.actOrder = true;
  }
  m.rows = c.outFeatures;
  m.cols = c.inFeatures;
  m.codes = std::move(u->codes);
  m.scales = std::move(u->scaleCodes);
  m.zeros = std::move(u->zeroCodes);
  if (scheme.actOrder)
    m.groupIndex = std::move(u->groupOf);
  if (Status s = validateQuantizedMatrix(m); !s)
    return makeError(s.error());
  return m;
}


// Column offset c (within a group of 8) -> nibble holding it: the inverse of
// AutoAWQ's packing order [0, 2, 4, 6, 1, 3, 5, 7].
constexpr int kAwqNibbleOfColumn[8] = {0, 4, 1, 5, 2, 6, 3, 7};

struct AwqUnpacked {
  std::vector<uint8_t> codes;       // [N][K]
  std::vector<uint32_t> zeroCodes;  // [N][G]
};

Expected<AwqUnpacked> unpackAwq(const AwqCheckpoint &c) {
  if (c.bits != 4)
    return makeError("AWQ bits " + std::to_string(c.bits) +
                     " is not supported; the GEMM format's interleave is defined for 4 bits");
  const int64_t K = c.inFeatures, N = c.outFeatures;
  if (Status s = checkShape("AWQ", N, K); !s)
    return makeError(s.error());
  if (N % 8 != 0)
    return makeError("AWQ out_features " + std::to_string(N) + " is not a multiple of 8");
  if (c.groupSize < 1 || K % c.groupSize != 0)
    return makeError("group size " + std::to_string(c.groupSize) + " does not divide K = " +
                     std::to_string(K));
  const int64_t G = K / c.groupSize, words = N / 8;
  if (Status s = checkCount("qweight", c.qweight.size(), K * words, "[K][N/8]"); !s)
    return makeError(s.error());
  if (Status s = checkCount("qzeros", c.qzeros.size(), G * words, "[K/group][N/8]"); !s)
    return makeError(s.error());
  if (Status s = checkCount("scales", c.scales.size(), G * N, "[K/group][N]"); !s)
    return makeError(s.error());
  AwqUnpacked u;
  u.codes.resize(size_t(N * K));
  u.zeroCodes.resize(size_t(N * G));
  for (int64_t n = 0; n < N; ++n) {
    int nibble = kAwqNibbleOfColumn[n % 8];
    for (int64_t k = 0; k < K; ++k)
      u.codes[size_t(n * K + k)] = uint8_t(field(c.qweight[size_t(k * words + n / 8)], nibble, 4));
    for (int64_t g = 0; g < G; ++g) {
      u.zeroCodes[size_t(n * G + g)] = field(c.qzeros[size_t(g * words + n / 8)], nibble, 4);
      if (Expected<double> scale = decodeScale(c.scales[size_t(g * N + n)], g, n); !scale)
        return makeError(scale.error());
    }
  }
  return u;
}


Expected<std::vector<double>> awqWeights(const AwqCheckpoint &c) {
  Expected<AwqUnpacked> u = unpackAwq(c);
  if (!u)
    return makeError(u.error());
  const int64_t K = c.inFeatures, N = c.outFeatures, G = K / c.groupSize;
  std::vector<double> w(size_t(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      int64_t g = k / c.groupSize;
      double scale = DataFormat::f16().decode(c.scales[size_t(g * N + n)]);
      w[size_t(n * K + k)] =
          scale * (double(u->codes[size_t(n * K + k)]) - double(u->zeroCodes[size_t(n * G + g)]));
    }
  return w;
}

Expected<QuantizedMatrix> awqMatrix(const AwqCheckpoint &c) {
  Expected<AwqUnpacked> u = unpackAwq(c);
  if (!u)
    return makeError(u.error());
  const int64_t N = c.outFeatures, G = c.inFeatures / c.groupSize;
  QuantizedMatrix m;
  m.scheme.name = "awq-w4";
  m.scheme.element = DataFormat::unsignedInt(4);
  m.scheme.groupSize = c.groupSize;
  m.scheme.scaleFormat = DataFormat::f16();
  m.scheme.zeroMode = ZeroMode::SubtractCode;
  m.scheme.zeroFormat = DataFormat::unsignedInt(4);
  m.rows = N;
  m.cols = c.inFeatures;
  m.codes = std::move(u->codes);
  m.zeros = std::move(u->zeroCodes);
  m.scales.resize(size_t(N * G));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g)
      m.scales[size_t(n * G + g)] = c.scales[size_t(g * N + n)];
  if (Status s = validateQuantizedMatrix(m); !s)
    return makeError(s.error());
  return m;
}

} // namespace

// The buffers' sizes follow from checked shapes, but one can still be more
// than the machine has; these functions promise an error, not a throw.
Expected<std::vector<double>> dequantizeGptq(const GptqCheckpoint &c) {
  return catchingBadAlloc("dequantizeGptq", [&] { return gptqWeights(c); });
}

Expected<QuantizedMatrix> importGptq(const GptqCheckpoint &c) {
  return catchingBadAlloc("importGptq", [&] { return gptqMatrix(c); });
}

Expected<std::vector<double>> dequantizeAwq(const AwqCheckpoint &c) {
  return catchingBadAlloc("dequantizeAwq", [&] { return awqWeights(c); });
}

Expected<QuantizedMatrix> importAwq(const AwqCheckpoint &c) {
  return catchingBadAlloc("importAwq", [&] { return awqMatrix(c); });
}

} // namespace lowbit::formats
