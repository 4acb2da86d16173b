// cuBLAS, loaded with dlopen, as the dense f16/bf16 baseline the benchmark
// reports next to every lowbit kernel. Without cuBLAS on the machine the
// benchmark still runs and says the baseline is missing.
#pragma once

#include "runtime/cuda/Driver.h"
#include "runtime/support/Expected.h"

#include <memory>

namespace lowbit::measure {

class Cublas {
public:
  static Expected<std::unique_ptr<Cublas>> load(const cuda::DriverApi &api);
  ~Cublas();

  // Y[M, N] = X[M, K] · W[N, K]ᵀ, all row-major, f16 or bf16 in and out, f32
  // accumulation, on `stream` (capturable: the workspace is preallocated).
  CUresult gemm(bool bf16, int64_t m, int64_t n, int64_t k, CUdeviceptr x, CUdeviceptr w,
                CUdeviceptr y, CUstream stream) const;

private:
  Cublas() = default;
  struct Functions;
  std::unique_ptr<Functions> fn_;
  void *library_ = nullptr;
  void *handle_ = nullptr;
  CUdeviceptr workspace_ = 0;
  const cuda::DriverApi *api_ = nullptr;
};

} // namespace lowbit::measure
