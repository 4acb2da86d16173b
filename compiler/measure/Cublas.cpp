#include "compiler/measure/Cublas.h"

#include <cublas_api.h>
#include <dlfcn.h>

namespace lowbit::measure {

struct Cublas::Functions {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) setStream = nullptr;
  decltype(&cublasSetWorkspace_v2) setWorkspace = nullptr;
  // cublas_api.h also declares a C++ overload, so the C signature is spelled out.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const void *, const void *, cudaDataType, int,
                                    const void *, cudaDataType, int, const void *, void *,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemmEx = nullptr;
};

namespace {
constexpr size_t kWorkspaceBytes = 64u << 20;
}

Expected<std::unique_ptr<Cublas>> Cublas::load(const cuda::DriverApi &api) {
  std::unique_ptr<Cublas> cublas(new Cublas());
  cublas->api_ = &api;
  for (const char *name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
    cublas->library_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (cublas->library_)
      break;
  }
  if (!cublas->library_)
    return makeError("cuBLAS not found (libcublas.so.13/12)");
  cublas->fn_ = std::make_unique<Functions>();
  Functions &f = *cublas->fn_;
  f.create = reinterpret_cast<decltype(f.create)>(dlsym(cublas->library_, "cublasCreate_v2"));
  f.destroy = reinterpret_cast<decltype(f.destroy)>(dlsym(cublas->library_, "cublasDestroy_v2"));
  f.setStream =
      reinterpret_cast<decltype(f.setStream)>(dlsym(cublas->library_, "cublasSetStream_v2"));
  f.setWorkspace = reinterpret_cast<decltype(f.setWorkspace)>(
      dlsym(cublas->library_, "cublasSetWorkspace_v2"));
  f.gemmEx = reinterpret_cast<decltype(f.gemmEx)>(dlsym(cublas->library_, "cublasGemmEx"));
  if (!f.create || !f.destroy || !f.setStream || !f.setWorkspace || !f.gemmEx)
    return makeError("cuBLAS lacks an entry point lowbit uses");
  cublasHandle_t handle = nullptr;
  if (f.create(&handle) != CUBLAS_STATUS_SUCCESS)
    return makeError("cublasCreate failed");
  cublas->handle_ = handle;
  if (api.cuMemAlloc(&cublas->workspace_, kWorkspaceBytes) != CUDA_SUCCESS)
    return makeError("cannot allocate the cuBLAS workspace");
  if (f.setWorkspace(handle, reinterpret_cast<void *>(cublas->workspace_), kWorkspaceBytes) !=
      CUBLAS_STATUS_SUCCESS)
    return makeError("cublasSetWorkspace failed");
  return cublas;
}

Cublas::~Cublas() {
  if (handle_ && fn_)
    fn_->destroy(static_cast<cublasHandle_t>(handle_));
  if (workspace_ && api_)
    api_->cuMemFree(workspace_);
}

CUresult Cublas::gemm(bool bf16, int64_t m, int64_t n, int64_t k, CUdeviceptr x, CUdeviceptr w,
                      CUdeviceptr y, CUstream stream) const {
  // Column-major view: Yᵀ[N, M] = (W as col-major [K, N])ᵀ · (X as col-major [K, M]).
  auto handle = static_cast<cublasHandle_t>(handle_);
  if (fn_->setStream(handle, reinterpret_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS)
    return CUDA_ERROR_UNKNOWN;
  float one = 1.f, zero = 0.f;
  cudaDataType type = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  cublasStatus_t status = fn_->gemmEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &one, reinterpret_cast<const void *>(w), type, static_cast<int>(k),
      reinterpret_cast<const void *>(x), type, static_cast<int>(k), &zero,
      reinterpret_cast<void *>(y), type, static_cast<int>(n), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  return status == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

} // namespace lowbit::measure
