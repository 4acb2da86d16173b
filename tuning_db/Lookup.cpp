#include "tuning_db/Lookup.h"

#include "core/Arch.h"
#include "core/Problem.h"
#include "core/Schedule.h"
#include "core/ScheduleRules.h"
#include "tuning_db/WorkspaceFallbacks.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace lowbit::db {

const char *tierName(Tier tier) {
  switch (tier) {
  case Tier::ExactDevice:
    return "exact device";
  case Tier::SameCcAndSmCount:
    return "same compute capability and SM count";
  case Tier::SameCc:
    return "same compute capability";
  case Tier::Heuristic:
    return "built-in heuristic";
  }
  return "unknown tier";
}

Expected<Choice> Resolution::at(int64_t m) const {
  if (m <= 0)
    return makeError("invalid M = " + std::to_string(m) + ": M must be >= 1");
  for (const Choice &choice : ranges)
    if (choice.contains(m))
      return choice;
  return makeError("no kernel range covers M = " + std::to_string(m));
}

Runnable runnableOn(const Arch &arch, bool hasPtx, int deviceCc) {
  if (arch.archSpecific)
    return arch.number == deviceCc ? Runnable::Cubin : Runnable::No;
  if (arch.number / 10 == deviceCc / 10 && arch.number <= deviceCc)
    return Runnable::Cubin;
  if (hasPtx && arch.number <= deviceCc)
    return Runnable::PtxOnly;
  return Runnable::No;
}

namespace {

int similarity(const DeviceFingerprint &a, const DeviceFingerprint &b) {
  return int(a.name == b.name) + int(a.smCount == b.smCount) + int(a.l2Bytes == b.l2Bytes) +
         int(a.memoryClockKhz == b.memoryClockKhz) +
         int(a.memoryBusWidthBits == b.memoryBusWidthBits) +
         int(a.sharedMemPerBlockOptinBytes == b.sharedMemPerBlockOptinBytes) +
         int(a.driverVersion == b.driverVersion);
}

struct Context {
  const std::vector<const Database *> &databases;
  const std::string &problemId;
  const DeviceFingerprint &device;
  std::vector<std::string> notes;
  // resolveUntuned: only the kernels `keep` accepts, their measurements
  // unseen.
  const KernelFilter *keep = nullptr;
  bool untuned = false;
};

Expected<bool> kernelKnown(const Context &ctx, const std::string &kernelId) {
  for (const Database *db : ctx.databases) {
    auto kernel = db->findKernel(kernelId, false);
    if (!kernel)
      return std::move(kernel).takeError();
    if (*kernel)
      return true;
  }
  return false;
}

// The dispatch table of `candidate` in `db`, if it is complete and every
// kernel it names exists; otherwise a note says why it was skipped.
Expected<std::optional<std::vector<DispatchRange>>>
usableTable(Context &ctx, const Database &db, const DeviceRecord &candidate) {
  auto ranges = db.dispatchRanges(ctx.problemId, candidate.id);
  if (!ranges)
    return std::move(ranges).takeError();
  using Result = std::optional<std::vector<DispatchRange>>;
  if (ranges->empty())
    return Result();
  std::string which = "database `" + db.path() + "`: dispatch for device " +
                      candidate.fingerprint.name + " (" + candidate.id.substr(0, 12) + ")";
  if (Status s = validateRanges(*ranges); !s) {
    ctx.notes.push_back(which + " skipped: " + s.error());
    return Result();
  }
  for (const DispatchRange &range : *ranges) {
    auto known = kernelKnown(ctx, range.kernelId);
    if (!known)
      return std::move(known).takeError();
    if (!*known) {
      ctx.notes.push_back(which + " skipped: range " + formatRange(range.mLo, range.mHi) +
                          " names kernel " + range.kernelId + ", which no database holds");
      return Result();
    }
  }
  return Result(std::move(*ranges));
}

Expected<std::optional<Resolution>> tableTier(Context &ctx, Tier tier) {
  for (const Database *db : ctx.databases) {
    std::vector<DeviceRecord> candidates;
    if (tier == Tier::ExactDevice) {
      auto device = db->findDevice(ctx.device.id());
      if (!device)
        return std::move(device).takeError();
      if (*device)
        candidates.push_back(**device);
    } else {
      auto devices = db->devicesWithDispatch(ctx.problemId);
      if (!devices)
        return std::move(devices).takeError();
      for (DeviceRecord &d : *devices) {
        const DeviceFingerprint &f = d.fingerprint;
        bool sameCc = f.ccMajor == ctx.device.ccMajor && f.ccMinor == ctx.device.ccMinor;
        bool sameSms = f.smCount == ctx.device.smCount;
        if (sameCc && (tier == Tier::SameCc || sameSms))
          candidates.push_back(std::move(d));
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](const DeviceRecord &a, const DeviceRecord &b) {
                         return similarity(a.fingerprint, ctx.device) >
                                similarity(b.fingerprint, ctx.device);
                       });
    }
    for (const DeviceRecord &candidate : candidates) {
      auto table = usableTable(ctx, *db, candidate);
      if (!table)
        return std::move(table).takeError();
      if (!*table)
        continue;
      Resolution resolution;
      resolution.tier = tier;
      for (const DispatchRange &range : **table)
        resolution.ranges.push_back(Choice{range.kernelId, range.mLo, range.mHi, tier,
                                           db->path(), candidate.id,
                                           candidate.fingerprint.name, ""});
      if (Status s = assignMeasuredFallbacks(*db, ctx.problemId, candidate.id, resolution.ranges);
          !s)
        return makeError(s.error());
      return std::optional<Resolution>(std::move(resolution));
    }
  }
  return std::optional<Resolution>();
}

