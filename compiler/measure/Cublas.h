// The benchmark's and the tuner's cuBLASLt (runtime/cuda/CublasLt.h) with a
// workspace of its own, allocated once: the dense f16/bf16 baseline every
// lowbit kernel is reported against (issue 6: cublasLtMatmul with the
// heuristic's first algorithm, as an inference engine calls it), and the
// second half of the dense path the tuner measures. Without cuBLASLt on the
// machine the benchmark still runs and says the baseline is missing.
#pragma once

#include "compiler/measure/GraphTimer.h"
#include "core/Activation.h"
#include "runtime/cuda/CublasLt.h"

#include <memory>
#include <string>
#include <vector>

namespace lowbit::measure {

class Cublas {
public:
  static const std::vector<std::string> &defaultLibraries() {
    return cuda::CublasLt::defaultLibraries();
  }
  static constexpr size_t kWorkspaceBytes = cuda::CublasLt::kWorkspaceBytes;

  static Expected<std::unique_ptr<Cublas>> load(const cuda::DriverApi &api) {
    return load(api, defaultLibraries());
  }
  static Expected<std::unique_ptr<Cublas>> load(const cuda::DriverApi &api,
                                                const std::vector<std::string> &libraries);

  // Y[M, N] = X[M, K] · W[N, K]ᵀ, row-major (CublasLt::gemm), with this
  // object's workspace.
  CUresult gemm(cuda::GemmType type, int64_t m, int64_t n, int64_t k, CUdeviceptr x,
                CUdeviceptr w, CUdeviceptr y, CUstream stream) const {
    return lt_->gemm(type, m, n, k, x, w, y, workspace_.get(), workspace_.bytes(), stream);
  }
  // The baseline for a problem's activations: the dense f16 or bf16 gemm, or
  // for s8 the int8 one (s32 out), for e4m3 the fp8 one (bf16 out).
  static cuda::GemmType gemmType(core::Activation activation) {
    return activation == core::Activation::S8     ? cuda::GemmType::S8
           : activation == core::Activation::E4M3 ? cuda::GemmType::E4M3
           : activation == core::Activation::BF16 ? cuda::GemmType::BF16
                                                  : cuda::GemmType::F16;
  }
  std::string lastError() const { return lt_->lastError(); }

private:
  Cublas() = default;
  std::unique_ptr<cuda::CublasLt> lt_;
  DeviceMemory workspace_;
};

} // namespace lowbit::measure
