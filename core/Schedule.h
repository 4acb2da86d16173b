// A kernel schedule: the fields of `#lb.schedule<...>` in a plain struct,
// printed and parsed without MLIR, so the tuner (which runs on GPU hosts
// that have no LLVM), the kernel database and the compiler share one
// description. The rules of what a schedule may be are core/ScheduleRules.h.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::core {

// GemvTiled and Mma with split_k > 1 are the split-K designs: their block's
// warps are its split_k warps along K (warps = [1, 1]). With cluster_k > 1
// (sm_90 and up) cluster_k blocks of one thread-block cluster split K
// further, the grid's z: together they are split_k x cluster_k slices of K,
// and their sums meet over distributed shared memory in rank order, so the
// result does not depend on timing and needs no workspace. Wgmma's warps
// [1, n] are its n consumer warps (whole warpgroups); its block has one more
// warpgroup, the producer that issues the TMA copies.
// Dequant is the dense path's first half: it writes dequant(W) in the
// activation type into the caller's workspace, which cuBLASLt then
// multiplies (the runtime runs both). Its block is 64 columns and split_k
// warps that each take tile K values; the grid's z covers the rest of K.
enum class Family { Gemv, Mma, GemvTiled, Wgmma, Dequant };

// How blocks meet output tiles. Grid: a block a tile, the grid covers them
// all. Persistent (wgmma): a block an SM, each walking the tiles blockIdx.x,
// blockIdx.x + gridDim.x, ... with one ring and one barrier phase running
// across its tiles, so the producer fills the next tile's stages while the
// consumers store the last one, and the ring is set up once a block rather
// than once a tile. The runtime launches min(SMs, tiles) blocks.
// StreamK (wgmma): persistent blocks that also split the last wave's tiles
// along K, so no SM idles while a partial wave runs: the whole waves but one
// go a tile a block as with Persistent, and the K tiles of the rest are cut
// into one equal run a block. A split tile's partial sums meet in the
// caller's workspace (kernels::LaunchShape::workspaceBytes), added in block
// order by the block that holds the tile's first K tile, so the result does
// not depend on timing (docs/design/wgmma-split-tail.md).
enum class TileScheduler { Grid, Persistent, StreamK };

const char *tileSchedulerName(TileScheduler scheduler);
Expected<TileScheduler> parseTileScheduler(const std::string &name);

const char *familyName(Family family);
Expected<Family> parseFamily(const std::string &name);

struct Schedule {
  Family family = Family::Gemv;
  int64_t tileM = 1, tileN = 1, tileK = 1024;
  int64_t warpsM = 1, warpsN = 1;
  int64_t stages = 1;
  int64_t splitK = 1;
  int64_t clusterK = 1;
  TileScheduler scheduler = TileScheduler::Grid;

  // A block an SM walking the output tiles (persistent or stream-K).
  bool walksTiles() const { return scheduler != TileScheduler::Grid; }
  bool streamK() const { return scheduler == TileScheduler::StreamK; }
  // The kernels that take the caller's workspace: the dense path writes
  // dequant(W) there for cuBLASLt, and stream-K its split tiles' partials.
  // A call without enough of it runs its range's fallback.
  bool takesWorkspace() const { return family == Family::Dequant || streamK(); }
  bool splitsK() const { return family == Family::GemvTiled || splitK > 1; }
  // The slices of K a split-K schedule cuts K into: split_k warps in each
  // of cluster_k blocks.
  int64_t kSlices() const { return splitK * clusterK; }
  int64_t threads() const {
    if (family == Family::Wgmma)
      return 32 * warpsM * warpsN + kProducerThreads;
    if (family == Family::Dequant)
      return 32 * splitK;
    return 32 * warpsM * warpsN * (splitsK() ? splitK : 1);
  }
  // The wgmma family's producer warpgroup.
  static constexpr int64_t kProducerThreads = 128;
  // "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 4,
  // split_k = 1>", exactly as the compiler's defaultSchedules() spell it;
  // ", cluster_k = c" follows split_k only when c is not 1, and
  // ", scheduler = persistent" (or stream_k) only when not grid, so the schedules (and
  // kernel ids) without them read as they always did.
  std::string text() const;

  bool operator==(const Schedule &o) const {
    return family == o.family && tileM == o.tileM && tileN == o.tileN && tileK == o.tileK &&
           warpsM == o.warpsM && warpsN == o.warpsN && stages == o.stages && splitK == o.splitK &&
           clusterK == o.clusterK && scheduler == o.scheduler;
  }
  bool operator!=(const Schedule &o) const { return !(*this == o); }
};

// Parses the text form above. Whitespace is free; split_k and cluster_k
// may be left out (they default to 1, as in the dialect), and scheduler
// (grid). Unknown keys are an error, so a
// schedule from a newer compiler is not silently misread.
Expected<Schedule> parseSchedule(const std::string &text);

// The schedules `lowbit compile` instantiates when its options name none,
// and so the ones `lowbit formats` asks the rules about.
const std::vector<Schedule> &defaultSchedules();
// Whether `schedule` is one of defaultSchedules() (the tuner measures those
// first; `lowbit db heuristic --defaults` lets the heuristic choose among
// them alone).
bool isDefaultSchedule(const Schedule &schedule);

} // namespace lowbit::core