struct Candidate {
  KernelRecord kernel;
  Arch arch;
  Runnable runnable = Runnable::No;
  bool measuredPass = false;
  std::string databasePath;
};

Expected<std::vector<Candidate>> heuristicCandidates(Context &ctx) {
  std::vector<Candidate> candidates;
  std::vector<std::string> seen;
  for (const Database *db : ctx.databases) {
    auto kernels = db->kernelsForProblem(ctx.problemId, false);
    if (!kernels)
      return std::move(kernels).takeError();
    for (KernelRecord &kernel : *kernels) {
      if (std::find(seen.begin(), seen.end(), kernel.id) != seen.end())
        continue; // an earlier database takes precedence
      seen.push_back(kernel.id);
      if (ctx.keep && *ctx.keep && !(*ctx.keep)(kernel))
        continue;
      // A kernel that takes the caller's workspace (stream-K, the dense
      // path) is dispatched only where a tuned table measured it faster; a
      // guess must run without one.
      if (takesWorkspace(kernel))
        continue;
      std::string which = "kernel " + kernel.id.substr(0, 12) + " (" + kernel.family + ", " +
                          kernel.arch + ")";
      auto arch = parseArch(kernel.arch);
      if (!arch) {
        ctx.notes.push_back(which + " skipped: " + arch.error());
        continue;
      }
      // Only whether PTX exists matters here, not its text.
      auto hasPtx = sql::Statement::prepare(
          db->handle(), "SELECT ptx IS NOT NULL AND length(ptx) > 0 FROM kernels WHERE id = ?1");
      if (!hasPtx)
        return std::move(hasPtx).takeError();
      hasPtx->bind(1, kernel.id);
      bool ptx = hasPtx->step() && hasPtx->integer(0) != 0;
      Runnable runnable = runnableOn(*arch, ptx, ctx.device.computeCapability());
      if (runnable == Runnable::No)
        continue;
      if (!kernel.launch.known()) {
        ctx.notes.push_back(which + " skipped: no launch configuration (written by schema v1)");
        continue;
      }
      int64_t smemLimit = ctx.device.sharedMemPerBlockOptinBytes;
      if (smemLimit > 0 && kernel.sharedBytes + kernel.launch.dynamicSharedBytes > smemLimit) {
        ctx.notes.push_back(which + " skipped: needs " +
                            std::to_string(kernel.sharedBytes + kernel.launch.dynamicSharedBytes) +
                            " bytes of shared memory, the device allows " +
                            std::to_string(smemLimit));
        continue;
      }
      auto results = ctx.untuned ? Expected<std::vector<ResultRecord>>(std::vector<ResultRecord>{})
                                 : db->results(kernel.id);
      if (!results)
        return std::move(results).takeError();
      bool anyPass = std::any_of(results->begin(), results->end(),
                                 [](const ResultRecord &r) { return r.passed; });
      if (!results->empty() && !anyPass) {
        ctx.notes.push_back(which + " skipped: every measurement failed the reference check");
        continue;
      }
      candidates.push_back(Candidate{std::move(kernel), *arch, runnable, anyPass, db->path()});
    }
  }
  return candidates;
}

