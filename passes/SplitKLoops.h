// The K loop nest the split-K families (gemv_tiled, and mma with split_k > 1)
// share. A block's `split_k` warps each own whole chunks of K: warp w takes
// chunks w, w + split_k, ... of `chunk` values, so each warp streams
// contiguous 512-byte weight tiles and meets every scale group in one piece.
// Inside a chunk the loop steps by scale periods (a group, or the whole chunk
// when scales do not change along K), and inside a period by the 16-wide K
// steps of the layout tile. Both inner loops are fully unrolled: all of a
// period's 16-byte weight loads are independent and can be in flight at once,
// and a period's scales are loaded (and applied) once, not once per K step.
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
};

// The checks both split-K families share (stages, the chunks a warp has in
// flight, is 1..4): N in whole 64-column tiles, K in
// whole chunks, chunks in whole 16-wide steps, chunk and group size dividing
// one another, and the quantization features they implement. `family` starts
// each diagnostic.
mlir::LogicalResult checkSplitKProblem(const KernelProblem &problem, llvm::StringRef family);

// Scale period for this chunk: the group size when scales change inside a
// chunk, else the chunk. Callers have checked that one divides the other.
int64_t scalePeriod(const lb::QuantAttr &quant, int64_t chunk);

// Loops with the accumulators `init` carried through. `period` builds one
// scale period at K offset `k0` (an index) given the accumulators and returns
// their new values; `step` builds one 16-wide K step of it. Returns the
// accumulators after the whole nest.
using PeriodBuilder = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder &, mlir::Value k0, mlir::ValueRange acc)>;
llvm::SmallVector<mlir::Value> buildSplitKLoops(mlir::OpBuilder &b, mlir::Location loc,
                                                const SplitKShape &shape, mlir::Value warp,
                                                mlir::ValueRange init, PeriodBuilder period);

using StepBuilder = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder &, mlir::Value k0, mlir::ValueRange acc)>;
// A fully unrolled loop over [k0, k0 + extent) in steps of 16.
llvm::SmallVector<mlir::Value> buildUnrolledSteps(mlir::OpBuilder &b, mlir::Location loc,
                                                  mlir::Value k0, int64_t extent,
                                                  mlir::ValueRange init, StepBuilder step);

} // namespace lowbit::passes
