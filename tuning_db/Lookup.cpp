#include "tuning_db/Lookup.h"

#include "core/Problem.h"

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
                                           candidate.fingerprint.name});
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
      auto results = db->results(kernel.id);
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
  const char *families[3];
  // The block tile M that suits the band: a kernel pads M to its tile, and
  // one tile per row block re-reads the weights M / tile times.
  int64_t tileM;
  // The M the band's launches are sized for: its row blocks are part of the
  // grid that must fill the device (deviceFillTenths).
  int64_t typicalM;
  // Warps an SM wants in flight. Up to M = 32 the split-K kernels stream
  // weights: each warp keeps a chunk's 16-byte loads outstanding, and
  // Little's law (the cost model's latency and bytes in flight,
  // compiler/tuner/CostModel.cpp) asks for about 8 such warps an SM. From
  // M = 33 each load feeds twice the math or more, and 4 warps an SM kept
  // the H200's tensor cores as busy as more blocks along K did, without
  // their reductions.
  int64_t warpsWantedPerSm;
};
// Bands and tiles follow the H200's tuned tables on shapes no default was
// tuned for (docs/measurements, 2026-12-02 stop 28: 2048 to 5120 columns,
// M = 1 to 128): split-K mma everywhere below 257, 8-row tiles at M = 1,
// then the tile that fills the device, 16-row ones up to 96 and 32-row ones
// from there. One band for M = 9 to 256 with 16-row tiles had served
// M = 16 at up to 1.65x the tuned time and M = 128 at 1.5x.
constexpr Band kBands[] = {
    // Split-K mma with 8-row tiles (W·xᵀ) streams weights faster than the
    // CUDA-core gemv families even at M = 1 on the H200; gemv remains the
    // fallback where a set has no mma kernel.
    {1, 9, {"mma", "gemv", "wgmma"}, 8, 1, 8},
    {9, 33, {"mma", "wgmma", "gemv"}, 16, 16, 8},
    {33, 97, {"mma", "wgmma", "gemv"}, 16, 64, 4},
    {97, 257, {"mma", "wgmma", "gemv"}, 32, 128, 4},
    {257, std::nullopt, {"wgmma", "mma", "gemv"}, 128, 512, 4},
};

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

// How much of the device the band's launch fills, in tenths: the lesser of
// its blocks (N / n_tile column tiles, times the blocks along K (a
// cluster's), times the row blocks of the band's typical M) against the SMs,
// and of its warps against the warps the SMs want (Band::warpsWantedPerSm);
// at most 10. A grid of fewer blocks leaves SMs idle, and one of fewer warps
// leaves them short of loads in flight, which no schedule detail makes up
// for (56 column tiles at N = 3584 ran at half the copy bandwidth on 132
// SMs; a 16 x 128 tile with 2 warps and 8 blocks along K, 3.4 warps an SM,
// served M = 16 at 1.65x the tuned time); past that, more blocks only add
// reduction work. 0 when N or the SM count is unknown, which leaves the
// order to the other criteria.
int deviceFillTenths(const KernelRecord &kernel, const Band &band, int64_t n, int smCount) {
  int64_t nTile = gridRuleField(kernel, "n_tile"), kBlocks = gridRuleField(kernel, "split_k");
  int64_t mTile = std::max<int64_t>(1, tileMOf(kernel));
  if (n <= 0 || smCount <= 0 || nTile <= 0)
    return 0;
  int64_t rowBlocks = (band.typicalM + mTile - 1) / mTile;
  int64_t blocks = n / nTile * std::max<int64_t>(1, kBlocks) * rowBlocks;
  int64_t warps = blocks * std::max<int64_t>(1, kernel.launch.blockX / 32);
  // Rounded: 128 blocks on 132 SMs fill them.
  int64_t wanted = smCount * band.warpsWantedPerSm;
  int64_t tenths =
      std::min((blocks * 10 + smCount / 2) / smCount, (warps * 10 + wanted / 2) / wanted);
  return static_cast<int>(std::min<int64_t>(10, tenths));
}

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
  // The problem's N, from its signature in the first database that has it.
  int64_t n = 0;
  for (const Database *db : ctx.databases) {
    auto problem = db->findProblem(ctx.problemId);
    if (!problem)
      return std::move(problem).takeError();
    if (*problem) {
      if (Expected<core::Problem> parsed = core::parseSignature((*problem)->signature))
        n = parsed->n;
      break;
    }
  }
  for (const Band &band : kBands) {
    // The kernels that fill the device at the band's M; of those the one
    // with the fewest blocks along K (a cluster's reduction costs, and a
    // 32 x 128 tile of 2 warps and 8 blocks along K served M = 128 at twice
    // the tuned time at N = 2048), then the tile that suits the band, then
    // the narrowest column tile (more blocks to spread; every tuned winner of
    // the 2026-12-02 tables below M = 257 was 64 columns wide). Up to M = 8
    // the tile comes first: there every row of a taller tile is padding.
    auto rank = [&](const Candidate &c) {
      int fill = -deviceFillTenths(c.kernel, band, n, ctx.device.smCount);
      int misfit = tileMisfit(c.kernel, band);
      int64_t kBlocks = gridRuleField(c.kernel, "split_k");
      bool tileFirst = band.typicalM < band.tileM;
      return std::make_tuple(-c.arch.number, c.runnable == Runnable::Cubin ? 0 : 1,
                             c.measuredPass ? 0 : 1, tileFirst ? misfit : fill,
                             tileFirst ? fill : 0, kBlocks, tileFirst ? 0 : misfit,
                             gridRuleField(c.kernel, "n_tile"), c.kernel.id);
    };
    const Candidate *best = nullptr;
    for (const char *family : band.families) {
      for (const Candidate &c : *candidates)
        if (c.kernel.family == family && (!best || rank(c) < rank(*best)))
          best = &c;
      if (best)
        break;
    }
    if (!best) { // only families the heuristic does not know: still pick one
      for (const Candidate &c : *candidates)
        if (!best || rank(c) < rank(*best))
          best = &c;
    }
    if (!resolution.ranges.empty() && resolution.ranges.back().kernelId == best->kernel.id) {
      resolution.ranges.back().mHi = band.hi;
      continue;
    }
    resolution.ranges.push_back(Choice{best->kernel.id, band.lo, band.hi, Tier::Heuristic,
                                       best->databasePath, "", ""});
  }
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
  auto heuristic = heuristicTier(ctx);
  if (!heuristic)
    return heuristic;
  heuristic->notes = std::move(ctx.notes);
  return heuristic;
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
