// An analytic estimate of a schedule's time at one M, used only to order
// candidates (likely winners are compiled and measured first, so a budget
// cut keeps the good ones). It is never used to pick a winner: that is
// what measurement is for.
//
// Model (all terms documented at their computation in CostModel.cpp):
//   time = launch + max(memory, compute / wave efficiency)
//   memory  = DRAM bytes / achieved bandwidth, where the achieved bandwidth
//             is capped by Little's law: bytes in flight / memory latency;
//   compute = padded flops / (tensor-core or CUDA-core throughput);
//   waves   = blocks / (SMs x blocks per SM), blocks per SM limited by
//             threads, the register estimate and shared memory.
#pragma once

#include "compiler/tuner/SearchSpace.h"
#include "runtime/kernels/KernelSet.h"
#include "tuning_db/Fingerprint.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::tuner {

struct DeviceModel {
  std::string name = "NVIDIA H200";
  int smCount = 132;
  double copyGBs = 4190;         // a kernel copy, read + write (docs/measurements/README.md)
  double l2Bytes = 50e6;
  double l2GBs = 12000;          // L2 hit bandwidth, roughly 3x DRAM on Hopper
  // gemv lanes load their 64 bytes of activations per step through L1, once
  // per row of W a warp carries: at M = 1 on 28672 x 8192 with one row a
  // warp, 470 MB of them took ~69 µs whatever the code width (ncu: L1 97%
  // busy), so that is what L1 serves of this pattern.
  double gemvActivationL1GBs = 6800;
  double memoryLatencyUs = 0.8;  // a DRAM round trip under load
  double tensorTflops = 700;     // f16 mma.sync, ~75% of Hopper's dense peak
  double cudaCoreTflops = 60;    // f32 FMA on CUDA cores, decode included
  double decodeWeightsPerUs = 40e6; // int4 -> f16 decodes per µs across the GPU
  double launchUs = 2.5;         // a launch inside a CUDA graph
  ArchLimits limits;             // per-SM and per-block limits

  static DeviceModel h200();
  // A model for the fingerprinted device: SM count, L2 and arch limits from
  // it, throughputs scaled from the H200 by SM count; the copy bandwidth is
  // measured by the caller (compiler/measure measureCopyBandwidth).
  static Expected<DeviceModel> fromFingerprint(const db::DeviceFingerprint &fingerprint,
                                               double copyGBs);
};

// Bytes an ideal kernel moves once: packed weights, scales (and zeros), X and
// Y. Reports use it for GB/s; the cost model adds the re-reads.
struct ProblemBytes {
  double weights = 0, scales = 0, activations = 0, outputs = 0;
  double total() const { return weights + scales + activations + outputs; }
};
ProblemBytes idealBytes(const kernels::ProblemDesc &problem, int64_t m);
double problemFlops(const kernels::ProblemDesc &problem, int64_t m);

struct CostEstimate {
  double us = 0;
  double memoryUs = 0, computeUs = 0;
  double dramBytes = 0, l2Bytes = 0;
  double flops = 0; // padded to whole tiles
  int64_t blocks = 0;
  int64_t blocksPerSm = 0;
  double waves = 0, waveEfficiency = 0;
  double achievedGBs = 0;
};

// Fails when the schedule cannot run (zero blocks per SM).
Expected<CostEstimate> estimateCost(const kernels::ProblemDesc &problem, const core::Schedule &schedule,
                                    int64_t m, const DeviceModel &device);

// How many blocks of this schedule an SM holds at once (0: none fit).
int64_t blocksPerSm(const core::Schedule &schedule, const kernels::ProblemDesc &problem,
                    const ArchLimits &limits);

struct RankedSchedule {
  core::Schedule schedule;
  double score = 0;          // min over M of estimate / best estimate at that M (1 = best somewhere)
  int64_t bestAtM = 0;       // the M point where it comes closest to the best
  std::vector<double> estimatedUs; // per M point, in the order given
};

// Orders candidates so that likely winners at every M point come first:
// round-robin over the M points, each taking the candidate not yet placed
// with the lowest estimate there (ties: the lower sum of log ratios to the
// best over all M points, then the schedule text, so the order is
// deterministic). Every M point's best estimate is thus among the first
// |mPoints| entries, and a cut after any N keeps the best few of every M
// point. Unlaunchable candidates are dropped.
std::vector<RankedSchedule> rankSchedules(const kernels::ProblemDesc &problem,
                                          const std::vector<core::Schedule> &candidates,
                                          const std::vector<int64_t> &mPoints,
                                          const DeviceModel &device);

// The default schedules (core::defaultSchedules(), what an untuned runtime
// dispatches) moved to the front of a ranking, each list keeping its order.
// The tuner measures them whatever the model says (candidateCut): on the
// H200 the model once ranked the 26 us W1 default below 32 slower
// candidates, and the tuned table came out 1.5x slower than no tuning.
void putDefaultsFirst(std::vector<RankedSchedule> &ranked);

// How many of a ranked list a max-candidates cut takes: its `defaults`
// (ranked first) and `maxCandidates` more (0: all of `total`).
size_t candidateCut(size_t total, size_t defaults, int64_t maxCandidates);

} // namespace lowbit::tuner
