// cuBLASLt, loaded with dlopen, as the dense f16/bf16 baseline the benchmark
// reports next to every lowbit kernel (issue 6: cublasLtMatmul with the
// heuristic's first algorithm, as an inference engine calls it). Without
// cuBLASLt on the machine the benchmark still runs and says the baseline is
// missing.
#pragma once

#include "runtime/cuda/Driver.h"
#include "core/support/Expected.h"

#include <memory>
#include <string>
#include <vector>

namespace lowbit::measure {

class Cublas {
public:
  // The sonames load() tries, newest first.
  static const std::vector<std::string> &defaultLibraries();
  // What load() gives cuBLASLt as workspace, allocated once: enough for the
  // algorithms the heuristic returns on Hopper (NVIDIA's advice is 32 MiB).
  static constexpr size_t kWorkspaceBytes = 32u << 20;

  static Expected<std::unique_ptr<Cublas>> load(const cuda::DriverApi &api) {
    return load(api, defaultLibraries());
  }
  // The first of `libraries` that dlopen finds; the tests pass a fake one.
  static Expected<std::unique_ptr<Cublas>> load(const cuda::DriverApi &api,
                                                const std::vector<std::string> &libraries);
  ~Cublas();
  Cublas(const Cublas &) = delete;
  Cublas &operator=(const Cublas &) = delete;

  // Y[M, N] = X[M, K] · W[N, K]ᵀ, all row-major, f16 or bf16 in and out, f32
  // accumulation, on `stream` (capturable: the workspace is preallocated and
  // each shape's descriptors and algorithm are chosen on its first call).
  // Returns CUDA_ERROR_UNKNOWN on any cuBLASLt failure; lastError() says
  // which call failed and with what status.
  CUresult gemm(bool bf16, int64_t m, int64_t n, int64_t k, CUdeviceptr x, CUdeviceptr w,
                CUdeviceptr y, CUstream stream) const;
  // Why the latest gemm() failed ("cublasLtMatmul: status 13 ..."), or ""
  // when it succeeded.
  std::string lastError() const;

private:
  Cublas() = default;
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace lowbit::measure