struct Band {
  int64_t lo;
  std::optional<int64_t> hi;
  // Families in the order they are tried; the band's kernel is the best of
  // the first one the set has, and with `tensorTogether` mma and wgmma are
  // one family there, ranked by the estimate alone.
  const char *families[3];
  bool tensorTogether;
  // The block tile M that suits the band: a kernel pads M to its tile, and
  // one tile per row block re-reads the weights M / tile times. It breaks
  // ties the estimate below leaves (a signature without N and K).
  int64_t tileM;
  // The M the band's launches are sized for.
  int64_t typicalM;
};
// Up to M = 32 the split-K mma serves every band (what the H200's tuned
// tables chose on 19 shapes: the model presets' and those of
// examples/specs/untuned-small-n.toml and -large-m.toml); gemv remains the
// fallback where a set has no mma kernel. From 33 to 256 the estimate
// weighs the split-K mma against wgmma, which the H100's tuned tables took
// at M = 64 where its grid fills the SMs (28672 x 8192, 14336 x 4096) and
// at M = 256 on 15 of 16 shapes (the PERF.md shapes, the Llama-3-8B presets
// and untuned-small-n.toml, 2026-12-06: the mma-only bands ran 0.41-0.52x
// cuBLAS at M = 256 there). From 257 the tensor cores' work decides: the tallest tile,
// with the estimate at the top of each band, because a tile's row blocks
// fill whole waves at some M and not at others (4096 x 4096, H100: a
// 96-row wgmma tile chosen for all M >= 257 from M = 512 ran 153 us at
// M = 1024, where the 128-row tile fills one wave and the 96-row one
// takes two); sized for its top, a band's tile never adds a wave there.
constexpr Band kBands[] = {
    {1, 9, {"mma", "gemv", "wgmma"}, false, 8, 1},
    {9, 33, {"mma", "wgmma", "gemv"}, false, 16, 16},
    {33, 97, {"mma", "wgmma", "gemv"}, true, 16, 64},
    {97, 129, {"mma", "wgmma", "gemv"}, true, 32, 128},
    {129, 257, {"mma", "wgmma", "gemv"}, true, 32, 256},
    {257, 513, {"wgmma", "mma", "gemv"}, false, 128, 512},
    {513, 1025, {"wgmma", "mma", "gemv"}, false, 128, 1024},
    {1025, 2049, {"wgmma", "mma", "gemv"}, false, 128, 2048},
    {2049, 4097, {"wgmma", "mma", "gemv"}, false, 128, 4096},
    {4097, std::nullopt, {"wgmma", "mma", "gemv"}, false, 128, 8192},
};
constexpr int64_t kTensorBandFrom = 257;

// A field of the launch's grid rule ("n_tile=64;m_tile=16;split_k=2"), 0 if
// not given.
int64_t gridRuleField(const KernelRecord &kernel, const std::string &key) {
  const std::string &rule = kernel.launch.gridRule;
  size_t at = rule.find(key + "=");
  if (at == std::string::npos || (at > 0 && rule[at - 1] != ';'))
    return 0;
  return std::strtoll(rule.c_str() + at + key.size() + 1, nullptr, 10);
}

int64_t tileMOf(const KernelRecord &kernel) { return gridRuleField(kernel, "m_tile"); }

