// The quantization metadata behind a value of lb-tile's output: which
// scale, zero, min or super-block step loads it came from, and at which row,
// group and super-block. What the metadata simulations (the tensor-core
// families' and gemv's) check each decoded value against.
#pragma once

#include "core/Problem.h"
#include "tests/unit/passes/IrEvaluation.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>
#include <vector>

namespace lowbit::testing {

// Where a metadata value was read: row n, and the group (scales, zeros and
// runs) or super-block (steps) of K, or none of K (per channel).
struct MetadataRead {
  std::string what;
  int64_t row = -1;
  std::optional<int64_t> group, superBlock;
};

// Every metadata load behind an f32 value (through the f32 arithmetic that
// combines a code with its step, or the tensor scale); false, with `why`,
// where one cannot be followed.
bool collectReads(mlir::Value value, const Env &env, std::vector<MetadataRead> &reads,
                  std::string &why);

// Empty where `read` is the metadata of W[n, k] in `p`; else what is off.
std::string mismatch(const MetadataRead &read, int64_t n, int64_t k, const core::Problem &p);

// `p` built as a kernel module with `schedule` and tiled by lb-tile; none,
// with a gtest failure, where either step fails.
mlir::OwningOpRef<mlir::ModuleOp> tiledModule(mlir::MLIRContext &context, const core::Problem &p,
                                              const std::string &schedule);

// Lane `lane` of warp `warp` of block (1, 1) in a 2 x 2 grid: a block
// past the first, so that block offsets are not zero.
Env threadEnv(int64_t warp, int64_t lane);

// The threads of a block of the (one) kernel in `module`.
int64_t blockThreads(mlir::ModuleOp module);

} // namespace lowbit::testing
