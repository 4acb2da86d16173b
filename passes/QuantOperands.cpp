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

} // namespace lowbit::passes
