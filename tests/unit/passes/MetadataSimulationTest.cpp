// A CPU simulation of the quantization metadata each tensor-core family
// reads: lb-tile's output is evaluated for every lane of every warp, at the
// first, second and last iteration of every loop around an lb.scale_fragment,
// and the scale (and bias, super-block step, zero) applied to each subtile is
// traced back to the load that produced it, through loop-carried values and
// branches. Which weight (n, k) each decoded value is comes from the PTX
// fragment tables in core/FragmentFacts.h (the paired K order), not from the
// pass; so every value's metadata must be at row n, group k / group size and
// super-block k / super block. The GPU tests check the same end to end; this
// checks every lane of every family without a GPU, and says which one is off.
#include "core/FragmentFacts.h"
#include "core/ScheduleRules.h"
#include "ir/LbOps.h"
#include "tests/unit/passes/IrEvaluation.h"
#include "tests/unit/passes/MetadataReads.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <sstream>
#include <tuple>

namespace lowbit {
namespace {

using namespace mlir;
using namespace lowbit::testing;

// Where the codes a load reads sit in W: its (n0, k0), or for a load from a
// staging buffer (the staged mma's tiles, the wgmma weight ring) the tile's
// origin plus its offset in the tile. The tile is the one an
// lb.copy_codes_async put in that stage for K tile u, u the iteration of the
// loop around the load: what the pipeline's barriers promise, and the GPU
// tests check (this simulation checks the metadata against it, not the
// barriers).
using OriginCache =
    std::map<std::tuple<Operation *, int64_t, int64_t>, std::optional<std::pair<int64_t, int64_t>>>;

std::optional<std::pair<int64_t, int64_t>> codesOrigin(lb::LoadCodesOp load, const Env &env,
                                                       OriginCache &cache) {
  std::optional<int64_t> n0 = evaluate(load.getN0(), env), k0 = evaluate(load.getK0(), env);
  if (!n0 || !k0)
    return std::nullopt;
  if (!load.getStage())
    return std::make_pair(*n0, *k0);
  std::optional<int64_t> stage = evaluate(load.getStage(), env);
  auto loop = load->getParentOfType<scf::ForOp>();
  auto at = loop ? env.iteration.find(loop) : env.iteration.end();
  auto buffer = cast<MemRefType>(load.getWeights().getType());
  if (!stage || at == env.iteration.end() || buffer.getRank() != 3)
    return std::nullopt;
  const int64_t tileK = buffer.getDimSize(2);
  // The tile's origin is the block's: the same for every thread of it, so
  // found once (by whichever warp copies: a producer warpgroup's, or all).
  auto key = std::make_tuple(load.getOperation(), *stage, at->second);
  auto cached = cache.find(key);
  if (cached == cache.end()) {
    std::optional<std::pair<int64_t, int64_t>> tile;
    for (Operation *user : load.getWeights().getUsers()) {
      auto copy = dyn_cast<lb::CopyCodesAsyncOp>(user);
      if (!copy || copy.getBuffer() != load.getWeights())
        continue;
      for (int64_t warp = 0; warp < 16 && !tile; ++warp) {
        Env thread;
        thread.coords = env.coords;
        thread.coords[lb::ThreadCoord::lane] = 0;
        thread.coords[lb::ThreadCoord::warp] = warp;
        for (const Env &run : allRuns(copy, thread)) {
          std::optional<int64_t> s = evaluate(copy.getStage(), run),
                                 tileN0 = evaluate(copy.getN0(), run),
                                 tileK0 = evaluate(copy.getK0(), run);
          if (s && tileN0 && tileK0 && *s == *stage && *tileK0 / tileK == at->second)
            tile = std::make_pair(*tileN0, *tileK0);
        }
      }
    }
    cached = cache.emplace(key, tile).first;
  }
  if (!cached->second)
    return std::nullopt;
  return std::make_pair(cached->second->first + *n0, cached->second->second + *k0);
}

struct Kernel {
  core::Problem problem;
  std::string schedule;
};

std::string describe(const Kernel &k) {
  return core::signature(k.problem) + " with " + k.schedule;
}

// Runs the simulation over a kernel; returns how many (lane, value) pairs
// it checked, with a gtest failure for the first one that is off.
int64_t simulate(const Kernel &kernel) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module = tiledModule(context, kernel.problem, kernel.schedule);
  if (!module)
    return 0;
  const core::Problem &p = kernel.problem;
  Expected<core::CodeFragment> fragment = core::codeFragment(p.code);
  if (!fragment) {
    ADD_FAILURE() << describe(kernel) << ": " << fragment.error();
    return 0;
  }
  const bool bothSteps = fragment->pairedUnitsPerLoad() == 2;
  const int64_t threads = blockThreads(*module);
  int64_t checked = 0;
  bool failedOnce = false;
  OriginCache origins;
  module->walk([&](lb::ScaleFragmentOp scale) {
    if (failedOnce)
      return;
    // fragment <- lb.slice_pairs (subtile = offset / 2) <- lb.decode <- lb.load_codes.
    auto slice = scale.getFragment().getDefiningOp<lb::SlicePairsOp>();
    auto decode = slice ? slice.getValues().getDefiningOp<lb::DecodeOp>() : lb::DecodeOp();
    if (!decode) {
      ADD_FAILURE() << describe(kernel) << ": an lb.scale_fragment not on a decoded slice";
      failedOnce = true;
      return;
    }
    const int64_t subtile = slice.getOffset() / 2;
    for (int64_t warp = 0; warp < threads / 32 && !failedOnce; ++warp)
      // A lane's threadID (lane % 4) picks its K values, its groupID (lane /
      // 4) only adds to its column: the first and last quads stand for all.
      for (int64_t lane : {0, 1, 2, 3, 28, 29, 30, 31}) {
        if (failedOnce)
          break;
        for (const Env &env : loopEnvs(scale, threadEnv(warp, lane))) {
          if (!runsIn(scale, env))
            continue;
          auto codes = origin(decode.getWords(), env);
          auto load = codes ? dyn_cast_or_null<lb::LoadCodesOp>(codes->first.getDefiningOp())
                            : lb::LoadCodesOp();
          int64_t n0 = -1, k0 = -1;
          if (load)
            if (auto at = codesOrigin(load, codes->second, origins))
              std::tie(n0, k0) = *at;
          std::vector<MetadataRead> reads;
          std::string why;
          bool traced = collectReads(scale.getScale(), env, reads, why) &&
                        (!scale.getBias() || collectReads(scale.getBias(), env, reads, why));
          // The subtile's zero, where the decode subtracts one.
          if (traced && !decode.getZeros().empty()) {
            traced = subtile < static_cast<int64_t>(decode.getZeros().size()) &&
                     collectReads(decode.getZeros()[subtile], env, reads, why);
            if (why.empty() && !traced)
              why = "the decode has no zero for subtile " + std::to_string(subtile);
          }
          if (n0 < 0 || k0 < 0 || !traced) {
            ADD_FAILURE() << describe(kernel) << ": warp " << warp << " lane " << lane << ": "
                          << (!load              ? "the codes do not come from an lb.load_codes"
                              : n0 < 0 || k0 < 0 ? "cannot evaluate the codes' origin"
                                                 : why);
            failedOnce = true;
            return;
          }
          // Which k16 step the unit is: a load of units of 8 bytes or fewer
          // holds both steps of the 32-wide block at k0, the others one
          // step at k0.
          const int64_t step = bothSteps ? decode.getUnit() : (k0 % core::kBlockK) / core::kUnitK;
          const int64_t blockK = bothSteps ? k0 : k0 - core::kUnitK * step;
          const int g = static_cast<int>(lane / 4), t = static_cast<int>(lane % 4);
          for (int r = 0; r < 2; ++r)
            for (int h = 0; h < 2; ++h) {
              const int64_t n = n0 + 8 * subtile + g;
              const int64_t k = blockK + core::pairedKOf(t, static_cast<int>(step), r, h);
              for (const MetadataRead &read : reads) {
                if (std::string off = mismatch(read, n, k, p); !off.empty()) {
                  ADD_FAILURE() << describe(kernel) << ": warp " << warp << " lane " << lane
                                << ", subtile " << subtile << " register " << r << " half " << h
                                << " holds W[" << n << ", " << k << "], but " << off;
                  failedOnce = true;
                  return;
                }
                ++checked;
              }
            }
        }
      }
  });
  return checked;
}

core::Problem groupProblem(formats::DataFormat code, int64_t group, int64_t n = 512,
                           int64_t k = 1024) {
  core::Problem p;
  p.name = "meta";
  p.n = n;
  p.k = k;
  p.code = code;
  p.scheme.groupSize = group;
  return p;
}

// Q4_K's shape: uint4 codes, uint8 scale and min codes per 32, f16 steps
// per 256 (compact int4).
core::Problem twoLevelMins() {
  core::Problem p = groupProblem(formats::DataFormat::unsignedInt(4), 32);
  p.scheme.scale = formats::DataFormat::unsignedInt(8);
  p.scheme.zero = formats::ZeroMode::SubtractScaled;
  p.scheme.superBlock = 256;
  p.scheme.superStep = formats::DataFormat::f16();
  return p;
}

// Q6_K's shape: 6-bit codes in two planes, int8 scale codes per 16, f16
// steps per 256.
core::Problem twoLevelSixBit() {
  core::Problem p = groupProblem(formats::DataFormat::signedInt(6), 16);
  p.scheme.scale = formats::DataFormat::int8();
  p.scheme.superBlock = 256;
  p.scheme.superStep = formats::DataFormat::f16();
  return p;
}

core::Problem withZeros(core::Problem p) {
  p.scheme.zero = formats::ZeroMode::SubtractCode;
  return p;
}

const char *kWgmma = "#lb.schedule<family = wgmma, tile = [32, 256, 64], warps = [1, 4], "
                     "stages = 2, split_k = 1>";
const char *kWgmmaShared = "#lb.schedule<family = wgmma, tile = [64, 256, 64], warps = [1, 8], "
                           "stages = 2, split_k = 1>";
const char *kStagedMma = "#lb.schedule<family = mma, tile = [32, 128, 64], warps = [2, 2], "
                         "stages = 2, split_k = 1>";
const char *kSplitKMma = "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], "
                         "stages = 1, split_k = 8>";

// Groups of 16, 32, 64 and 128 and per channel, with and without zero
// points, on the wgmma family (one warpgroup, and two that share layout
// tiles), the staged mma and the split-K mma (whose short groups come as
// runs, picked per 32-wide block and, for groups of 16, per half of it).
// The split-K mma scales a period's sums instead of its fragments where
// there are no zero points, so only some of its kernels have fragments to
// check.
TEST(MetadataSimulation, EverySubtileMeetsTheScalesAndZerosOfItsGroup) {
  int64_t splitKChecked = 0;
  for (const char *schedule : {kWgmma, kWgmmaShared, kStagedMma, kSplitKMma})
    for (int64_t group : {16, 32, 64, 128, 0}) {
      core::Problem p = groupProblem(formats::DataFormat::unsignedInt(4), group ? group : 128);
      if (!group)
        p.scheme.granularity = formats::Granularity::PerChannel;
      for (const core::Problem &variant : {p, withZeros(p)}) {
        SCOPED_TRACE(core::signature(variant) + " " + schedule);
        Expected<core::Schedule> parsed = core::parseSchedule(schedule);
        ASSERT_TRUE(parsed.ok()) << parsed.error();
        if (!core::checkSchedule(variant, *parsed).ok())
          continue; // a combination the rules reject (checked by their own tests)
        const int64_t checked = simulate({variant, schedule});
        if (schedule == kSplitKMma) {
          splitKChecked += checked;
        } else {
          EXPECT_GT(checked, 0);
        }
      }
    }
  EXPECT_GT(splitKChecked, 0);
}

// Two-level scales (the k-quants' shape): each value's group code and its
// super-block's step, for the scales and for the mins.
TEST(MetadataSimulation, TwoLevelCodesAndStepsBelongToTheValuesGroupAndSuperBlock) {
  for (const char *schedule : {kWgmma, kStagedMma, kSplitKMma})
    for (const core::Problem &p : {twoLevelMins(), twoLevelSixBit()}) {
      SCOPED_TRACE(core::signature(p) + " " + schedule);
      Expected<core::Schedule> parsed = core::parseSchedule(schedule);
      ASSERT_TRUE(parsed.ok());
      if (!core::checkSchedule(p, *parsed).ok())
        continue;
      const int64_t checked = simulate({p, schedule});
      if (schedule != kSplitKMma) {
        EXPECT_GT(checked, 0);
      }
    }
}

// Every integer width in the wgmma family: 1- and 2-bit loads hold both k16
// steps of a block, the others one.
TEST(MetadataSimulation, EveryWidthPairsItsStepsWithTheirGroups) {
  for (int bits : {1, 2, 3, 4, 5, 6, 8})
    for (const char *schedule : {kWgmma, kSplitKMma}) {
      // The split-K mma scales fragments only with zero points.
      core::Problem p = groupProblem(formats::DataFormat::unsignedInt(bits), 32);
      if (schedule == kSplitKMma)
        p = withZeros(p);
      SCOPED_TRACE(core::signature(p) + " " + schedule);
      Expected<core::Schedule> parsed = core::parseSchedule(schedule);
      ASSERT_TRUE(parsed.ok());
      ASSERT_TRUE(core::checkSchedule(p, *parsed).ok()) << core::checkSchedule(p, *parsed).error();
      EXPECT_GT(simulate({p, schedule}), 0);
    }
}

} // namespace
} // namespace lowbit
