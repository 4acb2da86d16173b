// Pieces of the compiler-rule mirrors (SearchSpace.cpp) that the split-K
// families' file (SplitKSearchSpace.cpp) shares.
#pragma once

#include "compiler/tuner/SearchSpace.h"

namespace lowbit::tuner {

// "<family> schedule: <why>", as the compiler's diagnostics start.
Status reject(const char *family, const std::string &why);
// Code and activation types, which every family checks first...
Status checkTypes(const char *family, const ProblemShape &problem);
// ...and zero points and act-order, which every family checks last.
Status checkQuantTail(const char *family, const ProblemShape &problem);
// Appends `schedule` to accepted or, with its reason, to rejected.
void consider(SearchSpace &space, const ProblemShape &problem, const ArchLimits &limits,
              const Schedule &schedule);

// The split-K families' shared-memory partial sums (TileGemvTiled.cpp,
// TileMmaSplitK.cpp).
int64_t gemvTiledPartialBytes(const Schedule &schedule);
int64_t mmaSplitKPartialBytes(const Schedule &schedule);
// The per-warp cp.async rings of a split-K mma with stages > 1, in dynamic
// shared memory (0 with one stage).
int64_t mmaSplitKRingBytes(const Schedule &schedule, int codeBits);

} // namespace lowbit::tuner
