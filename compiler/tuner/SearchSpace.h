// The schedules worth compiling and measuring for one problem on one arch.
//
// A candidate must pass two checks:
// - the family's compiler check (checkGemvSchedule / checkMmaSchedule), which
//   mirrors passes/TileGemv.cpp `checkGemv` and passes/TileMma.cpp `checkMma`
//   rule for rule, so the tuner never proposes a schedule lb-tile rejects;
// - the arch's resource limits (checkArchLimits): threads per block, the
//   estimated registers per thread, and shared memory per SM, which the
//   compiler leaves to ptxas and the driver but which make a schedule
//   unlaunchable or spill-bound.
// Both return the reason for a rejection, so `lowbit tune --explain` (and
// the tests) can say why a schedule is missing.
#pragma once

#include "compiler/tuner/Schedule.h"
#include "runtime/kernels/KernelSet.h"
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
  int64_t staticSharedPerBlock = 48 * 1024;
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

// The parts of a problem the schedule rules read, decoded from the runtime's
// ProblemDesc strings.
struct ProblemShape {
  int64_t n = 0, k = 0;
  int codeBits = 0;
  bool integerCodes = false;
  std::string activation;   // f16 | bf16 | ...
  std::string granularity;  // tensor | channel | group
  int64_t groupSize = 0;    // meaningful for granularity group only
  std::string zero;         // none | sub_code | sub_value | quantized
  bool actOrder = false;
};

ProblemShape shapeOf(const kernels::ProblemDesc &problem);

// passes/TileGemv.cpp: one lane covers 32 codes per step; one warp 1024.
constexpr int64_t kGemvCodesPerLane = 32;
constexpr int64_t kGemvCodesPerWarpStep = 32 * kGemvCodesPerLane;
// passes/TileMma.cpp: m16 fragments, 64 columns per lane-wide code load, and
// the static shared-memory ceiling it enforces.
constexpr int64_t kMmaFragmentM = 16;
constexpr int64_t kMmaColumnsPerLoad = 64;
constexpr int64_t kMmaStaticSharedBytes = 48 * 1024;

// The shared memory an mma schedule needs: `stages` buffers of an activation
// tile (2-byte values) and a code tile (TileMma.cpp MmaShape::sharedBytes).
int64_t mmaSharedBytes(const Schedule &schedule, int codeBits);

// The compiler's rules (see the file comment); OK or the reason.
Status checkGemvSchedule(const ProblemShape &problem, const Schedule &schedule);
Status checkMmaSchedule(const ProblemShape &problem, const Schedule &schedule);
// Mirror passes/SplitKLoops.cpp `checkSplitKProblem` with TileGemvTiled.cpp
// `checkGemvTiled` and TileMmaSplitK.cpp `checkMmaSplitK`.
Status checkGemvTiledSchedule(const ProblemShape &problem, const Schedule &schedule);
Status checkMmaSplitKSchedule(const ProblemShape &problem, const Schedule &schedule);
Status checkCompilerRules(const ProblemShape &problem, const Schedule &schedule);

// Registers per thread the kernel is expected to use. gemv mirrors the budget
// TileGemv.cpp gives ptxas; mma counts the f32 accumulators a lane holds plus
// a fixed allowance for addresses, fragments and decode temporaries.
int64_t estimatedRegisters(const Schedule &schedule);
// Static shared memory a block of this schedule uses (0 for gemv).
int64_t estimatedSharedBytes(const Schedule &schedule, int codeBits);
// Dynamic shared memory it asks for at launch (the split-K mma's rings).
int64_t estimatedDynamicSharedBytes(const Schedule &schedule, int codeBits);

Status checkArchLimits(const ArchLimits &limits, const Schedule &schedule, int codeBits);

// Both checks.
Status checkSchedule(const ProblemShape &problem, const ArchLimits &limits,
                     const Schedule &schedule);

// The values each family's enumeration tries; the cross product is pruned by
// checkSchedule. Defaults cover what the hand-written defaultSchedules() use
// and a step either side.
struct SearchSpaceOptions {
  std::vector<int64_t> gemvTileM = {1, 2, 4, 8};
  std::vector<int64_t> gemvWarps = {2, 4, 8, 16};
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
};

struct RejectedSchedule {
  Schedule schedule;
  std::string reason;
};

struct SearchSpace {
  std::vector<Schedule> accepted; // deterministic order: family, then fields
  std::vector<RejectedSchedule> rejected;
};

SearchSpace enumerateGemv(const ProblemShape &problem, const ArchLimits &limits,
                          const SearchSpaceOptions &options = {});
SearchSpace enumerateMma(const ProblemShape &problem, const ArchLimits &limits,
                         const SearchSpaceOptions &options = {});
SearchSpace enumerateGemvTiled(const ProblemShape &problem, const ArchLimits &limits,
                               const SearchSpaceOptions &options = {});
SearchSpace enumerateMmaSplitK(const ProblemShape &problem, const ArchLimits &limits,
                               const SearchSpaceOptions &options = {});
// Every family.
SearchSpace enumerateSchedules(const ProblemShape &problem, const ArchLimits &limits,
                               const SearchSpaceOptions &options = {});

} // namespace lowbit::tuner
