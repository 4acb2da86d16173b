#include "tests/unit/passes/MetadataReads.h"

#include "compiler/ProblemModule.h"
#include "ir/LbDialect.h"
#include "ir/LbOps.h"
#include "passes/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lowbit::testing {

using namespace mlir;

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

std::string mismatch(const MetadataRead &read, int64_t n, int64_t k, const core::Problem &p) {
  const bool grouped = p.scheme.granularity == formats::Granularity::PerGroup;
  bool ok = read.row < 0 || read.row == n;
  if (read.group && grouped)
    ok = ok && *read.group == k / p.scheme.groupSize;
  if (read.superBlock)
    ok = ok && *read.superBlock == k / p.scheme.superBlock;
  if (ok)
    return "";
  std::ostringstream what;
  what << "its " << read.what << " is row " << read.row;
  if (read.group)
    what << " group " << *read.group << " (want " << k / p.scheme.groupSize << ")";
  if (read.superBlock)
    what << " super-block " << *read.superBlock << " (want " << k / p.scheme.superBlock << ")";
  return what.str();
}

OwningOpRef<ModuleOp> tiledModule(MLIRContext &context, const core::Problem &p,
                                  const std::string &schedule) {
  DialectRegistry registry;
  registry.insert<lb::LbDialect, arith::ArithDialect, func::FuncDialect, memref::MemRefDialect,
                  scf::SCFDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  Attribute attr = parseAttribute(schedule, &context);
  auto module = compiler::buildProblemModule(context, {p}, attr);
  if (failed(module)) {
    ADD_FAILURE() << "no module for " << core::signature(p) << " with " << schedule;
    return {};
  }
  PassManager pm(&context);
  pm.addPass(passes::createLbTile());
  if (failed(pm.run(**module))) {
    ADD_FAILURE() << "lb-tile failed for " << core::signature(p) << " with " << schedule;
    return {};
  }
  return std::move(*module);
}

Env threadEnv(int64_t warp, int64_t lane) {
  Env env;
  env.coords = {{lb::ThreadCoord::lane, lane}, {lb::ThreadCoord::warp, warp},
                {lb::ThreadCoord::block_x, 1}, {lb::ThreadCoord::block_y, 1},
                {lb::ThreadCoord::grid_x, 2},  {lb::ThreadCoord::grid_y, 2},
                {lb::ThreadCoord::block_z, 0}};
  return env;
}

int64_t blockThreads(ModuleOp module) {
  int64_t threads = 0;
  module->walk([&](func::FuncOp f) {
    if (auto t = f->getAttrOfType<IntegerAttr>("lb.block_threads"))
      threads = t.getInt();
  });
  return threads;
}

} // namespace lowbit::testing
