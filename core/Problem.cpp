#include "core/Problem.h"

#include "core/formats/Pack.h"
#include "core/support/CheckedMath.h"

#include <algorithm>

namespace lowbit::core {
namespace {

constexpr int64_t kLargestDimension = (int64_t{1} << 31) - 1;

bool isFloatScaleDtype(const formats::DataFormat &format) {
  return format == formats::DataFormat::f16() || format == formats::DataFormat::bf16() ||
         format == formats::DataFormat::f32();
}

// One byte per group: OCP MX's power of two and NVFP4's e4m3fn.
bool isBlockScaleDtype(const formats::DataFormat &format) {
  return format == formats::DataFormat::e8m0() || format == formats::DataFormat::e4m3fn();
}

bool isScaleDtype(const formats::DataFormat &format) {
  return isFloatScaleDtype(format) || isBlockScaleDtype(format);
}

const char *const kScaleDtypes = "f16, bf16, f32, e8m0 or e4m3fn";

// Two-level scales' codes are whole bytes, so a kernel reads one with a
// byte load and a convert.
bool isScaleCodeDtype(const formats::DataFormat &format) {
  return format == formats::DataFormat::unsignedInt(8) || format == formats::DataFormat::int8();
}

Status validateSuperBlocks(const Problem &p) {
  const Scheme &s = p.scheme;
  if (!s.hasSuperBlocks()) {
    if (s.superBlock < 0)
      return makeError("super-block size " + std::to_string(s.superBlock) + " is negative");
    if (s.superStep)
      return makeError("super_step " + s.superStep->name() + " is set but super_block is not");
    return Status::success();
  }
  const std::string size = std::to_string(s.superBlock);
  if (s.granularity != formats::Granularity::PerGroup)
    return makeError("super-blocks hold groups: they need granularity group, got " +
                     std::string(granularitySpelling(s.granularity)));
  if (s.groupSize <= 0 || s.superBlock % s.groupSize || p.k % s.superBlock)
    return makeError("super-block size " + size + " must be a multiple of the group size " +
                     std::to_string(s.groupSize) + " and divide K = " + std::to_string(p.k));
  if (!s.superStep || !isFloatScaleDtype(*s.superStep))
    return makeError("super-blocks need a super_step of f16, bf16 or f32" +
                     (s.superStep ? ", got " + s.superStep->name() : std::string()));
  if (!isScaleCodeDtype(s.scale))
    return makeError("with super-blocks the scales are codes: uint8 or int8, got " +
                     s.scale.name());
  if (s.zero == formats::ZeroMode::SubtractCode)
    return makeError("super-blocks take zero none or sub_value (q·s − z, the mins of GGUF "
                     "k-quants), not " +
                     std::string(zeroSpelling(s.zero, s.zeroCodes.has_value())));
  if (s.hasZeros() && s.scale != formats::DataFormat::unsignedInt(8))
    return makeError("super-block mins are unsigned codes in the scales' dtype: the scale "
                     "dtype must be uint8, got " +
                     s.scale.name());
  if (s.tensorScale || s.actOrder)
    return makeError(std::string("super-blocks cannot be combined with ") +
                     (s.tensorScale ? "a tensor scale" : "act-order"));
  return Status::success();
}
// The OCP MX block: every e8m0 scale covers 32 weights.
constexpr int64_t kMxBlock = 32;

// Block scales come from formats that define them per group and without
// zero points (MX, NVFP4); a tensor scale is NVFP4's f32 over e4m3fn ones.
Status validateBlockScales(const Scheme &s) {
  const std::string dtype = s.scale.name();
  if (isBlockScaleDtype(s.scale)) {
    if (s.granularity != formats::Granularity::PerGroup)
      return makeError("scale dtype " + dtype + " is a block scale: it needs granularity group, got " +
                       granularitySpelling(s.granularity));
    if (s.scale == formats::DataFormat::e8m0() && s.groupSize != kMxBlock)
      return makeError("e8m0 scales are OCP MX block scales of " + std::to_string(kMxBlock) +
                       " weights: group size must be " + std::to_string(kMxBlock) + ", got " +
                       std::to_string(s.groupSize));
    if (s.hasZeros())
      return makeError("block scales (" + dtype + ") have no zero points: zero must be none, got " +
                       zeroSpelling(s.zero, s.zeroCodes.has_value()));
  }
  if (s.tensorScale) {
    if (*s.tensorScale != formats::DataFormat::f32())
      return makeError("tensor scale dtype '" + s.tensorScale->name() + "' is not f32");
    if (s.scale != formats::DataFormat::e4m3fn())
      return makeError("a tensor scale multiplies e4m3fn block scales (NVFP4's second level); "
                       "the scale dtype is " + dtype);
  }
  return Status::success();
}

// Quantized activations bring their scale and name y's type; f16 and bf16
// ones have neither (y is in their type).
Status validateActivation(const Problem &p) {
  const std::string name = activationName(p.activation);
  if (isQuantized(p.activation)) {
    if (p.activationScale == ActivationScale::None)
      return makeError(name + " activations need an activation scale: token (one f32 per row "
                              "of x) or tensor (one f32)");
    if (!p.output)
      return makeError(name + " activations need an output type for y: f16, bf16 or f32");
    return Status::success();
  }
  if (p.activationScale != ActivationScale::None)
    return makeError(std::string("activation scale '") +
                     activationScaleSpelling(p.activationScale) + "' is for s8 and e4m3 "
                     "activations; " + name + " activations have none");
  if (p.output)
    return makeError(std::string("output '") + outputName(*p.output) + "' is for s8 and e4m3 "
                     "activations; " + name + " activations write y in " + name);
  return Status::success();
}

} // namespace

std::string problemSymbol(const std::string &name) {
  std::string symbol;
  for (char c : name)
    symbol += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return symbol;
}

Output outputType(const Problem &p) {
  if (p.output)
    return *p.output;
  switch (p.activation) {
  case Activation::F16: return Output::F16;
  case Activation::BF16: return Output::BF16;
  default: return Output::F32;
  }
}

void setOutput(Problem &p, Output output) {
  p.output.reset();
  if (isQuantized(p.activation) || output != outputType(p))
    p.output = output;
}

const char *granularitySpelling(formats::Granularity granularity) {
  switch (granularity) {
  case formats::Granularity::PerTensor: return "tensor";
  case formats::Granularity::PerChannel: return "channel";
  case formats::Granularity::PerGroup: return "group";
  }
  return "?";
}

Expected<formats::Granularity> parseGranularity(const std::string &text) {
  if (text == "tensor")
    return formats::Granularity::PerTensor;
  if (text == "channel")
    return formats::Granularity::PerChannel;
  if (text == "group")
    return formats::Granularity::PerGroup;
  return makeError("granularity '" + text + "' is not tensor, channel or group");
}

const char *zeroSpelling(formats::ZeroMode mode, bool quantized) {
  switch (mode) {
  case formats::ZeroMode::None: return "none";
  case formats::ZeroMode::SubtractCode: return quantized ? "quantized" : "sub_code";
  case formats::ZeroMode::SubtractScaled: return "sub_value";
  }
  return "?";
}

Expected<ZeroSpelling> parseZero(const std::string &text) {
  if (text == "none")
    return ZeroSpelling{formats::ZeroMode::None, false};
  if (text == "sub_code")
    return ZeroSpelling{formats::ZeroMode::SubtractCode, false};
  if (text == "sub_value")
    return ZeroSpelling{formats::ZeroMode::SubtractScaled, false};
  if (text == "quantized")
    return ZeroSpelling{formats::ZeroMode::SubtractCode, true};
  return makeError("zero '" + text + "' is not none, sub_code, sub_value or quantized");
}

Status validate(const Problem &p) {
  if (p.n < 1 || p.k < 1 || p.n > kLargestDimension || p.k > kLargestDimension)
    return makeError("N = " + std::to_string(p.n) + " and K = " + std::to_string(p.k) +
                     " must be in [1, 2^31 - 1]");
  if (Status activation = validateActivation(p); !activation)
    return activation;
  if (p.code.kind() == formats::DataFormat::Kind::Int && p.code.bits() > 8)
    return makeError("integer codes have at most 8 bits");
  const Scheme &s = p.scheme;
  if (s.granularity == formats::Granularity::PerGroup) {
    if (s.groupSize <= 0 || p.k % s.groupSize)
      return makeError("group size " + std::to_string(s.groupSize) +
                       " must be positive and divide K = " + std::to_string(p.k));
  } else if (s.groupSize != 0) {
    return makeError("group size " + std::to_string(s.groupSize) + " is set but granularity is " +
                     granularitySpelling(s.granularity) + "; it must be 0");
  }
  if (Status super = validateSuperBlocks(p); !super)
    return super;
  if (!s.hasSuperBlocks() && !isScaleDtype(s.scale))
    return makeError("scale dtype '" + s.scale.name() + "' is not " + kScaleDtypes);
  if (Status block = validateBlockScales(s); !block)
    return block;
  if (s.zeroCodes) {
    if (s.zero != formats::ZeroMode::SubtractCode)
      return makeError("zero codes are subtracted from the codes: they need zero mode quantized");
    const formats::IntFormat *zeroInt = s.zeroCodes->asInt();
    if (!zeroInt || zeroInt->isSigned || zeroInt->ternary || zeroInt->offset != 0 ||
        (zeroInt->bits != 4 && zeroInt->bits != 8))
      return makeError("zero codes must be uint4 or uint8, got " + s.zeroCodes->name() +
                       " (offset or signed zero codes, such as GPTQ v1's z - 1, are re-encoded "
                       "by lowbit import into uint4 or uint8 codes of the same zeros)");
  }
  if (s.actOrder && s.granularity != formats::Granularity::PerGroup)
    return makeError("act-order permutes groups, so it needs granularity group");
  // N and K below 2^31 keep N * K in range, but not N * K * 4 bytes of f32
  // group-1 scales; the buffer sizes the runtime hands out must not wrap.
  if (scaleBytes(p) < 0)
    return makeError("N = " + std::to_string(p.n) + " and K = " + std::to_string(p.k) + ": " +
                     std::to_string(scaleCount(p)) + " scales of " +
                     std::to_string(scaleElementBytes(p)) +
                     " bytes do not fit in a 64-bit buffer size");
  if (zeroBytes(p) < 0)
    return makeError("N = " + std::to_string(p.n) + " and K = " + std::to_string(p.k) + ": " +
                     std::to_string(scaleCount(p)) + " zeros of " +
                     std::to_string(zeroElementBytes(p)) +
                     " bytes do not fit in a 64-bit buffer size");
  return Status::success();
}

Expected<formats::QuantScheme> quantScheme(const Problem &p) {
  formats::QuantScheme q;
  q.name = p.name;
  q.element = p.code;
  q.granularity = p.scheme.granularity;
  q.groupSize = p.scheme.granularity == formats::Granularity::PerGroup
                    ? static_cast<int>(p.scheme.groupSize)
                    : 0;
  q.scaleFormat = p.scheme.scale;
  q.tensorScale = p.scheme.tensorScale.has_value();
  q.zeroMode = p.scheme.zero;
  if (p.scheme.hasZeros())
    q.zeroFormat = p.scheme.zeroCodes ? *p.scheme.zeroCodes : p.scheme.scale;
  q.actOrder = p.scheme.actOrder;
  if (p.scheme.hasSuperBlocks() && p.scheme.superStep)
    q.superBlock = formats::SuperBlock{static_cast<int>(p.scheme.superBlock), *p.scheme.superStep,
                                       *p.scheme.superStep};
  if (Status s = formats::validateScheme(q, p.n, p.k); !s)
    return makeError(s.error());
  return q;
}

namespace {

// Kernels read two-level codes as bytes: integer codes of up to 8 bits
// become the uint8 or int8 codes of the same values (Q4_K's 6-bit sub-scales
// and Q2_K's 4-bit ones as uint8, Q3_K's excess-32 6-bit ones as int8).
Expected<Scheme> superBlockKernelScheme(const formats::QuantScheme &q) {
  const formats::SuperBlock &super = *q.superBlock;
  auto byteCodes = [](const formats::DataFormat &format) -> std::optional<formats::DataFormat> {
    const formats::IntFormat *code = format.asInt();
    if (!code || code->ternary || code->fractionBits || code->bits > 8)
      return std::nullopt;
    if (code->minValue() >= 0 && code->maxValue() <= 255)
      return formats::DataFormat::unsignedInt(8);
    if (code->minValue() >= -128 && code->maxValue() <= 127)
      return formats::DataFormat::int8();
    return std::nullopt;
  };
  std::optional<formats::DataFormat> scale = byteCodes(q.scaleFormat);
  if (!scale)
    return makeError("super-block sub-scales in " + q.scaleFormat.name() +
                     " have no kernel scheme (kernels read uint8 or int8 codes)");
  if (q.zeroMode == formats::ZeroMode::SubtractScaled &&
      (!q.zeroFormat || byteCodes(*q.zeroFormat) != formats::DataFormat::unsignedInt(8) ||
       super.superMinFormat != super.superScaleFormat))
    return makeError("super-block mins must be unsigned codes of up to 8 bits with steps in the "
                     "scales' step dtype");
  Scheme s;
  s.granularity = q.granularity;
  s.groupSize = q.groupSize;
  s.scale = *scale;
  s.zero = q.zeroMode;
  s.superBlock = super.size;
  s.superStep = super.superScaleFormat;
  return s;
}

} // namespace

Expected<Scheme> kernelScheme(const formats::QuantScheme &q) {
  if (q.superBlock)
    return superBlockKernelScheme(q);
  if (!isScaleDtype(q.scaleFormat))
    return makeError("scale dtype " + q.scaleFormat.name() + " is not " + kScaleDtypes);
  Scheme s;
  s.granularity = q.granularity;
  s.groupSize = q.granularity == formats::Granularity::PerGroup ? q.groupSize : 0;
  s.scale = q.scaleFormat;
  // The formats library's tensor scale is always an f32 (Quantize.h).
  if (q.tensorScale)
    s.tensorScale = formats::DataFormat::f32();
  s.zero = q.zeroMode;
  s.actOrder = q.actOrder;
  if (s.hasZeros() && q.zeroFormat && *q.zeroFormat != q.scaleFormat) {
    const formats::IntFormat *codes = q.zeroFormat->asInt();
    if (!codes)
      return makeError("zeros in " + q.zeroFormat->name() +
                       " are neither the scale dtype nor codes");
    s.zeroCodes = *q.zeroFormat;
    // Kernels read zero codes as uint4 or uint8 (lowbit_pack_zeros takes one
    // code a byte). Narrower plain unsigned codes (w2-g64-asym's uint2) are
    // the same integers in the narrowest of those that holds them, so a
    // code's bits do not change; codes with an offset or a sign (GPTQ v1's
    // z - 1) are re-encoded from their values by an import instead
    // (checkpoint::toKernelWeights), and validate() names them here.
    const bool plainUnsigned =
        !codes->isSigned && codes->offset == 0 && !codes->ternary && codes->fractionBits == 0;
    if (plainUnsigned && codes->bits < 4)
      s.zeroCodes = formats::DataFormat::unsignedInt(4);
    else if (plainUnsigned && codes->bits > 4 && codes->bits < 8)
      s.zeroCodes = formats::DataFormat::unsignedInt(8);
  }
  return s;
}

// These helpers may see a problem validate() has not (a C ABI argument, a
// spec before its checks), whose N, K and group size are the caller's: a
// size that is not defined (a negative dimension, a group size of 0) or that
// overflows is -1, never a division by zero or a wrapped size.
int64_t scaleCount(const Problem &p) {
  if (p.n < 0 || p.k < 0)
    return -1;
  switch (p.scheme.granularity) {
  case formats::Granularity::PerTensor: return 1;
  case formats::Granularity::PerChannel: return p.n;
  case formats::Granularity::PerGroup: {
    int64_t count = 0;
    if (p.scheme.groupSize < 1 || mulOverflows(p.n, p.k / p.scheme.groupSize, &count))
      return -1;
    return count;
  }
  }
  return -1;
}

int scaleElementBytes(const Problem &p) { return p.scheme.scale.bits() / 8; }

int64_t tensorScaleOffsetAfter(int64_t blockScaleBytes) {
  int64_t offset = 0;
  if (blockScaleBytes < 0 ||
      addOverflows(blockScaleBytes / 4 * 4, blockScaleBytes % 4 ? 4 : 0, &offset))
    return -1;
  return offset;
}

namespace {

// scaleCount * scaleElementBytes, or -1.
int64_t scaleArrayBytes(const Problem &p) {
  int64_t bytes = 0;
  const int64_t count = scaleCount(p);
  if (count < 0 || mulOverflows(count, scaleElementBytes(p), &bytes))
    return -1;
  return bytes;
}

} // namespace

int64_t tensorScaleOffset(const Problem &p) {
  if (!p.scheme.tensorScale)
    return -1;
  return tensorScaleOffsetAfter(scaleArrayBytes(p));
}

int64_t superStepOffsetAfter(int64_t codeBytes) {
  int64_t offset = 0;
  const int64_t pad = codeBytes % kSuperStepAlignment;
  if (codeBytes < 0 || addOverflows(codeBytes, pad ? kSuperStepAlignment - pad : 0, &offset))
    return -1;
  return offset;
}

int64_t superStepOffset(const Problem &p) {
  if (!p.scheme.hasSuperBlocks())
    return -1;
  return superStepOffsetAfter(scaleArrayBytes(p));
}

int64_t superStepCount(const Problem &p) {
  int64_t count = 0;
  if (!p.scheme.hasSuperBlocks() || p.n < 0 || p.k < 0 ||
      mulOverflows(p.n, p.k / p.scheme.superBlock, &count))
    return -1;
  return count;
}

namespace {

// Codes, padding, then the steps: the scales buffer, and the zeros buffer
// with zeros.
int64_t superBlockBufferBytes(const Problem &p) {
  const int64_t offset = superStepOffset(p), count = superStepCount(p);
  int64_t steps = 0, bytes = 0;
  if (offset < 0 || count < 0 || !p.scheme.superStep ||
      mulOverflows(count, p.scheme.superStep->bits() / 8, &steps) ||
      addOverflows(offset, steps, &bytes))
    return -1;
  return bytes;
}

} // namespace

int64_t scaleBytes(const Problem &p) {
  if (p.scheme.hasSuperBlocks())
    return superBlockBufferBytes(p);
  if (!p.scheme.tensorScale)
    return scaleArrayBytes(p);
  int64_t bytes = 0;
  const int64_t offset = tensorScaleOffset(p);
  if (offset < 0 || addOverflows(offset, p.scheme.tensorScale->bits() / 8, &bytes))
    return -1;
  return bytes;
}

int scaleAlignment(const Problem &p) {
  if (p.scheme.granularity == formats::Granularity::PerGroup)
    return kGroupScaleAlignment;
  return p.scheme.tensorScale ? std::max(4, scaleElementBytes(p)) : scaleElementBytes(p);
}

int zeroElementBytes(const Problem &p) {
  if (!p.scheme.hasZeros())
    return 0;
  return p.scheme.zeroCodes ? 1 : scaleElementBytes(p);
}

int zeroAlignment(const Problem &p) {
  if (p.scheme.hasSuperBlocks() && p.scheme.hasZeros())
    return scaleAlignment(p);
  return std::max(1, zeroElementBytes(p));
}

int64_t zeroBytes(const Problem &p) {
  const int64_t count = scaleCount(p);
  if (count < 0)
    return -1;
  if (p.scheme.hasSuperBlocks())
    return p.scheme.hasZeros() ? superBlockBufferBytes(p) : 0;
  if (!p.scheme.zeroCodes) {
    int64_t bytes = 0;
    return mulOverflows(count, zeroElementBytes(p), &bytes) ? -1 : bytes;
  }
  const int bits = p.scheme.zeroCodes->bits();
  if (bits < 1 || bits > 8)
    return -1;
  const int64_t perByte = 8 / bits;
  return count / perByte + (count % perByte != 0);
}

Status packZeroCodes(const Problem &p, const uint8_t *codes, size_t count, uint8_t *out,
                     size_t outBytes) {
  if (!p.scheme.zeroCodes)
    return makeError("the problem has no zero codes (zero = " +
                     std::string(zeroSpelling(p.scheme.zero, false)) + ")");
  if (static_cast<int64_t>(count) != scaleCount(p))
    return makeError("the problem has " + std::to_string(scaleCount(p)) + " zero codes (" +
                     granularitySpelling(p.scheme.granularity) + " granularity), got " +
                     std::to_string(count));
  if (static_cast<int64_t>(outBytes) < zeroBytes(p))
    return makeError("the packed zero codes take " + std::to_string(zeroBytes(p)) +
                     " bytes, the buffer has " + std::to_string(outBytes));
  const int bits = p.scheme.zeroCodes->bits();
  const int64_t groups =
      scaleCount(p) / (p.scheme.granularity == formats::Granularity::PerTensor ? 1 : p.n);
  for (size_t i = 0; i < count; ++i)
    if (codes[i] >> bits)
      return makeError("zero code " + std::to_string(codes[i]) + " of column " +
                       std::to_string(static_cast<int64_t>(i) / groups) + ", group " +
                       std::to_string(static_cast<int64_t>(i) % groups) + " does not fit " +
                       p.scheme.zeroCodes->name());
  formats::PackLayout layout;
  layout.bitsPerCode = bits;
  layout.container = formats::Container::U8;
  Expected<formats::PackedCodes> packed =
      formats::pack(codes, 1, static_cast<int64_t>(count), layout);
  if (!packed)
    return makeError(p.scheme.zeroCodes->name() + " zero codes: " + packed.error());
  std::copy(packed->bytes.begin(), packed->bytes.end(), out);
  return Status::success();
}

Expected<std::vector<uint8_t>> unpackZeroCodes(const Problem &p, const uint8_t *packed,
                                               size_t packedBytes) {
  if (!p.scheme.zeroCodes)
    return makeError("the problem has no zero codes (zero = " +
                     std::string(zeroSpelling(p.scheme.zero, false)) + ")");
  if (static_cast<int64_t>(packedBytes) < zeroBytes(p))
    return makeError("the packed zero codes take " + std::to_string(zeroBytes(p)) +
                     " bytes, the buffer has " + std::to_string(packedBytes));
  formats::PackedCodes codes;
  codes.layout.bitsPerCode = p.scheme.zeroCodes->bits();
  codes.layout.container = formats::Container::U8;
  codes.rows = 1;
  codes.cols = scaleCount(p);
  codes.containersPerRow = formats::containersPerRow(codes.layout, codes.cols);
  codes.bytes.assign(packed, packed + zeroBytes(p));
  Expected<std::vector<uint8_t>> unpacked = formats::unpack(codes);
  if (!unpacked)
    return makeError(p.scheme.zeroCodes->name() + " zero codes: " + unpacked.error());
  return unpacked;
}

} // namespace lowbit::core
