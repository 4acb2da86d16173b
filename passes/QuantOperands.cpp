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

Value loadSuperStep(OpBuilder &b, Location loc, const KernelProblem &p, Value buffer, Value n,
                    Value k) {
  lb::QuantAttr quant = p.quant;
  Value block = b.create<arith::DivUIOp>(
      loc, k, b.create<arith::ConstantIndexOp>(loc, quant.getSuperBlock()));
  return b.create<lb::LoadSuperStepOp>(loc, b.getF32Type(), buffer, n, block,
                                       TypeAttr::get(quant.getSuperStep()),
                                       b.getI64IntegerAttr(p.k / quant.getSuperBlock()));
}

SuperSteps loadSuperSteps(OpBuilder &b, Location loc, const KernelProblem &p, Value n, Value k) {
  if (!p.quant.getSuperStep())
    return {};
  return {loadSuperStep(b, loc, p, p.scales, n, k),
          p.zeros ? loadSuperStep(b, loc, p, p.zeros, n, k) : Value()};
}

namespace {

// Two-level scales: `code` (a group's scale or min code, widened to f32)
// times the step of its super-block (`step`, or loaded here). code · step
// is exact in f32 (8 + 11 bits for f16 steps), as the formats library's f64
// product is.
Value timesSuperStep(OpBuilder &b, Location loc, const KernelProblem &p, Value buffer, Value n,
                     Value k, Value code, Value step) {
  if (!p.quant.getSuperStep())
    return code;
  return b.create<arith::MulFOp>(loc, code, step ? step : loadSuperStep(b, loc, p, buffer, n, k));
}

} // namespace

ColumnQuant loadColumnQuant(OpBuilder &b, Location loc, const KernelProblem &p, Value n, Value k,
                            Value scale, Value zero, const SuperSteps &steps) {
  if (!scale) {
    scale = b.create<lb::LoadScalarOp>(loc, b.getF32Type(), p.scales, quantIndex(b, loc, p, n, k));
    scale = timesSuperStep(b, loc, p, p.scales, n, k, scale, steps.scale);
  }
  // Block scales times the tensor scale, in f32: the one rounding the
  // formats library's w = q · (s · t) has in f64 (block scales have no zeros).
  if (p.tensorScale)
    scale = b.create<arith::MulFOp>(loc, scale, p.tensorScale);
  if (!p.zeros)
    return {scale, Value(), Value()};
  if (!zero) {
    zero = b.create<lb::LoadScalarOp>(loc, b.getF32Type(), p.zeros, quantIndex(b, loc, p, n, k));
    zero = timesSuperStep(b, loc, p, p.zeros, n, k, zero, steps.zero);
  }
  if (p.quant.getZero() == lb::ZeroMode::sub_value)
    return {scale, Value(), b.create<arith::NegFOp>(loc, zero)};
  return {scale, zero, Value()};
}

bool hasTwoLevelMins(const KernelProblem &p) {
  return p.quant.getSuperStep() && p.quant.getZero() == lb::ZeroMode::sub_value;
}

Value scaleFragment(OpBuilder &b, Location loc, const KernelProblem &p, Type type, Value fragment,
                    Value scale, Value bias) {
  auto op = b.create<lb::ScaleFragmentOp>(loc, type, fragment, scale, bias);
  if (hasTwoLevelMins(p))
    op.setWide(true);
  return op;
}

} // namespace lowbit::passes
