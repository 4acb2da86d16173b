// lb-tile and the tuner's search space agree on every (problem, schedule)
// point of a grid: the schedules the search space accepts (on the compiler's
// rules; the arch limits are lifted) compile, and the ones it rejects fail
// lb-tile with the very message the search space gives as the reason.
//
// The grid: unsigned 1, 2, 4 and 8-bit, int2, int4, int8 and ternary codes, and
// the two-plane uint3 and int6
// (and e2m1, e4m3fn and nf4 on the first shape, without zeros); f16 and
// bf16; scales per tensor, per channel and per group of 16, 32, 64 and 128; zero
// points none, sub_code, sub_value and uint4 zero codes; N and K that do and
// do not divide the
// tiles; and for every family tile, warp, stage and split_k values around
// the legal ones, including schedules the enumeration never makes (skewed
// warps, non-positive sizes, wgmma), which go through the `#lb.schedule`
// parser and verifier first.
#include "compiler/ProblemModule.h"
#include "compiler/tuner/SearchSpace.h"
#include "core/ScheduleRules.h"
#include "ir/LbDialect.h"
#include "passes/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <limits>

namespace lowbit {
namespace {

using core::Family;
using core::Schedule;

// One problem of the grid, in the typed model (what buildProblemModule and
// the search space both take).
struct GridProblem {
  core::Problem problem;
};

std::optional<GridProblem> gridProblem(int64_t n, int64_t k, const std::string &weight,
                                       const std::string &activation, int64_t group,
                                       const std::string &zero) {
  GridProblem g;
  std::string granularity = group > 0 ? "group" : group == 0 ? "channel" : "tensor";
  std::string signature = "lowbit.qmatmul.v1;n=" + std::to_string(n) + ";k=" + std::to_string(k) +
                          ";act=" + activation + ";weight=" + weight +
                          ";scale=f16;granularity=" + granularity +
                          ";group=" + std::to_string(std::max<int64_t>(group, 0)) +
                          ";zero=" + zero;
  Expected<core::Problem> problem = core::parseSignature(signature);
  if (!problem) // a group that does not divide K: not a problem at all
    return std::nullopt;
  g.problem = *problem;
  g.problem.name = "p";
  return g;
}

// Runs lb-tile on one problem with one schedule: OK, or the diagnostic (the
// verifier's when the schedule text is not a valid #lb.schedule, lb-tile's
// without its "'lb.qmatmul' op " prefix otherwise).
class Compiler {
public:
  // lb-tile loads the dialects it builds with (arith, scf) itself.
  Compiler() { context_.loadDialect<lb::LbDialect, mlir::func::FuncDialect>(); }

  Status tile(const GridProblem &g, const Schedule &schedule) {
    std::string message;
    mlir::ScopedDiagnosticHandler handler(&context_, [&](mlir::Diagnostic &d) {
      if (message.empty())
        message = d.str();
      return mlir::success();
    });
    mlir::Attribute attr = mlir::parseAttribute(schedule.text(), &context_);
    if (!attr)
      return makeError(message);
    auto module = compiler::buildProblemModule(context_, {g.problem}, attr);
    if (mlir::failed(module))
      return makeError("the problem module did not build: " + message);
    mlir::PassManager pm(&context_);
    // The schedule check is the question here. Whether every width's body
    // verifies is the builders' (and their lit tests'), so the verifier
    // after the pass is off.
    pm.enableVerifier(false);
    pm.addPass(passes::createLbTile());
    if (mlir::failed(pm.run(**module))) {
      const std::string prefix = "'lb.qmatmul' op ";
      if (message.compare(0, prefix.size(), prefix) == 0)
        message = message.substr(prefix.size());
      return makeError(message);
    }
    ++compiled_;
    return Status::success();
  }

