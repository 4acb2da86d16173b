#include "compiler/ProblemModule.h"

#include "ir/CoreConversion.h"
#include "ir/LbOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace lowbit::compiler {
namespace {

Type activationType(MLIRContext &context, core::Activation activation) {
  switch (activation) {
  case core::Activation::F16: return Float16Type::get(&context);
  case core::Activation::BF16: return BFloat16Type::get(&context);
  case core::Activation::S8:
    return IntegerType::get(&context, 8, IntegerType::Signed);
  case core::Activation::E4M3: return Float8E4M3FNType::get(&context);
  }
  return Type();
}

Type outputType(MLIRContext &context, core::Output output) {
  switch (output) {
  case core::Output::F16: return Float16Type::get(&context);
  case core::Output::BF16: return BFloat16Type::get(&context);
  case core::Output::F32: return Float32Type::get(&context);
  }
  return Type();
}

// Scales (and unquantized zeros) are f16, bf16 or f32, or the block scales
// e8m0 and e4m3fn (core::validate); tensor scales are f32.
FailureOr<Type> floatType(MLIRContext &context, const formats::DataFormat &format) {
  if (format == formats::DataFormat::bf16())
    return Type(BFloat16Type::get(&context));
  if (format == formats::DataFormat::f32())
    return Type(Float32Type::get(&context));
  if (format == formats::DataFormat::f16())
    return Type(Float16Type::get(&context));
  if (format == formats::DataFormat::e4m3fn())
    return Type(Float8E4M3FNType::get(&context));
  if (format == formats::DataFormat::e8m0())
    return Type(lb::MiniFloatType::get(&context, /*exponent=*/8, /*mantissa=*/0, /*bias=*/127,
                                       /*isSigned=*/false, lb::SpecialValues::fn));
  return failure();
}

lb::ScaleGranularity granularityOf(formats::Granularity granularity) {
  switch (granularity) {
  case formats::Granularity::PerTensor: return lb::ScaleGranularity::tensor;
  case formats::Granularity::PerChannel: return lb::ScaleGranularity::channel;
  case formats::Granularity::PerGroup: break;
  }
  return lb::ScaleGranularity::group;
}

lb::ZeroMode zeroModeOf(const core::Scheme &scheme) {
  switch (scheme.zero) {
  case formats::ZeroMode::None: return lb::ZeroMode::none;
  case formats::ZeroMode::SubtractScaled: return lb::ZeroMode::sub_value;
  case formats::ZeroMode::SubtractCode: break;
  }
  return scheme.zeroCodes ? lb::ZeroMode::quantized : lb::ZeroMode::sub_code;
}

} // namespace

