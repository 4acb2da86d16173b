// lowbit.h: lowbit_matmul, the hot path.
//
// On success this does: argument checks on the immutable plan, a scan of a
// handful of M ranges, cuCtxGetCurrent (and a set/restore only if the caller
// has another context current), and one cuLaunchKernel. No allocation, lock,
// synchronization or database access, so it is thread-safe and legal inside
// CUDA graph capture.
#include "lowbit/lowbit.h"
#include "runtime/api/Dispatch.h"
#include "runtime/api/LoadedPlan.h"

using namespace lowbit::api;

extern "C" {

lowbit_status lowbit_matmul(const lowbit_plan *plan, int64_t m, const void *x,
                            const lowbit_weights *w, const void *scales, const void *zeros,
                            void *y, void *workspace, size_t workspace_bytes, void *stream) {
  return guardEntryPoint("lowbit_matmul", [&]() -> lowbit_status {
    if (!plan)
      return recordFailure(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_matmul: plan is NULL");
    const PlanSpec &spec = plan->spec;
    MatmulArgs args{m, x, w, scales, zeros, y, workspace, workspace_bytes};
    int rangeIndex = -1;
    std::string whyNot; // empty std::string: no allocation unless a check fails
    if (lowbit_status status = checkMatmul(spec, args, &rangeIndex, &whyNot);
        status != LOWBIT_STATUS_SUCCESS)
      return recordFailure(status, whyNot);
    const size_t kernelIndex = spec.ranges[static_cast<size_t>(rangeIndex)].kernel;
    const PlannedKernel &kernel = spec.kernels[kernelIndex];
    const LaunchGeometry &g = kernel.geometry;

    CUdeviceptr xPtr = reinterpret_cast<CUdeviceptr>(x);
    CUdeviceptr wPtr = reinterpret_cast<CUdeviceptr>(w->data);
    CUdeviceptr sPtr = reinterpret_cast<CUdeviceptr>(scales);
    CUdeviceptr zPtr = reinterpret_cast<CUdeviceptr>(zeros);
    CUdeviceptr yPtr = reinterpret_cast<CUdeviceptr>(y);
    long long rows = m;
    // The kernel ABI: (x, packed_w, scales, [zeros,] y, M).
    void *withZeros[] = {&xPtr, &wPtr, &sPtr, &zPtr, &yPtr, &rows};
    void *withoutZeros[] = {&xPtr, &wPtr, &sPtr, &yPtr, &rows};
    void **params = spec.hasZeros ? withZeros : withoutZeros;

    const lowbit::cuda::DriverApi &api = *plan->context->api;
    ScopedCurrentContext current(api, plan->context->primaryContext);
    if (current.result() != CUDA_SUCCESS)
      return recordFailure(driverError(api, "lowbit_matmul: making the context current",
                                       current.result()));
    CUresult r = api.cuLaunchKernel(plan->functions[kernelIndex], g.gridX, g.gridY(m), g.gridZ,
                                    g.blockThreads, 1, 1, g.dynamicSharedBytes,
                                    static_cast<CUstream>(stream), params, nullptr);
    if (r != CUDA_SUCCESS) {
      ApiError error = driverError(api, "lowbit_matmul: launching " + kernel.name + " for M = " +
                                            std::to_string(m),
                                   r);
      if (error.status == LOWBIT_STATUS_DRIVER_ERROR)
        error.status = LOWBIT_STATUS_LAUNCH_FAILED;
      return recordFailure(error);
    }
    return LOWBIT_STATUS_SUCCESS;
  });
}

} // extern "C"
