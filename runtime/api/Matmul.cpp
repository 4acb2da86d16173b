// lowbit.h: lowbit_matmul and lowbit_matmul_quantized, the hot path: one
// implementation, whose kernel parameters follow the plan's
// core::kernelArguments (x's scales only where the problem has them).
//
// On success this does: argument checks on the immutable plan, a scan of a
// handful of M ranges, cuCtxGetCurrent (and a set/restore only if the caller
// has another context current), and one cuLaunchKernel. No allocation, lock,
// synchronization or database access, so it is thread-safe and legal inside
// CUDA graph capture. The dense path (a tuned table's choice at large M)
// launches its dequant kernel into the workspace and then cublasLtMatmul,
// whose descriptors and algorithm for an M are made on that M's first call
// (cuBLASLt's host work, under its lock) and kept. An act-order plan launches
// its gather of x[:, perm] into the workspace first.
#include "lowbit/lowbit.h"
#include "runtime/api/Dispatch.h"
#include "runtime/api/LoadedPlan.h"

#include <algorithm>

using namespace lowbit::api;

namespace {

lowbit_status matmul(const lowbit_plan *plan, const MatmulArgs &args, void *stream) {
  const char *entryPoint = matmulEntryPoint(args);
  return guardEntryPoint(entryPoint, [&]() -> lowbit_status {
    if (!plan)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT,
                           std::string(entryPoint) + ": plan is NULL");
    const PlanSpec &spec = plan->spec;
    const int64_t m = args.m;
    const lowbit_weights *w = args.w;
    size_t workspaceBytes = args.workspaceBytes;
    int rangeIndex = -1;
    size_t kernelIndex = 0;
    std::string whyNot; // empty std::string: no allocation unless a check fails
    if (lowbit_status status = checkMatmul(spec, args, &rangeIndex, &kernelIndex, &whyNot);
        status != LOWBIT_STATUS_SUCCESS)
      return recordFailure(status, whyNot);
    const PlannedKernel &kernel = spec.kernels[kernelIndex];
    const LaunchGeometry &g = kernel.geometry;

    CUdeviceptr xPtr = reinterpret_cast<CUdeviceptr>(args.x);
    CUdeviceptr workspacePtr = reinterpret_cast<CUdeviceptr>(args.workspace);
    const lowbit::cuda::DriverApi &api = *plan->context->api;
    ScopedCurrentContext current(api, plan->context->primaryContext);
    if (current.result() != CUDA_SUCCESS)
      return recordFailure(driverError(
          api, std::string(entryPoint) + ": making the context current", current.result()));
    if (spec.permutedColumns) {
      // x[:, perm] into the workspace's front; the kernels then read it as x.
      CUdeviceptr perm =
          reinterpret_cast<CUdeviceptr>(w->data) + static_cast<CUdeviceptr>(spec.permutationOffset);
      CUdeviceptr gathered = workspacePtr;
      long long rows = m, columns = spec.problem.k;
      void *gatherParams[] = {&xPtr, &perm, &gathered, &rows, &columns};
      const unsigned blocksX =
          static_cast<unsigned>((columns + kPermuteThreads - 1) / kPermuteThreads);
      const unsigned blocksY = static_cast<unsigned>(std::min<long long>(rows, 65535));
      if (CUresult r = api.cuLaunchKernel(plan->functions[spec.permuteKernel], blocksX, blocksY, 1,
                                          kPermuteThreads, 1, 1, 0, static_cast<CUstream>(stream),
                                          gatherParams, nullptr);
          r != CUDA_SUCCESS) {
        ApiError error =
            driverError(api, std::string(entryPoint) + ": launching the act-order gather", r);
        if (error.status == LOWBIT_STATUS_DRIVER_ERROR)
          error.status = LOWBIT_STATUS_LAUNCH_FAILED;
        return recordFailure(error);
      }
      xPtr = gathered;
      workspacePtr += static_cast<CUdeviceptr>(spec.permutedActivationBytes(m));
      workspaceBytes -= static_cast<size_t>(spec.permutedActivationBytes(m));
    }
    lowbit::core::KernelParameterValues values;
    values.x = xPtr;
    values.xScales = reinterpret_cast<CUdeviceptr>(args.xScales);
    values.w = reinterpret_cast<CUdeviceptr>(w->data);
    values.scales = reinterpret_cast<CUdeviceptr>(args.scales);
    values.zeros = reinterpret_cast<CUdeviceptr>(args.zeros);
    const CUdeviceptr yPtr = reinterpret_cast<CUdeviceptr>(args.y);
    // The dense path's kernel writes dequant(W) into the workspace where the
    // others write y, and does the same work whatever M it is told.
    values.y = kernel.dense ? workspacePtr : yPtr;
    values.rows = m;
    void *params[lowbit::core::kMaxKernelArguments];
    for (int i = 0; i < spec.argumentCount; ++i)
      params[i] = values.address(spec.arguments[static_cast<size_t>(i)]);

    CUresult r = api.cuLaunchKernel(plan->functions[kernelIndex], g.gridX, g.gridY(m), g.gridZ,
                                    g.blockThreads, 1, 1, g.dynamicSharedBytes,
                                    static_cast<CUstream>(stream), params, nullptr);
    if (r != CUDA_SUCCESS) {
      ApiError error = driverError(api,
                                   std::string(entryPoint) + ": launching " + kernel.name +
                                       " for M = " + std::to_string(m),
                                   r);
      if (error.status == LOWBIT_STATUS_DRIVER_ERROR)
        error.status = LOWBIT_STATUS_LAUNCH_FAILED;
      return recordFailure(error);
    }
    if (kernel.dense) {
      // y = x · Wᵀ with the dense weights at the workspace's start and
      // cuBLASLt's own workspace after them (PlanSpec::denseWeightBytes).
      const lowbit::core::Problem &p = spec.problem;
      CUresult g = plan->cublasLt->gemm(
          p.activation == lowbit::core::Activation::BF16 ? lowbit::cuda::GemmType::BF16
                                                         : lowbit::cuda::GemmType::F16,
          m, p.n, p.k, xPtr, workspacePtr, yPtr,
          workspacePtr + static_cast<CUdeviceptr>(spec.denseWeightBytes),
          workspaceBytes - static_cast<size_t>(spec.denseWeightBytes),
          static_cast<CUstream>(stream));
      if (g != CUDA_SUCCESS)
        return recordFailure(LOWBIT_STATUS_LAUNCH_FAILED,
                             std::string(entryPoint) +
                                 ": the dense path's cuBLASLt matmul for M = " + std::to_string(m) +
                                 ": " + plan->cublasLt->lastError());
    }
    return LOWBIT_STATUS_SUCCESS;
  });
}

} // namespace

extern "C" {

lowbit_status lowbit_matmul(const lowbit_plan *plan, int64_t m, const void *x,
                            const lowbit_weights *w, const void *scales, const void *zeros, void *y,
                            void *workspace, size_t workspace_bytes, void *stream) {
  return matmul(plan, MatmulArgs{m, x, w, scales, zeros, y, workspace, workspace_bytes}, stream);
}

lowbit_status lowbit_matmul_quantized(const lowbit_plan *plan, int64_t m, const void *x,
                                      const void *x_scales, const lowbit_weights *w,
                                      const void *scales, const void *zeros, void *y,
                                      void *workspace, size_t workspace_bytes, void *stream) {
  MatmulArgs args{m, x, w, scales, zeros, y, workspace, workspace_bytes};
  args.xScales = x_scales;
  args.quantized = true;
  return matmul(plan, args, stream);
}

} // extern "C"
