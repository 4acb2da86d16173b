// A stand-in libcublasLt for the measuring code's CPU tests: the entry points
// Cublas.cpp resolves, defined against the real cublasLt.h (so a signature
// Cublas.cpp got wrong would not match), with "device memory" that is host
// memory as in FakeComputeDriver. cublasLtMatmul really computes
// D = alpha · op(A) · op(B) + beta · C, column-major, as cuBLASLt defines it,
// so a test can check that Cublas maps row-major X, W and Y onto it right.
// It insists on what Cublas relies on: consistent shapes, f16 or bf16 in
// and out, f32 compute and scale, the heuristic's algorithm and enough
// workspace; anything else fails as the real library would.
#include "FakeCublasLt.h"
#include "compiler/measure/ProblemInputs.h"

#include <cublasLt.h>

#include <cstring>
#include <string>

extern "C" {
__attribute__((visibility("default"))) LowbitFakeCublasLtState lowbit_fake_cublaslt_state;
}

namespace {

LowbitFakeCublasLtState &state() {
  return lowbit_fake_cublaslt_state;
}

bool failing(const char *function, cublasStatus_t *status) {
  if (std::strcmp(state().failFunction, function) != 0)
    return false;
  *status = static_cast<cublasStatus_t>(state().failStatus);
  return true;
}

#define LOWBIT_FAKE_MAYBE_FAIL(function)                                                           \
  do {                                                                                             \
    cublasStatus_t injected;                                                                       \
    if (failing(function, &injected))                                                              \
      return injected;                                                                             \
  } while (0)

struct FakeHandle {
  int magic = 0x17;
};
struct FakeDesc {
  int computeType, scaleType;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
};
struct FakeLayout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};
struct FakePreference {
  uint64_t maxWorkspace = 0; // cuBLASLt's default: no workspace
};
constexpr uint64_t kAlgoMagic = 0xA160A160;

lowbit::core::Activation activationOf(cudaDataType type) {
  return type == CUDA_R_16BF ? lowbit::core::Activation::BF16 : lowbit::core::Activation::F16;
}

double load(const void *base, int64_t index, cudaDataType type) {
  uint16_t bits;
  std::memcpy(&bits, static_cast<const char *>(base) + 2 * index, 2);
  return lowbit::measure::activationValue(bits, activationOf(type));
}

void store(void *base, int64_t index, cudaDataType type, double value) {
  uint16_t bits = lowbit::measure::activationBits(value, activationOf(type));
  std::memcpy(static_cast<char *>(base) + 2 * index, &bits, 2);
}

// Every create and destroy: the injected failure, then the object counted
// alive until destroyed (the tests check nothing leaks).
template <typename Handle, typename Fake>
cublasStatus_t create(const char *function, Handle *out, Fake *made) {
  cublasStatus_t injected;
  if (failing(function, &injected)) {
    delete made;
    return injected;
  }
  *out = reinterpret_cast<Handle>(made);
  ++state().alive;
  return CUBLAS_STATUS_SUCCESS;
}

template <typename Fake, typename Handle> cublasStatus_t destroy(Handle handle) {
  delete reinterpret_cast<Fake *>(handle);
  --state().alive;
  return CUBLAS_STATUS_SUCCESS;
}

// op(L)'s rows and columns.
uint64_t opRows(const FakeLayout &l, int32_t op) {
  return op == CUBLAS_OP_N ? l.rows : l.cols;
}
uint64_t opCols(const FakeLayout &l, int32_t op) {
  return op == CUBLAS_OP_N ? l.cols : l.rows;
}

