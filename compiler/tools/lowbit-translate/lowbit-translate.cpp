// lowbit-translate: lowbit's translations out of MLIR (--lb-to-cuda).
#include "codegen/emit/CudaEmitter.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  lowbit::codegen::registerLbToCudaTranslation();
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "lowbit translation driver"))
             ? 1
             : 0;
}
