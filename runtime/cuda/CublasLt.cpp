#include "runtime/cuda/CublasLt.h"

// Types and enums only: every function is called through a pointer dlsym
// returned, so nothing links against cuBLASLt.
#include <cublasLt.h>
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <tuple>

namespace lowbit::cuda {
namespace {

// The entry points, typed from the header's declarations so a mismatch with
// the real signatures cannot compile.
#define LOWBIT_CUBLASLT_FUNCTIONS(X)                                                               \
  X(cublasLtCreate)                                                                                \
  X(cublasLtDestroy)                                                                               \
  X(cublasLtMatmulDescCreate)                                                                      \
  X(cublasLtMatmulDescDestroy)                                                                     \
  X(cublasLtMatmulDescSetAttribute)                                                                \
  X(cublasLtMatrixLayoutCreate)                                                                    \
  X(cublasLtMatrixLayoutDestroy)                                                                   \
  X(cublasLtMatmulPreferenceCreate)                                                                \
  X(cublasLtMatmulPreferenceDestroy)                                                               \
  X(cublasLtMatmulPreferenceSetAttribute)                                                          \
  X(cublasLtMatmulAlgoGetHeuristic)                                                                \
  X(cublasLtMatmul)

struct Functions {
#define LOWBIT_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  LOWBIT_CUBLASLT_FUNCTIONS(LOWBIT_CUBLASLT_POINTER)
#undef LOWBIT_CUBLASLT_POINTER
};

const char *statusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown status";
}

// "cublasLtMatmul: status 13 (CUBLAS_STATUS_EXECUTION_FAILED)": the number
// as well as the name, since a newer library may return values this build's
// header does not know.
Error statusError(const char *function, cublasStatus_t status) {
  return makeError(std::string(function) + ": status " + std::to_string(static_cast<int>(status)) +
                   " (" + statusName(status) + ")");
}

// Success, or the error statusError makes; lets every call be one line.
Status check(const char *function, cublasStatus_t status) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::success();
  return statusError(function, status);
}

// The matrix alignment cuBLASLt's heuristic assumes when not told
// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES' default).
constexpr uint32_t kDefaultAlignment = 256;

