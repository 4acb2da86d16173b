// The emitter's state, shared by the files that emit each op family
// (CudaEmitter.cpp: control flow, arith and the gemv ops; EmitDecode.cpp:
// the register ops of a lowered decode; EmitMma.cpp: the mma family's
// staging, fragment and accumulator ops; EmitMmaS8.cpp and EmitWgmma.cpp:
// the integer tensor cores' and the wgmma family's; EmitScales.cpp: scale
// and zero loads).
#pragma once

#include "ir/LbOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace lowbit::codegen {

// The C++ spelling of a value's type: index and i64 are long long, i32 is
// u32, f32 is float; fragments are the device headers' FragA / FragB /
// FragC structs, so loop-carried accumulators can be assigned; other f32
// vectors (wgmma accumulators) are F32x<N>, i32 vectors (loaded code
// words) U32xN.
std::string valueType(mlir::Type type);
// The pointer element type of a memref argument.
std::string elementPointerType(mlir::Type element);
// "f16x2" or "bf16x2": the suffix of the packed-pair primitives.
std::string pairSuffix(mlir::Type element);
// Where a buffer in `layout` keeps 16-byte chunk `chunk` of row `row`: the
// C expression of the swizzled chunk index (EmitWgmma.cpp). Every address
// into a swizzled buffer is row * row bytes + this * 16.
std::string swizzledChunk(lowbit::lb::SwizzleAttr layout, const std::string &row,
                          const std::string &chunk);

class Emitter {
public:
  explicit Emitter(llvm::raw_ostream &os) : os(os) {}

  mlir::LogicalResult emitKernel(mlir::func::FuncOp kernel);

private:
  llvm::raw_ostream &os;
  llvm::DenseMap<mlir::Value, std::string> names;
  int nextId = 0;
  int depth = 1;
  mlir::func::FuncOp kernel;
  mlir::Value rowsArgument;
  int64_t blockThreads = 0;
  // Bytes of dynamic shared memory handed out to `dynamic` buffers so far.
  int64_t dynamicSharedOffset = 0;

  llvm::raw_ostream &line() { return os.indent(2 * depth); }
  std::string fresh(llvm::StringRef prefix = "v") {
    return (prefix + llvm::Twine(nextId++)).str();
  }
  std::string &name(mlir::Value v) { return names[v]; }
  std::string bind(mlir::Value v, llvm::StringRef prefix = "v") {
    return names[v] = fresh(prefix);
  }

  mlir::LogicalResult emitOp(mlir::Operation &op);
  mlir::LogicalResult emitFor(mlir::scf::ForOp loop);
  mlir::LogicalResult emitIf(mlir::scf::IfOp branch);
  void assignYield(mlir::Operation *yield, llvm::ArrayRef<std::string> targets);
  // The mma family's ops; `handled` is false for any other op.
  mlir::LogicalResult emitMmaOp(mlir::Operation &op, bool &handled);
  // The integer tensor cores' ops (EmitMmaS8.cpp).
  mlir::LogicalResult emitMmaS8Op(mlir::Operation &op, bool &handled);
  mlir::LogicalResult emitS8ActivationLoad(lowbit::lb::LoadActivationsOp load);
  // The wgmma family's ops (EmitWgmma.cpp).
  mlir::LogicalResult emitWgmmaOp(mlir::Operation &op, bool &handled);
  mlir::LogicalResult emitCopyPairedActivations(lb::CopyPairedActivationsOp copy);
  // Scale and zero loads (EmitScales.cpp).
  mlir::LogicalResult emitScaleOp(mlir::Operation &op, bool &handled);
  // The register ops a decode lowers to (EmitDecode.cpp).
  mlir::LogicalResult emitDecodeOp(mlir::Operation &op, bool &handled);
  // From uint4 `lo` and `hi` (8 K-consecutive activations of rows g and
  // g + 8), the A registers of both k16 steps in the mma_b_paired K order.
  void emitPairedFragment(const std::string &var);
  // cp.async of x[m0 .., k0 ..] into one stage of `buffer`, rows past `rows`
  // zero-filled: by the block's `threads` into a swizzled stage, or
  // (`laneOwned`) by a warp whose lanes each copy the chunks they read back.
  mlir::LogicalResult emitActivationCopy(mlir::Operation *op, mlir::Value x, mlir::Value buffer,
                                         mlir::Value stage, mlir::Value m0, mlir::Value k0,
                                         mlir::Value rows, int64_t threads, bool laneOwned);

  // Row-major linear index of `indices` into a memref.
  std::string linearIndex(mlir::MemRefType type, mlir::ValueRange indices);
  std::string dimSize(mlir::MemRefType type, unsigned dim);
  // Register `index` (a packed pair) of a 16-bit vector value.
  std::string registerOf(mlir::Value vector, int64_t index);
  // Declares the (bound) 16-bit vector `vector`, to be filled register by
  // register: a fragment struct, or a register array for other lengths.
  void declareVector(mlir::Value vector);
};

} // namespace lowbit::codegen
