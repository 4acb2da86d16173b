#include "ir/CoreConversion.h"

#include "ir/LbTypes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace lowbit::lb {
namespace {

// A type as diagnostics print it: 'ui4'.
std::string quoted(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << type << "'";
  return text;
}

unsigned minifloatFlags(MiniFloatType type) {
  unsigned flags = formats::kFloatFinite;
  switch (type.getSpecial()) {
  case SpecialValues::finite: break;
  case SpecialValues::fn: flags |= formats::kFloatNanAllOnes; break;
  case SpecialValues::ieee: flags |= formats::kFloatIeee; break;
  }
  if (!type.getIsSigned()) {
    flags |= formats::kFloatUnsigned;
    // An unsigned exponent-only type (e8m0) has no subnormals: every code is
    // a power of two (LbTypes.td).
    if (type.getMantissa() == 0)
      flags |= formats::kFloatNoSubnormals;
  }
  return flags;
}

Expected<formats::Granularity> granularity(ScaleGranularity g) {
  switch (g) {
  case ScaleGranularity::tensor: return formats::Granularity::PerTensor;
  case ScaleGranularity::channel: return formats::Granularity::PerChannel;
  case ScaleGranularity::group: return formats::Granularity::PerGroup;
  }
  return makeError("unknown scale granularity");
}

} // namespace

core::Family coreFamily(KernelFamily family) {
  switch (family) {
  case KernelFamily::gemv: return core::Family::Gemv;
  case KernelFamily::mma: return core::Family::Mma;
  case KernelFamily::gemv_tiled: return core::Family::GemvTiled;
  case KernelFamily::wgmma: return core::Family::Wgmma;
  case KernelFamily::dequant: return core::Family::Dequant;
  }
  return core::Family::Wgmma; // no kernels: the rules reject it
}

core::Schedule coreSchedule(KernelFamily family, ArrayRef<int64_t> tile, ArrayRef<int64_t> warps,
                            int64_t stages, int64_t splitK, int64_t clusterK,
                            TileScheduler scheduler) {
  core::Schedule s;
  s.family = coreFamily(family);
  // Sizes of the wrong arity (an attribute built without its verifier) read
  // as 0, which the structure rules reject instead of reading past the end.
  s.tileM = s.tileN = s.tileK = s.warpsM = s.warpsN = 0;
  if (tile.size() == 3)
    s.tileM = tile[0], s.tileN = tile[1], s.tileK = tile[2];
  if (warps.size() == 2)
    s.warpsM = warps[0], s.warpsN = warps[1];
  s.stages = stages;
  s.splitK = splitK;
  s.clusterK = clusterK;
  switch (scheduler) {
  case TileScheduler::grid: s.scheduler = core::TileScheduler::Grid; break;
  case TileScheduler::persistent: s.scheduler = core::TileScheduler::Persistent; break;
  case TileScheduler::stream_k: s.scheduler = core::TileScheduler::StreamK; break;
  }
  return s;
}

core::Schedule coreSchedule(ScheduleAttr schedule) {
  return coreSchedule(schedule.getFamily(), schedule.getTile(), schedule.getWarps(),
                      schedule.getStages(), schedule.getSplitK(), schedule.getClusterK(),
                      schedule.getScheduler());
}

Expected<formats::DataFormat> dataFormat(Type type) {
  if (type.isF16())
    return formats::DataFormat::f16();
  if (type.isBF16())
    return formats::DataFormat::bf16();
  if (type.isF32())
    return formats::DataFormat::f32();
  if (isa<Float8E4M3FNType>(type))
    return formats::DataFormat::e4m3fn();
  if (isa<Float8E5M2Type>(type))
    return formats::DataFormat::e5m2();
  if (auto minifloat = dyn_cast<MiniFloatType>(type))
    return formats::DataFormat::minifloat(minifloat.getExponent(), minifloat.getMantissa(),
                                          minifloat.getBias(), minifloatFlags(minifloat));
  if (auto integer = dyn_cast<IntegerType>(type)) {
    if (integer.isSignless())
      return makeError("integer codes must say their signedness (ui<N> or si<N>), got " +
                       quoted(type));
    return formats::DataFormat::integer(static_cast<int>(integer.getWidth()), integer.isSigned());
  }
  if (auto offsetInt = dyn_cast<OffsetIntType>(type)) {
    if (offsetInt.getTernary())
      return formats::DataFormat::ternary();
    return formats::DataFormat::unsignedInt(static_cast<int>(offsetInt.getBits()),
                                            static_cast<int>(offsetInt.getOffset()));
  }
  if (auto lut = dyn_cast<LutType>(type)) {
    if (!lut.getTable())
      return makeError("lookup codes " + quoted(type) +
                       " take their table at run time, which no kernel implements: give the "
                       "table in the type");
    std::vector<double> table(lut.getValues().begin(), lut.getValues().end());
    if (lut.getBits() == 4 && table == formats::nf4Table())
      return formats::DataFormat::nf4();
    if (lut.getBits() == 4 && table == formats::fp4Table())
      return formats::DataFormat::fp4Lut();
    return formats::DataFormat::lut(static_cast<int>(lut.getBits()), std::move(table), "");
  }
  return makeError("no storage format for " + quoted(type));
}

