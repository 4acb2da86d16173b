// The gemv families' metadata, simulated per lane like the tensor-core
// families' (MetadataSimulationTest.cpp). A gemv_row unit is 32 consecutive
// codes of one row, W[n, k .. k + 32), in K order; groups of 16 (or odd
// multiples) split it into two halves, each with its own scale and zero
// (lb.decode's zeros take the unit's registers in order). So every lb.dot
// sums W[n, k + 16 h .. k + 16 h + 16) for half h, or the whole unit, and
// every metadata value it meets must be row n's, of the group (and
// super-block) of each of those K: its scale (a product after the dot, or
// lb.scale_fragment's on the weights), its bias, its decode's zero, and the
// min term s·Σq·x − z·Σx adds after it.
//
// gemv_tiled reads the tensor-core families' mma_b_paired units instead: a
// lane's column is subtile s (row n0 + 8 s + lane / 4) of both k16 steps
// of a 32-wide block, joined, whose 8 values are K = block + 8 (lane % 4)
// .. + 8 in the paired order (core::pairedKOf); its dots are checked the
// same way against those.
#include "core/FragmentFacts.h"
#include "core/ScheduleRules.h"
#include "ir/LbOps.h"
#include "tests/unit/passes/IrEvaluation.h"
#include "tests/unit/passes/MetadataReads.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace lowbit {
namespace {

using namespace mlir;
using namespace lowbit::testing;

// The values a dot sums: its weights' slice of the unit (the first value
// and how many), the decode they came from, and the scale_fragments on the
// way. A gemv_tiled column joins two steps' slices of subtile `subtile`.
struct DotWeights {
  int64_t first = 0, count = 0;
  std::optional<int64_t> subtile;
  lb::DecodeOp decode;
  SmallVector<lb::ScaleFragmentOp, 2> scaled;
};

std::optional<DotWeights> weightsOf(Value value, DotWeights found) {
  while (Operation *op = value.getDefiningOp()) {
    if (auto join = dyn_cast<lb::JoinPairsOp>(op)) {
      // Both steps' fragments: the first names the unit and the subtile,
      // and each may carry its own scale_fragment.
      std::optional<DotWeights> first;
      for (Value part : join.getParts()) {
        DotWeights inner;
        inner.count = cast<VectorType>(part.getType()).getNumElements();
        std::optional<DotWeights> traced = weightsOf(part, inner);
        if (!traced)
          return std::nullopt;
        if (!first)
          first = traced;
        else
          first->scaled.append(traced->scaled.begin(), traced->scaled.end());
      }
      if (!first)
        return std::nullopt;
      first->subtile = first->first / 4; // 4 values (2 pairs) a subtile
      first->scaled.append(found.scaled.begin(), found.scaled.end());
      return first;
    }
    if (auto scale = dyn_cast<lb::ScaleFragmentOp>(op)) {
      found.scaled.push_back(scale);
      value = scale.getFragment();
    } else if (auto slice = dyn_cast<lb::SlicePairsOp>(op)) {
      found.first += 2 * slice.getOffset();
      value = slice.getValues();
    } else if (auto decode = dyn_cast<lb::DecodeOp>(op)) {
      found.decode = decode;
      return found;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<DotWeights> weightsOf(lb::DotOp dot) {
  DotWeights found;
  found.count = cast<VectorType>(dot.getA().getType()).getNumElements();
  return weightsOf(dot.getA(), found);
}

// The scale a dot's sum is multiplied by (s·Σ q·x), and the min term added
// after it (s·Σ q·x − z·Σx: an add of bias × lb.sum), where the kernel has
// them.
void scaleAndMinAfter(lb::DotOp dot, Value &scale, Value &minBias) {
  for (Operation *user : dot->getUsers()) {
    auto product = dyn_cast<arith::MulFOp>(user);
    if (!product || product.getLhs() != dot.getResult())
      continue;
    scale = product.getRhs();
    for (Operation *add : product->getUsers())
      for (Operation *next : add->getUsers())
        if (auto sum = dyn_cast<arith::AddFOp>(next))
          for (Value operand : sum->getOperands())
            if (auto term = operand.getDefiningOp<arith::MulFOp>())
              if (term.getRhs().getDefiningOp<lb::SumOp>())
                minBias = term.getLhs();
  }
}

// Checks every dot of the gemv kernel for `p` with `schedule`; returns how
// many (lane, metadata value) pairs it checked, and adds the kinds of
// metadata it met to `kinds`.
int64_t simulateGemv(const core::Problem &p, const std::string &schedule,
                     std::set<std::string> *kinds = nullptr) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module = tiledModule(context, p, schedule);
  if (!module)
    return 0;
  const std::string subject = core::signature(p) + " with " + schedule;
  const int64_t threads = blockThreads(*module);
  int64_t checked = 0;
  bool failedOnce = false;
  module->walk([&](lb::DotOp dot) {
    if (failedOnce)
      return;
    std::optional<DotWeights> weights = weightsOf(dot);
    if (!weights) {
      ADD_FAILURE() << subject << ": an lb.dot's weights do not come from an lb.decode";
      failedOnce = true;
      return;
    }
    Value scale, minBias;
    scaleAndMinAfter(dot, scale, minBias);
    const auto zeros = weights->decode.getZeros();
    // A gemv_row unit splits its registers evenly between its zeros; an
    // mma_b_paired unit has one a subtile.
    const int64_t zeroIndex = zeros.empty()      ? -1
                              : weights->subtile ? *weights->subtile
                                                 : weights->first * zeros.size() / 32;
    // Every metadata value the dot meets, and what it sums (for messages).
    SmallVector<Value> metadata = {scale, minBias, zeroIndex >= 0 ? zeros[zeroIndex] : Value()};
    for (lb::ScaleFragmentOp scaled : weights->scaled)
      metadata.append({scaled.getScale(), scaled.getBias()});
    std::ostringstream dotOf;
    if (weights->subtile)
      dotOf << "the dot over subtile " << *weights->subtile << " of both steps";
    else
      dotOf << "the dot over values " << weights->first << " .. "
            << weights->first + weights->count - 1 << " of its unit";
    for (int64_t warp = 0; warp < threads / 32 && !failedOnce; ++warp)
      for (int64_t lane : {0, 1, 2, 3, 17, 31}) {
        if (failedOnce)
          break;
        for (const Env &env : loopEnvs(dot, threadEnv(warp, lane))) {
          if (!runsIn(dot, env))
            continue;
          auto codes = origin(weights->decode.getWords(), env);
          auto load = codes ? dyn_cast_or_null<lb::LoadCodesOp>(codes->first.getDefiningOp())
                            : lb::LoadCodesOp();
          int64_t n = -1, k0 = -1;
          if (load) {
            n = evaluate(load.getN0(), codes->second).value_or(-1);
            k0 = evaluate(load.getK0(), codes->second).value_or(-1);
          }
          std::vector<MetadataRead> reads;
          std::string why;
          bool traced = n >= 0 && k0 >= 0;
          for (Value meta : metadata)
            if (traced && meta)
              traced = collectReads(meta, env, reads, why);
          // mma_b_paired: the subtile's row, and the lane's 8 K of the block.
          int64_t firstK = k0 + weights->first, lastK = firstK + weights->count - 1;
          if (weights->subtile) {
            n += 8 * *weights->subtile + lane / 4;
            firstK = k0 + core::pairedKOf(static_cast<int>(lane % 4), 0, 0, 0);
            lastK = k0 + core::pairedKOf(static_cast<int>(lane % 4), 1, 1, 1);
          }
          if (!traced || reads.empty()) {
            ADD_FAILURE() << subject << ": warp " << warp << " lane " << lane << ": "
                          << (n < 0 || k0 < 0 ? "cannot evaluate the unit's codes' origin"
                              : !traced       ? why
                                              : "its sum meets no scale");
            failedOnce = true;
            return;
          }
          // The first and last K the dot sums: within one group by design,
          // so both ends must meet the same metadata.
          for (int64_t k : {firstK, lastK})
            for (const MetadataRead &read : reads) {
              if (std::string off = mismatch(read, n, k, p); !off.empty()) {
                ADD_FAILURE() << subject << ": warp " << warp << " lane " << lane << ", "
                              << dotOf.str() << " holds W[" << n << ", " << k << "], but " << off;
                failedOnce = true;
                return;
              }
              ++checked;
              if (kinds)
                kinds->insert(read.what);
            }
        }
      }
  });
  return checked;
}

core::Problem gemvProblem(formats::DataFormat code, int64_t group) {
  core::Problem p;
  p.name = "meta";
  p.n = 512;
  p.k = 3072; // every group below divides it, 48 included
  p.code = code;
  p.scheme.groupSize = group ? group : 128;
  if (!group)
    p.scheme.granularity = formats::Granularity::PerChannel;
  return p;
}

// gemv with one, two and four rows of W a warp, one and four rows of x a
// block; gemv_tiled with one and four rows of x, alone and over a cluster.
const char *kGemvSchedules[] = {
    "#lb.schedule<family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>",
    "#lb.schedule<family = gemv, tile = [1, 8, 2048], warps = [1, 4], stages = 1, split_k = 1>",
    "#lb.schedule<family = gemv, tile = [4, 16, 1024], warps = [1, 4], stages = 1, split_k = 1>",
    "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, "
    "split_k = 8>",
    "#lb.schedule<family = gemv_tiled, tile = [4, 64, 128], warps = [1, 1], stages = 1, "
    "split_k = 4, cluster_k = 2>",
};

TEST(GemvMetadataSimulation, EveryDotMeetsTheScalesAndZerosOfItsGroup) {
  for (const char *schedule : kGemvSchedules)
    for (int bits : {4, 2, 8})
      for (int64_t group : {16, 32, 48, 128, 0})
        for (bool zeros : {false, true}) {
          core::Problem p = gemvProblem(formats::DataFormat::unsignedInt(bits), group);
          if (zeros)
            p.scheme.zero = formats::ZeroMode::SubtractCode;
          SCOPED_TRACE(core::signature(p) + " " + schedule);
          Expected<core::Schedule> parsed = core::parseSchedule(schedule);
          ASSERT_TRUE(parsed.ok()) << parsed.error();
          if (!core::checkSchedule(p, *parsed).ok())
            continue; // a combination the rules reject (checked by their own tests)
          EXPECT_GT(simulateGemv(p, schedule), 0);
        }
}

// The k-quants' shapes: Q4_K's scale and min codes per 32 with f16 steps
// per 256 (at f16 activations the min is a term after the dot), and Q6_K's
// int8 scale codes per 16 on 6-bit codes.
TEST(GemvMetadataSimulation, TwoLevelCodesAndStepsBelongToTheDotsGroupAndSuperBlock) {
  core::Problem mins = gemvProblem(formats::DataFormat::unsignedInt(4), 32);
  mins.scheme.scale = formats::DataFormat::unsignedInt(8);
  mins.scheme.zero = formats::ZeroMode::SubtractScaled;
  mins.scheme.superBlock = 256;
  mins.scheme.superStep = formats::DataFormat::f16();
  core::Problem sixBit = gemvProblem(formats::DataFormat::signedInt(6), 16);
  sixBit.scheme.scale = formats::DataFormat::int8();
  sixBit.scheme.superBlock = 256;
  sixBit.scheme.superStep = formats::DataFormat::f16();
  std::set<std::string> kinds;
  for (const char *schedule : kGemvSchedules)
    for (core::Problem p : {mins, sixBit})
      for (core::Activation activation : {core::Activation::F16, core::Activation::BF16}) {
        p.activation = activation;
        SCOPED_TRACE(core::signature(p) + " " + schedule);
        Expected<core::Schedule> parsed = core::parseSchedule(schedule);
        ASSERT_TRUE(parsed.ok());
        if (!core::checkSchedule(p, *parsed).ok())
          continue;
        EXPECT_GT(simulateGemv(p, schedule, &kinds), 0);
      }
  EXPECT_TRUE(kinds.count("super step")) << "no super-block step was checked";
}

} // namespace
} // namespace lowbit
