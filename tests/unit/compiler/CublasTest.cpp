// The cuBLASLt baseline (Cublas.h) without a GPU: loaded from a stand-in
// libcublasLt (FakeCublasLt.cpp) whose matmul computes on the CPU over the
// fake driver's host "device memory". The GPU path itself (the real library,
// its algorithms, graph capture) is exercised only on a GPU host.
#include "compiler/measure/Cublas.h"
#include "FakeComputeDriver.h"
#include "FakeCublasLt.h"
#include "compiler/measure/BenchFixture.h"
#include "tests/unit/compiler/tuner/TunerTestSupport.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace lowbit::testing {
namespace {

using measure::Cublas;

TEST(Cublas, TriesTheCublasLtSonamesNewestFirst) {
  EXPECT_EQ(Cublas::defaultLibraries(),
            (std::vector<std::string>{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}));
}

// The bench prints "no cuBLAS baseline: <this>" and goes on, so the message
// alone must say what was looked for.
TEST(Cublas, AMissingLibraryIsAClearError) {
  auto cublas = Cublas::load(fakeComputeDriver(),
                             {"liblowbit-no-such-cublasLt.so.99", "liblowbit-nor-this.so"});
  ASSERT_FALSE(cublas.ok());
  EXPECT_NE(cublas.error().find("cuBLASLt not found"), std::string::npos) << cublas.error();
  EXPECT_NE(cublas.error().find("liblowbit-no-such-cublasLt.so.99, liblowbit-nor-this.so"),
            std::string::npos)
      << cublas.error();
}

TEST(Cublas, ALibraryWithoutTheEntryPointsIsRefused) {
  auto cublas = Cublas::load(fakeComputeDriver(), {"libm.so.6"});
  ASSERT_FALSE(cublas.ok());
  EXPECT_NE(cublas.error().find("libm.so.6 lacks cublasLtCreate"), std::string::npos)
      << cublas.error();
}

// Small multiples of 1/8, which f16 and bf16 both hold exactly.
uint16_t bits(double v, bool bf16) {
  return measure::activationBits(v, bf16 ? core::Activation::BF16 : core::Activation::F16);
}

class CublasFake : public ::testing::Test {
protected:
  void SetUp() override {
    // The library Cublas::load opens below; opened here first (the same
    // handle) to reach the state the fake exports.
    library_ = dlopen(LOWBIT_FAKE_CUBLASLT, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    fake_ = static_cast<LowbitFakeCublasLtState *>(dlsym(library_, LOWBIT_FAKE_CUBLASLT_STATE));
    ASSERT_NE(fake_, nullptr);
    std::memset(fake_, 0, sizeof(*fake_));
    fake_->algorithmWorkspace = 1 << 20;
  }
  void TearDown() override {
    if (library_)
      dlclose(library_);
  }

  Expected<std::unique_ptr<Cublas>> load() {
    return Cublas::load(fakeComputeDriver(), {LOWBIT_FAKE_CUBLASLT});
  }
  void failWith(const char *function, int status) {
    std::strncpy(fake_->failFunction, function, sizeof(fake_->failFunction) - 1);
    fake_->failStatus = status;
  }

  // X[M, K] and W[N, K] with distinct entries, row-major, and Y for them.
  struct Problem {
    int64_t m = 3, n = 5, k = 7;
    bool bf16 = false;
    std::vector<uint16_t> x, w, y;
    std::vector<double> expected; // row-major [M, N]
  };
  static Problem problem(bool bf16) {
    Problem p;
    p.bf16 = bf16;
    std::vector<double> x(static_cast<size_t>(p.m * p.k)), w(static_cast<size_t>(p.n * p.k));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<double>(static_cast<int>(i % 11) - 5) / 8;
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = static_cast<double>(static_cast<int>((i * 3) % 13) - 6) / 8;
    for (double v : x)
      p.x.push_back(bits(v, bf16));
    for (double v : w)
      p.w.push_back(bits(v, bf16));
    p.y.assign(static_cast<size_t>(p.m * p.n), 0xFFFF); // NaN until written
    for (int64_t r = 0; r < p.m; ++r)
      for (int64_t c = 0; c < p.n; ++c) {
        double sum = 0;
        for (int64_t i = 0; i < p.k; ++i)
          sum += x[static_cast<size_t>(r * p.k + i)] * w[static_cast<size_t>(c * p.k + i)];
        p.expected.push_back(sum);
      }
    return p;
  }
  // The fake driver's device pointers are host pointers.
  static CUdeviceptr device(std::vector<uint16_t> &v) {
    return reinterpret_cast<CUdeviceptr>(v.data());
  }
  static CUresult run(const Cublas &cublas, Problem &p) {
    return cublas.gemm(p.bf16 ? cuda::GemmType::BF16 : cuda::GemmType::F16, p.m, p.n, p.k, device(p.x), device(p.w), device(p.y), nullptr);
  }
  static double value(uint16_t b, bool bf16) {
    return measure::activationValue(b, bf16 ? core::Activation::BF16 : core::Activation::F16);
  }

  void *library_ = nullptr;
  LowbitFakeCublasLtState *fake_ = nullptr;
};

// Non-square M, N and K: a swapped operand, a wrong leading dimension or a
// missing transpose computes other values or fails the fake's shape checks.
TEST_F(CublasFake, ComputesRowMajorYAsXTimesWTransposed) {
  auto cublas = load();
  ASSERT_TRUE(cublas.ok()) << cublas.error();
  for (bool bf16 : {false, true}) {
    Problem p = problem(bf16);
    ASSERT_EQ(run(**cublas, p), CUDA_SUCCESS) << (*cublas)->lastError();
    EXPECT_EQ((*cublas)->lastError(), "");
    for (size_t i = 0; i < p.y.size(); ++i)
      EXPECT_EQ(value(p.y[i], bf16), p.expected[i]) << (bf16 ? "bf16" : "f16") << " at " << i;
  }
}

TEST_F(CublasFake, GivesTheHeuristicAndTheMatmulItsWorkspace) {
  auto cublas = load();
  ASSERT_TRUE(cublas.ok()) << cublas.error();
  Problem p = problem(false);
  ASSERT_EQ(run(**cublas, p), CUDA_SUCCESS) << (*cublas)->lastError();
  EXPECT_EQ(fake_->preferenceMaxWorkspace, Cublas::kWorkspaceBytes);
  EXPECT_NE(fake_->matmulWorkspace, nullptr);
  EXPECT_EQ(fake_->matmulWorkspaceBytes, Cublas::kWorkspaceBytes);
}

// cuBLASLt's heuristic assumes 256-byte aligned matrices unless told; a
// plan's x, y and workspace are only 16-byte aligned (lowbit_matmul's
// contract), so those get a preference that says so, and a plan of their own.
TEST_F(CublasFake, TellsTheHeuristicHowAlignedTheMatricesAre) {
  auto cublas = load();
  ASSERT_TRUE(cublas.ok()) << cublas.error();
  Problem p = problem(false);
  std::vector<uint16_t> x(p.x.size() + 256), w(p.w.size() + 256), y(p.y.size() + 256);
  auto at = [](std::vector<uint16_t> &v, uintptr_t alignment) {
    uintptr_t base = reinterpret_cast<uintptr_t>(v.data());
    uintptr_t aligned = (base + 255) / 256 * 256 + alignment;
    return reinterpret_cast<uint16_t *>(aligned);
  };
  uint16_t *x256 = at(x, 0), *w256 = at(w, 0), *y256 = at(y, 0);
  std::copy(p.x.begin(), p.x.end(), x256);
  std::copy(p.w.begin(), p.w.end(), w256);
  auto run = [&](uint16_t *xs, uint16_t *ws, uint16_t *ys) {
    return (*cublas)->gemm(p.bf16 ? cuda::GemmType::BF16 : cuda::GemmType::F16, p.m, p.n, p.k, reinterpret_cast<CUdeviceptr>(xs),
                           reinterpret_cast<CUdeviceptr>(ws), reinterpret_cast<CUdeviceptr>(ys),
                           nullptr);
  };
  fake_->preferenceMinAlignment = 0;
  ASSERT_EQ(run(x256, w256, y256), CUDA_SUCCESS) << (*cublas)->lastError();
  EXPECT_EQ(fake_->preferenceMinAlignment, 0u) << "256-byte aligned: the default preference";
  int heuristics = fake_->heuristicCalls;
  uint16_t *y16 = at(y, 16);
  ASSERT_EQ(run(x256, w256, y16), CUDA_SUCCESS) << (*cublas)->lastError();
  EXPECT_EQ(fake_->preferenceMinAlignment, 16u);
  EXPECT_EQ(fake_->heuristicCalls, heuristics + 1) << "another alignment, another plan";
  for (int64_t i = 0; i < p.m * p.n; ++i)
    EXPECT_NEAR(value(y16[i], false), p.expected[static_cast<size_t>(i)], 1e-2) << i;
}

// The heuristic is host work: once per shape, not on every captured launch.
TEST_F(CublasFake, QueriesTheHeuristicOncePerShape) {
  auto cublas = load();
  ASSERT_TRUE(cublas.ok()) << cublas.error();
  Problem p = problem(false);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run(**cublas, p), CUDA_SUCCESS) << (*cublas)->lastError();
  EXPECT_EQ(fake_->heuristicCalls, 1);
  EXPECT_EQ(fake_->matmulCalls, 3);
  p.m = 2;
  ASSERT_EQ(run(**cublas, p), CUDA_SUCCESS) << (*cublas)->lastError();
  EXPECT_EQ(fake_->heuristicCalls, 2);
}

TEST_F(CublasFake, ReleasesEveryHandleAndDescriptor) {
  {
    auto cublas = load();
    ASSERT_TRUE(cublas.ok()) << cublas.error();
    Problem p = problem(false);
    ASSERT_EQ(run(**cublas, p), CUDA_SUCCESS) << (*cublas)->lastError();
    p.bf16 = true;
    ASSERT_EQ(run(**cublas, p), CUDA_SUCCESS) << (*cublas)->lastError();
    EXPECT_GT(fake_->alive, 2);
  }
  EXPECT_EQ(fake_->alive, 0);
}

TEST_F(CublasFake, AFailingLoadNamesTheCallAndItsStatus) {
  failWith("cublasLtCreate", 1);
  auto cublas = load();
  ASSERT_FALSE(cublas.ok());
  EXPECT_EQ(cublas.error(), "cublasLtCreate: status 1 (CUBLAS_STATUS_NOT_INITIALIZED)");
  failWith("cublasLtMatmulPreferenceSetAttribute", 7);
  cublas = load();
  ASSERT_FALSE(cublas.ok());
  EXPECT_EQ(cublas.error(),
            "cublasLtMatmulPreferenceSetAttribute: status 7 (CUBLAS_STATUS_INVALID_VALUE)");
  EXPECT_EQ(fake_->alive, 0); // the handle and preference made before went again
}

TEST_F(CublasFake, AFailingMatmulNamesTheCallAndItsStatus) {
  auto cublas = load();
  ASSERT_TRUE(cublas.ok()) << cublas.error();
  Problem p = problem(false);
  failWith("cublasLtMatmul", 13);
  EXPECT_NE(run(**cublas, p), CUDA_SUCCESS);
  EXPECT_EQ((*cublas)->lastError(), "cublasLtMatmul: status 13 (CUBLAS_STATUS_EXECUTION_FAILED)");
  failWith("", 0);
  EXPECT_EQ(run(**cublas, p), CUDA_SUCCESS);
  EXPECT_EQ((*cublas)->lastError(), ""); // only the latest call's reason
}

// A plan that fails part-way keeps nothing it made, and the next call for
// the shape tries again.
TEST_F(CublasFake, AFailedPlanIsUndoneAndRetried) {
  auto cublas = load();
  ASSERT_TRUE(cublas.ok()) << cublas.error();
  const int aliveAfterLoad = fake_->alive; // the handle and the preference
  Problem p = problem(false);
  failWith("cublasLtMatrixLayoutCreate", 3);
  EXPECT_NE(run(**cublas, p), CUDA_SUCCESS);
  EXPECT_EQ((*cublas)->lastError(),
            "cublasLtMatrixLayoutCreate: status 3 (CUBLAS_STATUS_ALLOC_FAILED)");
  EXPECT_EQ(fake_->alive, aliveAfterLoad);
  failWith("", 0);
  fake_->noAlgorithm = 1;
  EXPECT_NE(run(**cublas, p), CUDA_SUCCESS);
  EXPECT_NE(
      (*cublas)->lastError().find("cublasLtMatmulAlgoGetHeuristic: no algorithm for f16 M = 3, "
                                  "N = 5, K = 7"),
      std::string::npos)
      << (*cublas)->lastError();
  EXPECT_EQ(fake_->alive, aliveAfterLoad);
  fake_->noAlgorithm = 0;
  EXPECT_EQ(run(**cublas, p), CUDA_SUCCESS) << (*cublas)->lastError();
}

// The bench's path: a timing through the fixture, and a failure that reaches
// the report as "cuBLAS: <call>: status <n> ...".
TEST_F(CublasFake, TheFixtureTimesItAndReportsWhyItFailed) {
  auto cublas = load();
  ASSERT_TRUE(cublas.ok()) << cublas.error();
  measure::FixtureOptions options;
  options.rotationBytes = 1; // two copies of the dense weights
  options.replays = 7;
  auto fixture = measure::BenchFixture::create(
      fakeComputeDriver(), tuner::testing::w4a16(128, 256, "cublas-test"), options);
  ASSERT_TRUE(fixture.ok()) << fixture.error();
  auto timing = (*fixture)->cublasTiming(**cublas, 3);
  ASSERT_TRUE(timing.ok()) << timing.error();
  EXPECT_GT(timing->medianUs, 0);
  EXPECT_EQ(fake_->heuristicCalls, 1);
  EXPECT_GT(fake_->matmulCalls, 1);

  failWith("cublasLtMatmul", 13);
  auto failed = (*fixture)->cublasTiming(**cublas, 3);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "cuBLAS: cublasLtMatmul: status 13 (CUBLAS_STATUS_EXECUTION_FAILED)");
}

} // namespace
} // namespace lowbit::testing