// How far a kernel's tile M is from the band's, in factors of two (unknown
// tiles last).
int tileMisfit(const KernelRecord &kernel, const Band &band) {
  int64_t tile = tileMOf(kernel);
  if (tile <= 0)
    return 64;
  int misfit = 0;
  for (int64_t t = tile; t < band.tileM; t *= 2)
    ++misfit;
  for (int64_t t = tile; t > band.tileM; t /= 2)
    ++misfit;
  return misfit;
}

// Whether the kernel streams the weights: it splits K over warps or blocks
// (the split-K mma, gemv_tiled), or it is wgmma, whose producer warps keep
// the consumers' ring full. Below M = 257 the staged mma (split_k = 1) pays
// for its shared-memory pipeline in every row block instead.
bool streamsWeights(const KernelRecord &kernel) {
  if (kernel.family == "wgmma")
    return true;
  std::optional<core::Schedule> schedule = kernelSchedule(kernel);
  return schedule && schedule->splitsK();
}

// The estimated time of a weight-streaming kernel at M, in decoded weights
// an SM works through (only comparisons between a problem's kernels mean
// anything): the busiest SM's blocks times a block's work, slowed where its
// resident warps are too few to keep loads in flight, plus the cluster's
// reduction.
//  - A block decodes its n_tile columns over K / cluster_k, and multiplies
//    them by its tile M rows at kMmaRowCost a row (decoding dominates up to
//    M = 128: tile 32 served M = 64 best wherever its grid filled the SMs),
//    or kWgmmaRowCost for wgmma, whose m64nNk16 takes a warpgroup's rows in
//    one instruction. Where wgmma's warpgroups share layout tiles a weight
//    costs kSharedTileDecodeCost: its codes pass through the weight ring,
//    and each warp loads a whole 16-byte unit to decode half of it (an
//    empirical factor, not a count of instructions).
//  - Blocks run in waves of (SMs x blocks an SM holds); an SM of the last
//    wave holds fewer. A wave's SM works through resident x block work at a
//    rate that grows with its warps up to kWarpsWantedPerSm: Little's law for
//    16-byte loads in flight (compiler/tuner/CostModel.cpp's latency and
//    bytes in flight ask for about that many). wgmma's producer warpgroup
//    decodes nothing, so only its consumer warps count.
//  - Each block of a cluster adds its n_tile x tile M partials to the
//    owners', cluster_k reads a value (kClusterReductionCost a partial).
// kMmaRowCost, kWarpsWantedPerSm and kClusterReductionCost were fitted on
// the H200's tuned results for those 19
// shapes at M = 1, 16, 64, 128 (76 points; within 15% of the tuned table at
// 66 of them, against 49 for the fill-and-tile order it replaced), and are
// flat near the fit: 0.005-0.015, 12, 8-16 all kept 65-66. kWgmmaRowCost
// was fitted on the H100's tuned results for the 16 shapes above at M = 64
// and 256, with the mma's constants kept (within 15% of the tuned table at
// 29 of 32 points, against 19 with mma alone below M = 257; 0.0025-0.01
// kept 28-29); kSharedTileDecodeCost on the same points (30 of 32 with 1.25
// and 1.5, 24 with 2).
constexpr double kMmaRowCost = 0.01;
constexpr double kWgmmaRowCost = 0.005;
constexpr double kSharedTileDecodeCost = 1.5;
constexpr double kWarpsWantedPerSm = 12;
constexpr double kClusterReductionCost = 8;
// `decodeCost`: a weight's decode, 1 or kSharedTileDecodeCost
// (heuristicTier works it out once a candidate).
std::optional<double> streamingEstimate(const KernelRecord &kernel, double decodeCost,
                                        int64_t m, int64_t n, int64_t k,
                                        const DeviceFingerprint &device) {
  Expected<core::TargetArch> arch = core::targetArchForDevice(device.computeCapability());
  int64_t nTile = gridRuleField(kernel, "n_tile"), tileM = tileMOf(kernel);
  int64_t cluster = std::max<int64_t>(1, gridRuleField(kernel, "split_k"));
  int64_t threads = int64_t{kernel.launch.blockX} * kernel.launch.blockY * kernel.launch.blockZ;
  if (!arch || n <= 0 || k <= 0 || device.smCount <= 0 || nTile <= 0 || tileM <= 0 ||
      threads <= 0)
    return std::nullopt;
  // Registers are allocated in 8s a thread; an unknown count (0) or
  // shared memory limits nothing.
  int64_t registers = (int64_t{kernel.registers} + 7) / 8 * 8 * threads;
  int64_t shared = kernel.sharedBytes + kernel.launch.dynamicSharedBytes;
  int64_t perSm = std::min(arch->maxThreadsPerSm / threads, arch->maxBlocksPerSm);
  if (registers > 0)
    perSm = std::min(perSm, core::TargetArch::kRegistersPerSm / registers);
  if (shared > 0)
    perSm = std::min(perSm, arch->sharedBytesPerSm / shared);
  if (perSm <= 0)
    return std::nullopt;
  int64_t rowBlocks = (m + tileM - 1) / tileM;
  int64_t blocks = std::max<int64_t>(1, n / nTile) * rowBlocks * cluster;
  int64_t waves = (blocks + device.smCount * perSm - 1) / (device.smCount * perSm);
  int64_t resident = std::min(perSm, (blocks + device.smCount - 1) / device.smCount);
  const bool wgmma = kernel.family == "wgmma";
  int64_t decodingThreads = wgmma ? threads - core::Schedule::kProducerThreads : threads;
  if (decodingThreads <= 0) // a wgmma launch with no consumer: not a kernel lowbit builds
    return std::nullopt;
  double warps = double(resident * decodingThreads) / 32;
  double rowCost = wgmma ? kWgmmaRowCost : kMmaRowCost;
  double blockWork =
      double(nTile) * double(k) / double(cluster) * (decodeCost + rowCost * tileM);
  double busy = std::min(1.0, warps / kWarpsWantedPerSm);
  double reduction =
      cluster > 1 ? kClusterReductionCost * double(nTile * tileM * cluster) : 0.0;
  return double(waves * resident) * (blockWork / busy + reduction);
}

