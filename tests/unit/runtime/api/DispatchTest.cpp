// lowbit_matmul's argument checks and range choice, and host packing, on a
// plan built from a hand-made database (no device needed).
#include "runtime/api/Dispatch.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <gtest/gtest.h>

namespace lowbit::api::testing {
namespace {

// Addresses are only compared and checked for alignment, never dereferenced.
const void *fakeDevicePointer(uintptr_t address) { return reinterpret_cast<const void *>(address); }

class DispatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string path = dir.file("kernels.db");
    kernels::ProblemDesc problem = w4a16Problem();
    {
      db::Database database = openOrDie(path);
      std::string small = addKernel(database, problem, {"small", "sm_90a", "gemv"});
      std::string large = addKernel(database, problem, {"large", "sm_90a", "mma", kLayoutA, 16});
      ASSERT_TRUE(database.putDevice(h100()).ok());
      ASSERT_TRUE(database
                      .setDispatch(db::problemIdForSignature(core::signature(problem)),
                                   h100().id(), {{1, 9, small}, {9, std::nullopt, large}})
                      .ok());
    }
    auto database = db::Database::open(path, {db::OpenMode::ReadOnly});
    ASSERT_TRUE(database.ok()) << database.error();
    Result<PlanSpec> built = buildPlanSpec({&*database}, problem, h100());
    ASSERT_TRUE(built.ok()) << built.error().message;
    spec = std::move(*built);
    weights.struct_size = sizeof(weights);
    weights.data = fakeDevicePointer(0x10000);
    weights.bytes = static_cast<size_t>(spec.weightBytes);
    weights.layout_id = spec.layoutId;
    args.m = 1;
    args.x = fakeDevicePointer(0x20000);
    args.w = &weights;
    args.scales = fakeDevicePointer(0x30000);
    args.y = reinterpret_cast<void *>(0x40000);
  }

  lowbit_status check(const MatmulArgs &a, std::string *why = nullptr) {
    int index = -1;
    std::string ignored;
    return checkMatmul(spec, a, &index, why ? why : &ignored);
  }

  TempDir dir;
  PlanSpec spec;
  lowbit_weights weights{};
  MatmulArgs args;
};

TEST_F(DispatchTest, PicksTheRangeForM) {
  for (int64_t m : {1, 8, 9, 300, 100000}) {
    MatmulArgs a = args;
    a.m = m;
    int index = -1;
    std::string why;
    ASSERT_EQ(checkMatmul(spec, a, &index, &why), LOWBIT_STATUS_SUCCESS) << m << ": " << why;
    EXPECT_EQ(index, m < 9 ? 0 : 1) << m;
    EXPECT_TRUE(why.empty());
  }
}

TEST_F(DispatchTest, RejectsMOutOfRange) {
  for (int64_t m : {int64_t{0}, int64_t{-1}, INT64_MIN}) {
    MatmulArgs a = args;
    a.m = m;
    std::string why;
    EXPECT_EQ(check(a, &why), LOWBIT_STATUS_INVALID_SHAPE) << m;
    EXPECT_NE(why.find("at least 1"), std::string::npos) << why;
  }
  MatmulArgs tooMany = args;
  tooMany.m = 16 * 65535 + 1; // beyond the mma kernel's grid
  std::string why;
  EXPECT_EQ(check(tooMany, &why), LOWBIT_STATUS_INVALID_SHAPE);
  EXPECT_NE(why.find("split the rows"), std::string::npos) << why;
}

TEST_F(DispatchTest, RejectsNullPointers) {
  auto expectNull = [&](MatmulArgs a, const char *name) {
    std::string why;
    EXPECT_EQ(check(a, &why), LOWBIT_STATUS_INVALID_ARGUMENT) << name;
    EXPECT_NE(why.find(name), std::string::npos) << why;
  };
  MatmulArgs a = args;
  a.x = nullptr;
  expectNull(a, "x");
  a = args;
  a.y = nullptr;
  expectNull(a, "y");
  a = args;
  a.w = nullptr;
  expectNull(a, "w");
  a = args;
  a.scales = nullptr;
  expectNull(a, "scales");
  lowbit_weights noData = weights;
  noData.data = nullptr;
  a = args;
  a.w = &noData;
  expectNull(a, "w->data");
  lowbit_weights unsized = weights;
  unsized.struct_size = 0;
  a.w = &unsized;
  expectNull(a, "struct_size");
}

