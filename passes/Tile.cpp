#include "passes/Passes.h"
#include "passes/TileFamilies.h"

#include "core/DecodeFacts.h"
#include "ir/CoreConversion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace lowbit::passes {
#define GEN_PASS_DEF_LBTILE
#include "passes/Passes.h.inc"

namespace {

std::string kernelName(StringRef problem, lb::ScheduleAttr schedule) {
  std::string name = problem.str() + "__" +
                     lb::stringifyKernelFamily(schedule.getFamily()).str();
  ArrayRef<int64_t> tile = schedule.getTile(), warps = schedule.getWarps();
  name += "_t" + std::to_string(tile[0]) + "x" + std::to_string(tile[1]) + "x" +
          std::to_string(tile[2]) + "_w" + std::to_string(warps[0]) + "x" +
          std::to_string(warps[1]) + "_s" + std::to_string(schedule.getStages()) +
          "_k" + std::to_string(schedule.getSplitK());
  // Only cluster schedules say it, so the other names stay as they were.
  if (schedule.getClusterK() != 1)
    name += "_c" + std::to_string(schedule.getClusterK());
  if (schedule.getScheduler() != lb::TileScheduler::grid)
    name += "_" + lb::stringifyTileScheduler(schedule.getScheduler()).str();
  return name;
}

MemRefType asMemRef(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

LogicalResult tileOne(lb::QMatmulOp op, ModuleOp module) {
  lb::ScheduleAttr schedule = *op.getSchedule();
  auto func = op->getParentOfType<func::FuncOp>();
  OpBuilder builder(module.getContext());
  builder.setInsertionPointToEnd(module.getBody());

  SmallVector<Type> argTypes = {asMemRef(op.getX().getType())};
  if (op.getXScales())
    argTypes.push_back(asMemRef(op.getXScales().getType()));
  argTypes.append({asMemRef(op.getCodes().getType()), asMemRef(op.getScales().getType())});
  if (op.getZeros())
    argTypes.push_back(asMemRef(op.getZeros().getType()));
  if (op.getTable())
    return op.emitOpError("lb-tile does not handle table operands yet");
  // The dequant family's output is the dense weights, W[N, K] in the
  // activation type, where the other families write y[M, N].
  auto codes = cast<RankedTensorType>(op.getCodes().getType());
  Type activation = op.getX().getType().getElementType();
  argTypes.push_back(schedule.getFamily() == lb::KernelFamily::dequant
                         ? MemRefType::get(codes.getShape(), activation)
                         : asMemRef(op.getResult().getType()));
  argTypes.push_back(builder.getIndexType());
  // Stream-K's split tiles meet in the caller's workspace (f32 partial sums,
  // then the flags; core::streamKWorkspaceBytes).
  const bool streamK = schedule.getScheduler() == lb::TileScheduler::stream_k;
  if (streamK)
    argTypes.push_back(MemRefType::get({ShapedType::kDynamic}, builder.getF32Type()));

  auto kernel = builder.create<func::FuncOp>(
      op.getLoc(), kernelName(func ? func.getSymName() : "kernel", schedule),
      builder.getFunctionType(argTypes, {}));
  kernel->setAttr(kKernelAttr, builder.getUnitAttr());
  kernel->setAttr("lb.schedule", schedule);
  kernel->setAttr("lb.quant", op.getQuant());
  Block *entry = kernel.addEntryBlock();

  KernelProblem problem;
  problem.kernel = kernel;
  problem.source = op;
  problem.schedule = schedule;
  problem.quant = op.getQuant();
  problem.n = codes.getDimSize(0);
  problem.k = codes.getDimSize(1);
  problem.activation = activation;
  problem.output = op.getResult().getType().getElementType();
  problem.code = codes.getElementType();
  problem.fragment = core::CodeFragment{static_cast<int>(lb::getCodeBits(problem.code))};
  unsigned index = 0;
  problem.x = entry->getArgument(index++);
  if (op.getXScales())
    problem.xScales = entry->getArgument(index++);
  problem.weights = entry->getArgument(index++);
  problem.scales = entry->getArgument(index++);
  if (op.getZeros())
    problem.zeros = entry->getArgument(index++);
  problem.y = entry->getArgument(index++);
  problem.rows = entry->getArgument(index++);
  if (streamK)
    problem.workspace = entry->getArgument(index++);

  if (failed(checkSchedule(problem))) {
    kernel.erase();
    return failure();
  }
  builder.setInsertionPointToStart(entry);
  // Loaded once, before any family's loops: every scale load multiplies by it.
  if (problem.quant.getTensorScale())
    problem.tensorScale = builder.create<lb::LoadTensorScaleOp>(
        op.getLoc(), builder.getF32Type(), problem.scales);
  switch (schedule.getFamily()) {
  case lb::KernelFamily::gemv: buildGemvBody(builder, problem); break;
  case lb::KernelFamily::gemv_tiled: buildGemvTiledBody(builder, problem); break;
  case lb::KernelFamily::wgmma: buildWgmmaBody(builder, problem); break;
  case lb::KernelFamily::dequant: buildDequantBody(builder, problem); break;
  default:
    if (schedule.getSplitK() > 1)
      buildMmaSplitKBody(builder, problem);
    else
      buildMmaBody(builder, problem);
    break;
  }
  return success();
}

struct LbTilePass : impl::LbTileBase<LbTilePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<lb::QMatmulOp> scheduled;
    module.walk([&](lb::QMatmulOp op) {
      if (op.getSchedule())
        scheduled.push_back(op);
    });
    for (lb::QMatmulOp op : scheduled)
      if (failed(tileOne(op, module)))
        return signalPassFailure();
  }
};

} // namespace

