// The dense path through the C API, against the fake driver (FakeDriver.cpp)
// and the stand-in libcuBLASLt (tests/unit/compiler/FakeCublasLt.cpp), which
// $LOWBIT_CUBLASLT points the runtime to. The fake driver records launches
// without running them and the fake cuBLASLt computes on the CPU, so host
// buffers stand in for device memory: the "dequantized" weights are what the
// test writes into the workspace, and y must be x times them.
#include "lowbit/lowbit.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/Driver.h"
#include "tests/unit/compiler/FakeCublasLt.h"
#include "tests/unit/runtime/api/FakeDriverLaunch.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace lowbit::api::testing {
namespace {

template <typename T> T *symbol(const char *library, const char *name) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  return handle ? reinterpret_cast<T *>(dlsym(handle, name)) : nullptr;
}

// A plan for 128 x 256 W4 g128 whose table serves M < 4 with an mma kernel
// and larger M with the dense path, made with $LOWBIT_CUBLASLT = `cublasLt`.
class FakeDriverDense : public ::testing::Test {
protected:
  static constexpr int64_t n = 128, k = 256, denseFrom = 4;

  void SetUp() override {
    // Loaded first under the soname libcuda.so.1, so that the runtime's
    // dlopen finds the fake even where a real driver is installed.
    ASSERT_NE(dlopen(LOWBIT_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL), nullptr)
        << "cannot load the fake driver " << LOWBIT_FAKE_CUDA_PATH << ": " << dlerror();
    std::string whyNot;
    ASSERT_NE(cuda::loadDriver(&whyNot), nullptr) << whyNot;
    Expected<db::DeviceFingerprint> device = db::readFingerprint(0);
    ASSERT_TRUE(device.ok()) << device.error();
    path = dir.file("dense.db");
    db::Database database = openOrDie(path);
    kernels::ProblemDesc problem = w4a16Problem(n, k);
    std::string mid = addKernel(database, problem, {"mid", "sm_90a", "mma", kLayoutA, 16});
    std::string dense =
        addKernel(database, problem, {"dense", "sm_90a", "dequant", kLayoutA, 16777216});
    ASSERT_TRUE(database.putDevice(*device).ok());
    ASSERT_TRUE(database
                    .setDispatch(db::problemIdForSignature(core::signature(problem)), device->id(),
                                 {{1, denseFrom, mid}, {denseFrom, std::nullopt, dense}})
                    .ok());
  }
  void TearDown() override {
    lowbit_plan_destroy(plan);
    lowbit_context_destroy(context);
  }

