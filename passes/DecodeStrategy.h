// How one 32-bit word of packed codes becomes registers of value pairs, per
// (code type, value type). Two passes need the same answer: lb-lower-decode
// emits the sequence, and lb-propagate-layouts folds the sequence's
// in-register interleave into the weight layout.
#pragma once

#include "core/layout/LinearLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include <functional>

namespace lowbit::passes {

struct DecodeStrategy {
  int codesPerWord = 8;
  // {field: log2(codesPerWord)} -> {element: same}: the decoded position of
  // the code in each bit field of the word. Register j of the result holds
  // elements 2j (low half) and 2j + 1 (high half), or, decoded to s8 bytes,
  // elements 4j to 4j + 3 (byte b: element 4j + b).
  layout::LinearLayout interleave;
  // Emits the decode of `word` (i32) into codesPerWord / 2 pair registers
  // (codesPerWord / 4 byte registers);
  // null for two-plane codes, whose words decode only together.
  std::function<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &, mlir::Location,
                                               mlir::Value word)>
      emit;
  // Two-plane codes only (null otherwise): emits the decode of one unit's
  // words (its low-plane words, then its high-plane words) into the unit's
  // pair registers, low word by low word, as `emit` would for each.
  std::function<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &, mlir::Location,
                                               llvm::ArrayRef<mlir::Value> unitWords)>
      emitUnit;
};

// The decoded registers of lb.decode's `minus` zero points: register r of
// `registers` loses zeros[r / (R / Z)] (R registers, Z zeros, Z divides R),
// splatted to a pair of `value` (f16 or bf16) by one rounding and subtracted
// with one packed sub (exact for integer zeros). With `residual`, z minus its
// rounded value (computed in f32, exactly) is subtracted too, so zeros the
// value type cannot hold lose only the rounding of the much smaller
// remainder.
llvm::SmallVector<mlir::Value> subtractZeros(mlir::OpBuilder &b, mlir::Location loc,
                                             mlir::Type value,
                                             llvm::ArrayRef<mlir::Value> registers,
                                             mlir::ValueRange zeros, bool residual);

// `raw`: the sequence leaves each register's codes as f16 subnormals at their
// field's bit (core::rawSubtileBitOffset); unsigned codes to f16 only. The
// interleave is the same either way, so raw and normalizing kernels of a
// problem share one weight layout.
mlir::FailureOr<DecodeStrategy>
selectDecodeStrategy(mlir::Type code, mlir::Type value, bool raw,
                     llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

} // namespace lowbit::passes
