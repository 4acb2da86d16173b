// A stream-K kernel through the C API, against the fake driver
// (FakeDriver.cpp): the plan sizes its workspace for one block an SM,
// lowbit_matmul clears the blocks' flags on the call's stream and then
// launches the kernel with the workspace after M. A workspace that is
// missing or too small is the call's error, before anything runs, unless
// another range's kernel, which needs none, can serve the call instead.
#include "lowbit/lowbit.h"
#include "runtime/cuda/Driver.h"
#include "tests/unit/runtime/api/FakeDriverLaunch.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace lowbit::api::testing {
namespace {

class FakeDriverStreamK : public ::testing::Test {
protected:
  // 256 column tiles of 4 and 64 K tiles: 132 blocks (the fake's SMs) at
  // every M. A block's partials: 4 slices x 64 floats a lane of one warp.
  static constexpr int64_t n = 1024, k = 4096, blocks = 132;
  static constexpr int64_t partialBytes = 4 * 64 * 32 * 4, flagBytes = 4;

  void SetUp() override {
    void *handle = dlopen(LOWBIT_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(handle, nullptr) << "cannot load the fake driver " << LOWBIT_FAKE_CUDA_PATH;
    auto last = reinterpret_cast<const LowbitFakeLaunch *(*)()>(
        dlsym(handle, "lowbit_fake_cuda_last_launch"));
    ASSERT_NE(last, nullptr);
    launch = last();
    std::string whyNot;
    ASSERT_NE(cuda::loadDriver(&whyNot), nullptr) << whyNot;
    Expected<db::DeviceFingerprint> device = db::readFingerprint(0);
    ASSERT_TRUE(device.ok()) << device.error();
  }
  // The plan's table: stream-K from M = 1 (alone, or with a grid kernel
  // that measured at M = 256 but serves no range), or a grid kernel for
  // M < 64 and stream-K from 64.
public:
  enum class Table { StreamKOnly, MeasuredGridKernel, GridRangeBelow };

protected:
  void makePlan(Table table) {
    Expected<db::DeviceFingerprint> device = db::readFingerprint(0);
    ASSERT_TRUE(device.ok()) << device.error();
    path = dir.file("stream-k-" + std::to_string(static_cast<int>(table)) + ".db");
    {
      db::Database database = openOrDie(path);
      kernels::ProblemDesc problem = w4a16Problem(n, k);
      FakeKernel streamK{"sk_stream_k", "sm_90a", "wgmma", kLayoutA, 128};
      streamK.scheduler = "stream_k";
      std::string id = addKernel(database, problem, streamK);
      std::vector<db::DispatchRange> ranges{{1, std::nullopt, id}};
      FakeKernel grid{"sk_grid", "sm_90a", "wgmma", kLayoutA, 128};
      if (table == Table::GridRangeBelow)
        ranges = {{1, 64, addKernel(database, problem, grid)}, {64, std::nullopt, id}};
      ASSERT_TRUE(database.putDevice(*device).ok());
      if (table == Table::MeasuredGridKernel) {
        db::ResultRecord measured;
        measured.kernelId = addKernel(database, problem, grid);
        measured.deviceId = device->id();
        measured.m = 256;
        measured.medianUs = 50;
        measured.passed = true;
        measured.runId = "test";
        ASSERT_TRUE(database.addResult(measured).ok());
      }
      ASSERT_TRUE(
          database
              .setDispatch(db::problemIdForSignature(core::signature(problem)), device->id(), ranges)
              .ok());
    }
    ASSERT_EQ(createContext(path, &context), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
    lowbit_problem p = w4a16Abi(n, k);
    ASSERT_EQ(lowbit_plan_create(context, &p, &plan), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  }
  void TearDown() override {
    lowbit_plan_destroy(plan);
    lowbit_context_destroy(context);
  }

  const LowbitFakeLaunch *launch = nullptr;
  TempDir dir;
  std::string path;
  lowbit_context *context = nullptr;
  lowbit_plan *plan = nullptr;
};

TEST_F(FakeDriverStreamK, ClearsTheFlagsThenLaunchesWithTheWorkspace) {
  makePlan(Table::StreamKOnly);
  const size_t needed = static_cast<size_t>(blocks * (partialBytes + flagBytes));
  size_t weightBytes = 0, scaleBytes = 0, workspaceBytes = 0;
  ASSERT_EQ(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, nullptr, &workspaceBytes),
            LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(workspaceBytes, needed);
  size_t atM = 0;
  ASSERT_EQ(lowbit_plan_workspace_bytes(plan, 4096, &atM), LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(atM, needed);
  lowbit_choice choice;
  std::memset(&choice, 0, sizeof(choice));
  choice.struct_size = sizeof(choice);
  ASSERT_EQ(lowbit_plan_explain(plan, 64, &choice), LOWBIT_STATUS_SUCCESS);
  EXPECT_NE(std::strstr(choice.notes, "stream-K"), nullptr) << choice.notes;

  std::vector<uint8_t> packed(weightBytes), scales(scaleBytes), workspace(needed + 16);
  uint8_t *aligned = workspace.data() + (16 - address(workspace.data()) % 16) % 16;
  lowbit_weights w{sizeof(lowbit_weights), packed.data(), packed.size(), 0};
  ASSERT_EQ(lowbit_plan_layout_id(plan, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  std::vector<uint16_t> x(static_cast<size_t>(64 * k)), y(static_cast<size_t>(64 * n));
  std::memset(aligned, 0xFF, needed); // garbage, as a fresh workspace holds
  const_cast<LowbitFakeLaunch *>(launch)->history[0] = 0;
  ASSERT_EQ(lowbit_matmul(plan, 64, x.data(), &w, scales.data(), nullptr, y.data(), aligned, needed,
                          nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(launch->history, "memset;fake_sk_stream_k;");
  EXPECT_EQ(launch->memsetAddress, address(aligned) + blocks * partialBytes);
  EXPECT_EQ(launch->memsetValue, 0u);
  EXPECT_EQ(launch->memsetCount, static_cast<unsigned long long>(blocks));
  EXPECT_EQ(launch->workspace, address(aligned));
  EXPECT_EQ(launch->grid[0], static_cast<unsigned>(blocks));
  EXPECT_EQ(launch->m, 64);

  // Too small, missing or misaligned: the call's error, and nothing runs.
  const int launches = launch->launches;
  EXPECT_EQ(lowbit_matmul(plan, 64, x.data(), &w, scales.data(), nullptr, y.data(), aligned,
                          needed - 1, nullptr),
            LOWBIT_STATUS_BUFFER_TOO_SMALL);
  EXPECT_NE(std::strstr(lowbit_last_error(), "partial sums"), nullptr) << lowbit_last_error();
  EXPECT_EQ(
      lowbit_matmul(plan, 64, x.data(), &w, scales.data(), nullptr, y.data(), nullptr, 0, nullptr),
      LOWBIT_STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(lowbit_matmul(plan, 64, x.data(), &w, scales.data(), nullptr, y.data(), aligned + 4,
                          needed, nullptr),
            LOWBIT_STATUS_MISALIGNED);
  EXPECT_EQ(launch->launches, launches);
  EXPECT_NE(std::strstr(choice.notes, "requires it"), nullptr) << choice.notes;
}

// A call whose workspace is too small for stream-K runs the range's
// fallback instead, as the plan's notes say: another range's kernel, or
// the one that measured best in the range without a workspace.
class FakeDriverStreamKFallback : public FakeDriverStreamK,
                                  public ::testing::WithParamInterface<FakeDriverStreamK::Table> {
};

TEST_P(FakeDriverStreamKFallback, ServesTheRangeWithItsFallbackWithoutAWorkspace) {
  makePlan(GetParam());
  const size_t needed = static_cast<size_t>(blocks * (partialBytes + flagBytes));
  size_t weightBytes = 0, scaleBytes = 0, workspaceBytes = 0;
  ASSERT_EQ(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, nullptr, &workspaceBytes),
            LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(workspaceBytes, needed);
  lowbit_choice choice;
  std::memset(&choice, 0, sizeof(choice));
  choice.struct_size = sizeof(choice);
  ASSERT_EQ(lowbit_plan_explain(plan, 256, &choice), LOWBIT_STATUS_SUCCESS);
  EXPECT_NE(std::strstr(choice.notes, "with less, fake_sk_grid serves them"), nullptr)
      << choice.notes;

  std::vector<uint8_t> packed(weightBytes), scales(scaleBytes), workspace(needed + 16);
  uint8_t *aligned = workspace.data() + (16 - address(workspace.data()) % 16) % 16;
  lowbit_weights w{sizeof(lowbit_weights), packed.data(), packed.size(), 0};
  ASSERT_EQ(lowbit_plan_layout_id(plan, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  std::vector<uint16_t> x(static_cast<size_t>(256 * k)), y(static_cast<size_t>(256 * n));
  for (size_t bytes : {size_t{0}, needed - 1}) {
    const_cast<LowbitFakeLaunch *>(launch)->history[0] = 0;
    ASSERT_EQ(lowbit_matmul(plan, 256, x.data(), &w, scales.data(), nullptr, y.data(),
                            bytes ? aligned : nullptr, bytes, nullptr),
              LOWBIT_STATUS_SUCCESS)
        << lowbit_last_error();
    EXPECT_STREQ(launch->history, "fake_sk_grid;") << bytes << " bytes of workspace";
  }
  const_cast<LowbitFakeLaunch *>(launch)->history[0] = 0;
  ASSERT_EQ(lowbit_matmul(plan, 256, x.data(), &w, scales.data(), nullptr, y.data(), aligned,
                          needed, nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(launch->history, "memset;fake_sk_stream_k;");
}

INSTANTIATE_TEST_SUITE_P(Tables, FakeDriverStreamKFallback,
                         ::testing::Values(FakeDriverStreamK::Table::MeasuredGridKernel,
                                           FakeDriverStreamK::Table::GridRangeBelow));

} // namespace
} // namespace lowbit::api::testing
