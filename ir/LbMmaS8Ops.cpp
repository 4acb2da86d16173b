// Verifiers of the integer-tensor-core ops (LbMmaS8Ops.td).
#include "ir/LbOps.h"

using namespace mlir;
using namespace lowbit::lb;

LogicalResult PackAFragmentS8Op::verify() {
  // A 64-column unit holds four 16-column slices.
  if (getSlice() > 3)
    return emitOpError("slice must be 0..3 (a 64-column unit's 16-column slices), got ")
           << getSlice();
  return success();
}

LogicalResult LoadActivationsOp::verify() {
  auto x = cast<MemRefType>(getX().getType());
  auto values = cast<VectorType>(getValues().getType());
  Type element = x.getElementType();
  if (x.getRank() != 2)
    return emitOpError("x must be a rank-2 memref [M, K], got rank ") << x.getRank();
  if (values.getElementType().isInteger(8)) {
    // s8 or e4m3 bytes are x's own: one 8-byte load, a B fragment of
    // m16n8k32.
    if (!element.isInteger(8) && !isa<Float8E4M3FNType>(element))
      return emitOpError("i8 values are loaded from s8 or e4m3 activations, not ") << element;
    if (values.getNumElements() != 8)
      return emitOpError("s8 activations are loaded 8 at a time (one m16n8k32 B fragment), not ")
             << values.getNumElements();
    return success();
  }
  if (element != values.getElementType())
    return emitOpError("values of ") << values.getElementType() << " from x of " << element;
  if (values.getNumElements() % 8)
    return emitOpError("16-bit activations are loaded 8 (16 bytes) at a time, not ")
           << values.getNumElements();
  return success();
}
