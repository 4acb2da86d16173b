#include "codegen/emit/CudaEmitter.h"

#include "ir/LbDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Tools/mlir-translate/Translation.h"

namespace lowbit::codegen {

void registerLbToCudaTranslation() {
  static mlir::TranslateFromMLIRRegistration registration(
      "lb-to-cuda", "emit CUDA C++ for lowbit kernels",
      [](mlir::Operation *op, llvm::raw_ostream &os) -> mlir::LogicalResult {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return op->emitError("lb-to-cuda expects a module");
        return emitCuda(module, os);
      },
      [](mlir::DialectRegistry &registry) {
        registry.insert<lowbit::lb::LbDialect, mlir::arith::ArithDialect,
                        mlir::func::FuncDialect, mlir::memref::MemRefDialect,
                        mlir::scf::SCFDialect>();
      });
}

} // namespace lowbit::codegen
