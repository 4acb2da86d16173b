#pragma once

#include "ir/LbEnums.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "ir/LbTypes.h.inc"

namespace lowbit::lb {

/// Bits per code of a weight storage type: builtin integers of 1..8 bits,
/// `!lb.float`, `!lb.lut`. Returns 0 for anything that is not a code type.
unsigned getCodeBits(mlir::Type type);

/// Bytes of one stored block scale: 2 for f16 and bf16, 4 for f32, 1 for
/// e4m3fn, `!lb.float` (e8m0) and two-level scale codes (ui8, si8). Returns 0
/// for anything else.
int64_t getScaleBytes(mlir::Type type);

} // namespace lowbit::lb
