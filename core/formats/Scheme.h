// Quantization schemes: how element codes, scales and zeros combine into a
// weight, independent of any kernel schedule.
//
// The weight matrix is W[N][K] (N output channels, K the reduction axis).
// A scheme says which weights share a scale ("slots"), the formats of the
// stored scale and zero, and how they combine:
//   ZeroMode::None            w = q * s
//   ZeroMode::SubtractCode    w = (q - z) * s      (GPTQ, AWQ; z is a code or a float)
//   ZeroMode::SubtractScaled  w = q * s - z        (GGUF k-quants' "min")
// where s = scale, times the super-block scale when there is one, times the
// per-tensor scale when there is one.
#pragma once

#include "core/formats/DataFormat.h"

#include <optional>
#include <string>
#include <vector>

namespace lowbit::formats {

enum class Granularity {
  PerTensor,  // one scale for the whole matrix
  PerChannel, // one scale per output channel n
  PerGroup,   // one scale per (n, group of groupSize consecutive k)
};

enum class ZeroMode { None, SubtractCode, SubtractScaled };

const char *granularityName(Granularity granularity);
const char *zeroModeName(ZeroMode mode);

// GGUF k-quant style two-level scales: each super-block of `size` weights
// along K carries a float super-scale (and super-min); the per-group scales
// (and mins) inside it are small integer codes multiplied by those.
struct SuperBlock {
  int size = 256;
  DataFormat superScaleFormat = DataFormat::f16();
  DataFormat superMinFormat = DataFormat::f16(); // used with ZeroMode::SubtractScaled
};

struct QuantScheme {
  std::string name;
  DataFormat element;
  Granularity granularity = Granularity::PerGroup;
  int groupSize = 128;            // PerGroup only
  DataFormat scaleFormat;         // with a super-block: the integer sub-scale code format
  ZeroMode zeroMode = ZeroMode::None;
  std::optional<DataFormat> zeroFormat;  // the format zeros are stored in (codes or floats)
  std::optional<SuperBlock> superBlock;
  // NVFP4's second level: one f32 scale for the tensor multiplying every block
  // scale.
  bool tensorScale = false;
  // GPTQ act-order: the group of column k is g_idx[k] instead of k / groupSize.
  bool actOrder = false;
};

// True for the OCP MX shape: group 32, e8m0 scales, FP8/FP6/FP4/INT8 elements
// (INT8 being DataFormat::mxInt8, the spec's 1.6 fixed point),
// no zero point.
bool isMxScheme(const QuantScheme &scheme);
// Rejects combinations no decoder can mean, with a message naming the field.
Status validateScheme(const QuantScheme &scheme);
// validateScheme plus the shape: the group and super-block divide K, and
// rows * cols * 8 (the f64 dequantize's bytes) fits in int64_t, so no size
// derived from a validated shape wraps.
Status validateScheme(const QuantScheme &scheme, int64_t rows, int64_t cols);

// Storage per weight in bits, metadata included, for large matrices: per-tensor
// data and g_idx are amortized to zero, per-channel scales are charged at
// K = 4096. W4 g128 with f16 scales is 4.125; Q4_K is 4.5.
double bitsPerWeight(const QuantScheme &scheme);
// Exact storage per weight for an N x K matrix, including per-tensor scales
// and g_idx (32 bits per column).
double bitsPerWeight(const QuantScheme &scheme, int64_t rows, int64_t cols);

// A one-line description: "nf4 g64 f32 scales", "uint4 g128 f16 scales, zero (q - z)·s uint4".
std::string describeScheme(const QuantScheme &scheme);

// The schemes `lowbit formats` lists and specs refer to by name: w8-channel,
// w4-g128, w4-g128-asym, nf4-g64, mxfp4, nvfp4, gguf-q4_k, ...
const std::vector<QuantScheme> &builtinSchemes();
Expected<QuantScheme> findScheme(const std::string &name);

// Factories for the standard shapes; each validates its arguments.
Expected<QuantScheme> makeGroupScheme(DataFormat element, int groupSize, DataFormat scaleFormat);
Expected<QuantScheme> makeAsymmetricGroupScheme(DataFormat element, int groupSize,
                                                DataFormat scaleFormat, DataFormat zeroFormat);
// element = e2m1 / e2m3 / e3m2 / e4m3fn / e5m2 / mxInt8.
Expected<QuantScheme> makeMxScheme(DataFormat element);
QuantScheme makeNvfp4Scheme();

} // namespace lowbit::formats
