// The steps buildPlanSpec takes once every M range has its kernel, and the
// one a plan takes later when cuBLASLt cannot be loaded (dropDenseRanges).
// Each works on the PlanSpec alone: database rows are no longer needed.
#pragma once

#include "runtime/api/PlanBuilder.h"

#include <cstdint>
#include <string>

namespace lowbit::api {

// "[lo, hi)", or "[lo, inf)" for the open-ended range (hi < 0).
std::string rangeText(int64_t lo, int64_t hi);

// Drops kernels no range uses and merges neighbouring ranges served by one
// kernel (with one fallback), so explain() reports whole ranges.
void compact(PlanSpec &spec);

// Drops, with a note, each measured fallback that reads another weight
// layout than the plan's.
void checkFallbackLayouts(PlanSpec &spec);

// Gives each range whose kernel takes the caller's workspace and has no
// measured fallback the nearest range's kernel that takes none.
void assignWorkspaceFallbacks(PlanSpec &spec);

// Sizes stream-K's workspace (the most blocks it launches), with a note a
// range.
void planStreamKWorkspace(PlanSpec &spec);

// Sizes the dense path's workspace, with a note a range; quantized
// activations drop their dense ranges instead.
ApiStatus planDensePath(PlanSpec &spec);

// Serves every dense range with its fallback kernel (cuBLASLt could not be
// loaded: `why`), noting it; NO_KERNEL when a dense range has no fallback.
ApiStatus dropDenseRanges(PlanSpec &spec, const std::string &why);

} // namespace lowbit::api
