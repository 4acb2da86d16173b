#include "passes/SplitKLoops.h"

#include "core/FragmentFacts.h"
#include "ir/LbTypes.h"

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

// Ends a loop's body with its carried values' next ones; a loop that
// carries none already ends in the scf.yield its builder made.
void yieldCarried(OpBuilder &b, Location loc, scf::ForOp loop, ValueRange next) {
  if (loop.getInitArgs().empty())
    return;
  b.create<scf::YieldOp>(loc, next);
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
  yieldCarried(b, loc, loop, next);
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
    shape.halfBlockGroups = true;
    shape.period = kStepK;
  }
  shape.warps = p.schedule.getSplitK();
  shape.blocks = p.schedule.getClusterK();
  shape.chunksInFlight = p.schedule.getStages();
  return shape;
}

Value kSliceOf(OpBuilder &b, Location loc, const SplitKShape &shape, Value warp) {
  if (shape.blocks == 1)
    return warp;
  Value rank = b.create<lb::ThreadCoordOp>(loc, b.getIndexType(), lb::ThreadCoord::block_z);
  return b.create<arith::AddIOp>(
      loc, warp, b.create<arith::MulIOp>(loc, rank, index(b, loc, shape.warps)));
}

SmallVector<Value> buildSplitKLoops(OpBuilder &b, Location loc, const SplitKShape &shape,
                                    Value slice, ValueRange init, QuantLoader loadQuant,
                                    StepBuilder step, PeriodFinisher finishPeriod,
                                    ChunkStarter startChunk, ValueRange periodInit) {
  if (periodInit.empty())
    periodInit = init;
  SmallVector<Value> fixedQuant;
  if (!shape.scalesAlongK)
    fixedQuant = loadQuant(index(b, loc, 0));
  Value first = b.create<arith::MulIOp>(loc, slice, index(b, loc, shape.chunk));
  auto chunks = b.create<scf::ForOp>(loc, first, index(b, loc, shape.k),
                                     index(b, loc, shape.chunk * shape.slices()), init);
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
        SmallVector<Value> sums =
            unrolledLoop(b, loc, period0, shape.period, kStepK, finishPeriod ? periodInit : carried,
                         [&](Value k0, ValueRange acc) {
                           return step(k0, chunks.getInductionVar(), quant, acc);
                         });
        return finishPeriod ? finishPeriod(quant, carried, sums) : sums;
      });
  yieldCarried(b, loc, chunks, next);
  return SmallVector<Value>(chunks.getResults().begin(), chunks.getResults().end());
}

SmallVector<Value> loadColumnsQuant(OpBuilder &b, Location loc, const KernelProblem &problem,
                                    int64_t count, function_ref<Value(size_t)> columnOf,
                                    Value laneK, function_ref<Value(size_t)> scaleOf,
                                    function_ref<Value(size_t, Value)> adjust,
                                    function_ref<Value(size_t)> zeroOf) {
  SmallVector<Value> scales, biases, zeros;
  for (size_t c = 0; c < static_cast<size_t>(count); ++c) {
    Value loaded = scaleOf ? scaleOf(c) : Value();
    Value loadedZero = zeroOf ? zeroOf(c) : Value();
    ColumnQuant q = loadColumnQuant(b, loc, problem, columnOf(c), laneK, loaded, loadedZero);
    scales.push_back(adjust ? adjust(c, q.scale) : q.scale);
    biases.push_back(q.bias);
    zeros.push_back(q.zero);
  }
  scales.append(biases.begin(), biases.end());
  scales.append(zeros.begin(), zeros.end());
  return scales;
}

void finishAcrossCluster(OpBuilder &b, Location loc, const SplitKShape &shape, Value warp,
                         Value lanes, int64_t slots, function_ref<void(int64_t slot)> keepBlockTotal,
                         function_ref<void(int64_t slot)> finish) {
  auto equals = [&](Value v, int64_t c) {
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, v, index(b, loc, c));
  };
  auto when = [&](Value condition, llvm::function_ref<void()> body) {
    if (lanes)
      condition = b.create<arith::AndIOp>(loc, condition, lanes);
    auto guarded = b.create<scf::IfOp>(loc, condition, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(guarded.thenBlock());
    body();
  };
  for (int64_t slot = 0; slot < slots; ++slot)
    when(equals(warp, slot % shape.warps), [&] { keepBlockTotal(slot); });
  b.create<lb::ClusterBarrierOp>(loc);
  Value rank = b.create<lb::ThreadCoordOp>(loc, b.getIndexType(), lb::ThreadCoord::block_z);
  for (int64_t slot = 0; slot < slots; ++slot) {
    Value owner = b.create<arith::AndIOp>(loc, equals(rank, slot % shape.blocks),
                                          equals(warp, (slot / shape.blocks) % shape.warps));
    when(owner, [&] { finish(slot); });
  }
  b.create<lb::ClusterBarrierOp>(loc);
}

