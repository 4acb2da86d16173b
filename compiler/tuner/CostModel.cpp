#include "compiler/tuner/CostModel.h"

#include "core/ScheduleRules.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lowbit::tuner {

DeviceModel DeviceModel::h200() {
  DeviceModel d;
  d.limits = *archLimits("sm_90a");
  return d;
}

Expected<DeviceModel> DeviceModel::fromFingerprint(const db::DeviceFingerprint &f,
                                                   double copyGBs) {
  std::string arch;
  // Per-SM throughputs, so boards with fewer SMs scale down: tensor cores
  // for f16 mma.sync with f32 accumulation at ~75% of dense peak, and f32
  // CUDA-core throughput with the decode folded in.
  double tensorPerSm = 0, cudaPerSm = 0;
  switch (f.computeCapability()) {
  case 80: arch = "sm_80", tensorPerSm = 2.2, cudaPerSm = 0.25; break;
  case 86: arch = "sm_86", tensorPerSm = 0.55, cudaPerSm = 0.45; break;
  case 89: arch = "sm_89", tensorPerSm = 1.0, cudaPerSm = 0.45; break;
  case 90: arch = "sm_90a", tensorPerSm = 5.3, cudaPerSm = 0.45; break;
  default:
    return makeError("no cost model for compute capability " +
                     std::to_string(f.computeCapability()));
  }
  auto limits = archLimits(arch);
  if (!limits)
    return makeError(limits.error());
  if (f.smCount <= 0 || copyGBs <= 0)
    return makeError("the device model needs a positive SM count and copy bandwidth");
  DeviceModel d;
  d.name = f.name;
  d.smCount = f.smCount;
  d.copyGBs = copyGBs;
  d.l2Bytes = f.l2Bytes > 0 ? double(f.l2Bytes) : d.l2Bytes;
  d.l2GBs = 3 * copyGBs;
  d.tensorTflops = tensorPerSm * f.smCount;
  d.cudaCoreTflops = cudaPerSm * f.smCount;
  d.decodeWeightsPerUs = DeviceModel().decodeWeightsPerUs * f.smCount / 132.0;
  d.limits = *limits;
  return d;
}

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

ProblemBytes idealBytes(const kernels::ProblemDesc &p, int64_t m) {
  ProblemBytes b;
  double n = double(p.n), k = double(p.k);
  b.weights = n * k * p.codeBits() / 8.0;
  // Zeros, when present, are one more value per scale (of the scale's dtype,
  // or a byte when quantized).
  b.scales = double(core::scaleBytes(p)) + double(core::scaleCount(p)) * core::zeroElementBytes(p);
  b.activations = double(m) * k * 2;
  b.outputs = double(m) * n * 2;
  return b;
}

double problemFlops(const kernels::ProblemDesc &p, int64_t m) {
  return 2.0 * double(m) * double(p.n) * double(p.k);
}

int64_t blocksPerSm(const core::Schedule &s, const kernels::ProblemDesc &p, const ArchLimits &l) {
  int64_t threads = s.threads();
  int64_t byThreads = threads > 0 ? l.maxThreadsPerSm / threads : 0;
  int64_t byRegisters = l.registersPerSm / std::max<int64_t>(1, threads * estimatedRegisters(s));
  int64_t shared = core::staticSharedBytes(s, p.codeBits()) + core::dynamicSharedBytes(s, p);
  int64_t byShared = shared > 0 ? l.sharedPerSm / shared : l.maxBlocksPerSm;
  return std::max<int64_t>(0, std::min({l.maxBlocksPerSm, byThreads, byRegisters, byShared}));
}

