// The dense path in a plan (no device needed): a tuned table that serves
// large M with a dequant kernel makes the plan ask for a workspace of the
// dense weights plus cuBLASLt's, falls back to its nearest other kernel
// when lowbit_matmul's workspace is smaller, and says both in its notes.
#include "runtime/api/Dispatch.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/api/PlanRanges.h"
#include "runtime/cuda/CublasLt.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <gtest/gtest.h>

namespace lowbit::api::testing {
namespace {

void *fakeDevicePointer(uintptr_t address) { return reinterpret_cast<void *>(address); }

class DensePathTest : public ::testing::Test {
protected:
  // A table: gemv for M < 9, mma for 9 <= M < 256, the dense path from 256
  // (or, with `denseEverywhere`, the dense path for every M).
  PlanSpec plan(bool denseEverywhere = false) {
    Result<PlanSpec> built = build(w4a16Problem(), denseEverywhere);
    EXPECT_TRUE(built.ok()) << built.error().message;
    return std::move(*built);
  }

  Result<PlanSpec> build(const kernels::ProblemDesc &problem, bool denseEverywhere) {
    std::string path = dir.file(problem.name + (denseEverywhere ? ".everywhere.db" : ".db"));
    {
      db::Database database = openOrDie(path);
      std::string small = addKernel(database, problem, {"small", "sm_90a", "gemv"});
      std::string mid = addKernel(database, problem, {"mid", "sm_90a", "mma", kLayoutA, 16});
      std::string dense =
          addKernel(database, problem, {"dense", "sm_90a", "dequant", kLayoutA, 16777216});
      EXPECT_TRUE(database.putDevice(h100()).ok());
      std::vector<db::DispatchRange> rows = {{1, 9, small}, {9, 256, mid}, {256, std::nullopt, dense}};
      if (denseEverywhere)
        rows = {{1, std::nullopt, dense}};
      EXPECT_TRUE(database
                      .setDispatch(db::problemIdForSignature(core::signature(problem)),
                                   h100().id(), rows)
                      .ok());
    }
    auto database = db::Database::open(path, {db::OpenMode::ReadOnly});
    EXPECT_TRUE(database.ok()) << database.error();
    return buildPlanSpec({&*database}, problem, h100());
  }

  MatmulArgs argsFor(const PlanSpec &spec, int64_t m) {
    weights.struct_size = sizeof(weights);
    weights.data = fakeDevicePointer(0x10000);
    weights.bytes = static_cast<size_t>(spec.weightBytes);
    weights.layout_id = spec.layoutId;
    MatmulArgs a;
    a.m = m;
    a.x = fakeDevicePointer(0x20000);
    a.w = &weights;
    a.scales = fakeDevicePointer(0x30000);
    a.y = fakeDevicePointer(0x40000);
    return a;
  }

  // The kernel lowbit_matmul would launch, by name, or the failure.
  std::string launched(const PlanSpec &spec, const MatmulArgs &a) {
    int range = -1;
    size_t kernel = 0;
    std::string why;
    lowbit_status status = checkMatmul(spec, a, &range, &kernel, &why);
    return status == LOWBIT_STATUS_SUCCESS ? spec.kernels[kernel].name
                                           : "status " + std::to_string(status) + ": " + why;
  }

