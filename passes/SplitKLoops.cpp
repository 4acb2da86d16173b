#include "passes/SplitKLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace lowbit::passes {
namespace {

// One mma_b_paired block (core::kBlockK): two k16 steps whose activations a
// lane reads with one 16-byte load.
constexpr int64_t kStepK = core::kBlockK;

Value index(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

// A fully unrolled scf.for over [0, extent) with `init` carried; the body
// gets base + the induction value. Constant bounds let nvcc unroll it whole.
using LoopBody = llvm::function_ref<SmallVector<Value>(Value k0, ValueRange acc)>;
SmallVector<Value> unrolledLoop(OpBuilder &b, Location loc, Value base, int64_t extent,
                                int64_t step, ValueRange init, LoopBody body) {
  auto loop = b.create<scf::ForOp>(loc, index(b, loc, 0), index(b, loc, extent),
                                   index(b, loc, step), init);
  loop->setAttr("lb.unroll", b.getI64IntegerAttr(extent / step));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value k0 = b.create<arith::AddIOp>(loc, base, loop.getInductionVar());
  SmallVector<Value> next = body(k0, loop.getRegionIterArgs());
  b.create<scf::YieldOp>(loc, next);
  return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
}

} // namespace

SplitKShape splitKShape(const KernelProblem &p) {
  SplitKShape shape;
  shape.k = p.k;
  shape.chunk = p.schedule.getTile()[2];
  shape.scalesAlongK = p.quant.getGranularity() == lb::ScaleGranularity::group;
  shape.period =
      shape.scalesAlongK ? std::min<int64_t>(p.quant.getGroupSize(), shape.chunk) : shape.chunk;
  if (shape.period < kStepK) {
    shape.quantPerStep = true;
    shape.period = kStepK;
  }
  shape.warps = p.schedule.getSplitK();
  shape.chunksInFlight = p.schedule.getStages();
  return shape;
}

SmallVector<Value> buildSplitKLoops(OpBuilder &b, Location loc, const SplitKShape &shape,
                                    Value warp, ValueRange init, QuantLoader loadQuant,
                                    StepBuilder step, PeriodFinisher finishPeriod,
                                    ChunkStarter startChunk) {
  SmallVector<Value> fixedQuant;
  if (!shape.scalesAlongK)
    fixedQuant = loadQuant(index(b, loc, 0));
  Value first = b.create<arith::MulIOp>(loc, warp, index(b, loc, shape.chunk));
  auto chunks = b.create<scf::ForOp>(loc, first, index(b, loc, shape.k),
                                     index(b, loc, shape.chunk * shape.warps), init);
  if (shape.chunksInFlight > 1)
    chunks->setAttr("lb.unroll", b.getI64IntegerAttr(shape.chunksInFlight));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(chunks.getBody());
  if (startChunk)
    startChunk(chunks.getInductionVar());
  SmallVector<Value> next = unrolledLoop(
      b, loc, chunks.getInductionVar(), shape.chunk, shape.period, chunks.getRegionIterArgs(),
      [&](Value period0, ValueRange carried) {
        SmallVector<Value> quant = shape.scalesAlongK ? loadQuant(period0) : fixedQuant;
        if (shape.quantPerStep)
          quant.append(loadQuant(b.create<arith::AddIOp>(loc, period0,
                                                         index(b, loc, core::kUnitK))));
        SmallVector<Value> sums =
            unrolledLoop(b, loc, period0, shape.period, kStepK, finishPeriod ? init : carried,
                         [&](Value k0, ValueRange acc) {
                           return step(k0, chunks.getInductionVar(), quant, acc);
                         });
        return finishPeriod ? finishPeriod(quant, carried, sums) : sums;
      });
  b.create<scf::YieldOp>(loc, next);
  return SmallVector<Value>(chunks.getResults().begin(), chunks.getResults().end());
}

} // namespace lowbit::passes