  void makePlan(const char *cublasLt) {
    ASSERT_EQ(setenv("LOWBIT_CUBLASLT", cublasLt, 1), 0);
    ASSERT_EQ(createContext(path, &context), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
    lowbit_problem p = w4a16Abi(n, k);
    lowbit_status made = lowbit_plan_create(context, &p, &plan);
    unsetenv("LOWBIT_CUBLASLT");
    ASSERT_EQ(made, LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  }

  lowbit_choice explain(int64_t m) {
    lowbit_choice choice;
    std::memset(&choice, 0, sizeof(choice));
    choice.struct_size = sizeof(choice);
    EXPECT_EQ(lowbit_plan_explain(plan, m, &choice), LOWBIT_STATUS_SUCCESS);
    return choice;
  }

  TempDir dir;
  std::string path;
  lowbit_context *context = nullptr;
  lowbit_plan *plan = nullptr;
};

TEST_F(FakeDriverDense, RunsTheDequantKernelIntoTheWorkspaceThenCublasLt) {
  auto last =
      symbol<const LowbitFakeLaunch *()>(LOWBIT_FAKE_CUDA_PATH, "lowbit_fake_cuda_last_launch");
  ASSERT_NE(last, nullptr) << "cannot load the fake driver " << LOWBIT_FAKE_CUDA_PATH;
  const LowbitFakeLaunch *launch = last();
  auto *lt = symbol<LowbitFakeCublasLtState>(LOWBIT_FAKE_CUBLASLT, LOWBIT_FAKE_CUBLASLT_STATE);
  ASSERT_NE(lt, nullptr) << "cannot load the fake cuBLASLt " << LOWBIT_FAKE_CUBLASLT;
  makePlan(LOWBIT_FAKE_CUBLASLT);
  if (HasFatalFailure())
    return;

  size_t weightBytes = 0, scaleBytes = 0, zeroBytes = 0, workspaceBytes = 0;
  ASSERT_EQ(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, &zeroBytes, &workspaceBytes),
            LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(workspaceBytes, static_cast<size_t>(n * k * 2) + cuda::CublasLt::kWorkspaceBytes);
  lowbit_choice choice = explain(300);
  EXPECT_STREQ(choice.family, "dequant");
  EXPECT_NE(std::strstr(choice.notes, "fake_mid serves them"), nullptr) << choice.notes;

  // Exact f16 values: x all 1, W's rows 1, 0.5 or -1, so y = 256, 128 or -256.
  constexpr int64_t m = 8;
  std::vector<uint16_t> x(static_cast<size_t>(m * k), 0x3C00), y(static_cast<size_t>(m * n), 0);
  std::vector<uint16_t> workspace(workspaceBytes / 2 + 8, 0);
  uint16_t *aligned = workspace.data() + (16 - address(workspace.data()) % 16) % 16 / 2;
  const uint16_t rowValue[3] = {0x3C00, 0x3800, 0xBC00};
  const uint16_t want[3] = {0x5C00, 0x5800, 0xDC00};
  for (int64_t j = 0; j < n; ++j)
    for (int64_t l = 0; l < k; ++l)
      aligned[j * k + l] = rowValue[j % 3];
  std::vector<uint8_t> packed(weightBytes, 0), scales(scaleBytes, 0);
  lowbit_weights w{sizeof(lowbit_weights), packed.data(), packed.size(), 0};
  ASSERT_EQ(lowbit_plan_layout_id(plan, &w.layout_id), LOWBIT_STATUS_SUCCESS);

  const int calls = lt->matmulCalls;
  ASSERT_EQ(lowbit_matmul(plan, m, x.data(), &w, scales.data(), nullptr, y.data(), aligned,
                          workspaceBytes, nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(launch->function, "fake_dense");
  EXPECT_EQ(launch->pointers[3], address(aligned)) << "the kernel writes the workspace";
  EXPECT_EQ(launch->grid[1], 1u) << "one row of blocks, whatever M";
  ASSERT_EQ(lt->matmulCalls, calls + 1);
  EXPECT_EQ(lt->matmulWorkspace,
            reinterpret_cast<const char *>(aligned) + (n * k * 2 + 255) / 256 * 256);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(y[static_cast<size_t>(i * n + j)], want[j % 3]) << "y[" << i << ", " << j << "]";

  // A workspace too small: the range below's kernel, no cuBLASLt.
  ASSERT_EQ(lowbit_matmul(plan, m, x.data(), &w, scales.data(), nullptr, y.data(), aligned,
                          workspaceBytes - 1, nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(launch->function, "fake_mid");
  EXPECT_EQ(launch->pointers[3], address(y.data()));
  EXPECT_EQ(lt->matmulCalls, calls + 1);

  // cuBLASLt's failure is the call's, with its reason.
  std::strncpy(lt->failFunction, "cublasLtMatmul", sizeof(lt->failFunction) - 1);
  lt->failStatus = 13;
  EXPECT_EQ(lowbit_matmul(plan, m, x.data(), &w, scales.data(), nullptr, y.data(), aligned,
                          workspaceBytes, nullptr),
            LOWBIT_STATUS_LAUNCH_FAILED);
  EXPECT_NE(std::strstr(lowbit_last_error(), "status 13"), nullptr) << lowbit_last_error();
  lt->failFunction[0] = 0;
}

// Without cuBLASLt the plan serves the dense range with its fallback, and
// says so.
TEST_F(FakeDriverDense, WithoutCublasLtTheFallbackServes) {
  makePlan("libno-such-cublaslt.so");
  if (HasFatalFailure())
    return;
  size_t workspaceBytes = 1;
  ASSERT_EQ(lowbit_plan_packed_sizes(plan, nullptr, nullptr, nullptr, &workspaceBytes),
            LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(workspaceBytes, 0u);
  lowbit_choice choice = explain(300);
  EXPECT_STREQ(choice.family, "mma");
  EXPECT_NE(std::strstr(choice.notes, "libno-such-cublaslt.so"), nullptr) << choice.notes;
}

} // namespace
} // namespace lowbit::api::testing
