// The K loop nest the split-K families (gemv_tiled, and mma with split_k > 1)
// share. K is cut into split_k x cluster_k slices: the `split_k` warps of
// each of the cluster's `cluster_k` blocks. Slice s (warp w of the block
// of rank r: s = r split_k + w) takes chunks s, s + slices, ... of `chunk`
// values, so each warp streams contiguous 1024-byte weight tiles and meets
// every scale group in one piece; K need not be a multiple of the slices
// times the chunk (the last chunks go to the first slices).
// Inside a chunk the loop steps by scale periods (a group, or the whole chunk
// when scales do not change along K), and inside a period by the 32-wide K
// blocks of the mma_b_paired layout tile (two k16 steps). Both inner loops
// are fully unrolled: all of a period's 16-byte weight loads are independent
// and can be in flight at once, and a period's scales are loaded (and
// applied) once, not once per K step.
#pragma once

#include "passes/TileFamilies.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <functional>

namespace lowbit::passes {

struct SplitKShape {
  int64_t k = 0;      // the problem's K
  int64_t chunk = 0;  // K values a warp takes at a time (tile K)
  int64_t period = 0; // K values one set of scales covers inside a chunk
  int64_t warps = 0;  // split_k
  int64_t blocks = 1; // cluster_k
  int64_t slices() const { return warps * blocks; }
  // Chunks unrolled together (the schedule's `stages`): nvcc can then issue
  // the next chunk's loads before the current chunk's math, keeping a warp's
  // loads in flight across the chunk boundary.
  int64_t chunksInFlight = 1;
  // Whether scales change along K (group granularity); if not, they are
  // loaded once, before the loops.
  bool scalesAlongK = false;
  // Groups of 16, half a 32-wide block: a period is one block. A lane's 8 K
  // values of a block, k0 + 8 t .. + 8 (t its index in its quad: both k16
  // steps' registers, core::kBlockK), lie in one group, the block's
  // (t / 2)-th, so the family loads each lane's quant at k0 + 16 (t / 2).
  // The lanes of one mma then have different scales: they scale registers
  // before the mma, never its sums.
  bool halfBlockGroups = false;
};

// The nest's shape from a split-K schedule: K, tile K as the chunk, the scale
// period, split_k warps, cluster_k blocks and `stages` chunks in flight.
SplitKShape splitKShape(const KernelProblem &problem);

// The calling warp's slice of K: warp + split_k x the block's rank in its
// cluster (block_z; just the warp without a cluster).
mlir::Value kSliceOf(mlir::OpBuilder &b, mlir::Location loc, const SplitKShape &shape,
                     mlir::Value warp);

// Loads what a scale period needs (scales, zeros) for K offset `k0`.
using QuantLoader = llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value k0)>;
// Builds one 32-wide K block at `k0` (two k16 steps of the mma_b_paired
// layout) of the chunk that starts at `chunk0`, with the period's loaded
// `quant` and the accumulators; returns their new values. (k0 - chunk0 is a
// constant once nvcc unrolls the inner loops, so a step's place in its chunk
// costs no instructions.)
using StepBuilder = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::Value k0, mlir::Value chunk0, llvm::ArrayRef<mlir::Value> quant, mlir::ValueRange acc)>;
// Folds a scale period's sums into the accumulators (with the period's
// `quant`); returns the new accumulators.
using PeriodFinisher = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    llvm::ArrayRef<mlir::Value> quant, mlir::ValueRange acc, mlir::ValueRange periodSums)>;
// Runs at the start of each chunk, with the chunk's K offset, before its
// periods (ScaleRuns::load).
using ChunkStarter = llvm::function_ref<void(mlir::Value chunk0)>;
// The whole nest with the accumulators `init` carried through: `loadQuant`
// runs once per period (or once before the loops when scales do not change
// along K), `step` once per 32-wide block. With `finishPeriod`, each period's
// steps start again from `periodInit` (`init` when empty: s8 sums a period
// in s32 and carries f32) and finishPeriod folds their sums into the
// carried accumulators. `startChunk`, when given, runs once per chunk.
// `slice` is the warp's (kSliceOf). Returns the final accumulators.
llvm::SmallVector<mlir::Value> buildSplitKLoops(mlir::OpBuilder &b, mlir::Location loc,
                                                const SplitKShape &shape, mlir::Value slice,
                                                mlir::ValueRange init, QuantLoader loadQuant,
                                                StepBuilder step,
                                                PeriodFinisher finishPeriod = nullptr,
                                                ChunkStarter startChunk = nullptr,
                                                mlir::ValueRange periodInit = {});

// The quant buildSplitKLoops carries for a lane's `count` columns at K
// offset `laneK`: every column's scale, then their sub_value biases, then
// the zeros the decode subtracts (null where the zero mode has none), each
// as loadColumnQuant gives it for column `columnOf(c)`. `scaleOf(c)`, when
// given, is column c's scale already loaded (ScaleRuns::scaleAt) or null,
// and `zeroOf(c)` the same for its min (ScaleRuns::zeroAt); `adjust(c,
// scale)`, when given, is the scale the family multiplies by instead (the
// raw decodes' factor).
llvm::SmallVector<mlir::Value>
loadColumnsQuant(mlir::OpBuilder &b, mlir::Location loc, const KernelProblem &problem,
                 int64_t count, llvm::function_ref<mlir::Value(size_t)> columnOf,
                 mlir::Value laneK, llvm::function_ref<mlir::Value(size_t)> scaleOf = nullptr,
                 llvm::function_ref<mlir::Value(size_t, mlir::Value)> adjust = nullptr,
                 llvm::function_ref<mlir::Value(size_t)> zeroOf = nullptr);

