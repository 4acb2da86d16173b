#include "ir/LbDialect.h"

#include "ir/LbAttrs.h"
#include "ir/LbOps.h"
#include "ir/LbTypes.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace lowbit::lb;

#include "ir/LbDialect.cpp.inc"

void LbDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/LbOps.cpp.inc"
      >();
  registerTypes();
  registerAttributes();
}
