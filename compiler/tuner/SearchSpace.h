// The schedules worth compiling and measuring for one problem on one arch.
//
// A candidate must pass two checks:
// - the schedule rules (core::checkSchedule), the very rules lb-tile and the
//   `#lb.schedule` verifier apply, so the tuner never proposes a schedule
//   the compiler rejects;
// - the arch's resource limits (checkArchLimits): threads per block, the
//   estimated registers per thread, and shared memory per SM (the byte
//   counts are the rules' own), which the compiler leaves to ptxas and the
//   driver but which make a schedule unlaunchable or spill-bound.
// Both return the reason for a rejection, so `lowbit tune --explain` (and
// the tests) can say why a schedule is missing.
#pragma once

#include "core/Problem.h"
#include "core/Schedule.h"
#include "core/ScheduleRules.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::tuner {

// Per-block and per-SM limits of one compute capability. Shared memory per
// block is the 48 KiB of static shared memory every arch gives without an
// opt-in. A kernel's dynamic shared memory (opted in at launch) is checked by
// `lowbit compile` against nvrtc::maxSharedBytesPerBlock, which is
// sharedPerSm less 1 KiB (a test holds the two tables together).
struct ArchLimits {
  std::string arch;
  int64_t staticSharedPerBlock = core::kStaticSharedBytesPerBlock;
  int64_t sharedPerSm = 0;
  int64_t registersPerSm = 65536;
  int64_t maxRegistersPerThread = 255;
  int64_t maxThreadsPerBlock = 1024;
  int64_t maxThreadsPerSm = 0;
  int64_t maxBlocksPerSm = 0;
};

// sm_80, sm_86, sm_89, sm_90 and sm_90a (CUDA C Programming Guide, "Technical
// Specifications per Compute Capability").
Expected<ArchLimits> archLimits(const std::string &arch);

// Registers per thread the kernel is expected to use. gemv mirrors the budget
// TileGemv.cpp gives ptxas; mma counts the f32 accumulators a lane holds plus
// a fixed allowance for addresses, fragments and decode temporaries.
int64_t estimatedRegisters(const core::Schedule &schedule);

// Threads, registers and shared memory (core::staticSharedBytes and
// core::dynamicSharedBytes of the problem's codes and activations) against
// the arch.
Status checkArchLimits(const ArchLimits &limits, const core::Schedule &schedule,
                       const core::Problem &problem);

// Both checks: the schedule rules, then the arch limits.
Status checkSchedule(const core::Problem &problem, const ArchLimits &limits,
                     const core::Schedule &schedule);

// The values each family's enumeration tries; the cross product is pruned by
// checkSchedule. Defaults cover what the hand-written defaultSchedules() use
// and a step either side.
struct SearchSpaceOptions {
  std::vector<int64_t> gemvTileM = {1, 2, 4, 8};
  std::vector<int64_t> gemvWarps = {2, 4, 8, 16};
  std::vector<int64_t> gemvRowsPerWarp = {1, 2, 4, 8}; // tile N = warps x rows a warp
  std::vector<int64_t> gemvUnroll = {1, 2, 4, 8}; // tile K = unroll x 1024
  std::vector<int64_t> mmaTileM = {16, 32, 64, 128, 256};
  std::vector<int64_t> mmaTileN = {64, 128, 256};
  std::vector<int64_t> mmaTileK = {64, 128, 256};
  std::vector<int64_t> mmaWarpsM = {1, 2, 4};
  std::vector<int64_t> mmaWarpsN = {1, 2, 4};
  std::vector<int64_t> mmaStages = {2, 3, 4, 5};
  // The split-K families: tile K is the K chunk a warp takes, stages the
  // chunks it has in flight, split_k its block's warps along K.
  std::vector<int64_t> gemvTiledTileM = {1, 2, 4};
  std::vector<int64_t> gemvTiledSplitK = {4, 8, 16};
  std::vector<int64_t> splitKTileK = {128, 256};
  std::vector<int64_t> splitKStages = {1, 2};
  std::vector<int64_t> mmaSplitKTileM = {8, 16, 32};
  std::vector<int64_t> mmaSplitKTileN = {64, 128};
  std::vector<int64_t> mmaSplitK = {2, 4, 8};
  // Blocks of a cluster along K (both split-K families; sm_90 and up, and
  // only where K has a chunk for every slice): what fills the SMs when N
  // gives few column tiles.
  std::vector<int64_t> splitKClusterK = {1, 2, 4, 8};
  // wgmma (sm_90a): tile M (wgmma's N, in four accumulators), consumer warps
  // (one or two warpgroups) and the activation ring's stages.
  std::vector<int64_t> wgmmaTileM = {32, 48, 64};
  std::vector<int64_t> wgmmaConsumerWarps = {4, 8};
  std::vector<int64_t> wgmmaStages = {4, 8, 12};
  // ...and K split across a cluster's blocks (1: none), for shapes with
  // fewer output tiles than SMs.
  std::vector<int64_t> wgmmaClusterK = {1, 2, 4};
  // A block a tile, and (when listed) a block an SM walking tiles, without
  // clusters (core::checkWgmma). Persistent blocks are not searched by
  // default: on the H100 they ran 2-12% slower than their grid twins at
  // t128x256 on every PERF shape at M = 256, 1024 and 4096 (docs/measurements
  // stop 48), so they would only take the cut's places from grid ones.
  // Stream-K is: tuned with it, the untuned small-N shapes dispatched 1.18-1.28x
  // faster at M = 64 on three of six and 5-14% at M = 256 on four (H100,
  // docs/measurements stop 50), and a call without its workspace runs the
  // range's fallback (db::assignMeasuredFallbacks).
  std::vector<core::TileScheduler> wgmmaSchedulers = {core::TileScheduler::Grid,
                                                      core::TileScheduler::StreamK};
  // ...and two warpgroups that share four layout tiles (tile N 256), each
  // multiplying two slices by up to 128 tokens (core::wgmmaSharesTiles).
  std::vector<int64_t> wgmmaSharedTileM = {64, 96, 128};
  // dequant (the dense path's first half): tile K a warp writes, warps a
  // block.
  std::vector<int64_t> dequantTileK = {128, 256};
  std::vector<int64_t> dequantWarps = {4, 8};
};

struct RejectedSchedule {
  core::Schedule schedule;
  std::string reason;
};

struct SearchSpace {
  std::vector<core::Schedule> accepted; // deterministic order: family, then fields
  std::vector<RejectedSchedule> rejected;
};

SearchSpace enumerateGemv(const core::Problem &problem, const ArchLimits &limits,
                          const SearchSpaceOptions &options = {});
SearchSpace enumerateMma(const core::Problem &problem, const ArchLimits &limits,
                         const SearchSpaceOptions &options = {});
SearchSpace enumerateGemvTiled(const core::Problem &problem, const ArchLimits &limits,
                               const SearchSpaceOptions &options = {});
SearchSpace enumerateMmaSplitK(const core::Problem &problem, const ArchLimits &limits,
                               const SearchSpaceOptions &options = {});
SearchSpace enumerateWgmma(const core::Problem &problem, const ArchLimits &limits,
                           const SearchSpaceOptions &options = {});
SearchSpace enumerateDequant(const core::Problem &problem, const ArchLimits &limits,
                             const SearchSpaceOptions &options = {});
// Every family.
SearchSpace enumerateSchedules(const core::Problem &problem, const ArchLimits &limits,
                               const SearchSpaceOptions &options = {});

} // namespace lowbit::tuner
