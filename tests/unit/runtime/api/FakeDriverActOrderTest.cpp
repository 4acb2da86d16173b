// Act-order plans through the C API, against the fake driver (FakeDriver.cpp),
// which runs the gather on host memory standing in for device memory: the
// permutation travels in the packed weights, x[:, perm] lands at the
// workspace's front, and the matmul kernel reads it as x.
#include "lowbit/lowbit.h"
#include "runtime/cuda/Driver.h"
#include "tests/unit/runtime/api/FakeDriverLaunch.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace lowbit::api::testing {
namespace {

class FakeDriverActOrder : public ::testing::Test {
protected:
  static constexpr int64_t n = 128, k = 256;

  void SetUp() override {
    ASSERT_NE(dlopen(LOWBIT_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL), nullptr)
        << "cannot load the fake driver " << LOWBIT_FAKE_CUDA_PATH << ": " << dlerror();
    auto last = reinterpret_cast<const LowbitFakeLaunch *(*)()>(
        dlsym(dlopen(LOWBIT_FAKE_CUDA_PATH, RTLD_NOW), "lowbit_fake_cuda_last_launch"));
    ASSERT_NE(last, nullptr);
    launch = last();
    std::string whyNot;
    ASSERT_NE(cuda::loadDriver(&whyNot), nullptr) << whyNot;
    path = dir.file("act-order.db");
    db::Database database = openOrDie(path);
    addKernel(database, w4a16Problem(n, k), {"gemv", "sm_90a", "gemv", kLayoutA, 1});
    ASSERT_EQ(createContext(path, &context), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  }
  void TearDown() override {
    lowbit_plan_destroy(plan);
    lowbit_context_destroy(context);
  }

  lowbit_problem problem(int actOrder) const {
    lowbit_problem p = w4a16Abi(n, k);
    p.act_order = actOrder;
    return p;
  }

  TempDir dir;
  std::string path;
  const LowbitFakeLaunch *launch = nullptr;
  lowbit_context *context = nullptr;
  lowbit_plan *plan = nullptr;
};

TEST_F(FakeDriverActOrder, GathersXThroughThePackedPermutationBeforeTheMatmul) {
  lowbit_problem p = problem(1);
  ASSERT_EQ(lowbit_plan_create(context, &p, &plan), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  size_t weightBytes = 0, workspaceBytes = 1;
  ASSERT_EQ(lowbit_plan_packed_sizes(plan, &weightBytes, nullptr, nullptr, &workspaceBytes),
            LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(workspaceBytes, 0u) << "no dense path";
  // The codes (N * K / 2 bytes, already 256-aligned here), then K int32.
  EXPECT_EQ(weightBytes, size_t(n * k / 2 + k * 4));
  constexpr int64_t m = 3;
  size_t needed = 0;
  ASSERT_EQ(lowbit_plan_workspace_bytes(plan, m, &needed), LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(needed, size_t((m * k * 2 + 255) / 256 * 256));

  std::vector<uint8_t> codes(size_t(n * k), 3), packed(weightBytes + 16, 0);
  uint8_t *weights = aligned16(packed);
  ASSERT_EQ(
      lowbit_pack_weights(plan, codes.data(), weights, weightBytes, LOWBIT_MEMORY_HOST, nullptr),
      LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  std::vector<int32_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(11));
  ASSERT_EQ(
      lowbit_pack_permutation(plan, perm.data(), weights, weightBytes, LOWBIT_MEMORY_HOST, nullptr),
      LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();

  std::vector<uint16_t> x(size_t(m * k) + 8), y(size_t(m * n) + 8), workspace(needed / 2 + 8);
  std::vector<uint8_t> scales(n * 2 * 2 + 16, 0);
  uint16_t *xs = aligned16(x);
  for (int64_t i = 0; i < m * k; ++i)
    xs[i] = uint16_t(i);
  uint16_t *gathered = aligned16(workspace);
  lowbit_weights w{sizeof(lowbit_weights), weights, weightBytes, 0};
  ASSERT_EQ(lowbit_plan_layout_id(plan, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  const int gathers = launch->gatherLaunches;
  ASSERT_EQ(lowbit_matmul(plan, m, xs, &w, aligned16(scales), nullptr, aligned16(y), gathered,
                          needed, nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_EQ(launch->gatherLaunches, gathers + 1);
  EXPECT_EQ(launch->gatherGrid[1], unsigned(m));
  EXPECT_STREQ(launch->function, "fake_gemv");
  EXPECT_EQ(launch->pointers[0], address(gathered)) << "the kernel reads the gathered x";
  for (int64_t row = 0; row < m; ++row)
    for (int64_t j = 0; j < k; ++j)
      ASSERT_EQ(gathered[row * k + j], xs[row * k + perm[size_t(j)]]) << row << ", " << j;

  lowbit_choice choice;
  std::memset(&choice, 0, sizeof(choice));
  choice.struct_size = sizeof(choice);
  ASSERT_EQ(lowbit_plan_explain(plan, 1, &choice), LOWBIT_STATUS_SUCCESS);
  EXPECT_NE(std::strstr(choice.notes, "act-order"), nullptr) << choice.notes;

  // The gathered x must fit: no workspace, or one byte short, is refused.
  for (size_t bytes : {size_t(0), needed - 1}) {
    EXPECT_EQ(lowbit_matmul(plan, m, xs, &w, aligned16(scales), nullptr, aligned16(y),
                            bytes ? gathered : nullptr, bytes, nullptr),
              LOWBIT_STATUS_BUFFER_TOO_SMALL);
    EXPECT_NE(std::strstr(lowbit_last_error(), "lowbit_plan_workspace_bytes"), nullptr)
        << lowbit_last_error();
  }
  // Weights without room for the permutation are another plan's.
  w.bytes = weightBytes - 1;
  EXPECT_EQ(lowbit_matmul(plan, m, xs, &w, aligned16(scales), nullptr, aligned16(y), gathered,
                          needed, nullptr),
            LOWBIT_STATUS_LAYOUT_MISMATCH);
}

TEST_F(FakeDriverActOrder, APermutationMustHoldEveryColumnOnce) {
  lowbit_problem p = problem(1);
  ASSERT_EQ(lowbit_plan_create(context, &p, &plan), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  size_t weightBytes = 0;
  ASSERT_EQ(lowbit_plan_packed_sizes(plan, &weightBytes, nullptr, nullptr, nullptr),
            LOWBIT_STATUS_SUCCESS);
  std::vector<uint8_t> packed(weightBytes);
  std::vector<int32_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  perm[7] = 6;
  EXPECT_EQ(lowbit_pack_permutation(plan, perm.data(), packed.data(), packed.size(),
                                    LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(lowbit_last_error(), "entry 7 is 6"), nullptr) << lowbit_last_error();
  perm[7] = int32_t(k);
  EXPECT_EQ(lowbit_pack_permutation(plan, perm.data(), packed.data(), packed.size(),
                                    LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  perm[7] = 7;
  EXPECT_EQ(lowbit_pack_permutation(plan, perm.data(), packed.data(), packed.size() - 1,
                                    LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(lowbit_pack_permutation(plan, perm.data(), packed.data(), packed.size(),
                                    LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_SUCCESS);
}

TEST_F(FakeDriverActOrder, PlainPlansTakeNoPermutationAndBadFlagsAreRefused) {
  lowbit_problem p = problem(0);
  ASSERT_EQ(lowbit_plan_create(context, &p, &plan), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  size_t weightBytes = 0, needed = 1;
  ASSERT_EQ(lowbit_plan_packed_sizes(plan, &weightBytes, nullptr, nullptr, nullptr),
            LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(weightBytes, size_t(n * k / 2));
  ASSERT_EQ(lowbit_plan_workspace_bytes(plan, 1000, &needed), LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(needed, 0u);
  EXPECT_EQ(lowbit_plan_workspace_bytes(plan, 0, &needed), LOWBIT_STATUS_INVALID_SHAPE);
  std::vector<int32_t> perm(static_cast<size_t>(k), 0);
  std::vector<uint8_t> packed(weightBytes + size_t(k) * 4);
  EXPECT_EQ(lowbit_pack_permutation(plan, perm.data(), packed.data(), packed.size(),
                                    LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(lowbit_last_error(), "act_order = 0"), nullptr);

  lowbit_plan *other = nullptr;
  lowbit_problem bad = problem(2);
  EXPECT_EQ(lowbit_plan_create(context, &bad, &other), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(lowbit_last_error(), "act_order must be 0 or 1"), nullptr);
  // An older header's struct ends before act_order: no act-order.
  lowbit_problem old = problem(1);
  old.struct_size = offsetof(lowbit_problem, act_order);
  ASSERT_EQ(lowbit_plan_create(context, &old, &other), LOWBIT_STATUS_SUCCESS);
  ASSERT_EQ(lowbit_plan_packed_sizes(other, &weightBytes, nullptr, nullptr, nullptr),
            LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(weightBytes, size_t(n * k / 2));
  lowbit_plan_destroy(other);
}

// lowbit_unpack_weights gives back the codes and the permutation the plan
// packed, and checks its buffers like the packers do.
TEST_F(FakeDriverActOrder, UnpackGivesBackTheCodesAndThePermutation) {
  lowbit_problem p = problem(1);
  ASSERT_EQ(lowbit_plan_create(context, &p, &plan), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  size_t weightBytes = 0;
  ASSERT_EQ(lowbit_plan_packed_sizes(plan, &weightBytes, nullptr, nullptr, nullptr),
            LOWBIT_STATUS_SUCCESS);
  std::mt19937 rng(7);
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  for (uint8_t &c : codes)
    c = static_cast<uint8_t>(rng() % 16);
  std::vector<int32_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<uint8_t> packed(weightBytes);
  ASSERT_EQ(lowbit_pack_weights(plan, codes.data(), packed.data(), packed.size(),
                                LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_SUCCESS);
  ASSERT_EQ(lowbit_pack_permutation(plan, perm.data(), packed.data(), packed.size(),
                                    LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_SUCCESS);
  std::vector<uint8_t> codesBack(codes.size(), 0xEE);
  std::vector<int32_t> permBack(perm.size(), -1);
  ASSERT_EQ(lowbit_unpack_weights(plan, packed.data(), packed.size(), codesBack.data(),
                                  codesBack.size(), permBack.data()),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_EQ(codesBack, codes);
  EXPECT_EQ(permBack, perm);
  EXPECT_EQ(lowbit_unpack_weights(plan, packed.data(), packed.size() - 1, codesBack.data(),
                                  codesBack.size(), nullptr),
            LOWBIT_STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(lowbit_unpack_weights(plan, packed.data(), packed.size(), codesBack.data(),
                                  codesBack.size() - 1, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(lowbit_last_error(), "N * K = 32768"), nullptr) << lowbit_last_error();
  EXPECT_EQ(lowbit_unpack_weights(nullptr, packed.data(), packed.size(), codesBack.data(),
                                  codesBack.size(), nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
}

} // namespace
} // namespace lowbit::api::testing