// Calls table.name(args...) and returns its error from the enclosing
// function, named after `name` alone (not the whole call's text).
#define LOWBIT_CUBLASLT_CALL(table, name, ...)                                                     \
  do {                                                                                             \
    if (Status s = check(#name, (table).name(__VA_ARGS__)); !s.ok())                               \
      return makeError(s.error());                                                                 \
  } while (0)

// One shape's descriptors and algorithm. Made on a shape's first gemm and
// kept: the heuristic query is host work that need not repeat on every
// launch of a captured graph.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr, x = nullptr, y = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

// Teardown statuses are not checked: there is nothing left to do about them.
void destroyPlan(const Functions &fn, Plan &plan) {
  for (cublasLtMatrixLayout_t layout : {plan.w, plan.x, plan.y})
    if (layout)
      fn.cublasLtMatrixLayoutDestroy(layout);
  if (plan.desc)
    fn.cublasLtMatmulDescDestroy(plan.desc);
  plan = Plan{};
}

} // namespace

struct CublasLt::State {
  ~State();
  Expected<const Plan *> planFor(GemmType type, int64_t m, int64_t n, int64_t k,
                                 uint32_t alignment);
  Status fillPlan(Plan &plan, GemmType type, int64_t m, int64_t n, int64_t k,
                  uint32_t alignment);
  Status chooseAlgorithm(Plan &plan, uint32_t alignment, cublasLtMatmulHeuristicResult_t &result,
                         int &found);

  void *library = nullptr;
  std::string libraryName;
  Functions fn;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  // gemm() is const and is called from many threads (lowbit_matmul's
  // contract); the plans and the last error are its only mutable state.
  std::mutex mutex;
  std::map<std::tuple<GemmType, int64_t, int64_t, int64_t, uint32_t>, Plan> plans;
  std::string lastError;
};

CublasLt::State::~State() {
  for (auto &entry : plans)
    destroyPlan(fn, entry.second);
  if (preference)
    fn.cublasLtMatmulPreferenceDestroy(preference);
  if (handle)
    fn.cublasLtDestroy(handle);
  // The library stays loaded, as the CUDA driver does (runtime/cuda):
  // cuBLASLt keeps process-wide state (its CUDA runtime, heuristics cache)
  // past a handle's destruction, and unloading it would gain nothing.
}

const std::vector<std::string> &CublasLt::defaultLibraries() {
  static const std::vector<std::string> names = {"libcublasLt.so.13", "libcublasLt.so.12",
                                                 "libcublasLt.so"};
  return names;
}

Expected<std::unique_ptr<CublasLt>> CublasLt::load(const std::vector<std::string> &libraries) {
  std::unique_ptr<CublasLt> cublas(new CublasLt());
  cublas->state_ = std::make_unique<State>();
  State &state = *cublas->state_;
  std::string tried, lastDlError;
  for (const std::string &name : libraries) {
    state.library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (state.library) {
      state.libraryName = name;
      break;
    }
    if (const char *why = dlerror())
      lastDlError = why;
    tried += (tried.empty() ? "" : ", ") + name;
  }
  if (!state.library)
    return makeError("cuBLASLt not found (tried " + tried + ")" +
                     (lastDlError.empty() ? "" : ": " + lastDlError));

  Functions &f = state.fn;
  const char *missing = nullptr;
#define LOWBIT_CUBLASLT_RESOLVE(name)                                                              \
  f.name = reinterpret_cast<decltype(f.name)>(dlsym(state.library, #name));                        \
  if (!f.name && !missing)                                                                         \
    missing = #name;
  LOWBIT_CUBLASLT_FUNCTIONS(LOWBIT_CUBLASLT_RESOLVE)
#undef LOWBIT_CUBLASLT_RESOLVE
  if (missing) {
    // Not the library we want and nothing of it has run but its loading:
    // unloading it is safe here, unlike once a handle exists.
    dlclose(state.library);
    state.library = nullptr;
    return makeError(state.libraryName + " lacks " + missing +
                     ", which lowbit calls");
  }

  LOWBIT_CUBLASLT_CALL(f, cublasLtCreate, &state.handle);
  // One preference for every shape: only the workspace bound, so the
  // heuristic never picks an algorithm needing more than we pass.
  LOWBIT_CUBLASLT_CALL(f, cublasLtMatmulPreferenceCreate, &state.preference);
  const uint64_t maxWorkspace = kWorkspaceBytes;
  LOWBIT_CUBLASLT_CALL(f, cublasLtMatmulPreferenceSetAttribute, state.preference,
                       CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace,
                       sizeof(maxWorkspace));
  return cublas;
}

CublasLt::~CublasLt() = default;

// cuBLASLt is column-major; X, W and Y are row-major. A row-major [R, C]
// matrix is a column-major [C, R] one with the same leading dimension, so
// compute Yᵀ[N, M] = W[N, K] · Xᵀ[K, M] with A = W (column-major [K, N],
// transposed), B = X (column-major [K, M]) and C = D = Y (column-major
// [N, M]): the mapping the cublasGemmEx baseline used (opA = T, opB = N).
// The algorithm for `plan`. cuBLASLt's heuristic assumes every matrix is
// 256-byte aligned unless told otherwise; lowbit_matmul promises only 16,
// so less aligned matrices get a preference that says how little, and an
// algorithm that works with it.
Status CublasLt::State::chooseAlgorithm(Plan &plan, uint32_t alignment,
                                        cublasLtMatmulHeuristicResult_t &result, int &found) {
  if (alignment >= kDefaultAlignment) {
    LOWBIT_CUBLASLT_CALL(fn, cublasLtMatmulAlgoGetHeuristic, handle, plan.desc, plan.w, plan.x,
                         plan.y, plan.y, preference, 1, &result, &found);
    return Status::success();
  }
  cublasLtMatmulPreference_t aligned = nullptr;
  LOWBIT_CUBLASLT_CALL(fn, cublasLtMatmulPreferenceCreate, &aligned);
  Status status = [&]() -> Status {
    const uint64_t maxWorkspace = kWorkspaceBytes;
    LOWBIT_CUBLASLT_CALL(fn, cublasLtMatmulPreferenceSetAttribute, aligned,
                         CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace,
                         sizeof(maxWorkspace));
    for (cublasLtMatmulPreferenceAttributes_t attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      LOWBIT_CUBLASLT_CALL(fn, cublasLtMatmulPreferenceSetAttribute, aligned, attribute,
                           &alignment, sizeof(alignment));
    LOWBIT_CUBLASLT_CALL(fn, cublasLtMatmulAlgoGetHeuristic, handle, plan.desc, plan.w, plan.x,
                         plan.y, plan.y, aligned, 1, &result, &found);
    return Status::success();
  }();
  fn.cublasLtMatmulPreferenceDestroy(aligned);
  return status;
}

Status CublasLt::State::fillPlan(Plan &plan, GemmType gemmType, int64_t m, int64_t n, int64_t k,
                                 uint32_t alignment) {
  const bool integer = gemmType == GemmType::S8;
  const bool fp8 = gemmType == GemmType::E4M3;
  const cudaDataType type = integer                      ? CUDA_R_8I
                            : fp8                        ? CUDA_R_8F_E4M3
                            : gemmType == GemmType::BF16 ? CUDA_R_16BF
                                                         : CUDA_R_16F;
  // s8 sums come out as s32; e4m3 ones as bf16 (cuBLASLt's fp8 gemm writes
  // 16-bit or f32 D, with C of D's type).
  const cudaDataType outputType = integer ? CUDA_R_32I : fp8 ? CUDA_R_16BF : type;
  LOWBIT_CUBLASLT_CALL(fn, cublasLtMatmulDescCreate, &plan.desc,
                       integer ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                       integer ? CUDA_R_32I : CUDA_R_32F);
  // The attributes are int32_t, whatever size the enum has.
  const int32_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  LOWBIT_CUBLASLT_CALL(fn, cublasLtMatmulDescSetAttribute, plan.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                       &transposed, sizeof(transposed));
  LOWBIT_CUBLASLT_CALL(fn, cublasLtMatmulDescSetAttribute, plan.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                       &plain, sizeof(plain));
  const auto u64 = [](int64_t v) { return static_cast<uint64_t>(v); };
  LOWBIT_CUBLASLT_CALL(fn, cublasLtMatrixLayoutCreate, &plan.w, type, u64(k), u64(n), k);
  LOWBIT_CUBLASLT_CALL(fn, cublasLtMatrixLayoutCreate, &plan.x, type, u64(k), u64(m), k);
  LOWBIT_CUBLASLT_CALL(fn, cublasLtMatrixLayoutCreate, &plan.y, outputType, u64(n), u64(m), n);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (Status s = chooseAlgorithm(plan, alignment, result, found); !s.ok())
    return s;
  if (found < 1)
    return makeError("cublasLtMatmulAlgoGetHeuristic: no algorithm for " +
                     std::string(integer ? "s8"
                                 : fp8   ? "e4m3"
                                 : gemmType == GemmType::BF16 ? "bf16"
                                                              : "f16") +
                     " M = " + std::to_string(m) +
                     ", N = " + std::to_string(n) + ", K = " + std::to_string(k));
  if (Status s = check("cublasLtMatmulAlgoGetHeuristic (its result)", result.state); !s.ok())
    return s;
  if (result.workspaceSize > kWorkspaceBytes)
    return makeError("cublasLtMatmulAlgoGetHeuristic: the algorithm needs " +
                     std::to_string(result.workspaceSize) + " bytes of workspace, over the " +
                     std::to_string(kWorkspaceBytes) + " asked for");
  plan.algo = result.algo;
  return Status::success();
}

Expected<const Plan *> CublasLt::State::planFor(GemmType type, int64_t m, int64_t n, int64_t k,
                                                uint32_t alignment) {
  auto key = std::make_tuple(type, m, n, k, alignment);
  if (auto found = plans.find(key); found != plans.end())
    return &found->second;
  if (m <= 0 || n <= 0 || k <= 0)
    return makeError("cuBLASLt gemm: M, N and K must be positive (M = " + std::to_string(m) +
                     ", N = " + std::to_string(n) + ", K = " + std::to_string(k) + ")");
  // Inserted first so the destructor frees whatever a failure leaves made;
  // a failed plan is dropped again (destroying its parts) so a later call
  // retries rather than using a half-made plan.
  Plan &plan = plans[key];
  if (Status s = fillPlan(plan, type, m, n, k, alignment); !s.ok()) {
    destroyPlan(fn, plan);
    plans.erase(key);
    return makeError(s.error());
  }
  return &plan;
}

CUresult CublasLt::gemm(GemmType type, int64_t m, int64_t n, int64_t k, CUdeviceptr x,
                        CUdeviceptr w, CUdeviceptr y, CUdeviceptr workspace,
                        size_t workspaceBytes, CUstream stream) const {
  State &state = *state_;
  std::lock_guard<std::mutex> lock(state.mutex);
  if (workspaceBytes < kWorkspaceBytes || !workspace) {
    state.lastError = "cuBLASLt gemm: the workspace has " + std::to_string(workspaceBytes) +
                      " bytes, it needs " + std::to_string(kWorkspaceBytes);
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The largest power of two that divides every matrix's address, at most
  // the heuristic's default.
  uint64_t addresses = static_cast<uint64_t>(x | w | y | kDefaultAlignment);
  const uint32_t alignment = static_cast<uint32_t>(addresses & (~addresses + 1));
  Expected<const Plan *> plan = state.planFor(type, m, n, k, alignment);
  if (!plan.ok()) {
    state.lastError = plan.error();
    return CUDA_ERROR_UNKNOWN;
  }
  const Plan &p = **plan;
  // Host pointer mode (the default): cuBLASLt reads the scalars when it
  // enqueues, so locals are fine even under graph capture.
  // The scalars have the scale type: f32, or s32 for the integer gemm.
  const float one = 1.f, zero = 0.f;
  const int32_t integerOne = 1, integerZero = 0;
  const bool integer = type == GemmType::S8;
  cublasStatus_t status = state.fn.cublasLtMatmul(
      state.handle, p.desc, integer ? static_cast<const void *>(&integerOne) : &one,
      reinterpret_cast<const void *>(w), p.w, reinterpret_cast<const void *>(x), p.x,
      integer ? static_cast<const void *>(&integerZero) : &zero,
      reinterpret_cast<const void *>(y), p.y,
      reinterpret_cast<void *>(y), p.y, &p.algo, reinterpret_cast<void *>(workspace),
      kWorkspaceBytes, reinterpret_cast<cudaStream_t>(stream));
  if (status != CUBLAS_STATUS_SUCCESS) {
    state.lastError = statusError("cublasLtMatmul", status).message;
    return CUDA_ERROR_UNKNOWN;
  }
  state.lastError.clear();
  return CUDA_SUCCESS;
}

std::string CublasLt::lastError() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->lastError;
}

const std::string &CublasLt::libraryName() const { return state_->libraryName; }

} // namespace lowbit::cuda