// The dense path: the dequant kernel reads the packed weights and writes
// W[N, K] in 16 bits at the copy bandwidth, then cuBLAS reads it back and
// multiplies at the tensor-core rate (it overlaps its reads with its math).
// Its schedule changes little of that, so the model ranks the path as a
// whole against the other families.
static CostEstimate estimateDensePath(const kernels::ProblemDesc &p, int64_t m, const DeviceModel &d,
                               CostEstimate e) {
  ProblemBytes ideal = idealBytes(p, m);
  double dense = 2.0 * double(p.n) * double(p.k);
  double dequantUs = (ideal.weights + ideal.scales + dense) / (d.copyGBs * 1e3);
  double gemmMemoryUs = (dense + ideal.activations + ideal.outputs) / (d.copyGBs * 1e3);
  e.flops = 2.0 * double(m) * double(p.n) * double(p.k);
  e.computeUs = e.flops / (d.tensorTflops * 1e6);
  e.dramBytes = ideal.weights + ideal.scales + 2 * dense + ideal.activations + ideal.outputs;
  e.memoryUs = dequantUs + gemmMemoryUs;
  e.achievedGBs = d.copyGBs;
  e.waveEfficiency = 1;
  e.us = 2 * d.launchUs + dequantUs + std::max(gemmMemoryUs, e.computeUs);
  return e;
}