// The end of a split-K kernel with cluster_k > 1, after the block barrier
// that follows the warps' partial sums. First each slot's block total: warp
// (slot mod split_k) runs `keepBlockTotal(slot)`, which adds the warps'
// partials and stores the total in the partials' warp-0 row. Then the
// cluster meets, and slot's owner, warp (slot / cluster_k) mod split_k of
// the block of rank slot mod cluster_k, runs `finish(slot)`, which adds the
// blocks' totals (lb.sum_cluster_partials) and stores the result; the
// finishing work is spread over the cluster's blocks and their warps. A
// second meeting keeps every block's shared memory alive until the reads
// are done. `lanes`, when given, further restricts both steps to the lanes
// where it holds.
void finishAcrossCluster(mlir::OpBuilder &b, mlir::Location loc, const SplitKShape &shape,
                         mlir::Value warp, mlir::Value lanes, int64_t slots,
                         llvm::function_ref<void(int64_t slot)> keepBlockTotal,
                         llvm::function_ref<void(int64_t slot)> finish);

// Groups of 16 (SplitKShape::halfBlockGroups): a lane's quant in a block is
// its own 8 K values' group (core::pairedKOf), the block's second where
// `upperHalf` (its index in its quad, `inGroup`, is 2 or 3); otherwise
// upperHalf is null and the quant of a block is at its k0.
struct HalfBlockLane {
  HalfBlockLane(mlir::OpBuilder &b, mlir::Location loc, const SplitKShape &shape,
                mlir::Value inGroup)
      : HalfBlockLane(b, loc, shape.halfBlockGroups, inGroup) {}
  HalfBlockLane(mlir::OpBuilder &b, mlir::Location loc, bool halfBlockGroups,
                mlir::Value inGroup);
  // The K whose group the lane's quant of the block at k0 is.
  mlir::Value quantK(mlir::OpBuilder &b, mlir::Location loc, mlir::Value k0) const;
  mlir::Value upperHalf;
};

// The block scales a split-K warp meets in a chunk of K, loaded per column
// as one run (lb.load_scale_run) when the chunk holds several groups and
// the run is one aligned load (core::scaleRunLoadBytes): one load per
// column and chunk instead of one per column and group. The runs of all
// `columns` a lane owns stay live across the chunk, so they are used only
// for at most kMaxRunColumns columns holding at most kMaxRunWords registers
// (16 columns spilled: 8-byte runs in a 16 x 128 x 256 split-K NVFP4
// kernel, 56 bytes; 4-byte runs with zero points in a 32 x 128 x 128 uint2
// one, 16 bytes).
// Two-level scales' codes come in runs too, with one super-block step per
// column and chunk (and the same for their mins): a k-quant gemv_tiled lane
// otherwise loaded a code and a step of each of its 8 columns' scales and
// mins for every 32-wide block, 32 scattered loads against 2 of weights.
class ScaleRuns {
public:
  static constexpr int64_t kMaxRunWords = 16, kMaxRunColumns = 8;
  // `columns`: the lane's columns, defined before the split-K loops.
  // `registersAllow`: whether the family can keep the runs live at all.
  ScaleRuns(mlir::OpBuilder &b, mlir::Location loc, const KernelProblem &problem, int64_t chunk,
            llvm::SmallVector<mlir::Value> columns, bool registersAllow = true);
  // The chunk starter refers to the object.
  ScaleRuns(const ScaleRuns &) = delete;
  ScaleRuns &operator=(const ScaleRuns &) = delete;
  bool active() const { return count_ > 1; }
  // buildSplitKLoops' chunk starter, which loads the chunk's runs; empty
  // when inactive.
  ChunkStarter starter() const { return active() ? ChunkStarter(load_) : ChunkStarter(); }
  // Column `column`'s (its place in `columns`) scale at K offset k of the
  // loaded chunk; null when inactive (the caller loads the scale itself).
  // With `upperHalf` (HalfBlockLane): the scale at k or, where it is true,
  // at k + 16, both picked at constant positions and selected, since a run
  // indexed by a lane-dependent position would live in local memory.
  mlir::Value scaleAt(size_t column, mlir::Value k, mlir::Value upperHalf = mlir::Value());
  // The same for the min (a sub_value zero) of two-level scales with mins;
  // null otherwise.
  mlir::Value zeroAt(size_t column, mlir::Value k, mlir::Value upperHalf = mlir::Value());

private:
  mlir::Value pickAt(llvm::ArrayRef<mlir::Value> runs, llvm::ArrayRef<mlir::Value> steps,
                     size_t column, mlir::Value k, mlir::Value upperHalf);

  mlir::OpBuilder &b_;
  mlir::Location loc_;
  const KernelProblem &problem_;
  int64_t count_ = 0;
  // Two-level scales add each column's step for the chunk, and with mins
  // the mins' runs and steps.
  llvm::SmallVector<mlir::Value> columns_, runs_, steps_, zeroRuns_, zeroSteps_;
  mlir::Value chunk0_;
  std::function<void(mlir::Value chunk0)> load_;
};

} // namespace lowbit::passes