Expected<Type> codeType(MLIRContext &context, const formats::DataFormat &format) {
  if (const formats::IntFormat *integer = format.asInt()) {
    if (integer->fractionBits != 0)
      return makeError("no IR type for fixed-point codes (" + format.name() + ")");
    if (integer->offset != 0 || integer->ternary) {
      if (integer->isSigned)
        return makeError("no IR type for signed codes with an offset (" + format.name() + ")");
      return Type(OffsetIntType::get(&context, static_cast<unsigned>(integer->bits),
                                     integer->offset, integer->ternary));
    }
    return Type(IntegerType::get(&context, static_cast<unsigned>(integer->bits),
                                 integer->isSigned ? IntegerType::Signed
                                                   : IntegerType::Unsigned));
  }
  if (const formats::FloatFormat *f = format.asFloat()) {
    SpecialValues special = (f->flags & formats::kFloatIeee)         ? SpecialValues::ieee
                            : (f->flags & formats::kFloatNanAllOnes) ? SpecialValues::fn
                                                                     : SpecialValues::finite;
    Type type = MiniFloatType::getChecked(
        [&] { return mlir::emitError(UnknownLoc::get(&context)); }, &context,
        static_cast<unsigned>(f->exponentBits), static_cast<unsigned>(f->mantissaBits),
        static_cast<int64_t>(f->bias),
        f->hasSign(), special);
    // The type's rules (subnormals unless unsigned exponent-only) must give
    // back the same format.
    const std::string noType = "no IR type for " + format.name() + " codes";
    if (!type)
      return makeError(noType);
    Expected<formats::DataFormat> back = dataFormat(type);
    if (!back || *back != format)
      return makeError(noType);
    return type;
  }
  const formats::LutFormat *lut = format.asLut();
  return Type(LutType::get(&context, static_cast<unsigned>(lut->bits),
                           DenseF64ArrayAttr::get(&context, lut->table)));
}

// Quantized activations: the x_scales operand's shape says the scale's
// granularity ([M] per token, [1] per tensor), y's element type the output.
static Status setQuantizedActivation(core::Problem &p, Type xScales, Type output) {
  auto scales = dyn_cast_or_null<ShapedType>(xScales);
  if (!scales || scales.getRank() != 1 || !scales.getElementType().isF32())
    return makeError(std::string(core::activationName(p.activation)) +
                     " activations need f32 x_scales, [M] per token or [1] per tensor");
  p.activationScale = scales.getDimSize(0) == 1 ? core::ActivationScale::PerTensor
                                                : core::ActivationScale::PerToken;
  if (!output)
    return makeError("quantized activations need y's element type");
  if (output.isF16())
    p.output = core::Output::F16;
  else if (output.isBF16())
    p.output = core::Output::BF16;
  else if (output.isF32())
    p.output = core::Output::F32;
  else
    return makeError("y must be f16, bf16 or f32, got " + quoted(output));
  return Status::success();
}

Expected<core::Activation> coreActivation(Type activation) {
  if (activation.isF16())
    return core::Activation::F16;
  if (activation.isBF16())
    return core::Activation::BF16;
  if (activation.isInteger(8))
    return core::Activation::S8;
  if (isa<Float8E4M3FNType>(activation))
    return core::Activation::E4M3;
  return makeError("activations must be f16, bf16, si8 or f8E4M3FN, got " + quoted(activation));
}

Expected<core::Problem> coreProblem(int64_t n, int64_t k, Type activation, Type code,
                                    QuantAttr quant, Type zeros, Type output, Type xScales) {
  core::Problem p;
  p.n = n;
  p.k = k;
  Expected<core::Activation> kind = coreActivation(activation);
  if (!kind)
    return makeError(kind.error());
  p.activation = *kind;
  if (core::isQuantized(p.activation)) {
    if (Status set = setQuantizedActivation(p, xScales, output); !set)
      return makeError(set.error());
  } else if (xScales) {
    return makeError(std::string(core::activationName(p.activation)) +
                     " activations take no x_scales");
  }
  Expected<formats::DataFormat> codeFormat = dataFormat(code);
  if (!codeFormat)
    return makeError(codeFormat.error());
  p.code = *codeFormat;

  core::Scheme &s = p.scheme;
  Expected<formats::Granularity> g = granularity(quant.getGranularity());
  if (!g)
    return makeError(g.error());
  s.granularity = *g;
  s.groupSize = quant.getGroupSize();
  Expected<formats::DataFormat> scale = dataFormat(quant.getScale());
  if (!scale)
    return makeError(scale.error());
  s.scale = *scale;
  if (Type tensorScale = quant.getTensorScale()) {
    Expected<formats::DataFormat> format = dataFormat(tensorScale);
    if (!format)
      return makeError("tensor scale: " + format.error());
    s.tensorScale = *format;
  }
  switch (quant.getZero()) {
  case ZeroMode::none: s.zero = formats::ZeroMode::None; break;
  case ZeroMode::sub_code: s.zero = formats::ZeroMode::SubtractCode; break;
  case ZeroMode::sub_value: s.zero = formats::ZeroMode::SubtractScaled; break;
  case ZeroMode::quantized: {
    s.zero = formats::ZeroMode::SubtractCode;
    // The zeros operand's integer type is the codes' format (uint4 for GPTQ
    // and AWQ); the op's verifier requires one.
    if (!zeros)
      return makeError("quantized zero points need the zeros operand's integer type");
    Expected<formats::DataFormat> zeroCodes = dataFormat(zeros);
    if (!zeroCodes)
      return makeError(zeroCodes.error());
    s.zeroCodes = *zeroCodes;
    break;
  }
  }
  s.actOrder = quant.getActOrder();
  if (Type step = quant.getSuperStep()) {
    Expected<formats::DataFormat> format = dataFormat(step);
    if (!format)
      return makeError("super-block steps: " + format.error());
    s.superBlock = quant.getSuperBlock();
    s.superStep = *format;
  }
  return p;
}

} // namespace lowbit::lb
