#include "compiler/ProblemModule.h"

#include "ir/LbOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace lowbit::compiler {
namespace {

Type activationType(MLIRContext &context, const std::string &name) {
  return name == "bf16" ? Type(BFloat16Type::get(&context))
                        : Type(Float16Type::get(&context));
}

Type floatType(MLIRContext &context, const std::string &name) {
  if (name == "bf16")
    return BFloat16Type::get(&context);
  if (name == "f32")
    return Float32Type::get(&context);
  return Float16Type::get(&context);
}

// "uint4" -> ui4, "int4" -> si4: signedness is part of the storage format.
Type weightType(MLIRContext &context, const std::string &name) {
  bool isUnsigned = name.rfind("uint", 0) == 0;
  unsigned bits = static_cast<unsigned>(name.back() - '0');
  return IntegerType::get(&context, bits,
                          isUnsigned ? IntegerType::Unsigned : IntegerType::Signed);
}

} // namespace

std::string problemSymbol(const spec::ProblemSpec &problem) {
  std::string symbol;
  for (char c : problem.name)
    symbol += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return symbol;
}

FailureOr<OwningOpRef<ModuleOp>>
buildProblemModule(MLIRContext &context,
                   const std::vector<spec::ProblemSpec> &problems, Attribute schedule) {
  context.loadDialect<lb::LbDialect, func::FuncDialect>();
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());

  for (const spec::ProblemSpec &problem : problems) {
    Location problemLoc = NameLoc::get(builder.getStringAttr(problem.name));
    Type activation = activationType(context, problem.activation);
    Type scale = floatType(context, problem.scale);
    std::optional<lb::ScaleGranularity> granularity =
        lb::symbolizeScaleGranularity(problem.granularity);
    std::optional<lb::ZeroMode> zero = lb::symbolizeZeroMode(problem.zero);
    if (!granularity || !zero)
      return emitError(problemLoc, "unknown granularity or zero mode");
    int64_t groupSize =
        *granularity == lb::ScaleGranularity::group ? problem.groupSize : 0;
    auto quant = lb::QuantAttr::getChecked(
        [&] { return emitError(problemLoc); }, &context, *granularity,
        groupSize, scale, *zero, /*actOrder=*/false);
    if (!quant)
      return failure();

    SmallVector<int64_t> scaleShape;
    switch (*granularity) {
    case lb::ScaleGranularity::tensor: scaleShape = {1}; break;
    case lb::ScaleGranularity::channel: scaleShape = {problem.n}; break;
    case lb::ScaleGranularity::group:
      scaleShape = {problem.n, problem.k / std::max<int64_t>(groupSize, 1)};
      break;
    }
    auto xType = RankedTensorType::get({ShapedType::kDynamic, problem.k}, activation);
    auto codesType = RankedTensorType::get({problem.n, problem.k},
                                           weightType(context, problem.weight));
    auto scalesType = RankedTensorType::get(scaleShape, scale);
    auto resultType = RankedTensorType::get({ShapedType::kDynamic, problem.n}, activation);
    SmallVector<Type> inputs = {xType, codesType, scalesType};
    if (*zero != lb::ZeroMode::none)
      inputs.push_back(scalesType);

    auto func = builder.create<func::FuncOp>(
        problemLoc, problemSymbol(problem),
        builder.getFunctionType(inputs, {resultType}));
    Block *body = func.addEntryBlock();
    OpBuilder bodyBuilder = OpBuilder::atBlockEnd(body);
    Value zeros = *zero != lb::ZeroMode::none ? body->getArgument(3) : Value();
    auto matmul = bodyBuilder.create<lb::QMatmulOp>(
        problemLoc, resultType, body->getArgument(0), body->getArgument(1),
        body->getArgument(2), zeros, /*table=*/Value(), quant,
        /*schedule=*/dyn_cast_or_null<lb::ScheduleAttr>(schedule));
    bodyBuilder.create<func::ReturnOp>(problemLoc, matmul.getResult());
  }
  if (failed(verify(*module)))
    return failure();
  return module;
}

} // namespace lowbit::compiler
