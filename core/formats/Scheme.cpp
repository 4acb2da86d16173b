#include "core/formats/Scheme.h"

#include "core/support/CheckedMath.h"

#include <sstream>

namespace lowbit::formats {

const char *granularityName(Granularity granularity) {
  switch (granularity) {
  case Granularity::PerTensor:
    return "per-tensor";
  case Granularity::PerChannel:
    return "per-channel";
  case Granularity::PerGroup:
    return "per-group";
  }
  return "?";
}

const char *zeroModeName(ZeroMode mode) {
  switch (mode) {
  case ZeroMode::None:
    return "none";
  case ZeroMode::SubtractCode:
    return "(q - z)·s";
  case ZeroMode::SubtractScaled:
    return "q·s - z";
  }
  return "?";
}

namespace {

bool isMxElement(const DataFormat &element) {
  for (const DataFormat &candidate : {DataFormat::e2m1(), DataFormat::e2m3(), DataFormat::e3m2(),
                                      DataFormat::e4m3fn(), DataFormat::e5m2(), DataFormat::mxInt8()})
    if (element == candidate)
      return true;
  return false;
}

std::string where(const QuantScheme &scheme) {
  return scheme.name.empty() ? std::string() : " in scheme '" + scheme.name + "'";
}

} // namespace

bool isMxScheme(const QuantScheme &scheme) {
  return scheme.granularity == Granularity::PerGroup && scheme.groupSize == 32 &&
         scheme.scaleFormat == DataFormat::e8m0() && scheme.zeroMode == ZeroMode::None &&
         !scheme.superBlock && !scheme.tensorScale && isMxElement(scheme.element);
}

Status validateScheme(const QuantScheme &scheme) {
  const std::string at = where(scheme);
  if (scheme.granularity == Granularity::PerGroup && scheme.groupSize < 1)
    return makeError("group size " + std::to_string(scheme.groupSize) + " must be positive" + at);
  if (scheme.actOrder && scheme.granularity != Granularity::PerGroup)
    return makeError(std::string("act-order (g_idx) needs per-group scales; got ") +
                     granularityName(scheme.granularity) + at);

  // Scales.
  if (scheme.superBlock) {
    const SuperBlock &super = *scheme.superBlock;
    if (scheme.granularity != Granularity::PerGroup)
      return makeError("super-blocks need per-group sub-scales" + at);
    if (super.size < 1 || super.size % scheme.groupSize != 0)
      return makeError("super-block size " + std::to_string(super.size) +
                       " is not a multiple of group size " + std::to_string(scheme.groupSize) + at);
    if (scheme.scaleFormat.kind() != DataFormat::Kind::Int)
      return makeError("sub-scales inside a super-block are integer codes; got " +
                       scheme.scaleFormat.name() + at);
    if (scheme.scaleFormat.maxFinite() <= 0)
      return makeError("sub-scale format " + scheme.scaleFormat.name() +
                       " has no positive values" + at);
    if (super.superScaleFormat.kind() != DataFormat::Kind::Float)
      return makeError("super-block scales must be a float format; got " +
                       super.superScaleFormat.name() + at);
    if (scheme.actOrder)
      return makeError("act-order (g_idx) cannot be combined with super-blocks" + at);
    if (scheme.tensorScale)
      return makeError("a per-tensor scale cannot be combined with super-blocks" + at);
    if (scheme.zeroMode == ZeroMode::SubtractCode)
      return makeError("super-blocks support zero modes none and q·s - z, not (q - z)·s" + at);
  } else {
    if (scheme.scaleFormat.kind() != DataFormat::Kind::Float)
      return makeError("scale format " + scheme.scaleFormat.name() +
                       " is not a float format; integer scales need a super-block" + at);
  }
  // e8m0 is MX's block scale: a power of two per 32 weights, with no zero
  // point. Any element may take it (integer codes too: int4 with e8m0 scales
  // is a power-of-two-scaled int4); only MX elements get the MX quantizer
  // (isMxScheme), the others the generic one, whose scale rounds up.
  if (scheme.scaleFormat == DataFormat::e8m0() &&
      (scheme.granularity != Granularity::PerGroup || scheme.groupSize != 32 ||
       scheme.zeroMode != ZeroMode::None || scheme.superBlock || scheme.tensorScale)) {
    std::string got = scheme.granularity == Granularity::PerGroup
                          ? "group size " + std::to_string(scheme.groupSize)
                          : std::string(granularityName(scheme.granularity)) + " scales";
    return makeError("e8m0 scales are MX block scales (group 32, no zero point, no second "
                     "level); this one has " +
                     got + ", zero mode " + zeroModeName(scheme.zeroMode) + at);
  }
  if (scheme.tensorScale) {
    if (scheme.scaleFormat != DataFormat::e4m3fn())
      return makeError("a per-tensor f32 scale is the NVFP4 second level and needs e4m3 block "
                       "scales; got " +
                       scheme.scaleFormat.name() + at);
    if (scheme.granularity != Granularity::PerGroup || scheme.zeroMode != ZeroMode::None)
      return makeError("a per-tensor scale needs per-group block scales and no zero point" + at);
  }
  if (scheme.scaleFormat.maxFinite() <= 0)
    return makeError("scale format " + scheme.scaleFormat.name() + " has no positive values" + at);

  // Zeros.
  switch (scheme.zeroMode) {
  case ZeroMode::None:
    if (scheme.zeroFormat)
      return makeError("zero format " + scheme.zeroFormat->name() +
                       " given but the zero mode is none" + at);
    break;
  case ZeroMode::SubtractCode:
  case ZeroMode::SubtractScaled:
    if (!scheme.zeroFormat)
      return makeError(std::string("zero mode ") + zeroModeName(scheme.zeroMode) +
                       " needs a zero format" + at);
    if (scheme.element.kind() != DataFormat::Kind::Int)
      return makeError(std::string("zero point ") + zeroModeName(scheme.zeroMode) +
                       " needs an integer element format; " + scheme.element.name() + " is a " +
                       (scheme.element.kind() == DataFormat::Kind::Float ? "minifloat"
                                                                         : "lookup table") +
                       at);
    if (scheme.zeroFormat->kind() == DataFormat::Kind::Lut)
      return makeError("zeros cannot be stored as lookup codes" + at);
    if (scheme.superBlock) {
      if (scheme.zeroFormat->kind() != DataFormat::Kind::Int || scheme.zeroFormat->isSigned())
        return makeError("mins inside a super-block are unsigned integer codes; got " +
                         scheme.zeroFormat->name() + at);
      if (scheme.element.minFinite() != 0)
        return makeError("super-block mins need an element whose smallest value is 0; " +
                         scheme.element.name() + " starts at " +
                         std::to_string(int(scheme.element.minFinite())) + at);
      if (scheme.superBlock->superMinFormat.kind() != DataFormat::Kind::Float)
        return makeError("super-block mins must be a float format; got " +
                         scheme.superBlock->superMinFormat.name() + at);
    }
    break;
  }
  return Status::success();
}

Status validateScheme(const QuantScheme &scheme, int64_t rows, int64_t cols) {
  if (Status status = validateScheme(scheme); !status)
    return status;
  if (rows < 1 || cols < 1)
    return makeError("matrix shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " is empty");
  // Every buffer of the matrix (codes, slots, the f64 dequantize) is at most
  // rows * cols * 8 bytes, so with that product checked once here, the size
  // arithmetic of everything validated by this function cannot wrap.
  if (Expected<int64_t> bytes = checkedProduct(
          {rows, cols, int64_t(sizeof(double))},
          "matrix shape " + std::to_string(rows) + " x " + std::to_string(cols) +
              " (its f64 dequantize, rows * cols * 8 bytes)");
      !bytes)
    return makeError(bytes.error());
  if (scheme.granularity == Granularity::PerGroup && cols % scheme.groupSize != 0)
    return makeError("group size " + std::to_string(scheme.groupSize) + " does not divide K = " +
                     std::to_string(cols) + where(scheme));
  if (scheme.superBlock && cols % scheme.superBlock->size != 0)
    return makeError("super-block size " + std::to_string(scheme.superBlock->size) +
                     " does not divide K = " + std::to_string(cols) + where(scheme));
  return Status::success();
}

namespace {

// Bits of metadata per scale slot, and per super-block.
double slotBits(const QuantScheme &scheme) {
  double bits = scheme.scaleFormat.bits();
  if (scheme.zeroMode != ZeroMode::None && scheme.zeroFormat)
    bits += scheme.zeroFormat->bits();
  return bits;
}

double superBlockBits(const QuantScheme &scheme) {
  if (!scheme.superBlock)
    return 0;
  double bits = scheme.superBlock->superScaleFormat.bits();
  if (scheme.zeroMode == ZeroMode::SubtractScaled)
    bits += scheme.superBlock->superMinFormat.bits();
  return bits;
}

} // namespace

double bitsPerWeight(const QuantScheme &scheme) {
  double bits = scheme.element.bits();
  switch (scheme.granularity) {
  case Granularity::PerTensor:
    break;
  case Granularity::PerChannel:
    bits += slotBits(scheme) / 4096.0;
    break;
  case Granularity::PerGroup:
    bits += slotBits(scheme) / scheme.groupSize;
    break;
  }
  if (scheme.superBlock)
    bits += superBlockBits(scheme) / scheme.superBlock->size;
  return bits;
}

double bitsPerWeight(const QuantScheme &scheme, int64_t rows, int64_t cols) {
  double weights = double(rows) * double(cols);
  double total = weights * scheme.element.bits();
  switch (scheme.granularity) {
  case Granularity::PerTensor:
    total += slotBits(scheme);
    break;
  case Granularity::PerChannel:
    total += double(rows) * slotBits(scheme);
    break;
  case Granularity::PerGroup:
    total += weights / scheme.groupSize * slotBits(scheme);
    break;
  }
  if (scheme.superBlock)
    total += weights / scheme.superBlock->size * superBlockBits(scheme);
  if (scheme.tensorScale)
    total += 32;
  if (scheme.actOrder)
    total += 32.0 * double(cols);
  return total / weights;
}

std::string describeScheme(const QuantScheme &scheme) {
  std::ostringstream out;
  out << scheme.element.name();
  switch (scheme.granularity) {
  case Granularity::PerTensor:
    out << " per-tensor";
    break;
  case Granularity::PerChannel:
    out << " per-channel";
    break;
  case Granularity::PerGroup:
    out << " g" << scheme.groupSize;
    break;
  }
  if (scheme.superBlock) {
    out << " in " << scheme.superBlock->size << "-blocks, " << scheme.scaleFormat.name()
        << " scales x " << scheme.superBlock->superScaleFormat.name();
  } else {
    out << ", " << scheme.scaleFormat.name() << " scales";
  }
  if (scheme.tensorScale)
    out << " x f32 tensor scale";
  if (scheme.zeroMode != ZeroMode::None) {
    out << ", zero " << zeroModeName(scheme.zeroMode) << " " << scheme.zeroFormat->name();
    if (scheme.superBlock && scheme.zeroMode == ZeroMode::SubtractScaled)
      out << " x " << scheme.superBlock->superMinFormat.name();
  }
  if (scheme.actOrder)
    out << ", act-order";
  return out.str();
}

Expected<QuantScheme> makeGroupScheme(DataFormat element, int groupSize, DataFormat scaleFormat) {
  QuantScheme scheme;
  scheme.element = std::move(element);
  scheme.groupSize = groupSize;
  scheme.scaleFormat = std::move(scaleFormat);
  if (Status status = validateScheme(scheme); !status)
    return makeError(status.error());
  return scheme;
}

Expected<QuantScheme> makeAsymmetricGroupScheme(DataFormat element, int groupSize,
                                                DataFormat scaleFormat, DataFormat zeroFormat) {
  QuantScheme scheme;
  scheme.element = std::move(element);
  scheme.groupSize = groupSize;
  scheme.scaleFormat = std::move(scaleFormat);
  scheme.zeroMode = ZeroMode::SubtractCode;
  scheme.zeroFormat = std::move(zeroFormat);
  if (Status status = validateScheme(scheme); !status)
    return makeError(status.error());
  return scheme;
}

Expected<QuantScheme> makeMxScheme(DataFormat element) {
  QuantScheme scheme;
  scheme.name = "mx" + element.name();
  scheme.element = std::move(element);
  scheme.groupSize = 32;
  scheme.scaleFormat = DataFormat::e8m0();
  if (!isMxScheme(scheme))
    return makeError("MX elements are e2m1, e2m3, e3m2, e4m3fn, e5m2 and mxint8 (int8 * 2^-6); got " +
                     scheme.element.name());
  return scheme;
}

QuantScheme makeNvfp4Scheme() {
  QuantScheme scheme;
  scheme.name = "nvfp4";
  scheme.element = DataFormat::e2m1();
  scheme.groupSize = 16;
  scheme.scaleFormat = DataFormat::e4m3fn();
  scheme.tensorScale = true;
  return scheme;
}

namespace {

QuantScheme named(std::string name, QuantScheme scheme) {
  scheme.name = std::move(name);
  return scheme;
}

QuantScheme group(DataFormat element, int groupSize, DataFormat scale) {
  QuantScheme scheme;
  scheme.element = std::move(element);
  scheme.groupSize = groupSize;
  scheme.scaleFormat = std::move(scale);
  return scheme;
}

QuantScheme coarse(DataFormat element, Granularity granularity, DataFormat scale) {
  QuantScheme scheme = group(std::move(element), 1, std::move(scale));
  scheme.granularity = granularity;
  return scheme;
}

QuantScheme withZero(QuantScheme scheme, ZeroMode mode, DataFormat zero) {
  scheme.zeroMode = mode;
  scheme.zeroFormat = std::move(zero);
  return scheme;
}

std::vector<QuantScheme> makeBuiltinSchemes() {
  using F = DataFormat;
  std::vector<QuantScheme> schemes;
  schemes.push_back(named("w8-channel", coarse(F::int8(), Granularity::PerChannel, F::f16())));
  schemes.push_back(named("w8-g128", group(F::int8(), 128, F::f16())));
  for (int g : {32, 64, 128, 256})
    schemes.push_back(named("w4-g" + std::to_string(g), group(F::signedInt(4), g, F::f16())));
  schemes.push_back(named("w4-g128-bf16", group(F::signedInt(4), 128, F::bf16())));
  schemes.push_back(named("w4-g128-asym", withZero(group(F::unsignedInt(4), 128, F::f16()),
                                                   ZeroMode::SubtractCode, F::unsignedInt(4))));
  schemes.push_back(named("w4-g128-fzero", withZero(group(F::unsignedInt(4), 128, F::f16()),
                                                    ZeroMode::SubtractScaled, F::f16())));
  schemes.push_back(named("w3-g128-asym", withZero(group(F::unsignedInt(3), 128, F::f16()),
                                                   ZeroMode::SubtractCode, F::unsignedInt(3))));
  schemes.push_back(named("w2-g64-asym", withZero(group(F::unsignedInt(2), 64, F::f16()),
                                                  ZeroMode::SubtractCode, F::unsignedInt(2))));
  schemes.push_back(named("w1-g64-asym", withZero(group(F::unsignedInt(1), 64, F::f16()),
                                                  ZeroMode::SubtractScaled, F::f16())));
  schemes.push_back(named("ternary-tensor", coarse(F::ternary(), Granularity::PerTensor, F::f32())));
  schemes.push_back(named("ternary-g128", group(F::ternary(), 128, F::f16())));
  schemes.push_back(named("nf4-g64", group(F::nf4(), 64, F::f32())));
  schemes.push_back(named("fp4lut-g32", group(F::fp4Lut(), 32, F::f16())));
  schemes.push_back(named("fp8-e4m3-tensor", coarse(F::e4m3fn(), Granularity::PerTensor, F::f32())));
  schemes.push_back(named("fp8-e4m3-channel", coarse(F::e4m3fn(), Granularity::PerChannel, F::f32())));
  schemes.push_back(named("fp8-e5m2-tensor", coarse(F::e5m2(), Granularity::PerTensor, F::f32())));
  schemes.push_back(named("fp6-e3m2-g32", group(F::e3m2(), 32, F::f16())));
  const std::pair<const char *, DataFormat> mxElements[] = {
      {"mxfp4", F::e2m1()},       {"mxfp6-e2m3", F::e2m3()}, {"mxfp6-e3m2", F::e3m2()},
      {"mxfp8-e4m3", F::e4m3fn()}, {"mxfp8-e5m2", F::e5m2()}, {"mxint8", F::mxInt8()}};
  for (const auto &[name, element] : mxElements)
    schemes.push_back(named(name, std::move(makeMxScheme(element)).value()));
  schemes.push_back(makeNvfp4Scheme());
  QuantScheme gptq = withZero(group(F::unsignedInt(4), 128, F::f16()), ZeroMode::SubtractCode,
                              F::unsignedInt(4, 1));
  schemes.push_back(named("gptq-w4-g128", gptq));
  gptq.actOrder = true;
  schemes.push_back(named("gptq-w4-g128-actorder", gptq));
  schemes.push_back(named("awq-w4-g128", withZero(group(F::unsignedInt(4), 128, F::f16()),
                                                  ZeroMode::SubtractCode, F::unsignedInt(4))));
  schemes.push_back(named("gguf-q4_0", group(F::unsignedInt(4, -8), 32, F::f16())));
  schemes.push_back(named("gguf-q8_0", group(F::int8(), 32, F::f16())));
  // Q2_K: 4-bit sub-scales and mins per 16 (one byte holds both), f16 steps.
  QuantScheme q2k = withZero(group(F::unsignedInt(2), 16, F::unsignedInt(4)),
                             ZeroMode::SubtractScaled, F::unsignedInt(4));
  q2k.superBlock = SuperBlock{256, F::f16(), F::f16()};
  schemes.push_back(named("gguf-q2_k", q2k));
  // Q3_K: codes and 6-bit sub-scales in excess form as stored (q + 4, s + 32).
  QuantScheme q3k = group(F::unsignedInt(3, -4), 16, F::unsignedInt(6, -32));
  q3k.superBlock = SuperBlock{256, F::f16(), F::f16()};
  schemes.push_back(named("gguf-q3_k", q3k));
  QuantScheme q4k = withZero(group(F::unsignedInt(4), 32, F::unsignedInt(6)),
                             ZeroMode::SubtractScaled, F::unsignedInt(6));
  q4k.superBlock = SuperBlock{256, F::f16(), F::f16()};
  schemes.push_back(named("gguf-q4_k", q4k));
  QuantScheme q5k = q4k;
  q5k.element = F::unsignedInt(5);
  schemes.push_back(named("gguf-q5_k", q5k));
  // The compact int4 encoding: Q4_K's shape with byte codes (uint8 sub-scales
  // and mins per 32, an f16 step for each per 256), 4.625 bits a weight.
  QuantScheme compact = withZero(group(F::unsignedInt(4), 32, F::unsignedInt(8)),
                                 ZeroMode::SubtractScaled, F::unsignedInt(8));
  compact.superBlock = SuperBlock{256, F::f16(), F::f16()};
  schemes.push_back(named("compact-w4-g32", compact));
  QuantScheme q6k = group(F::unsignedInt(6, -32), 16, F::int8());
  q6k.superBlock = SuperBlock{256, F::f16(), F::f16()};
  schemes.push_back(named("gguf-q6_k", q6k));
  return schemes;
}

} // namespace

const std::vector<QuantScheme> &builtinSchemes() {
  static const std::vector<QuantScheme> schemes = makeBuiltinSchemes();
  return schemes;
}

Expected<QuantScheme> findScheme(const std::string &name) {
  for (const QuantScheme &scheme : builtinSchemes())
    if (scheme.name == name)
      return scheme;
  return makeError("unknown scheme '" + name + "'; `lowbit formats` lists them");
}

} // namespace lowbit::formats
