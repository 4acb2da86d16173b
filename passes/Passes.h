#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace lowbit::passes {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

// lb-tile, lb-propagate-layouts, lb-lower-decode: spec IR to kernels ready
// for lb-to-cuda.
void buildKernelPipeline(mlir::OpPassManager &pm);

} // namespace lowbit::passes
