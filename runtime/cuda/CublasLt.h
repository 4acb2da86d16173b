// cuBLASLt, loaded with dlopen like the driver (Driver.h), so nothing links
// it and a machine without it still loads lowbit. Two users:
// - the runtime's dense path: a dequant kernel writes dequant(W) into the
//   caller's workspace and this multiplies it by x (docs/architecture.md,
//   "The dense path");
// - the benchmark's and the tuner's dense f16/bf16 baseline
//   (compiler/measure/Cublas.h), cublasLtMatmul with the heuristic's first
//   algorithm, as an inference engine calls it.
#pragma once

#include "core/support/Expected.h"
#include "runtime/cuda/Driver.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lowbit::cuda {

// What a gemm multiplies: f16 or bf16 in and out with f32 sums, or s8 in
// with s32 sums and an s32 Y (the integer tensor cores' baseline for s8
// activations; int8 wants W and X in the "TN" layout gemm() uses anyway).
enum class GemmType { F16, BF16, S8, E4M3 };

class CublasLt {
public:
  // The sonames load() tries, newest first.
  static const std::vector<std::string> &defaultLibraries();
  // The workspace every gemm() passes cuBLASLt: enough for the algorithms
  // the heuristic returns on Hopper (NVIDIA's advice is 32 MiB). The
  // heuristic is asked for algorithms that need at most this much.
  static constexpr size_t kWorkspaceBytes = 32u << 20;

  static Expected<std::unique_ptr<CublasLt>> load() { return load(defaultLibraries()); }
  // The first of `libraries` that dlopen finds; the tests pass a fake one.
  static Expected<std::unique_ptr<CublasLt>> load(const std::vector<std::string> &libraries);
  ~CublasLt();
  CublasLt(const CublasLt &) = delete;
  CublasLt &operator=(const CublasLt &) = delete;

  // Y[M, N] = X[M, K] · W[N, K]ᵀ, all row-major, of `type`, on `stream`, with `workspace` (device, at least
  // kWorkspaceBytes). Each shape's descriptors and algorithm are chosen on
  // its first call and kept, so later calls (and graph capture) do only the
  // enqueue. Thread-safe. Returns CUDA_ERROR_UNKNOWN on any cuBLASLt failure
  // (CUDA_ERROR_INVALID_VALUE for a short workspace); lastError() says which
  // call failed and with what status.
  CUresult gemm(GemmType type, int64_t m, int64_t n, int64_t k, CUdeviceptr x, CUdeviceptr w,
                CUdeviceptr y, CUdeviceptr workspace, size_t workspaceBytes,
                CUstream stream) const;
  // Why the latest gemm() failed ("cublasLtMatmul: status 13 ..."), or ""
  // when it succeeded.
  std::string lastError() const;
  // The soname that was loaded.
  const std::string &libraryName() const;

private:
  CublasLt() = default;
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace lowbit::cuda
