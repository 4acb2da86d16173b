// lb-to-cuda: kernel functions (after lb-tile, lb-propagate-layouts and
// lb-lower-decode) to CUDA C++ that NVRTC compiles. Each `lb.kernel` func
// becomes one `extern "C" __global__` function whose statements follow the
// IR one op at a time; only instruction-level building blocks come from the
// device headers.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace lowbit::codegen {

// What the runtime needs to launch a kernel, read off its attributes.
struct KernelLaunchInfo {
  std::string name;
  int64_t blockThreads = 0;
  // grid = (N / gridTile[0], ceil(M / gridTile[1]), gridTile[2]).
  std::vector<int64_t> gridTile;
  std::string weightLayout; // serialized layout::WeightLayout
  std::string scheduleText; // the #lb.schedule, printed
  // Bytes of dynamic shared memory the launch must pass (and, above 48 KiB,
  // opt the function in to with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  // the kernel's `lb.dynamic_shared_bytes`, 0 when it has none.
  int64_t dynamicSharedBytes = 0;
};

mlir::LogicalResult emitCuda(mlir::ModuleOp module, llvm::raw_ostream &os);
mlir::FailureOr<std::vector<KernelLaunchInfo>> kernelLaunchInfo(mlir::ModuleOp module);

// Registers the lowbit-translate --lb-to-cuda translation.
void registerLbToCudaTranslation();

} // namespace lowbit::codegen
