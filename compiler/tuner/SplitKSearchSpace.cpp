// The split-K families' compiler rules and enumerations: gemv_tiled and mma
// with split_k > 1 (passes/SplitKLoops.h). Their tile K is the K chunk a warp
// takes, stages the chunks it keeps in flight, and split_k the block's warps.
#include "compiler/tuner/ScheduleRules.h"

namespace lowbit::tuner {
namespace {

// One mma_b_paired block (passes/SplitKLoops.cpp): two k16 steps.
constexpr int64_t kStepK = 32, kStaticSharedBytes = 48 * 1024;
// TileMmaSplitK.cpp: a warp's ring has at most 16 slots, and rings plus
// partial sums fit sm_90's opt-in maximum per block.
constexpr int64_t kMaxRingSlots = 16, kMaxSharedBytesPerBlock = 232448;

std::string str(int64_t v) { return std::to_string(v); }

// passes/SplitKLoops.cpp `checkSplitKProblem`, rule for rule and in order.
Status checkSplitKProblem(const char *f, const ProblemShape &p, const Schedule &s) {
  if (Status t = checkTypes(f, p); !t)
    return t;
  if (s.splitK > 32)
    return reject(f, "split_k (warps along K in a block) must be at most 32");
  if (s.stages < 1 || s.stages > 4)
    return reject(f, "stages (K chunks a warp has in flight) must be 1..4, got " + str(s.stages));
  if (p.n % kMmaColumnsPerLoad)
    return reject(f, "N = " + str(p.n) + " is not a multiple of " + str(kMmaColumnsPerLoad));
  if (s.tileK < kStepK || s.tileK % kStepK)
    return reject(f, "tile K (the K chunk a warp takes) must be a positive multiple of " +
                         str(kStepK) + ", got " + str(s.tileK));
  if (p.k % s.tileK)
    return reject(f, "K = " + str(p.k) + " is not a multiple of tile K = " + str(s.tileK));
  if (p.granularity == "group") {
    if (p.groupSize % kStepK)
      return reject(f, "group size " + str(p.groupSize) + " is not a multiple of " + str(kStepK));
    if (s.tileK % p.groupSize && p.groupSize % s.tileK)
      return reject(f, "tile K = " + str(s.tileK) + " and group size " + str(p.groupSize) +
                           " must divide one another (scales are loaded once per group)");
  }
  return checkQuantTail(f, p);
}

} // namespace

int64_t gemvTiledPartialBytes(const Schedule &s) { return s.splitK * s.tileM * 8 * 8 * 4; }

int64_t mmaSplitKPartialBytes(const Schedule &s) {
  // W·xᵀ accumulators: 16-column slices of W times 8-row slices of x.
  return s.splitK * (s.tileN / 16) * (s.tileM / 8) * 32 * 4 * 4;
}

int64_t mmaSplitKRingBytes(const Schedule &s, int codeBits) {
  if (s.stages <= 1)
    return 0;
  // Per warp, stages x (tile K / 32) slots of one 32-wide block: tile N x 32
  // codes and tile M x 32 16-bit activations (TileMmaSplitK.cpp ringBytes).
  int64_t slotBytes = s.tileN * kStepK * codeBits / 8 + s.tileM * kStepK * 2;
  return s.splitK * s.stages * (s.tileK / kStepK) * slotBytes;
}

// TileGemvTiled.cpp `checkGemvTiled` (and the dialect's verifier before it).
Status checkGemvTiledSchedule(const ProblemShape &p, const Schedule &s) {
  const char *f = "gemv_tiled";
  if (s.family != Family::GemvTiled)
    return reject(f, "not a gemv_tiled schedule");
  if (s.tileN != kMmaColumnsPerLoad || s.warpsM != 1 || s.warpsN != 1)
    return reject(f, "need tile N = 64 and warps = [1, 1]");
  if (s.tileM < 1 || s.tileM > 8)
    return reject(f, "tile M must be 1..8, got " + str(s.tileM));
  if (gemvTiledPartialBytes(s) > kStaticSharedBytes)
    return reject(f, "the warps' partial sums need " + str(gemvTiledPartialBytes(s)) +
                         " bytes of shared memory; at most " + str(kStaticSharedBytes) +
                         " are supported");
  return checkSplitKProblem("gemv_tiled schedule", p, s);
}

// TileMmaSplitK.cpp `checkMmaSplitK`.
Status checkMmaSplitKSchedule(const ProblemShape &p, const Schedule &s) {
  const char *f = "mma schedule with split_k > 1";
  if (s.family != Family::Mma || s.splitK <= 1)
    return reject(f, "not a split-K mma schedule");
  if (s.tileM != 8 && s.tileM != 16 && s.tileM != 32)
    return reject(f, "tile M must be 8, 16 or 32 (more accumulators spill), got " + str(s.tileM));
  if (s.tileN != kMmaColumnsPerLoad && s.tileN != 2 * kMmaColumnsPerLoad)
    return reject(f, "tile N must be 64 or 128 (one or two weight-layout tiles), got " +
                         str(s.tileN));
  if (p.n % s.tileN)
    return reject(f, "N = " + str(p.n) + " is not a multiple of tile N = " + str(s.tileN));
  if (s.warpsM != 1 || s.warpsN != 1)
    return reject(f, "warps must be [1, 1]: the block's warps are its split_k warps along K");
  if (mmaSplitKPartialBytes(s) > kStaticSharedBytes)
    return reject(f, "the warps' partial sums need " + str(mmaSplitKPartialBytes(s)) +
                         " bytes of shared memory; at most " + str(kStaticSharedBytes) +
                         " are supported");
  if (Status c = checkSplitKProblem("mma schedule with split_k > 1", p, s); !c)
    return c;
  int64_t slots = s.stages * (s.tileK / kStepK), ring = mmaSplitKRingBytes(s, p.codeBits);
  if (s.stages > 1 && slots > kMaxRingSlots)
    return reject(f, "stages x tile K / " + str(kStepK) + " = " + str(slots) +
                         " ring slots per warp; at most " + str(kMaxRingSlots) + " are supported");
  if (mmaSplitKPartialBytes(s) + ring > kMaxSharedBytesPerBlock)
    return reject(f, "the warps' rings (" + str(ring) + " bytes) and partial sums (" +
                         str(mmaSplitKPartialBytes(s)) +
                         ") need more shared memory than any GPU gives a block (" +
                         str(kMaxSharedBytesPerBlock) + ")");
  return Status::success();
}

SearchSpace enumerateGemvTiled(const ProblemShape &p, const ArchLimits &l,
                               const SearchSpaceOptions &o) {
  SearchSpace space;
  for (int64_t tileM : o.gemvTiledTileM)
    for (int64_t tileK : o.splitKTileK)
      for (int64_t splitK : o.gemvTiledSplitK)
        for (int64_t stages : o.splitKStages)
          consider(space, p, l,
                   Schedule{Family::GemvTiled, tileM, kMmaColumnsPerLoad, tileK, 1, 1, stages,
                            splitK});
  return space;
}

SearchSpace enumerateMmaSplitK(const ProblemShape &p, const ArchLimits &l,
                               const SearchSpaceOptions &o) {
  SearchSpace space;
  for (int64_t tileM : o.mmaSplitKTileM)
    for (int64_t tileN : o.mmaSplitKTileN)
      for (int64_t tileK : o.splitKTileK)
        for (int64_t splitK : o.mmaSplitK)
          for (int64_t stages : o.splitKStages)
            consider(space, p, l, Schedule{Family::Mma, tileM, tileN, tileK, 1, 1, stages, splitK});
  return space;
}

} // namespace lowbit::tuner