  TempDir dir;
  lowbit_weights weights{};
};

TEST_F(DensePathTest, TheWorkspaceHoldsTheDenseWeightsThenCublasLtsOwn) {
  PlanSpec spec = plan();
  ASSERT_TRUE(spec.hasDenseRange());
  const int64_t dense = 2 * spec.problem.n * spec.problem.k; // f16
  EXPECT_EQ(spec.denseWeightBytes, (dense + 255) / 256 * 256);
  EXPECT_EQ(spec.workspaceBytes,
            spec.denseWeightBytes + static_cast<int64_t>(cuda::CublasLt::kWorkspaceBytes));
  ASSERT_EQ(spec.ranges.size(), 3u);
  const PlannedRange &large = spec.ranges[2];
  EXPECT_TRUE(spec.kernels[large.kernel].dense);
  ASSERT_GE(large.fallback, 0);
  // The range below's kernel: what serves the M just under it.
  EXPECT_EQ(spec.kernels[static_cast<size_t>(large.fallback)].name,
            spec.kernels[spec.ranges[1].kernel].name);
  EXPECT_NE(spec.notesText.find("the dense path"), std::string::npos) << spec.notesText;
  EXPECT_NE(spec.notesText.find(std::to_string(spec.workspaceBytes)), std::string::npos)
      << spec.notesText;
}

TEST_F(DensePathTest, AWorkspaceLargeEnoughRunsTheDensePath) {
  PlanSpec spec = plan();
  MatmulArgs a = argsFor(spec, 300);
  a.workspace = fakeDevicePointer(0x1000000);
  a.workspaceBytes = static_cast<size_t>(spec.workspaceBytes);
  EXPECT_EQ(launched(spec, a), spec.kernels[spec.ranges[2].kernel].name);
  // Smaller M never needs it.
  MatmulArgs small = argsFor(spec, 16);
  EXPECT_EQ(launched(spec, small), spec.kernels[spec.ranges[1].kernel].name);
}

TEST_F(DensePathTest, ASmallerWorkspaceFallsBackToTheNearestKernel) {
  PlanSpec spec = plan();
  const std::string fallback = spec.kernels[static_cast<size_t>(spec.ranges[2].fallback)].name;
  MatmulArgs a = argsFor(spec, 4096);
  EXPECT_EQ(launched(spec, a), fallback); // no workspace at all
  a.workspace = fakeDevicePointer(0x1000000);
  a.workspaceBytes = static_cast<size_t>(spec.workspaceBytes) - 1;
  EXPECT_EQ(launched(spec, a), fallback);
}

TEST_F(DensePathTest, WithoutAnotherKernelTheWorkspaceIsRequired) {
  PlanSpec spec = plan(/*denseEverywhere=*/true);
  ASSERT_EQ(spec.ranges.size(), 1u);
  EXPECT_LT(spec.ranges[0].fallback, 0);
  MatmulArgs a = argsFor(spec, 1);
  std::string result = launched(spec, a);
  EXPECT_NE(result.find("status " + std::to_string(LOWBIT_STATUS_BUFFER_TOO_SMALL)),
            std::string::npos)
      << result;
  EXPECT_NE(result.find("needs " + std::to_string(spec.workspaceBytes)), std::string::npos)
      << result;
  a.workspace = fakeDevicePointer(0x1000008); // enough bytes, not 16-byte aligned
  a.workspaceBytes = static_cast<size_t>(spec.workspaceBytes);
  EXPECT_NE(launched(spec, a).find("status " + std::to_string(LOWBIT_STATUS_MISALIGNED)),
            std::string::npos);
  a.workspace = fakeDevicePointer(0x1000000);
  EXPECT_EQ(launched(spec, a), spec.kernels[0].name);
}

TEST_F(DensePathTest, WithoutCublasLtTheFallbacksServe) {
  PlanSpec spec = plan();
  const std::string fallback = spec.kernels[static_cast<size_t>(spec.ranges[2].fallback)].name;
  ASSERT_TRUE(dropDenseRanges(spec, "cuBLASLt not found").ok());
  EXPECT_FALSE(spec.hasDenseRange());
  EXPECT_EQ(spec.workspaceBytes, 0);
  EXPECT_EQ(spec.kernels[spec.ranges.back().kernel].name, fallback);
  EXPECT_EQ(spec.ranges.back().mHi, -1);
  EXPECT_NE(spec.notesText.find("cuBLASLt not found"), std::string::npos) << spec.notesText;

  PlanSpec only = plan(/*denseEverywhere=*/true);
  ApiStatus dropped = dropDenseRanges(only, "cuBLASLt not found");
  ASSERT_FALSE(dropped.ok());
  EXPECT_EQ(dropped.status(), LOWBIT_STATUS_NO_KERNEL);
  EXPECT_NE(dropped.error().message.find("cuBLASLt not found"), std::string::npos);
}

TEST_F(DensePathTest, QuantizedActivationsNeverTakeIt) {
  // cuBLASLt multiplies f16 or bf16 x: s8 x goes to the fallback, with no
  // workspace, even where a tuned table chose the dense path.
  Result<PlanSpec> spec = build(w4a8Problem(), /*denseEverywhere=*/false);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_FALSE(spec->hasDenseRange());
  EXPECT_EQ(spec->workspaceBytes, 0);
  EXPECT_EQ(spec->denseWeightBytes, 0);
  EXPECT_EQ(spec->kernels[spec->ranges.back().kernel].name, "fake_mid");
  EXPECT_EQ(spec->ranges.back().mHi, -1);
  EXPECT_NE(spec->notesText.find("not s8"), std::string::npos) << spec->notesText;
  EXPECT_EQ(spec->notesText.find("which needs a workspace"), std::string::npos) << spec->notesText;

  Result<PlanSpec> only = build(w4a8Problem(), /*denseEverywhere=*/true);
  ASSERT_FALSE(only.ok());
  EXPECT_EQ(only.error().status, LOWBIT_STATUS_NO_KERNEL);
  EXPECT_NE(only.error().message.find("not s8"), std::string::npos) << only.error().message;
}

TEST_F(DensePathTest, IsNeverASubstituteForAnotherLayout) {
  // gemv in layout B at small M, mma in layout A above: the plan must swap
  // one of them for a kernel of the other's layout, and the dense kernel
  // (layout A) is not one it may take.
  std::string path = dir.file("substitute.db");
  kernels::ProblemDesc problem = w4a16Problem();
  {
    db::Database database = openOrDie(path);
    std::string small = addKernel(database, problem, {"small", "sm_90a", "gemv", kLayoutB});
    std::string mid = addKernel(database, problem, {"mid", "sm_90a", "mma", kLayoutA, 16});
    addKernel(database, problem, {"dense", "sm_90a", "dequant", kLayoutA, 16777216});
    ASSERT_TRUE(database.putDevice(h100()).ok());
    ASSERT_TRUE(database
                    .setDispatch(db::problemIdForSignature(core::signature(problem)),
                                 h100().id(), {{1, 9, small}, {9, std::nullopt, mid}})
                    .ok());
  }
  auto database = db::Database::open(path, {db::OpenMode::ReadOnly});
  ASSERT_TRUE(database.ok()) << database.error();
  Result<PlanSpec> built = buildPlanSpec({&*database}, problem, h100());
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_FALSE(built->hasDenseRange());
  EXPECT_EQ(built->workspaceBytes, 0);
}

} // namespace
} // namespace lowbit::api::testing