Value TileBuilderBase::index(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
Value TileBuilderBase::add(Value a, Value c) { return b.create<arith::AddIOp>(loc, a, c); }
Value TileBuilderBase::mul(Value a, Value c) { return b.create<arith::MulIOp>(loc, a, c); }
Value TileBuilderBase::coord(lb::ThreadCoord c) {
  return b.create<lb::ThreadCoordOp>(loc, b.getIndexType(), c);
}

VectorType unitWordsType(OpBuilder &b, const KernelProblem &problem) {
  return VectorType::get({problem.fragment.wordsPerUnit()}, b.getI32Type());
}

PairedCodeLoader::Codes PairedCodeLoader::load(Value n0, Value stepK0, int64_t step,
                                               int64_t group) {
  int64_t units = problem_.fragment.pairedUnitsPerLoad();
  if (units == 2 && step == 1) {
    auto found = firstStep_.find(group);
    if (found != firstStep_.end())
      return {found->second, 1};
  }
  auto type =
      VectorType::get({problem_.fragment.wordsPerUnit() * units}, b_.getI32Type());
  Value words = b_.create<lb::LoadCodesOp>(loc_, type, weights_, stage_, n0, stepK0,
                                           lb::Fragment::mma_b_paired, DenseI64ArrayAttr());
  if (units == 2)
    firstStep_[group] = words;
  return {words, 0};
}

// Zeros in the scale's float type are subtracted in the activation type;
// only integer codes, zeros of the activation's own type and bf16 zeros with
// f16 values (8 significant bits fit f16's 11) are exact there.
static bool zerosNeedResidual(const KernelProblem &problem) {
  Type zero = cast<MemRefType>(problem.zeros.getType()).getElementType();
  return isa<FloatType>(zero) && zero != problem.activation &&
         !(zero.isBF16() && problem.activation.isF16());
}

// s8 activations meet s8 bytes (lb.decode to i8); the others their own type.
Type decodedValueType(OpBuilder &b, const KernelProblem &problem) {
  return problem.quantizedActivations() ? Type(b.getI8Type()) : problem.activation;
}

Value decodeUnit(OpBuilder &b, Location loc, const KernelProblem &problem,
                 const PairedCodeLoader::Codes &codes, ValueRange zeros, bool raw) {
  bool residual = !zeros.empty() && zerosNeedResidual(problem);
  auto decode = b.create<lb::DecodeOp>(
      loc, VectorType::get({core::kValuesPerUnit}, decodedValueType(b, problem)), codes.words,
      problem.code,
      codes.unit, zeros, residual);
  decode.setRaw(raw);
  return decode;
}

core::S8Decode KernelProblem::byteDecode() const {
  return e4m3Activations() ? core::S8Decode{} : *core::s8Decode(*lb::dataFormat(code));
}

bool decodesRaw(const KernelProblem &problem) {
  if (problem.quantizedActivations())
    return false;
  Expected<formats::DataFormat> format = lb::dataFormat(problem.code);
  return format.ok() &&
         core::decodesRaw(*format, problem.activation.isF16() ? core::Activation::F16
                                                              : core::Activation::BF16);
}

bool needsWideDot(const KernelProblem &problem) {
  Expected<formats::DataFormat> format = lb::dataFormat(problem.code);
  return format.ok() &&
         core::needsWideDot(*format, problem.activation.isF16() ? core::Activation::F16
                                                                : core::Activation::BF16);
}

int rawScaleExponent(const KernelProblem &problem, int subtile) {
  return core::rawScaleExponent(*lb::dataFormat(problem.code), subtile);
}

void setRegisterBudget(const KernelProblem &problem, int64_t threads, int64_t registers) {
  int64_t blocks = std::max<int64_t>(1, 65536 / (threads * registers));
  problem.kernel->setAttr(kMinBlocksAttr,
                          IntegerAttr::get(IntegerType::get(problem.kernel->getContext(), 64),
                                           blocks));
}

} // namespace lowbit::passes
