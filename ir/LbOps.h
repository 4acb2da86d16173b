#pragma once

#include "ir/LbAttrs.h"
#include "ir/LbDialect.h"
#include "ir/LbTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "ir/LbOps.h.inc"
