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
// its gather of x[:, perm] into the workspace first; lowbit_matmul_quantizing
// quantizes its f16 or bf16 x there first (per tensor: an async memset of one
// word and two launches; per token: one launch).
#include "lowbit/lowbit.h"
#include "runtime/api/Dispatch.h"
#include "runtime/api/LoadedPlan.h"

#include <algorithm>

using namespace lowbit::api;

namespace {

ApiError launchFailure(const lowbit::cuda::DriverApi &api, const std::string &what, CUresult r) {
  ApiError error = driverError(api, what, r);
  if (error.status == LOWBIT_STATUS_DRIVER_ERROR)
    error.status = LOWBIT_STATUS_LAUNCH_FAILED;
  return error;
}

// x (f16 or bf16) to s8 or e4m3 codes and f32 scales at the workspace's front, laid
// out as PlanSpec::quantizedActivationBytes says; returns where they are.
ApiStatus quantizeActivations(const lowbit_plan &plan, const MatmulArgs &args, CUstream stream,
                              CUdeviceptr *codes, CUdeviceptr *xScales) {
  const PlanSpec &spec = plan.spec;
  const lowbit::cuda::DriverApi &api = *plan.context->api;
  const char *entryPoint = matmulEntryPoint(args);
  CUdeviceptr x = reinterpret_cast<CUdeviceptr>(args.x);
  *codes = reinterpret_cast<CUdeviceptr>(args.workspace);
  *xScales = *codes + static_cast<CUdeviceptr>(spec.quantizedCodeBytes(args.m));
  // Per tensor, max |x| collects in the word after the scale; nothing on the
  // device has run yet, so it is zeroed on the stream (a memset node under
  // graph capture), never by the host.
  CUdeviceptr tensorAbsmax = 0;
  int bf16 = args.xDtype == LOWBIT_DTYPE_BF16 ? 1 : 0;
  int e4m3 = spec.problem.activation == lowbit::core::Activation::E4M3 ? 1 : 0;
  long long rows = args.m, columns = spec.problem.k;
  // A block per row, grid-striding past 65535 rows: more blocks than that
  // would only queue.
  const unsigned blocks = static_cast<unsigned>(std::min<long long>(rows, 65535));
  if (spec.problem.activationScale == lowbit::core::ActivationScale::PerTensor) {
    tensorAbsmax = *xScales + sizeof(float);
    if (CUresult r = api.cuMemsetD32Async(tensorAbsmax, 0, 1, stream); r != CUDA_SUCCESS)
      return launchFailure(api, std::string(entryPoint) + ": zeroing the tensor's absmax", r);
    void *params[] = {&x, &bf16, &rows, &columns, &tensorAbsmax};
    if (CUresult r =
            api.cuLaunchKernel(plan.functions[spec.absmaxKernel], blocks, 1, 1, kQuantizeThreads,
                               1, 1, 0, stream, params, nullptr);
        r != CUDA_SUCCESS)
      return launchFailure(api, std::string(entryPoint) + ": launching the absmax of x", r);
  }
  void *params[] = {&x, &bf16, &e4m3, &rows, &columns, codes, xScales, &tensorAbsmax};
  if (CUresult r = api.cuLaunchKernel(plan.functions[spec.quantizeKernel], blocks, 1, 1,
                                      kQuantizeThreads, 1, 1, 0, stream, params, nullptr);
      r != CUDA_SUCCESS)
    return launchFailure(api, std::string(entryPoint) + ": launching the quantizer of x", r);
  return ApiStatus();
}

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
          r != CUDA_SUCCESS)
        return recordFailure(
            launchFailure(api, std::string(entryPoint) + ": launching the act-order gather", r));
      xPtr = gathered;
      workspacePtr += static_cast<CUdeviceptr>(spec.permutedActivationBytes(m));
      workspaceBytes -= static_cast<size_t>(spec.permutedActivationBytes(m));
    }
    CUdeviceptr xScales = reinterpret_cast<CUdeviceptr>(args.xScales);
    if (args.quantizing) {
      if (ApiStatus s =
              quantizeActivations(*plan, args, static_cast<CUstream>(stream), &xPtr, &xScales);
          !s)
        return recordFailure(s.error());
      workspacePtr += static_cast<CUdeviceptr>(spec.quantizedActivationBytes(m));
      workspaceBytes -= static_cast<size_t>(spec.quantizedActivationBytes(m));
    }
    lowbit::core::KernelParameterValues values;
    values.x = xPtr;
    values.xScales = xScales;
    values.w = reinterpret_cast<CUdeviceptr>(w->data);
    values.scales = reinterpret_cast<CUdeviceptr>(args.scales);
    values.zeros = reinterpret_cast<CUdeviceptr>(args.zeros);
    const CUdeviceptr yPtr = reinterpret_cast<CUdeviceptr>(args.y);
    // The dense path's kernel writes dequant(W) into the workspace where the
    // others write y, and does the same work whatever M it is told.
    values.y = kernel.dense ? workspacePtr : yPtr;
    values.rows = m;
    values.workspace = workspacePtr;
    void *params[lowbit::core::kMaxKernelArguments];
    for (int i = 0; i < kernel.argumentCount; ++i)
      params[i] = values.address(kernel.arguments[static_cast<size_t>(i)]);
    // Stream-K's flags start clear, on the call's stream (graph-safe; its
    // partials need no clearing: each is written before it is read).
    if (g.streamK())
      if (CUresult r = api.cuMemsetD32Async(
              workspacePtr + static_cast<CUdeviceptr>(g.flagOffset(m)), 0,
              static_cast<size_t>(g.flagBytes(m) / 4), static_cast<CUstream>(stream));
          r != CUDA_SUCCESS)
        return recordFailure(launchFailure(
            api, std::string(entryPoint) + ": clearing the stream-K flags of " + kernel.name, r));

    CUresult r = api.cuLaunchKernel(plan->functions[kernelIndex], g.gridXFor(m), g.gridY(m),
                                    g.gridZ, g.blockThreads, 1, 1, g.dynamicSharedBytes,
                                    static_cast<CUstream>(stream), params, nullptr);
    if (r != CUDA_SUCCESS)
      return recordFailure(launchFailure(
          api, std::string(entryPoint) + ": launching " + kernel.name + " for M = " + std::to_string(m),
          r));
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

lowbit_status lowbit_matmul_quantizing(const lowbit_plan *plan, int64_t m, const void *x,
                                       lowbit_dtype x_dtype, const lowbit_weights *w,
                                       const void *scales, const void *zeros, void *y,
                                       void *workspace, size_t workspace_bytes, void *stream) {
  MatmulArgs args{m, x, w, scales, zeros, y, workspace, workspace_bytes};
  args.quantizing = true;
  args.xDtype = x_dtype;
  return matmul(plan, args, stream);
}

} // extern "C"
