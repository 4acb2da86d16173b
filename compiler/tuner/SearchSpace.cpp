#include "compiler/tuner/SearchSpace.h"
#include "compiler/tuner/ScheduleRules.h"

#include <algorithm>

namespace lowbit::tuner {

Expected<ArchLimits> archLimits(const std::string &arch) {
  ArchLimits l;
  l.arch = arch;
  if (arch == "sm_80") {
    l.sharedPerSm = 164 * 1024, l.maxThreadsPerSm = 2048, l.maxBlocksPerSm = 32;
  } else if (arch == "sm_86") {
    l.sharedPerSm = 100 * 1024, l.maxThreadsPerSm = 1536, l.maxBlocksPerSm = 16;
  } else if (arch == "sm_89") {
    l.sharedPerSm = 100 * 1024, l.maxThreadsPerSm = 1536, l.maxBlocksPerSm = 24;
  } else if (arch == "sm_90" || arch == "sm_90a") {
    l.sharedPerSm = 228 * 1024, l.maxThreadsPerSm = 2048, l.maxBlocksPerSm = 32;
  } else {
    return makeError("no resource limits known for arch '" + arch +
                     "' (known: sm_80, sm_86, sm_89, sm_90, sm_90a)");
  }
  return l;
}

ProblemShape shapeOf(const kernels::ProblemDesc &problem) {
  ProblemShape s;
  s.n = problem.n;
  s.k = problem.k;
  // The typed model's spellings (core/Problem.h), until the core schedule
  // rules take the problem itself.
  s.activation = core::activationName(problem.activation);
  s.granularity = core::granularitySpelling(problem.scheme.granularity);
  s.groupSize = problem.scheme.groupSize;
  s.zero = core::zeroSpelling(problem.scheme.zero, problem.scheme.zeroCodes.has_value());
  s.actOrder = problem.scheme.actOrder;
  if (const formats::IntFormat *integer = problem.code.asInt()) {
    s.integerCodes = true;
    s.codeBits = integer->bits;
  }
  return s;
}

int64_t mmaSharedBytes(const Schedule &s, int codeBits) {
  return s.stages * (s.tileM * s.tileK * 2 + s.tileN * s.tileK * codeBits / 8);
}

namespace {

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

Status reject(const char *family, const std::string &why) {
  return makeError(std::string(family) + " schedule: " + why);
}

// Rules every family shares, in the order the compiler tests them: code type
// and activation type come first...
Status checkTypes(const char *family, const ProblemShape &p) {
  if (p.codeBits != 4 || !p.integerCodes)
    return reject(family, "only 4-bit integer codes are implemented");
  if (p.activation != "f16" && p.activation != "bf16")
    return reject(family, "activations must be f16 or bf16, got " + p.activation);
  return Status::success();
}

// ...and the zero and act-order rules come last.
Status checkQuantTail(const char *family, const ProblemShape &p) {
  if (p.zero == "quantized")
    return reject(family, "quantized zero codes are not implemented");
  if (p.actOrder)
    return reject(family, "act_order is not implemented");
  return Status::success();
}

// Mirrors passes/TileGemv.cpp `checkGemv`, rule for rule and in its order.
// Stages are not checked there (the gemv body has no pipeline), so not here.
Status checkGemvSchedule(const ProblemShape &p, const Schedule &s) {
  const char *f = "gemv";
  if (s.family != Family::Gemv)
    return reject(f, "not a gemv schedule");
  if (Status t = checkTypes(f, p); !t)
    return t;
  if (s.warpsM != 1 || s.tileN != s.warpsN)
    return reject(f, "each warp computes one row: need warps = [1, tile N], got warps [" +
                         str(s.warpsM) + ", " + str(s.warpsN) + "] for tile N " + str(s.tileN));
  if (s.tileM < 1 || s.tileM > 8)
    return reject(f, "tile M must be 1..8, got " + str(s.tileM));
  // `tile[2] % 1024` in the compiler; a non-positive tile K would pass that
  // test there but makes no sense (and divides by zero in the builder).
  if (s.tileK <= 0 || s.tileK % kGemvCodesPerWarpStep)
    return reject(f, "tile K must be a positive multiple of " + str(kGemvCodesPerWarpStep) +
                         " (32 lanes x 32 codes), got " + str(s.tileK));
  if (s.splitK != 1)
    return reject(f, "split_k > 1 is not implemented for gemv");
  if (p.k % kGemvCodesPerLane)
    return reject(f, "K = " + str(p.k) + " is not a multiple of " + str(kGemvCodesPerLane));
  if (s.tileN <= 0 || p.n % s.tileN)
    return reject(f, "N = " + str(p.n) + " is not a multiple of tile N = " + str(s.tileN));
  if (p.granularity == "group" && p.groupSize % kGemvCodesPerLane)
    return reject(f, "group size " + str(p.groupSize) + " is not a multiple of a lane's " +
                         str(kGemvCodesPerLane) + " codes");
  return checkQuantTail(f, p);
}

// Mirrors passes/TileMma.cpp `checkMma`, rule for rule and in its order.
Status checkMmaSchedule(const ProblemShape &p, const Schedule &s) {
  const char *f = "mma";
  if (s.family != Family::Mma)
    return reject(f, "not an mma schedule");
  if (s.splitK > 1)
    return checkMmaSplitKSchedule(p, s);
  if (Status t = checkTypes(f, p); !t)
    return t;
  // The compiler divides by the warp counts; the dialect's verifier keeps
  // them positive, so a non-positive one can never reach checkMma.
  if (s.warpsM <= 0 || s.warpsN <= 0 || s.tileM <= 0 || s.tileN <= 0)
    return reject(f, "tile and warp counts must be positive");
  if (s.tileM % (s.warpsM * kMmaFragmentM))
    return reject(f, "tile M " + str(s.tileM) + " must give each of " + str(s.warpsM) +
                         " warp rows a multiple of 16");
  if (s.tileN % (s.warpsN * kMmaColumnsPerLoad))
    return reject(f, "tile N " + str(s.tileN) + " must give each of " + str(s.warpsN) +
                         " warp columns a multiple of " + str(kMmaColumnsPerLoad));
  if (s.tileK <= 0 || s.tileK % 64)
    return reject(f, "tile K must be a multiple of 64 (eight 16-byte chunks a row, for the "
                     "shared-memory swizzle), got " + str(s.tileK));
  if (s.stages < 2)
    return reject(f, "stages must be at least 2, got " + str(s.stages));
  int64_t shared = mmaSharedBytes(s, p.codeBits);
  if (shared > kMmaStaticSharedBytes)
    return reject(f, "needs " + str(shared) + " bytes of shared memory; at most " +
                         str(kMmaStaticSharedBytes) + " are supported");
  if (p.n % s.tileN)
    return reject(f, "N = " + str(p.n) + " is not a multiple of tile N = " + str(s.tileN));
  if (p.k % s.tileK)
    return reject(f, "K = " + str(p.k) + " is not a multiple of tile K = " + str(s.tileK));
  if (p.granularity == "group" && p.groupSize % s.tileK)
    return reject(f, "group size " + str(p.groupSize) + " is not a multiple of tile K = " +
                         str(s.tileK) + " (scales are applied once per K tile)");
  return checkQuantTail(f, p);
}

Status checkCompilerRules(const ProblemShape &p, const Schedule &s) {
  switch (s.family) {
  case Family::Gemv: return checkGemvSchedule(p, s);
  case Family::GemvTiled: return checkGemvTiledSchedule(p, s);
  case Family::Mma: return checkMmaSchedule(p, s);
  }
  return makeError("unknown family");
}

int64_t estimatedRegisters(const Schedule &s) {
  if (s.family == Family::Gemv)
    return s.tileM <= 2 ? 64 : s.tileM <= 4 ? 128 : 255; // TileGemv.cpp's budget
  if (s.family == Family::GemvTiled) // as ptxas reported on sm_90a for g128
    return s.tileM <= 1 ? 96 : s.tileM <= 2 ? 122 : s.tileM <= 4 ? 128 : 255;
  if (s.splitK > 1) {
    // A lane's accumulators, a chunk's codes in flight per stage (one block
    // when a ring in shared memory holds the stages), and ~64 for addresses,
    // A fragments and decode (ptxas on sm_90a: 94 to 219).
    int64_t accumulators = (s.tileN / 16) * (s.tileM / 8) * 4; // W·xᵀ fragments
    int64_t inRegisters = s.stages > 1 ? 1 : s.stages;
    return std::min<int64_t>(255, 64 + accumulators +
                                      16 * inRegisters * (s.tileN / kMmaColumnsPerLoad));
  }
  // Per lane: the warp's (tile M / warps M) x (tile N / warps N) f32
  // accumulators, 4 registers of A fragment per m16 fragment, 16 of decoded
  // B per 64-column load, and ~40 for addresses, loop state and decode.
  int64_t warpRows = s.tileM / std::max<int64_t>(1, s.warpsM);
  int64_t warpColumns = s.tileN / std::max<int64_t>(1, s.warpsN);
  int64_t accumulators = warpRows * warpColumns / 32;
  int64_t fragmentsM = warpRows / kMmaFragmentM;
  int64_t loadsN = warpColumns / kMmaColumnsPerLoad;
  return accumulators + 4 * fragmentsM + 16 * loadsN + 40;
}

int64_t estimatedSharedBytes(const Schedule &s, int codeBits) {
  if (s.family == Family::GemvTiled)
    return gemvTiledPartialBytes(s);
  if (s.family == Family::Mma)
    return s.splitK > 1 ? mmaSplitKPartialBytes(s) : mmaSharedBytes(s, codeBits);
  return 0;
}

int64_t estimatedDynamicSharedBytes(const Schedule &s, int codeBits) {
  return s.family == Family::Mma && s.splitK > 1 ? mmaSplitKRingBytes(s, codeBits) : 0;
}

Status checkArchLimits(const ArchLimits &l, const Schedule &s, int codeBits) {
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
  int64_t shared = estimatedSharedBytes(s, codeBits);
  if (shared > l.staticSharedPerBlock)
    return fail("needs " + str(shared) + " bytes of static shared memory; at most " +
                str(l.staticSharedPerBlock));
  // A block may use its SM's shared memory less the 1 KiB the system keeps.
  int64_t total = shared + estimatedDynamicSharedBytes(s, codeBits);
  if (total > l.sharedPerSm - 1024)
    return fail("needs " + str(total) + " bytes of shared memory; a block may have " +
                str(l.sharedPerSm - 1024));
  return Status::success();
}

Status checkSchedule(const ProblemShape &p, const ArchLimits &l, const Schedule &s) {
  if (Status c = checkCompilerRules(p, s); !c)
    return c;
  return checkArchLimits(l, s, p.codeBits);
}

void consider(SearchSpace &space, const ProblemShape &p, const ArchLimits &l, const Schedule &s) {
  if (Status why = checkSchedule(p, l, s); why)
    space.accepted.push_back(s);
  else
    space.rejected.push_back({s, why.error()});
}

namespace {

void append(SearchSpace &into, SearchSpace &&from) {
  for (Schedule &s : from.accepted)
    into.accepted.push_back(s);
  for (RejectedSchedule &r : from.rejected)
    into.rejected.push_back(std::move(r));
}

} // namespace

SearchSpace enumerateGemv(const ProblemShape &p, const ArchLimits &l,
                          const SearchSpaceOptions &o) {
  SearchSpace space;
  for (int64_t tileM : o.gemvTileM)
    for (int64_t warps : o.gemvWarps)
      for (int64_t unroll : o.gemvUnroll) {
        Schedule s;
        s.family = Family::Gemv;
        s.tileM = tileM;
        s.tileN = warps; // one row per warp
        s.tileK = unroll * kGemvCodesPerWarpStep;
        s.warpsM = 1;
        s.warpsN = warps;
        s.stages = 1; // as defaultSchedules() spells gemv: no pipeline
        // Unrolling past the row length only adds a masked tail.
        if (unroll > 1 && s.tileK > std::max<int64_t>(p.k, kGemvCodesPerWarpStep)) {
          space.rejected.push_back({s, "gemv schedule: tile K " + str(s.tileK) +
                                           " unrolls past K = " + str(p.k)});
          continue;
        }
        consider(space, p, l, s);
      }
  return space;
}

SearchSpace enumerateMma(const ProblemShape &p, const ArchLimits &l, const SearchSpaceOptions &o) {
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

SearchSpace enumerateSchedules(const ProblemShape &p, const ArchLimits &l,
                               const SearchSpaceOptions &o) {
  SearchSpace space = enumerateGemv(p, l, o);
  append(space, enumerateGemvTiled(p, l, o));
  append(space, enumerateMmaSplitK(p, l, o));
  append(space, enumerateMma(p, l, o));
  return space;
}

} // namespace lowbit::tuner