Expected<Resolution> heuristicTier(Context &ctx) {
  auto candidates = heuristicCandidates(ctx);
  if (!candidates)
    return std::move(candidates).takeError();
  if (candidates->empty())
    return makeError("no kernel of problem " + ctx.problemId + " can run on device " +
                     ctx.device.name + " (compute capability " +
                     std::to_string(ctx.device.ccMajor) + "." +
                     std::to_string(ctx.device.ccMinor) +
                     ") and no database has a dispatch table for this compute capability");
  Resolution resolution;
  resolution.tier = Tier::Heuristic;
  // The problem's N and K, from its signature in the first database that
  // has it (0 when it is not the typed model's: the tile then decides).
  int64_t n = 0, k = 0;
  for (const Database *db : ctx.databases) {
    auto problem = db->findProblem(ctx.problemId);
    if (!problem)
      return std::move(problem).takeError();
    if (*problem) {
      if (Expected<core::Problem> parsed = core::parseSignature((*problem)->signature))
        n = parsed->n, k = parsed->k;
      break;
    }
  }
  std::vector<bool> streams;
  std::vector<double> decodeCosts;
  for (const Candidate &c : *candidates) {
    streams.push_back(streamsWeights(c.kernel));
    std::optional<core::Schedule> schedule =
        c.kernel.family == "wgmma" ? kernelSchedule(c.kernel) : std::nullopt;
    decodeCosts.push_back(schedule && core::wgmmaSharesTiles(*schedule) ? kSharedTileDecodeCost
                                                                          : 1.0);
  }
  for (const Band &band : kBands) {
    // The closest arch, a cubin, a passing measurement; then, below M =
    // 257, a kernel that streams the weights (splits K, or wgmma); then the
    // estimate at the band's M, the tile that suits the band, the fewest
    // blocks along K, the narrowest column tile and the id (so the answer
    // is deterministic).
    const bool tensorBand = band.lo >= kTensorBandFrom;
    auto rank = [&](size_t i) {
      const Candidate &c = (*candidates)[i];
      std::optional<double> estimate =
          streamingEstimate(c.kernel, decodeCosts[i], band.typicalM, n, k, ctx.device);
      // Up to M = 8 the tile comes first: there every row of a taller tile
      // is padding, which the estimate undercounts (t16 picked for M = 1
      // ran 1.2x the t8 the tuned tables chose, twice).
      const int misfit = tileMisfit(c.kernel, band);
      const bool tileFirst = band.typicalM < band.tileM;
      return std::make_tuple(-c.arch.number, c.runnable == Runnable::Cubin ? 0 : 1,
                             c.measuredPass ? 0 : 1, (tensorBand || streams[i]) ? 0 : 1,
                             tileFirst ? misfit : 0, estimate ? 0 : 1, estimate.value_or(0.0),
                             misfit,
                             gridRuleField(c.kernel, "split_k"),
                             gridRuleField(c.kernel, "n_tile"), c.kernel.id);
    };
    std::optional<size_t> bestIndex;
    auto inFamily = [&](const std::string &kernelFamily, const std::string &family) {
      const bool tensor = kernelFamily == "mma" || kernelFamily == "wgmma";
      return kernelFamily == family || (band.tensorTogether && tensor && family == "mma");
    };
    for (const char *family : band.families) {
      for (size_t i = 0; i < candidates->size(); ++i)
        if (inFamily((*candidates)[i].kernel.family, family) &&
            (!bestIndex || rank(i) < rank(*bestIndex)))
          bestIndex = i;
      if (bestIndex)
        break;
    }
    if (!bestIndex) { // only families the heuristic does not know: still pick one
      for (size_t i = 0; i < candidates->size(); ++i)
        if (!bestIndex || rank(i) < rank(*bestIndex))
          bestIndex = i;
    }
    const Candidate *best = &(*candidates)[*bestIndex];
    if (!resolution.ranges.empty() && resolution.ranges.back().kernelId == best->kernel.id) {
      resolution.ranges.back().mHi = band.hi;
      continue;
    }
    resolution.ranges.push_back(Choice{best->kernel.id, band.lo, band.hi, Tier::Heuristic,
                                       best->databasePath, "", "", ""});
  }
  resolution.notes = std::move(ctx.notes);
  return resolution;
}

} // namespace

