// Problem -> IR: one `lb.qmatmul` per problem (the typed model), wrapped in a
// func. Codes become builtin integer types (ui1..ui8, si2..si8), scales and
// activations f16 / bf16 / f32, quantized zeros their unsigned integer type.
#pragma once

#include "core/Problem.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace lowbit::compiler {

// Builds `func.func @<name>(%x, %codes, %scales[, %zeros]) -> tensor<?xNx...>`
// holding one verified `lb.qmatmul`. Fails with a diagnostic when the spec's
// formats cannot be expressed (a code type without an IR type yet, or the
// verifier's message, unchanged).
// With `schedule`, every lb.qmatmul carries it (what lb-tile instantiates).
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildProblemModule(mlir::MLIRContext &context,
                   const std::vector<core::Problem> &problems,
                   mlir::Attribute schedule = {});

} // namespace lowbit::compiler