TEST_F(DispatchTest, ZerosMustMatchTheProblem) {
  MatmulArgs a = args;
  a.zeros = fakeDevicePointer(0x50000);
  std::string why;
  EXPECT_EQ(check(a, &why), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(why.find("zero"), std::string::npos) << why;
}

TEST_F(DispatchTest, RejectsMisalignedPointers) {
  auto expectMisaligned = [&](MatmulArgs a, const char *name) {
    std::string why;
    EXPECT_EQ(check(a, &why), LOWBIT_STATUS_MISALIGNED) << name;
    EXPECT_NE(why.find(name), std::string::npos) << why;
  };
  MatmulArgs a = args;
  a.x = fakeDevicePointer(0x20008);
  expectMisaligned(a, "x");
  a = args;
  a.y = reinterpret_cast<void *>(0x40002);
  expectMisaligned(a, "y");
  lowbit_weights shifted = weights;
  shifted.data = fakeDevicePointer(0x10004);
  a = args;
  a.w = &shifted;
  expectMisaligned(a, "w->data");
  a = args;
  a.scales = fakeDevicePointer(0x30001);
  expectMisaligned(a, "scales");
  a = args;
  a.scales = fakeDevicePointer(0x30002); // f16 scales: 2-byte alignment is enough
  EXPECT_EQ(check(a), LOWBIT_STATUS_SUCCESS);
}

TEST_F(DispatchTest, RejectsWeightsPackedForAnotherLayout) {
  lowbit_weights other = weights;
  other.layout_id = spec.layoutId ^ 1;
  MatmulArgs a = args;
  a.w = &other;
  std::string why;
  EXPECT_EQ(check(a, &why), LOWBIT_STATUS_LAYOUT_MISMATCH);
  EXPECT_NE(why.find(spec.layoutIdHex), std::string::npos) << why;

  lowbit_weights small = weights;
  small.bytes = static_cast<size_t>(spec.weightBytes) - 1;
  a.w = &small;
  EXPECT_EQ(check(a, &why), LOWBIT_STATUS_LAYOUT_MISMATCH);
}

TEST_F(DispatchTest, WorkspaceIsNotNeededYet) {
  MatmulArgs a = args;
  a.workspace = nullptr;
  a.workspaceBytes = 0;
  EXPECT_EQ(check(a), LOWBIT_STATUS_SUCCESS);
  PlanSpec needy = spec;
  needy.workspaceBytes = 256;
  int index = -1;
  std::string why;
  EXPECT_EQ(checkMatmul(needy, a, &index, &why), LOWBIT_STATUS_BUFFER_TOO_SMALL);
}

TEST_F(DispatchTest, PacksOnTheHostWithThePlansLayout) {
  const int64_t n = spec.problem.n, k = spec.problem.k;
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<uint8_t>((i * 7 + i / 4096) & 15);
  std::vector<uint8_t> packed(static_cast<size_t>(spec.weightBytes));
  ASSERT_TRUE(packOnHost(spec, codes.data(), packed.data(), packed.size()).ok());
  std::vector<uint8_t> expected(packed.size());
  ASSERT_TRUE(layout::packWeights(spec.layout, n, k, codes.data(), expected.data(),
                                  expected.size())
                  .ok());
  EXPECT_EQ(packed, expected);

  ApiStatus tooSmall = packOnHost(spec, codes.data(), packed.data(), packed.size() - 1);
  EXPECT_EQ(tooSmall.status(), LOWBIT_STATUS_BUFFER_TOO_SMALL);
  codes[12345] = 16; // not a 4-bit code
  ApiStatus badCode = packOnHost(spec, codes.data(), packed.data(), packed.size());
  EXPECT_EQ(badCode.status(), LOWBIT_STATUS_INVALID_ARGUMENT) << badCode.error().message;
}

TEST_F(DispatchTest, ZeroCodesAreOnlyPackedForProblemsThatHaveThem) {
  std::vector<uint8_t> codes(static_cast<size_t>(core::scaleCount(spec.problem)), 3);
  std::vector<uint8_t> packed(codes.size());
  ApiStatus none = packZerosOnHost(spec, codes.data(), codes.size(), packed.data(), packed.size());
  EXPECT_EQ(none.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(none.error().message.find("zero mode none"), std::string::npos) << none.error().message;
}

// A plan for uint4 zero codes: lowbit_pack_zeros' host half packs two codes a
// byte (even index low), checks sizes and codes, and lowbit_matmul takes the
// packed buffer at any alignment.
TEST_F(DispatchTest, PacksUint4ZeroCodesTwoAByte) {
  PlanSpec gptq = spec;
  gptq.problem.scheme.zero = formats::ZeroMode::SubtractCode;
  gptq.problem.scheme.zeroCodes = formats::DataFormat::unsignedInt(4);
  gptq.hasZeros = true;
  gptq.zeroElementBytes = core::zeroElementBytes(gptq.problem);
  gptq.zeroBytes = core::zeroBytes(gptq.problem);
  const size_t count = static_cast<size_t>(core::scaleCount(gptq.problem));
  ASSERT_EQ(gptq.zeroBytes, static_cast<int64_t>(count / 2));
  std::vector<uint8_t> codes(count);
  for (size_t i = 0; i < count; ++i)
    codes[i] = static_cast<uint8_t>((i * 5 + 1) & 15);
  std::vector<uint8_t> packed(static_cast<size_t>(gptq.zeroBytes));
  ASSERT_TRUE(packZerosOnHost(gptq, codes.data(), count, packed.data(), packed.size()).ok());
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ((packed[i / 2] >> (4 * (i % 2))) & 15, codes[i]) << i;

  EXPECT_EQ(packZerosOnHost(gptq, codes.data(), count, packed.data(), packed.size() - 1).status(),
            LOWBIT_STATUS_BUFFER_TOO_SMALL);
  ApiStatus fewer = packZerosOnHost(gptq, codes.data(), count - 1, packed.data(), packed.size());
  EXPECT_EQ(fewer.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
  codes[77] = 16; // not a uint4 code: an error, never masked
  ApiStatus wide = packZerosOnHost(gptq, codes.data(), count, packed.data(), packed.size());
  EXPECT_EQ(wide.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(wide.error().message.find("zero code 16"), std::string::npos) << wide.error().message;

  MatmulArgs a = args;
  a.zeros = fakeDevicePointer(0x50001); // bytes: no alignment needed
  int index = -1;
  std::string why;
  EXPECT_EQ(checkMatmul(gptq, a, &index, &why), LOWBIT_STATUS_SUCCESS) << why;
  a.zeros = nullptr;
  EXPECT_EQ(checkMatmul(gptq, a, &index, &why), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(why.find("quantized"), std::string::npos) << why;
}

} // namespace
} // namespace lowbit::api::testing