Expected<Resolution> resolve(const std::vector<const Database *> &databases,
                             const std::string &problemId, const DeviceFingerprint &device) {
  if (databases.empty())
    return makeError("cannot look up problem " + problemId + ": no kernel database is open");
  bool known = false;
  std::string searched;
  for (const Database *db : databases) {
    auto problem = db->findProblem(problemId);
    if (!problem)
      return std::move(problem).takeError();
    known = known || problem->has_value();
    searched += (searched.empty() ? "`" : ", `") + db->path() + "`";
  }
  if (!known)
    return makeError("unknown problem " + problemId + ": not in " + searched);

  Context ctx{databases, problemId, device, {}};
  for (Tier tier : {Tier::ExactDevice, Tier::SameCcAndSmCount, Tier::SameCc}) {
    auto found = tableTier(ctx, tier);
    if (!found)
      return std::move(found).takeError();
    if (*found) {
      (*found)->notes = std::move(ctx.notes);
      return std::move(**found);
    }
  }
  return heuristicTier(ctx);
}

Expected<Resolution> resolveUntuned(const std::vector<const Database *> &databases,
                                    const std::string &problemId, const DeviceFingerprint &device,
                                    const KernelFilter &keep) {
  Context ctx{databases, problemId, device, {}, &keep, /*untuned=*/true};
  return heuristicTier(ctx);
}

Expected<Choice> lookup(const std::vector<const Database *> &databases,
                        const std::string &problemId, const DeviceFingerprint &device,
                        int64_t m) {
  if (m <= 0)
    return makeError("invalid M = " + std::to_string(m) + ": M must be >= 1");
  auto resolution = resolve(databases, problemId, device);
  if (!resolution)
    return std::move(resolution).takeError();
  return resolution->at(m);
}

} // namespace lowbit::db
