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
#include "compiler/ProblemModule.h"
#include "core/FragmentFacts.h"
#include "core/ScheduleRules.h"
#include "ir/LbDialect.h"
#include "ir/LbOps.h"
#include "passes/Passes.h"
#include "tests/unit/passes/IrEvaluation.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace lowbit {
namespace {

using namespace mlir;
using namespace lowbit::testing;

// Where a metadata value was read: row n, and the group (scales, zeros and
// runs) or super-block (steps) of K, or none of K (per channel).
struct MetadataRead {
  std::string what;
  int64_t row = -1;
  std::optional<int64_t> group, superBlock;
};

// Every metadata load behind an f32 value (through the f32 arithmetic that
// combines a code with its step, or the tensor scale).
bool collectReads(Value value, const Env &env, std::vector<MetadataRead> &reads, std::string &why) {
  auto found = origin(value, env);
  if (!found) {
    why = "cannot follow a metadata value back to its load";
    return false;
  }
  auto [source, at] = *found;
  Operation *op = source.getDefiningOp();
  if (!op) {
    why = "a metadata value is a block argument";
    return false;
  }
  if (auto load = dyn_cast<lb::LoadScalarOp>(op)) {
    MetadataRead read{"scalar", -1, std::nullopt, std::nullopt};
    std::vector<int64_t> indices;
    for (Value index : load.getIndices()) {
      std::optional<int64_t> v = evaluate(index, at);
      if (!v) {
        why = "cannot evaluate an lb.load_scalar index";
        return false;
      }
      indices.push_back(*v);
    }
    // [n, group], [n] per channel, [0] per tensor.
    auto type = cast<MemRefType>(load.getSource().getType());
    if (indices.size() == 2) {
      read.row = indices[0], read.group = indices[1];
    } else if (type.getDimSize(0) != 1) {
      read.row = indices[0];
    }
    reads.push_back(read);
    return true;
  }
  if (auto pick = dyn_cast<lb::ScaleInRunOp>(op)) {
    auto runOrigin = origin(pick.getRun(), at);
    auto run = runOrigin ? dyn_cast_or_null<lb::LoadScaleRunOp>(runOrigin->first.getDefiningOp())
                         : lb::LoadScaleRunOp();
    std::optional<int64_t> position = evaluate(pick.getPosition(), at);
    std::optional<int64_t> upper =
        pick.getUpperHalf() ? evaluate(pick.getUpperHalf(), at) : std::optional<int64_t>(0);
    if (!run || !position || !upper) {
      why = "cannot follow an lb.scale_in_run to its run";
      return false;
    }
    std::optional<int64_t> row = evaluate(run.getRow(), runOrigin->second),
                           first = evaluate(run.getFirst(), runOrigin->second);
    if (!row || !first) {
      why = "cannot evaluate an lb.load_scale_run's row or first group";
      return false;
    }
    reads.push_back({"run", *row, *first + *position + (*upper ? 1 : 0), std::nullopt});
    return true;
  }
  if (auto step = dyn_cast<lb::LoadSuperStepOp>(op)) {
    std::optional<int64_t> row = evaluate(step.getRow(), at), block = evaluate(step.getBlock(), at);
    if (!row || !block) {
      why = "cannot evaluate an lb.load_super_step's row or block";
      return false;
    }
    reads.push_back({"super step", *row, std::nullopt, *block});
    return true;
  }
  if (isa<lb::LoadTensorScaleOp, arith::ConstantOp>(op))
    return true; // one value for the whole tensor
  if (isa<arith::MulFOp, arith::NegFOp, arith::AddFOp, arith::SubFOp>(op)) {
    for (Value operand : op->getOperands())
      if (!collectReads(operand, at, reads, why))
        return false;
    return true;
  }
  why = "a metadata value comes from " + op->getName().getStringRef().str();
  return false;
}

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
  DialectRegistry registry;
  registry.insert<lb::LbDialect, arith::ArithDialect, func::FuncDialect, memref::MemRefDialect,
                  scf::SCFDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  Attribute attr = parseAttribute(kernel.schedule, &context);
  auto module = compiler::buildProblemModule(context, {kernel.problem}, attr);
  if (failed(module)) {
    ADD_FAILURE() << "no module for " << describe(kernel);
    return 0;
  }
  PassManager pm(&context);
  pm.addPass(passes::createLbTile());
  if (failed(pm.run(**module))) {
    ADD_FAILURE() << "lb-tile failed for " << describe(kernel);
    return 0;
  }
  const core::Problem &p = kernel.problem;
  const bool grouped = p.scheme.granularity == formats::Granularity::PerGroup;
  Expected<core::CodeFragment> fragment = core::codeFragment(p.code);
  if (!fragment) {
    ADD_FAILURE() << describe(kernel) << ": " << fragment.error();
    return 0;
  }
  const bool bothSteps = fragment->pairedUnitsPerLoad() == 2;
  int64_t threads = 0;
  (*module)->walk([&](func::FuncOp f) {
    if (auto t = f->getAttrOfType<IntegerAttr>("lb.block_threads"))
      threads = t.getInt();
  });
  int64_t checked = 0;
  bool failedOnce = false;
  OriginCache origins;
  (*module)->walk([&](lb::ScaleFragmentOp scale) {
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
        Env base;
        base.coords = {{lb::ThreadCoord::lane, lane}, {lb::ThreadCoord::warp, warp},
                       {lb::ThreadCoord::block_x, 1}, {lb::ThreadCoord::block_y, 1},
                       {lb::ThreadCoord::grid_x, 2},  {lb::ThreadCoord::grid_y, 2},
                       {lb::ThreadCoord::block_z, 0}};
        for (const Env &env : loopEnvs(scale, base)) {
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
                bool ok = read.row < 0 || read.row == n;
                if (read.group && grouped)
                  ok = ok && *read.group == k / p.scheme.groupSize;
                if (read.superBlock)
                  ok = ok && *read.superBlock == k / p.scheme.superBlock;
                if (!ok) {
                  std::ostringstream where;
                  where << describe(kernel) << ": warp " << warp << " lane " << lane << ", subtile "
                        << subtile << " register " << r << " half " << h << " holds W[" << n << ", "
                        << k << "], but its " << read.what << " is row " << read.row;
                  if (read.group)
                    where << " group " << *read.group << " (want " << k / p.scheme.groupSize << ")";
                  if (read.superBlock)
                    where << " super-block " << *read.superBlock << " (want "
                          << k / p.scheme.superBlock << ")";
                  ADD_FAILURE() << where.str();
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
