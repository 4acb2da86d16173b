// The K loop nest the split-K families (gemv_tiled, and mma with split_k > 1)
// share. A block's `split_k` warps each own whole chunks of K: warp w takes
// chunks w, w + split_k, ... of `chunk` values, so each warp streams
// contiguous 1024-byte weight tiles and meets every scale group in one piece.
// Inside a chunk the loop steps by scale periods (a group, or the whole chunk
// when scales do not change along K), and inside a period by the 32-wide K
// blocks of the mma_b_paired layout tile (two k16 steps). Both inner loops
// are fully unrolled: all of a period's 16-byte weight loads are independent
// and can be in flight at once, and a period's scales are loaded (and
// applied) once, not once per K step.
#pragma once

#include "passes/TileFamilies.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace lowbit::passes {

struct SplitKShape {
  int64_t k = 0;      // the problem's K
  int64_t chunk = 0;  // K values a warp takes at a time (tile K)
  int64_t period = 0; // K values one set of scales covers inside a chunk
  int64_t warps = 0;  // split_k
  // Chunks unrolled together (the schedule's `stages`): nvcc can then issue
  // the next chunk's loads before the current chunk's math, keeping a warp's
  // loads in flight across the chunk boundary.
  int64_t chunksInFlight = 1;
  // Whether scales change along K (group granularity); if not, they are
  // loaded once, before the loops.
  bool scalesAlongK = false;
  // Groups of one k16 step (16): a period is one 32-wide block, and its
  // quant is the first step's loaded quant followed by the second's.
  bool quantPerStep = false;
};

// The nest's shape from a split-K schedule: K, tile K as the chunk, the scale
// period, split_k warps and `stages` chunks in flight.
SplitKShape splitKShape(const KernelProblem &problem);

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
// steps start again from `init` and finishPeriod folds their sums into the
// carried accumulators. `startChunk`, when given, runs once per chunk.
// Returns the final accumulators.
llvm::SmallVector<mlir::Value> buildSplitKLoops(mlir::OpBuilder &b, mlir::Location loc,
                                                const SplitKShape &shape, mlir::Value warp,
                                                mlir::ValueRange init, QuantLoader loadQuant,
                                                StepBuilder step,
                                                PeriodFinisher finishPeriod = nullptr,
                                                ChunkStarter startChunk = nullptr);

} // namespace lowbit::passes