// What both the heuristic and the matmul reject, as cuBLASLt would.
bool supported(const FakeDesc &d, const FakeLayout &a, const FakeLayout &b, const FakeLayout &c,
               const FakeLayout &dd) {
  bool half = a.type == CUDA_R_16F || a.type == CUDA_R_16BF;
  return half && b.type == a.type && c.type == a.type && dd.type == a.type &&
         d.computeType == CUBLAS_COMPUTE_32F && d.scaleType == CUDA_R_32F &&
         opCols(a, d.transA) == opRows(b, d.transB) && c.rows == opRows(a, d.transA) &&
         c.cols == opCols(b, d.transB) && dd.rows == c.rows && dd.cols == c.cols &&
         a.ld >= static_cast<int64_t>(a.rows) && b.ld >= static_cast<int64_t>(b.rows) &&
         c.ld >= static_cast<int64_t>(c.rows) && dd.ld >= static_cast<int64_t>(dd.rows);
}

} // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  return create("cublasLtCreate", handle, new FakeHandle);
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  return destroy<FakeHandle>(handle);
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  return create("cublasLtMatmulDescCreate", desc, new FakeDesc{compute, scale});
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  return destroy<FakeDesc>(desc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attribute,
                                              const void *buffer, size_t bytes) {
  LOWBIT_FAKE_MAYBE_FAIL("cublasLtMatmulDescSetAttribute");
  auto *d = reinterpret_cast<FakeDesc *>(desc);
  // Both attributes are int32_t; the real library checks the size too.
  if (bytes != sizeof(int32_t))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (attribute == CUBLASLT_MATMUL_DESC_TRANSA)
    std::memcpy(&d->transA, buffer, 4);
  else if (attribute == CUBLASLT_MATMUL_DESC_TRANSB)
    std::memcpy(&d->transB, buffer, 4);
  else
    return CUBLAS_STATUS_INVALID_VALUE; // not one Cublas has reason to set
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  return create("cublasLtMatrixLayoutCreate", layout, new FakeLayout{type, rows, cols, ld});
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  return destroy<FakeLayout>(layout);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *preference) {
  return create("cublasLtMatmulPreferenceCreate", preference, new FakePreference);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  return destroy<FakePreference>(preference);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t preference,
                                                    cublasLtMatmulPreferenceAttributes_t attribute,
                                                    const void *buffer, size_t bytes) {
  LOWBIT_FAKE_MAYBE_FAIL("cublasLtMatmulPreferenceSetAttribute");
  // The matrices' alignments, uint32_t each (the header's type for them).
  if (attribute == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES ||
      attribute == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ||
      attribute == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ||
      attribute == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES) {
    if (bytes != sizeof(uint32_t))
      return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&state().preferenceMinAlignment, buffer, 4);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attribute != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES || bytes != sizeof(uint64_t))
    return CUBLAS_STATUS_INVALID_VALUE;
  auto *p = reinterpret_cast<FakePreference *>(preference);
  std::memcpy(&p->maxWorkspace, buffer, 8);
  state().preferenceMaxWorkspace = p->maxWorkspace;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned) {
  ++state().heuristicCalls;
  LOWBIT_FAKE_MAYBE_FAIL("cublasLtMatmulAlgoGetHeuristic");
  if (!handle || requested <= 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  const auto &p = *reinterpret_cast<FakePreference *>(preference);
  if (state().noAlgorithm || state().algorithmWorkspace > p.maxWorkspace ||
      !supported(*reinterpret_cast<FakeDesc *>(desc), *reinterpret_cast<FakeLayout *>(a),
                 *reinterpret_cast<FakeLayout *>(b), *reinterpret_cast<FakeLayout *>(c),
                 *reinterpret_cast<FakeLayout *>(d)))
    return CUBLAS_STATUS_SUCCESS; // found nothing, as the real one says it
  std::memset(&results[0], 0, sizeof(results[0]));
  results[0].algo.data[0] = kAlgoMagic;
  results[0].workspaceSize = state().algorithmWorkspace;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *a, cublasLtMatrixLayout_t aLayout, const void *b,
                              cublasLtMatrixLayout_t bLayout, const void *beta, const void *c,
                              cublasLtMatrixLayout_t cLayout, void *d,
                              cublasLtMatrixLayout_t dLayout, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceBytes, cudaStream_t) {
  ++state().matmulCalls;
  LOWBIT_FAKE_MAYBE_FAIL("cublasLtMatmul");
  const auto &dd = *reinterpret_cast<FakeDesc *>(desc);
  const auto &al = *reinterpret_cast<FakeLayout *>(aLayout);
  const auto &bl = *reinterpret_cast<FakeLayout *>(bLayout);
  const auto &cl = *reinterpret_cast<FakeLayout *>(cLayout);
  const auto &dl = *reinterpret_cast<FakeLayout *>(dLayout);
  state().computeType = dd.computeType;
  state().scaleType = dd.scaleType;
  state().matrixType = al.type;
  state().transA = dd.transA;
  state().transB = dd.transB;
  state().matmulWorkspace = workspace;
  state().matmulWorkspaceBytes = workspaceBytes;
  if (!handle || !supported(dd, al, bl, cl, dl) || !algo || algo->data[0] != kAlgoMagic ||
      workspaceBytes < state().algorithmWorkspace || (state().algorithmWorkspace && !workspace))
    return CUBLAS_STATUS_INVALID_VALUE;
  // f32 scale type: alpha and beta are floats (host pointer mode).
  const double alphaValue = *static_cast<const float *>(alpha);
  const double betaValue = *static_cast<const float *>(beta);
  const int64_t rows = static_cast<int64_t>(cl.rows), cols = static_cast<int64_t>(cl.cols);
  const int64_t inner = static_cast<int64_t>(opCols(al, dd.transA));
  auto element = [](const void *base, const FakeLayout &l, int32_t op, int64_t i, int64_t j) {
    return op == CUBLAS_OP_N ? load(base, i + j * l.ld, l.type) : load(base, j + i * l.ld, l.type);
  };
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      double sum = 0;
      for (int64_t l = 0; l < inner; ++l)
        sum += element(a, al, dd.transA, i, l) * element(b, bl, dd.transB, l, j);
      double value = alphaValue * sum;
      if (betaValue != 0)
        value += betaValue * load(c, i + j * cl.ld, cl.type);
      store(d, i + j * dl.ld, dl.type, value);
    }
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
