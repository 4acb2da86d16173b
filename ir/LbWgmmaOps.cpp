// Verifiers of the shared-memory layout on lb.shared_buffer and of the
// wgmma family's ops (LbWgmmaOps.td).
#include "ir/LbOps.h"

using namespace mlir;
using namespace lowbit::lb;

namespace {

// Bytes of one element of a staging buffer (16-bit activations or codes).
int64_t elementBytes(MemRefType type) {
  Type element = type.getElementType();
  return element.isIntOrFloat() ? element.getIntOrFloatBitWidth() / 8 : 0;
}

} // namespace

LogicalResult SharedBufferOp::verify() {
  SwizzleAttr layout = getLayoutAttr();
  if (!layout)
    return success();
  auto type = cast<MemRefType>(getBuffer().getType());
  int64_t rowBytes = getCols() * elementBytes(type);
  if (rowBytes % layout.getBytes())
    return emitOpError("a row of ") << getCols() << " values is " << rowBytes
                                    << " bytes, not whole " << layout.getBytes()
                                    << "-byte swizzle spans";
  // The hardware swizzles address bits: a stage it reads must start on a
  // whole pattern.
  if (layout.isHardware() && (getRows() * rowBytes) % layout.getAlignment())
    return emitOpError("a stage of ")
           << getRows() << " rows must be a multiple of " << layout.getAlignment()
           << " bytes, so that every stage starts on a whole swizzle pattern";
  return success();
}

LogicalResult CopyPairedActivationsOp::verify() {
  auto buffer = getBuffer().getDefiningOp<SharedBufferOp>();
  if (!buffer || !buffer.getLayoutAttr())
    return emitOpError("needs a buffer made by lb.shared_buffer with a #lb.swizzle layout");
  // A lane copies one 4-byte word: a warp one row of 64 16-bit values or two
  // rows of 64 bytes.
  if (buffer.getCols() != 64)
    return emitOpError("copies rows of 64 values, got ") << buffer.getCols();
  // s8 x (si8) lands in an i8 buffer, as the wgmma's A bytes are i8.
  auto element = cast<MemRefType>(getBuffer().getType()).getElementType();
  auto xElement = cast<MemRefType>(getX().getType()).getElementType();
  if (element.getIntOrFloatBitWidth() != xElement.getIntOrFloatBitWidth())
    return emitOpError("copies x of ") << xElement << " into a buffer of " << element;
  if (getThreads() % 32)
    return emitOpError("copies with whole warps, got ") << getThreads() << " threads";
  return success();
}

// setmaxnreg takes 24 .. 256 in steps of 8.
LogicalResult SetMaxRegistersOp::verify() {
  int64_t count = getCount();
  if (count < 24 || count > 256 || count % 8)
    return emitOpError("register count must be a multiple of 8 in 24 .. 256, got ") << count;
  return success();
}

LogicalResult WgmmaOp::verify() {
  auto buffer = getBuffer().getDefiningOp<SharedBufferOp>();
  auto bufferType = cast<MemRefType>(getBuffer().getType());
  int64_t rowBytes = buffer ? buffer.getCols() * elementBytes(bufferType) : 0;
  if (!buffer || !buffer.getLayoutAttr() || !buffer.getLayoutAttr().isHardware() ||
      buffer.getLayoutAttr().getBytes() != rowBytes || buffer.getCols() != 64)
    return emitOpError("B must be read from an lb.shared_buffer of 64-value rows in the "
                       "hardware's swizzle of their bytes (#lb.swizzle<bytes = 128, xor = [1, "
                       "2, 4]> for 16-bit values, <bytes = 64, xor = [0, 1, 2]> for s8)");
  auto aType = cast<VectorType>(getA().getType());
  auto accType = cast<VectorType>(getAcc().getType());
  Type bType = bufferType.getElementType();
  // 8-bit operands are bytes in registers (i8); the staged B's type says
  // which: si8 sums into s32, e4m3 into f32.
  const bool bytes = aType.getElementType().isInteger(8);
  const bool integer = bytes && bType.isInteger(8);
  if (bytes != (aType.getNumElements() == 16) ||
      (bytes ? integer != accType.getElementType().isInteger(32)
             : !accType.getElementType().isF32()) ||
      (bytes && !bType.isInteger(8) && !isa<Float8E4M3FNType>(bType)) ||
      (!bytes && aType.getElementType() != bType))
    return emitOpError("A is 8 f16 or bf16 values into f32 sums, or 16 bytes of s8 (into s32 "
                       "sums) or e4m3 (into f32) as the staged B says; got ")
           << aType << " into " << accType << " with B of " << bType;
  int64_t n = 2 * accType.getNumElements();
  if (static_cast<int64_t>(buffer.getRows()) != n)
    return emitOpError("an accumulator of ")
           << n / 2 << " values is m64 x n" << n << ", but a stage holds " << buffer.getRows()
           << " rows of B";
  int64_t steps = static_cast<int64_t>(buffer.getCols()) / (bytes ? 32 : 16);
  if (static_cast<int64_t>(getKStep()) >= steps)
    return emitOpError("k_step must be in 0 .. ") << steps - 1 << " for rows of "
                                                   << buffer.getCols() << " values";
  return success();
}

// A [slots, N / 8, 128] f32 buffer: one float4 a lane for each m16n8 slice.
// Or a stream-K workspace: a 1-D f32 buffer of any length, in that layout.
static LogicalResult verifyPartialsBuffer(Operation *op, Type bufferType, VectorType acc) {
  auto buffer = dyn_cast<MemRefType>(bufferType);
  if (buffer && buffer.getRank() == 1 && buffer.getElementType().isF32())
    return success();
  if (!buffer || buffer.getRank() != 3 || !buffer.getElementType().isF32() ||
      buffer.getDimSize(2) != 128 || buffer.getDimSize(1) * 4 != acc.getNumElements())
    return op->emitOpError("needs a [slots, N / 8, 128] f32 buffer for a ")
           << acc.getNumElements() << "-float accumulator, got " << bufferType;
  return success();
}

LogicalResult StoreWgmmaPartialsOp::verify() {
  return verifyPartialsBuffer(*this, getBuffer().getType(), getAcc().getType());
}

LogicalResult AddWgmmaPartialsOp::verify() {
  auto buffer = cast<MemRefType>(getBuffer().getType());
  if (buffer.getRank() != 1 || !buffer.getElementType().isF32())
    return emitOpError("reads a stream-K workspace (a 1-D f32 buffer), got ") << buffer;
  return success();
}

LogicalResult SumWgmmaClusterPartialsOp::verify() {
  if (getBlocks() < 2)
    return emitOpError("adds the partials of 2 or more blocks, got ") << getBlocks();
  return verifyPartialsBuffer(*this, getBuffer().getType(), getResult().getType());
}