FailureOr<OwningOpRef<ModuleOp>>
buildProblemModule(MLIRContext &context,
                   const std::vector<core::Problem> &problems, Attribute schedule) {
  context.loadDialect<lb::LbDialect, func::FuncDialect>();
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());

  for (const core::Problem &problem : problems) {
    Location problemLoc = NameLoc::get(builder.getStringAttr(problem.name));
    if (problem.name.size() > core::kMaxProblemNameLength)
      return emitError(problemLoc, "a problem name has at most " +
                                       std::to_string(core::kMaxProblemNameLength) +
                                       " characters, got " + std::to_string(problem.name.size()));
    Type activation = activationType(context, problem.activation);
    const core::Scheme &scheme = problem.scheme;
    // Two-level scales are integer codes (ui8, si8) with float steps.
    FailureOr<Type> scale = failure();
    if (scheme.hasSuperBlocks()) {
      if (Expected<Type> codes = lb::codeType(context, scheme.scale))
        scale = *codes;
    } else {
      scale = floatType(context, scheme.scale);
    }
    if (failed(scale))
      return emitError(problemLoc, "no IR type for scales of " + scheme.scale.name());
    Type superStep;
    if (scheme.superStep) {
      FailureOr<Type> type = floatType(context, *scheme.superStep);
      if (failed(type))
        return emitError(problemLoc, "no IR type for super-block steps of " +
                                         scheme.superStep->name());
      superStep = *type;
    }
    Type tensorScale;
    if (scheme.tensorScale) {
      FailureOr<Type> type = floatType(context, *scheme.tensorScale);
      if (failed(type))
        return emitError(problemLoc, "no IR type for tensor scales of " +
                                         scheme.tensorScale->name());
      tensorScale = *type;
    }
    Expected<Type> codeType = lb::codeType(context, problem.code);
    if (!codeType)
      return emitError(problemLoc, codeType.error());
    lb::ScaleGranularity granularity = granularityOf(scheme.granularity);
    lb::ZeroMode zero = zeroModeOf(scheme);
    Type zeroType = *scale;
    if (scheme.zeroCodes) {
      Expected<Type> zeroCodes = lb::codeType(context, *scheme.zeroCodes);
      if (!zeroCodes)
        return emitError(problemLoc, "zero codes: " + zeroCodes.error());
      zeroType = *zeroCodes;
    }
    int64_t groupSize =
        granularity == lb::ScaleGranularity::group ? scheme.groupSize : 0;
    auto quant = lb::QuantAttr::getChecked(
        [&] { return emitError(problemLoc); }, &context, granularity,
        groupSize, *scale, tensorScale, zero, scheme.actOrder, scheme.superBlock, superStep);
    if (!quant)
      return failure();

    SmallVector<int64_t> scaleShape;
    switch (granularity) {
    case lb::ScaleGranularity::tensor: scaleShape = {1}; break;
    case lb::ScaleGranularity::channel: scaleShape = {problem.n}; break;
    case lb::ScaleGranularity::group:
      scaleShape = {problem.n, problem.k / std::max<int64_t>(groupSize, 1)};
      break;
    }
    auto xType = RankedTensorType::get({ShapedType::kDynamic, problem.k}, activation);
    auto codesType = RankedTensorType::get({problem.n, problem.k}, *codeType);
    auto scalesType = RankedTensorType::get(scaleShape, *scale);
    auto resultType = RankedTensorType::get({ShapedType::kDynamic, problem.n},
                                            outputType(context, core::outputType(problem)));
    // The arguments are the kernel's, in its order: x, [x_scales,] codes,
    // scales, [zeros].
    SmallVector<Type> inputs = {xType};
    if (problem.activationScale != core::ActivationScale::None)
      inputs.push_back(RankedTensorType::get(
          {problem.activationScale == core::ActivationScale::PerTensor ? 1 : ShapedType::kDynamic},
          builder.getF32Type()));
    inputs.append({codesType, scalesType});
    if (zero != lb::ZeroMode::none)
      inputs.push_back(RankedTensorType::get(scaleShape, zeroType));

    auto func = builder.create<func::FuncOp>(
        problemLoc, core::problemSymbol(problem.name),
        builder.getFunctionType(inputs, {resultType}));
    Block *body = func.addEntryBlock();
    OpBuilder bodyBuilder = OpBuilder::atBlockEnd(body);
    unsigned next = 1;
    Value xScales = problem.activationScale != core::ActivationScale::None
                        ? body->getArgument(next++)
                        : Value();
    Value codes = body->getArgument(next++), scales = body->getArgument(next++);
    Value zeros = zero != lb::ZeroMode::none ? body->getArgument(next) : Value();
    auto matmul = bodyBuilder.create<lb::QMatmulOp>(
        problemLoc, resultType, body->getArgument(0), xScales, codes, scales, zeros,
        /*table=*/Value(), quant,
        /*schedule=*/dyn_cast_or_null<lb::ScheduleAttr>(schedule));
    bodyBuilder.create<func::ReturnOp>(problemLoc, matmul.getResult());
  }
  if (failed(verify(*module)))
    return failure();
  return module;
}

} // namespace lowbit::compiler
