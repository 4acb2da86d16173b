#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace lowbit::passes {

void buildKernelPipeline(mlir::OpPassManager &pm) {
  pm.addPass(createLbTile());
  pm.addPass(createLbPropagateLayouts());
  pm.addPass(createLbLowerDecode());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

} // namespace lowbit::passes
