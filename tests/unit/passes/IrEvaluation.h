// Evaluates lb-tile's output for one thread on the CPU: the integers a
// value holds at given thread coordinates and loop iterations, and where a
// value was made (through loop-carried values and branches). What
// MetadataSimulationTest.cpp checks the kernels' metadata addressing with.
#pragma once

#include "ir/LbOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace lowbit::testing {

// Where a thread is: its coordinates and the iteration of each loop around.
struct Env {
  std::map<lb::ThreadCoord, int64_t> coords;
  std::map<mlir::Operation *, int64_t> iteration; // scf.for -> its induction value
};

// The integer (index, i32 or i1) `value` holds in `env`; none where an op,
// an iteration or a coordinate is not known.
std::optional<int64_t> evaluate(mlir::Value value, const Env &env);

// The value `value` holds in `env`, followed back to where it was made: a
// loop-carried argument to the previous iteration's yield (or the loop's
// init at its first), a loop's result to its last yield, an if's result to
// the branch taken. None where an iteration or a condition is not known.
std::optional<std::pair<mlir::Value, Env>> origin(mlir::Value value, Env env);

// The ops around `op` allow it to run in `env` (its branches are taken).
bool runsIn(mlir::Operation *op, const Env &env);

// The first, second and last iterations of the loops around `op`.
std::vector<Env> loopEnvs(mlir::Operation *op, const Env &base);

// Every execution of `op` in the thread `base` describes: each assignment
// of the loops around it over their whole ranges, where its branches run.
std::vector<Env> allRuns(mlir::Operation *op, const Env &base);

} // namespace lowbit::testing
