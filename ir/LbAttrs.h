#pragma once

#include "ir/LbEnums.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#define GET_ATTRDEF_CLASSES
#include "ir/LbAttrs.h.inc"