Expected<CostEstimate> estimateCost(const kernels::ProblemDesc &p, const core::Schedule &s, int64_t m,
                                    const DeviceModel &d) {
  if (m < 1 || p.n <= 0 || p.k <= 0 || s.tileM <= 0 || s.tileN <= 0)
    return makeError("cost model: M, N, K and the tile must be positive");
  int bits = p.codeBits();
  CostEstimate e;
  int64_t mBlocks = ceilDiv(m, s.tileM);
  int64_t nBlocks = ceilDiv(p.n, s.tileN);
  e.blocks = mBlocks * nBlocks * s.clusterK;
  e.blocksPerSm = blocksPerSm(s, p, d.limits);
  if (e.blocksPerSm == 0)
    return makeError("cost model: no block of " + s.text() + " fits on an SM");
  if (s.family == core::Family::Dequant)
    return estimateDensePath(p, m, d, e);

  // Bytes. The grid's x walks N fastest (gridTile = {N per block, M per
  // block, split-K}), so every M block streams all of W again: from DRAM
  // when W (and its scales) cannot stay in L2 between M blocks, from L2 when
  // it can. X is re-read by every N block; it is small and stays in L2 (and
  // in L1 across a gemv block's warps), so it costs L2 traffic only.
  ProblemBytes ideal = idealBytes(p, m);
  double weightBytes = ideal.weights + ideal.scales;
  bool weightsStayInL2 = weightBytes < d.l2Bytes / 2;
  double weightReReads = double(mBlocks - 1);
  e.dramBytes = weightBytes * (weightsStayInL2 ? 1 : double(mBlocks)) + ideal.activations +
                ideal.outputs;
  e.l2Bytes = (weightsStayInL2 ? weightBytes * weightReReads : 0) +
              ideal.activations * double(nBlocks);

  // Achieved bandwidth by Little's law: the loads in flight across the GPU
  // must cover bandwidth x latency. gemv lanes keep tile K / 1024 16-byte
  // loads in flight each; an mma block keeps stages - 1 tiles of X and W.
  int64_t residentBlocks = std::min<int64_t>(e.blocks, d.smCount * e.blocksPerSm);
  // A split-K warp has `stages` chunks of tile K in flight, each one 512-byte
  // load per 64 columns and 16 K.
  double bytesInFlightPerBlock =
      s.splitsK()
          ? double(s.splitK) * double(s.stages) * double(s.tileK / 16) *
                double(std::max<int64_t>(1, s.tileN / core::kColumnsPerUnit)) * 512.0
      : s.family == core::Family::Gemv
          ? double(s.tileN) * 32 * 16 * double(std::max<int64_t>(1, s.tileK / core::kGemvKPerWarpStep))
          : double(std::max<int64_t>(1, s.stages - 1)) *
                (double(s.tileN) * s.tileK * bits / 8.0 + double(s.tileM) * s.tileK * 2);
  double bytesInFlight = bytesInFlightPerBlock * double(residentBlocks);
  // GB/s is bytes per ns; latency in µs -> bytes / (µs * 1e3) is GB/s.
  double littleGBs = bytesInFlight / (d.memoryLatencyUs * 1e3);
  e.achievedGBs = std::min(d.copyGBs, littleGBs);
  e.memoryUs = std::max(e.dramBytes / (e.achievedGBs * 1e3), e.l2Bytes / (d.l2GBs * 1e3));
  if (s.family == core::Family::Gemv) {
    // Each warp's rows of W share one activation load per row of X.
    double activationLoads = double(mBlocks * s.tileM) * double(p.k) * 2.0 * double(p.n) /
                             double(core::gemvRowsPerWarp(s));
    e.memoryUs = std::max(e.memoryUs, activationLoads / (d.gemvActivationL1GBs * 1e3));
  }

  // Compute on whole tiles: padded rows cost as much as real ones. mma
  // decodes every weight once per M block on the CUDA cores, sharing issue
  // slots with the mma, so the two add; gemv's CUDA-core rate includes it.
  double paddedM = double(mBlocks * s.tileM);
  e.flops = 2.0 * paddedM * double(p.n) * double(p.k);
  bool cudaCores = s.family == core::Family::Gemv || s.family == core::Family::GemvTiled;
  if (cudaCores) {
    e.computeUs = e.flops / (d.cudaCoreTflops * 1e6);
  } else {
    double decodes = double(p.n) * double(p.k) * double(mBlocks);
    e.computeUs = e.flops / (d.tensorTflops * 1e6) + decodes / d.decodeWeightsPerUs;
  }

  // Waves and balance. An SM's resident blocks share its throughput, so what
  // costs time is the busiest SM's share: ceil(blocks / SMs) blocks against
  // the average blocks / SMs. Few warps per SM cannot keep the pipes busy:
  // tensor cores want a warp per SM sub-partition (4), CUDA-core decode and
  // FMA want ~16 warps to hide latency.
  double slots = double(d.smCount * e.blocksPerSm);
  e.waves = double(e.blocks) / slots;
  double perSm = double(e.blocks) / double(d.smCount);
  e.waveEfficiency = perSm / std::ceil(perSm);
  if (s.streamK()) {
    // Stream-K runs on min(SMs, tiles x K tiles) blocks. Where it splits
    // tiles (core::streamKWholeTiles), their K tiles go in equal runs to
    // every block, so no SM idles at the end, and their f32 partials are
    // written once and read back once; a last wave it runs whole idles as
    // the grid's does.
    const int64_t units = e.blocks * ceilDiv(p.k, core::kWgmmaTileK);
    const int64_t launched = std::min<int64_t>(d.smCount, units);
    const int64_t splitTiles = e.blocks - core::streamKWholeTiles(e.blocks, launched);
    if (splitTiles > 0) {
      e.waveEfficiency = std::min(1.0, double(units) / double(d.smCount));
      e.memoryUs += double(splitTiles) * double(s.tileM * s.tileN) * 4.0 * 2.0 / (d.l2GBs * 1e3);
    }
    perSm = std::min(perSm, 1.0);
  }
  double residentPerSm = std::min(std::ceil(perSm), double(e.blocksPerSm));
  double warpsPerSm = residentPerSm * double(s.threads() / 32);
  double warpsWanted = cudaCores ? 16 : 4;
  double occupancy = std::min(1.0, warpsPerSm / warpsWanted);
  double computeTime = e.computeUs / (e.waveEfficiency * occupancy);
  // Memory and compute overlap, but not perfectly: a tenth of the smaller
  // term shows through. This also orders schedules the max() alone ties
  // (all memory-bound), preferring the one with less compute to hide.
  e.us = d.launchUs + std::max(e.memoryUs, computeTime) +
         0.1 * std::min(e.memoryUs, computeTime);
  return e;
}

