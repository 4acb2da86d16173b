// A plan on the device: the PlanSpec plus one loaded module and function per
// kernel. Immutable once built, so concurrent lowbit_matmul calls only read.
#pragma once

#include "runtime/api/DeviceContext.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/cuda/CublasLt.h"

#include <memory>
#include <vector>

namespace lowbit::api {

// Loads every kernel of `spec` into the context's primary context: cubins as
// they are, PTX through the driver's JIT (once, here). CORRUPT_KERNEL when
// the driver refuses an image or the entry point is missing, with the driver's
// message (and JIT log).
Result<std::vector<CUmodule>> loadModules(const ContextState &context, const PlanSpec &spec,
                                          std::vector<CUfunction> *functions);

} // namespace lowbit::api

struct lowbit_plan {
  std::shared_ptr<lowbit::api::ContextState> context;
  lowbit::api::PlanSpec spec;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions; // by spec.kernels index
  // The context's cuBLASLt, when a range is the dense path's.
  std::shared_ptr<const lowbit::cuda::CublasLt> cublasLt;

  lowbit_plan() = default;
  lowbit_plan(const lowbit_plan &) = delete;
  lowbit_plan &operator=(const lowbit_plan &) = delete;
  ~lowbit_plan();
};
