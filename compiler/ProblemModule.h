// Spec -> IR: one `lb.qmatmul` per problem, wrapped in a func.
#pragma once

#include "compiler/spec/KernelSetSpec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace lowbit::compiler {

// Builds `func.func @<name>(%x, %codes, %scales[, %zeros]) -> tensor<?xNx...>`
// holding one verified `lb.qmatmul`. Fails with a diagnostic when the spec's
// formats cannot be expressed (the verifier's message, unchanged).
// With `schedule`, every lb.qmatmul carries it (what lb-tile instantiates).
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildProblemModule(mlir::MLIRContext &context,
                   const std::vector<spec::ProblemSpec> &problems,
                   mlir::Attribute schedule = {});

// The symbol name a problem gets in IR and in the kernel database.
std::string problemSymbol(const spec::ProblemSpec &problem);

} // namespace lowbit::compiler