std::vector<RankedSchedule> rankSchedules(const kernels::ProblemDesc &p,
                                          const std::vector<core::Schedule> &candidates,
                                          const std::vector<int64_t> &mPoints,
                                          const DeviceModel &d) {
  std::vector<RankedSchedule> ranked;
  for (const core::Schedule &s : candidates) {
    RankedSchedule r{s, 0, 0, {}};
    bool runs = true;
    for (int64_t m : mPoints) {
      auto e = estimateCost(p, s, m, d);
      if (!e) {
        runs = false;
        break;
      }
      r.estimatedUs.push_back(e->us);
    }
    if (runs)
      ranked.push_back(std::move(r));
  }
  std::vector<double> best(mPoints.size(), std::numeric_limits<double>::infinity());
  for (const RankedSchedule &r : ranked)
    for (size_t i = 0; i < mPoints.size(); ++i)
      best[i] = std::min(best[i], r.estimatedUs[i]);
  std::vector<double> logSum(ranked.size(), 0);
  for (size_t c = 0; c < ranked.size(); ++c) {
    RankedSchedule &r = ranked[c];
    r.score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < mPoints.size(); ++i) {
      double ratio = r.estimatedUs[i] / best[i];
      logSum[c] += std::log(ratio);
      if (ratio < r.score)
        r.score = ratio, r.bestAtM = mPoints[i];
    }
  }
  if (mPoints.empty())
    return ranked; // nothing to rank by; every M point loop below would be empty
  std::vector<std::string> texts;
  for (const RankedSchedule &r : ranked)
    texts.push_back(r.schedule.text());
  // Per M point, the candidates from the lowest estimate there up.
  std::vector<std::vector<size_t>> byPoint(mPoints.size());
  for (size_t i = 0; i < mPoints.size(); ++i) {
    std::vector<size_t> &order = byPoint[i];
    for (size_t c = 0; c < ranked.size(); ++c)
      order.push_back(c);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (ranked[a].estimatedUs[i] != ranked[b].estimatedUs[i])
        return ranked[a].estimatedUs[i] < ranked[b].estimatedUs[i];
      if (logSum[a] != logSum[b])
        return logSum[a] < logSum[b];
      return texts[a] < texts[b];
    });
    // Then interleaved by family: each family's best, then each family's
    // second, and so on. Near-twins of one family (gemv_tiled's split_k
    // and cluster_k variants) tied the best gemv within 1% at M = 1 and
    // would otherwise fill the point's share of a cut.
    std::vector<std::vector<size_t>> families;
    for (size_t c : order) {
      auto same = [&](const std::vector<size_t> &f) {
        return ranked[f.front()].schedule.family == ranked[c].schedule.family;
      };
      auto family = std::find_if(families.begin(), families.end(), same);
      if (family == families.end())
        families.push_back({c});
      else
        family->push_back(c);
    }
    order.clear();
    for (size_t rank = 0; order.size() < ranked.size(); ++rank)
      for (const std::vector<size_t> &f : families)
        if (rank < f.size())
          order.push_back(f[rank]);
  }
  // Round-robin over the M points, each taking its best candidate not yet
  // placed. In the memory-bound regime the model gives many schedules
  // (warps, stages, tile K) the very same estimate, so ordering by score
  // alone let one M point's near-twins fill a max-candidates cut; this way
  // every M point's predicted winner is among the first |mPoints|.
  std::vector<RankedSchedule> sorted;
  std::vector<bool> placed(ranked.size(), false);
  std::vector<size_t> next(mPoints.size(), 0);
  while (sorted.size() < ranked.size()) {
    for (size_t i = 0; i < mPoints.size() && sorted.size() < ranked.size(); ++i) {
      std::vector<size_t> &order = byPoint[i];
      while (next[i] < order.size() && placed[order[next[i]]])
        ++next[i];
      if (next[i] == order.size())
        continue;
      placed[order[next[i]]] = true;
      sorted.push_back(ranked[order[next[i]]]);
    }
  }
  return sorted;
}

void putDefaultsFirst(std::vector<RankedSchedule> &ranked) {
  std::stable_partition(ranked.begin(), ranked.end(),
                        [](const RankedSchedule &r) { return core::isDefaultSchedule(r.schedule); });
}

size_t candidateCut(size_t total, size_t defaults, int64_t maxCandidates) {
  if (maxCandidates <= 0)
    return total;
  return std::min(total, defaults + static_cast<size_t>(maxCandidates));
}

} // namespace lowbit::tuner
