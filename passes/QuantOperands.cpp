#include "passes/TileFamilies.h"

#include "ir/LbTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace lowbit::passes {

SmallVector<Value> quantIndex(OpBuilder &b, Location loc, const KernelProblem &p, Value n,
                              Value k) {
  switch (p.quant.getGranularity()) {
  case lb::ScaleGranularity::tensor: return {b.create<arith::ConstantIndexOp>(loc, 0)};
  case lb::ScaleGranularity::channel: return {n};
  case lb::ScaleGranularity::group:
    return {n, b.create<arith::DivUIOp>(
                   loc, k, b.create<arith::ConstantIndexOp>(loc, p.quant.getGroupSize()))};
  }
  return {};
}

ColumnQuant loadColumnQuant(OpBuilder &b, Location loc, const KernelProblem &p, Value n, Value k,
                            Value scale) {
  if (!scale)
    scale = b.create<lb::LoadScalarOp>(loc, b.getF32Type(), p.scales, quantIndex(b, loc, p, n, k));
  // Block scales times the tensor scale, in f32: the one rounding the
  // formats library's w = q · (s · t) has in f64 (block scales have no zeros).
  if (p.tensorScale)
    scale = b.create<arith::MulFOp>(loc, scale, p.tensorScale);
  if (!p.zeros)
    return {scale, Value(), Value()};
  Value zero =
      b.create<lb::LoadScalarOp>(loc, b.getF32Type(), p.zeros, quantIndex(b, loc, p, n, k));
  if (p.quant.getZero() == lb::ZeroMode::sub_value)
    return {scale, Value(), b.create<arith::NegFOp>(loc, zero)};
  return {scale, zero, Value()};
}

ScaleRuns::ScaleRuns(const KernelProblem &problem, int64_t chunk, int64_t columns)
    : problem_(problem) {
  if (problem.quant.getGranularity() != lb::ScaleGranularity::group)
    return;
  int64_t group = problem.quant.getGroupSize();
  auto type = cast<MemRefType>(problem.scales.getType());
  int64_t bytes = lb::getScaleBytes(type.getElementType());
  if (chunk % group || chunk / group < 2 || !bytes || type.isDynamicDim(1))
    return;
  int64_t runBytes = chunk / group * bytes;
  if (core::scaleRunLoadBytes(runBytes, type.getDimSize(1) * bytes) &&
      columns <= kMaxRunColumns && columns * runBytes / 4 <= kMaxRunWords)
    count_ = chunk / group;
}

void ScaleRuns::load(OpBuilder &b, Location loc, ValueRange columns, Value chunk0) {
  chunk0_ = chunk0;
  runs_.clear();
  Value first = b.create<arith::DivUIOp>(
      loc, chunk0, b.create<arith::ConstantIndexOp>(loc, problem_.quant.getGroupSize()));
  auto runType = VectorType::get({count_}, b.getF32Type());
  for (Value n : columns)
    runs_.push_back(b.create<lb::LoadScaleRunOp>(loc, runType, problem_.scales, n, first,
                                                 b.getI64IntegerAttr(count_)));
}

Value ScaleRuns::scaleAt(OpBuilder &b, Location loc, size_t column, Value k) {
  Value offset = b.create<arith::SubIOp>(loc, k, chunk0_);
  Value position = b.create<arith::DivUIOp>(
      loc, offset, b.create<arith::ConstantIndexOp>(loc, problem_.quant.getGroupSize()));
  return b.create<lb::ScaleInRunOp>(loc, b.getF32Type(), runs_[column], position);
}

} // namespace lowbit::passes
