#include "compiler/tuner/SearchSpace.h"

#include "core/Arch.h"
#include "core/ScheduleRules.h"

#include <algorithm>

namespace lowbit::tuner {

using core::Family;
using core::Schedule;

Expected<ArchLimits> archLimits(const std::string &arch) {
  // sm_90 runs sm_90a's limits (the same SM without the arch-specific
  // instructions).
  Expected<core::TargetArch> target = core::findTargetArch(arch == "sm_90" ? "sm_90a" : arch);
  if (!target)
    return makeError("no resource limits known for arch '" + arch + "' (known: " +
                     core::targetArchList() + ", sm_90)");
  ArchLimits l;
  l.arch = arch;
  l.sharedPerSm = target->sharedBytesPerSm;
  l.maxThreadsPerSm = target->maxThreadsPerSm;
  l.maxBlocksPerSm = target->maxBlocksPerSm;
  l.registersPerSm = core::TargetArch::kRegistersPerSm;
  return l;
}

namespace {

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

int64_t estimatedRegisters(const Schedule &s) {
  // One block an SM, launched with the even split (the consumers then take
  // more with setmaxnreg; the rules bound what they need).
  if (s.family == Family::Wgmma)
    return std::min<int64_t>(255, 65536 / s.threads() / 8 * 8);
  if (s.family == Family::Gemv) { // TileGemv.cpp's budget for the lighter units
    switch (core::gemvRowsPerWarp(s)) {
    case 1: return s.tileM <= 2 ? 64 : s.tileM <= 4 ? 128 : 255;
    case 2: return s.tileM == 1 ? 128 : 168;
    case 4: return 168;
    default: return 255;
    }
  }
  if (s.family == Family::Dequant) // a unit's decoded values, scales and addresses
    return 96;
  if (s.family == Family::GemvTiled) // as ptxas reported on sm_90a for g128
    return s.tileM <= 1 ? 96 : s.tileM <= 2 ? 122 : s.tileM <= 4 ? 128 : 255;
  // A unit's decoded values: 8 subtiles of 2 registers.
  constexpr int64_t kUnitRegisters = core::kSubtilesPerUnit * core::kRegistersPerSubtile;
  if (s.splitK > 1) {
    // A lane's accumulators, a chunk's codes in flight per stage (one block
    // when a ring in shared memory holds the stages), and ~64 for addresses,
    // A fragments and decode (ptxas on sm_90a: 94 to 219).
    int64_t accumulators = (s.tileN / core::kMmaFragmentM) * (s.tileM / core::kSubtileColumns) *
                           4; // W·xᵀ: m16 (columns of W) x n8 (rows of x) fragments
    int64_t inRegisters = s.stages > 1 ? 1 : s.stages;
    return std::min<int64_t>(
        255, 64 + accumulators + kUnitRegisters * inRegisters * (s.tileN / core::kColumnsPerUnit));
  }
  // Per lane: the warp's (tile M / warps M) x (tile N / warps N) f32
  // accumulators, 4 registers of A fragment per m16 fragment, 16 of decoded
  // B per 64-column unit, and ~40 for addresses, loop state and decode.
  int64_t warpRows = s.tileM / std::max<int64_t>(1, s.warpsM);
  int64_t warpColumns = s.tileN / std::max<int64_t>(1, s.warpsN);
  int64_t accumulators = warpRows * warpColumns / 32;
  int64_t fragmentsM = warpRows / core::kMmaFragmentM;
  int64_t loadsN = warpColumns / core::kColumnsPerUnit;
  return accumulators + 4 * fragmentsM + kUnitRegisters * loadsN + 40;
}

Status checkArchLimits(const ArchLimits &l, const Schedule &s, const core::Problem &p) {
  const int codeBits = p.codeBits();
  std::string family = familyName(s.family);
  auto fail = [&](const std::string &why) {
    return makeError(family + " schedule on " + l.arch + ": " + why);
  };
  if (s.threads() > l.maxThreadsPerBlock)
    return fail(str(s.threads()) + " threads per block; at most " + str(l.maxThreadsPerBlock));
  int64_t registers = estimatedRegisters(s);
  // Past 255 registers ptxas spills, and `lowbit compile` fails on a spill.
  if (registers > l.maxRegistersPerThread)
    return fail("needs about " + str(registers) + " registers per thread (would spill); at most " +
                str(l.maxRegistersPerThread));
  if (registers * s.threads() > l.registersPerSm)
    return fail(str(registers * s.threads()) + " registers per block; an SM has " +
                str(l.registersPerSm));
  int64_t shared = core::staticSharedBytes(s, codeBits);
  if (shared > l.staticSharedPerBlock)
    return fail("needs " + str(shared) + " bytes of static shared memory; at most " +
                str(l.staticSharedPerBlock));
  // A block may use its SM's shared memory less the 1 KiB the system keeps.
  int64_t total = shared + core::dynamicSharedBytes(s, p);
  if (total > l.sharedPerSm - 1024)
    return fail("needs " + str(total) + " bytes of shared memory; a block may have " +
                str(l.sharedPerSm - 1024));
  return Status::success();
}

Status checkSchedule(const core::Problem &p, const ArchLimits &l, const Schedule &s) {
  if (Status rules = core::checkSchedule(p, s); !rules)
    return rules;
  // The families an arch has (wgmma: only sm_90a); an arch the compiler
  // does not target has none of the arch-specific ones.
  Expected<core::TargetArch> target = core::findTargetArch(l.arch);
  core::TargetArch arch = target ? *target : core::TargetArch{l.arch, 0, 0, false};
  if (Status archRules = core::checkScheduleArch(p, s, arch); !archRules)
    return archRules;
  return checkArchLimits(l, s, p);
}

namespace {

// Appends `schedule` to accepted or, with its reason, to rejected.
void consider(SearchSpace &space, const core::Problem &p, const ArchLimits &l, const Schedule &s) {
  if (Status why = checkSchedule(p, l, s); why)
    space.accepted.push_back(s);
  else
    space.rejected.push_back({s, why.error()});
}

void append(SearchSpace &into, SearchSpace &&from) {
  for (Schedule &s : from.accepted)
    into.accepted.push_back(s);
  for (RejectedSchedule &r : from.rejected)
    into.rejected.push_back(std::move(r));
}

} // namespace

SearchSpace enumerateGemv(const core::Problem &p, const ArchLimits &l,
                          const SearchSpaceOptions &o) {
  SearchSpace space;
  for (int64_t tileM : o.gemvTileM)
    for (int64_t warps : o.gemvWarps)
      for (int64_t rowsPerWarp : o.gemvRowsPerWarp)
        for (int64_t unroll : o.gemvUnroll) {
          Schedule s;
          s.family = Family::Gemv;
          s.tileM = tileM;
          s.tileN = warps * rowsPerWarp;
          s.tileK = unroll * core::kGemvKPerWarpStep;
          s.warpsM = 1;
          s.warpsN = warps;
          s.stages = 1; // as defaultSchedules() spells gemv: no pipeline
          // Unrolling past the row length only adds a masked tail.
          if (unroll > 1 && s.tileK > std::max<int64_t>(p.k, core::kGemvKPerWarpStep)) {
            space.rejected.push_back({s, "gemv schedule: tile K " + str(s.tileK) +
                                             " unrolls past K = " + str(p.k)});
            continue;
          }
          consider(space, p, l, s);
        }
  return space;
}

SearchSpace enumerateMma(const core::Problem &p, const ArchLimits &l, const SearchSpaceOptions &o) {
  SearchSpace space;
  for (int64_t tileM : o.mmaTileM)
    for (int64_t tileN : o.mmaTileN)
      for (int64_t tileK : o.mmaTileK)
        for (int64_t warpsM : o.mmaWarpsM)
          for (int64_t warpsN : o.mmaWarpsN)
            for (int64_t stages : o.mmaStages) {
              Schedule s;
              s.family = Family::Mma;
              s.tileM = tileM, s.tileN = tileN, s.tileK = tileK;
              s.warpsM = warpsM, s.warpsN = warpsN;
              s.stages = stages;
              consider(space, p, l, s);
            }
  return space;
}

SearchSpace enumerateGemvTiled(const core::Problem &p, const ArchLimits &l,
                               const SearchSpaceOptions &o) {
  SearchSpace space;
  for (int64_t tileM : o.gemvTiledTileM)
    for (int64_t tileK : o.splitKTileK)
      for (int64_t splitK : o.gemvTiledSplitK)
        for (int64_t stages : o.splitKStages)
          for (int64_t clusterK : o.splitKClusterK)
            consider(space, p, l,
                     Schedule{Family::GemvTiled, tileM, core::kColumnsPerUnit, tileK, 1, 1, stages,
                              splitK, clusterK});
  return space;
}

SearchSpace enumerateMmaSplitK(const core::Problem &p, const ArchLimits &l,
                               const SearchSpaceOptions &o) {
  SearchSpace space;
  for (int64_t tileM : o.mmaSplitKTileM)
    for (int64_t tileN : o.mmaSplitKTileN)
      for (int64_t tileK : o.splitKTileK)
        for (int64_t splitK : o.mmaSplitK)
          for (int64_t stages : o.splitKStages)
            for (int64_t clusterK : o.splitKClusterK)
              consider(space, p, l,
                       Schedule{Family::Mma, tileM, tileN, tileK, 1, 1, stages, splitK, clusterK});
  return space;
}

SearchSpace enumerateWgmma(const core::Problem &p, const ArchLimits &l,
                           const SearchSpaceOptions &o) {
  SearchSpace space;
  for (core::TileScheduler scheduler : o.wgmmaSchedulers) {
    auto wgmma = [&](int64_t tileM, int64_t tileN, int64_t warps, int64_t stages,
                     int64_t clusterK) {
      Schedule s{Family::Wgmma, tileM, tileN, core::kWgmmaTileK, 1, warps, stages, 1, clusterK};
      s.scheduler = scheduler;
      consider(space, p, l, s);
    };
    for (int64_t tileM : o.wgmmaTileM)
      for (int64_t warps : o.wgmmaConsumerWarps)
        for (int64_t stages : o.wgmmaStages)
          for (int64_t clusterK : o.wgmmaClusterK)
            wgmma(tileM, warps * core::kColumnsPerUnit, warps, stages, clusterK);
    constexpr int64_t kSharedWarps = 2 * core::kWarpgroupWarps;
    for (int64_t tileM : o.wgmmaSharedTileM)
      for (int64_t stages : o.wgmmaStages)
        for (int64_t clusterK : o.wgmmaClusterK)
          wgmma(tileM, core::kWarpgroupWarps * core::kColumnsPerUnit, kSharedWarps, stages,
                clusterK);
  }
  return space;
}

SearchSpace enumerateDequant(const core::Problem &p, const ArchLimits &l,
                             const SearchSpaceOptions &o) {
  SearchSpace space;
  for (int64_t tileK : o.dequantTileK)
    for (int64_t warps : o.dequantWarps)
      consider(space, p, l,
               Schedule{Family::Dequant, 1, core::kColumnsPerUnit, tileK, 1, 1, 1, warps});
  return space;
}

SearchSpace enumerateSchedules(const core::Problem &p, const ArchLimits &l,
                               const SearchSpaceOptions &o) {
  SearchSpace space = enumerateGemv(p, l, o);
  append(space, enumerateGemvTiled(p, l, o));
  append(space, enumerateMmaSplitK(p, l, o));
  append(space, enumerateMma(p, l, o));
  append(space, enumerateWgmma(p, l, o));
  append(space, enumerateDequant(p, l, o));
  return space;
}

} // namespace lowbit::tuner