ScaleRuns::ScaleRuns(OpBuilder &b, Location loc, const KernelProblem &problem, int64_t chunk,
                     SmallVector<Value> columns, bool registersAllow)
    : b_(b), loc_(loc), problem_(problem), columns_(std::move(columns)) {
  lb::QuantAttr quant = problem.quant;
  if (!registersAllow || quant.getGranularity() != lb::ScaleGranularity::group)
    return;
  int64_t group = quant.getGroupSize();
  auto type = cast<MemRefType>(problem.scales.getType());
  int64_t bytes = lb::getScaleBytes(type.getElementType());
  if (chunk % group || chunk / group < 2 || !bytes || type.isDynamicDim(1))
    return;
  // Two-level codes: a chunk (aligned to its size) lies in one super-block
  // when the super-block is a multiple of it, so one step per column and
  // chunk serves all its groups. The mins (sub_value zeros) are codes and
  // steps of the same shape, read the same way.
  const bool twoLevel = static_cast<bool>(quant.getSuperStep());
  if (twoLevel && quant.getSuperBlock() % chunk)
    return;
  const bool mins = twoLevel && problem.zeros && quant.getZero() == lb::ZeroMode::sub_value;
  int64_t runBytes = chunk / group * bytes;
  int64_t count = static_cast<int64_t>(columns_.size());
  // The limit is per buffer: the mins' runs of Q2_K's groups of 16 (8 words
  // beside the scales' 8, with 16 steps) fit a gemv_tiled lane in 138
  // registers, where per-block loads took 188 and ran at a fifth of the copy
  // bandwidth.
  if (!core::scaleRunLoadBytes(runBytes, type.getDimSize(1) * bytes) || count > kMaxRunColumns ||
      count * runBytes / 4 > kMaxRunWords)
    return;
  count_ = chunk / group;
  load_ = [this, twoLevel, mins](Value chunk0) {
    chunk0_ = chunk0;
    runs_.clear();
    steps_.clear();
    zeroRuns_.clear();
    zeroSteps_.clear();
    Value first =
        b_.create<arith::DivUIOp>(loc_, chunk0, index(b_, loc_, problem_.quant.getGroupSize()));
    auto runType = VectorType::get({count_}, b_.getF32Type());
    auto loadRun = [&](Value buffer, Value n) {
      return b_.create<lb::LoadScaleRunOp>(loc_, runType, buffer, n, first,
                                           b_.getI64IntegerAttr(count_));
    };
    for (Value n : columns_) {
      runs_.push_back(loadRun(problem_.scales, n));
      if (twoLevel)
        steps_.push_back(loadSuperStep(b_, loc_, problem_, problem_.scales, n, chunk0));
      if (mins) {
        zeroRuns_.push_back(loadRun(problem_.zeros, n));
        zeroSteps_.push_back(loadSuperStep(b_, loc_, problem_, problem_.zeros, n, chunk0));
      }
    }
  };
}

Value ScaleRuns::pickAt(ArrayRef<Value> runs, ArrayRef<Value> steps, size_t column, Value k,
                        Value upperHalf) {
  Value offset = b_.create<arith::SubIOp>(loc_, k, chunk0_);
  Value position = b_.create<arith::DivUIOp>(
      loc_, offset, b_.create<arith::ConstantIndexOp>(loc_, problem_.quant.getGroupSize()));
  // With upperHalf (groups of 16) the next group's scale where it holds:
  // the op selects the stored bits and widens once.
  Value value =
      b_.create<lb::ScaleInRunOp>(loc_, b_.getF32Type(), runs[column], position, upperHalf);
  // A two-level code times its step is exact in f32 (8 + 11 bits), as
  // loadColumnQuant's product is.
  if (!steps.empty())
    value = b_.create<arith::MulFOp>(loc_, value, steps[column]);
  return value;
}

Value ScaleRuns::scaleAt(size_t column, Value k, Value upperHalf) {
  if (!active())
    return Value();
  return pickAt(runs_, steps_, column, k, upperHalf);
}

Value ScaleRuns::zeroAt(size_t column, Value k, Value upperHalf) {
  if (!active() || zeroRuns_.empty())
    return Value();
  return pickAt(zeroRuns_, zeroSteps_, column, k, upperHalf);
}

HalfBlockLane::HalfBlockLane(OpBuilder &b, Location loc, bool halfBlockGroups, Value inGroup) {
  if (halfBlockGroups)
    upperHalf = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, inGroup,
                                        index(b, loc, core::kPairedLanesPerUnitK));
}

Value HalfBlockLane::quantK(OpBuilder &b, Location loc, Value k0) const {
  if (!upperHalf)
    return k0;
  Value next = b.create<arith::AddIOp>(loc, k0, index(b, loc, core::kUnitK));
  return b.create<arith::SelectOp>(loc, upperHalf, next, k0);
}

} // namespace lowbit::passes
