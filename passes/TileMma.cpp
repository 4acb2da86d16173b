#include "passes/TileFamilies.h"

using namespace mlir;

namespace lowbit::passes {

LogicalResult checkMma(const KernelProblem &problem) {
  lb::QMatmulOp source = problem.source;
  return source.emitOpError("the 'mma' family is not implemented yet");
}

void buildMmaBody(OpBuilder &, const KernelProblem &) {}

} // namespace lowbit::passes
