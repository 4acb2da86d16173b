#pragma once

#include "mlir/IR/Dialect.h"

#include "ir/LbDialect.h.inc"
