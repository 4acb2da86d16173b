// Which measured kernel serves a dispatch range when the caller cannot give
// the range's kernel the workspace it takes.
#pragma once

#include "tuning_db/Database.h"
#include "tuning_db/Lookup.h"

#include <string>
#include <vector>

namespace lowbit::db {

// The dense path (family dequant: dequant(W) goes into the workspace, then
// cuBLASLt) and stream-K (f32 partials and flags) use the caller's
// workspace; every other kernel runs without one.
bool takesWorkspace(const KernelRecord &kernel);

// For each of `ranges` (one device's table from `db`) whose kernel takes a
// workspace, sets Choice::fallbackKernelId to the problem's kernel that
// takes none and measured best on `deviceId` at the range's M points: the
// least mean log-ratio to the fastest such kernel at each point, a point it
// was not measured at (or failed) counting as twice the fastest. A range
// with no such measurement keeps no fallback (the runtime then takes a
// neighbouring range's kernel).
Status assignMeasuredFallbacks(const Database &db, const std::string &problemId,
                               const std::string &deviceId, std::vector<Choice> &ranges);

} // namespace lowbit::db