  int64_t compiled() const { return compiled_; }
  mlir::MLIRContext &context() { return context_; }

private:
  mlir::MLIRContext context_;
  int64_t compiled_ = 0;
};

// No arch limit rejects anything: what is left is the compiler's rules.
tuner::ArchLimits noLimits() {
  tuner::ArchLimits l;
  // The arch that has every family (wgmma only runs on sm_90a).
  l.arch = "sm_90a";
  int64_t huge = std::numeric_limits<int64_t>::max() / 4;
  l.staticSharedPerBlock = l.sharedPerSm = l.registersPerSm = huge;
  l.maxRegistersPerThread = l.maxThreadsPerBlock = l.maxThreadsPerSm = l.maxBlocksPerSm = huge;
  return l;
}

// Values around the legal ones in each family's enumeration.
tuner::SearchSpaceOptions aroundTheLegalValues() {
  tuner::SearchSpaceOptions o;
  o.gemvTileM = {1, 8, 9};
  o.gemvWarps = {3, 4};
  o.gemvUnroll = {1, 3};
  o.mmaTileM = {16, 48, 64};
  o.mmaTileN = {64, 192, 256};
  o.mmaTileK = {64, 96, 128};
  o.mmaWarpsM = {1, 2};
  o.mmaWarpsN = {1, 2};
  o.mmaStages = {1, 4, 10};
  o.gemvTiledTileM = {1, 8, 9};
  o.gemvTiledSplitK = {8, 33};
  o.splitKTileK = {32, 96, 128, 512};
  o.splitKStages = {1, 2, 5};
  o.mmaSplitKTileM = {8, 24, 32};
  o.mmaSplitKTileN = {64, 128, 192};
  o.mmaSplitK = {2, 16};
  o.wgmmaTileM = {8, 56, 64, 72};
  o.wgmmaConsumerWarps = {4, 8, 12};
  o.wgmmaStages = {1, 8, 17};
  o.wgmmaSharedTileM = {8, 112, 120, 128, 136};
  o.dequantTileK = {32, 96, 128, 512};
  o.dequantWarps = {4, 33};
  return o;
}

// Schedules the enumerations never make: off-structure warps and tiles,
// sizes the verifier rejects, and wgmma warps that are not warpgroups.
std::vector<Schedule> offTheEnumeration() {
  return {
      {Family::Gemv, 1, 4, 1024, 2, 4, 1, 1},       {Family::Gemv, 1, 4, 512, 1, 4, 1, 1},
      {Family::Gemv, 1, 4, 1024, 1, 4, 1, 2},       {Family::Gemv, 0, 4, 1024, 1, 4, 1, 1},
      {Family::Gemv, 1, 4, 1024, 1, 4, 0, 1},       {Family::Gemv, 1, 64, 1024, 1, 64, 1, 1},
      {Family::GemvTiled, 1, 128, 128, 1, 1, 1, 8}, {Family::GemvTiled, 1, 64, 128, 1, 2, 1, 8},
      {Family::GemvTiled, 2, 64, 48, 1, 1, 1, 4},   {Family::GemvTiled, 2, 64, 256, 1, 1, 1, 1},
      {Family::Mma, 16, 64, 128, 1, 1, 4, 0},       {Family::Mma, 12, 64, 128, 1, 1, 1, 4},
      {Family::Mma, 16, 64, 128, 2, 1, 1, 4},       {Family::Mma, 16, 64, 48, 1, 1, 2, 1},
      {Family::Mma, 32, 64, 64, 1, 2, 2, 1},        {Family::Mma, 64, 128, 64, 8, 8, 2, 1},
      {Family::Wgmma, 64, 128, 64, 1, 1, 2, 1},     {Family::Wgmma, 64, 128, 64, 1, 1, 2, 2},
      {Family::Wgmma, 128, 512, 64, 1, 8, 2, 1},    {Family::Wgmma, 64, 256, 64, 1, 12, 2, 1},
      {Family::Dequant, 2, 64, 128, 1, 1, 1, 4},    {Family::Dequant, 1, 128, 128, 1, 1, 1, 4},
      {Family::Dequant, 1, 64, 48, 1, 1, 1, 4},     {Family::Dequant, 1, 64, 128, 1, 2, 1, 4},
      {Family::Dequant, 1, 64, 128, 1, 1, 5, 4},
  };
}

// Every point agrees: accepted by the search space iff lb-tile compiles it,
// and the search space's reason is lb-tile's error.
TEST(ScheduleAgreement, LbTileAndTheSearchSpaceAgreeOnTheGrid) {
  Compiler compiler;
  tuner::ArchLimits limits = noLimits();
  tuner::SearchSpaceOptions options = aroundTheLegalValues();
  int64_t points = 0, accepted = 0;
  struct Shape {
    int64_t n, k;
  };
  // N and K that divide every tile; N in 64s but not 128s and K in 32s but
  // not 64s; N in 4s only and K in 64s but not 128s.
  for (Shape shape : {Shape{4096, 4096}, Shape{192, 1056}, Shape{4100, 4160}})
    for (const char *weight : {"uint1", "uint2", "uint4", "uint8", "int2", "int4", "int8", "ternary",
                               "uint3", "int6", "e2m1", "e4m3fn", "nf4"})
      for (const char *activation : {"f16", "bf16"})
        for (int64_t group : {-1, 0, 16, 32, 64, 128})
          for (const char *zero : {"none", "sub_code", "sub_value", "quantized;zero_codes=uint4"}) {
            // No rule reads the activation dtype or tells the zero modes
            // apart: bf16, sub_value and zero codes only on the first shape.
            // Minifloats and tables take the integers' rules but for the
            // decode's registers: the first shape, without zeros.
            bool firstShape = shape.n == 4096;
            bool commonZero = std::string(zero) == "none" || std::string(zero) == "sub_code";
            const std::string w = weight;
            bool integer = w != "e2m1" && w != "e4m3fn" && w != "nf4";
            if (!firstShape && (std::string(activation) == "bf16" || !commonZero || !integer))
              continue;
            if (!integer && std::string(zero) != "none")
              continue;
            std::optional<GridProblem> g =
                gridProblem(shape.n, shape.k, weight, activation, group, zero);
            if (!g)
              continue;
            std::string where = core::signature(g->problem) + " ";
            tuner::SearchSpace space = tuner::enumerateSchedules(g->problem, limits, options);
            for (const Schedule &s : space.accepted) {
              Status compiled = compiler.tile(*g, s);
              EXPECT_TRUE(compiled.ok()) << where << s.text() << ": " << compiled.error();
              ++points, ++accepted;
            }
            for (const tuner::RejectedSchedule &r : space.rejected) {
              // The tuner's own pruning, not a compiler rule.
              if (r.reason.find("unrolls past") != std::string::npos)
                continue;
              Status compiled = compiler.tile(*g, r.schedule);
              EXPECT_FALSE(compiled.ok()) << where << r.schedule.text();
              if (!compiled.ok()) {
                EXPECT_EQ(compiled.error(), r.reason) << where << r.schedule.text();
              }
              ++points;
            }
            for (const Schedule &s : offTheEnumeration()) {
              Status rules = core::checkSchedule(g->problem, s);
              Status compiled = compiler.tile(*g, s);
              EXPECT_EQ(compiled.ok(), rules.ok()) << where << s.text();
              EXPECT_EQ(compiled.error(), rules.error()) << where << s.text();
              points++, accepted += rules.ok();
            }
          }
  RecordProperty("points", std::to_string(points));
  RecordProperty("accepted", std::to_string(accepted));
  // The grid is not vacuous: both answers occur often.
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(points - accepted, 10000);
  EXPECT_EQ(compiler.compiled(), accepted);
}

// An activation the core model cannot express is rejected by lb-tile with
// the family's subject, as the rules word it.
TEST(ScheduleAgreement, WhatTheModelCannotExpressIsRejectedWithTheFamilysSubject) {
  Compiler compiler;
  mlir::MLIRContext &context = compiler.context();
  const char *source = R"mlir(
    func.func @w(%x: tensor<?x4096xf32>, %w: tensor<256x4096xui4>, %s: tensor<256xf16>) -> tensor<?x256xf32> {
      %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
          schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
          : (tensor<?x4096xf32>, tensor<256x4096xui4>, tensor<256xf16>) -> tensor<?x256xf32>
      return %y : tensor<?x256xf32>
    })mlir";
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  ASSERT_TRUE(module) << message;
  mlir::PassManager pm(&context);
  pm.addPass(passes::createLbTile());
  EXPECT_TRUE(mlir::failed(pm.run(*module)));
  EXPECT_EQ(message, "'lb.qmatmul' op gemv schedule: activations must be f16, bf16, si8 or "
                     "f8E4M3FN, got 'f32'");
}

} // namespace
} // namespace lowbit
