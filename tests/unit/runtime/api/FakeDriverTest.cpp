// The runtime's device path (context, plan loading, packing to the device,
// launches, context switching, threads) through the C API against the fake
// driver of FakeDriver.cpp, so it is exercised on machines without a GPU.
// The fake is loaded first under the soname libcuda.so.1, so the runtime's
// dlopen("libcuda.so.1") finds it even where a real driver is installed.
#include "lowbit/lowbit.h"
#include "runtime/api/Problem.h"
#include "runtime/cuda/Driver.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tests/unit/runtime/api/FakeDriverLaunch.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <thread>

namespace lowbit::api::testing {
namespace {

const LowbitFakeLaunch *fake() {
  static void *handle = dlopen(LOWBIT_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
  if (!handle)
    return nullptr;
  auto last = reinterpret_cast<const LowbitFakeLaunch *(*)()>(
      dlsym(handle, "lowbit_fake_cuda_last_launch"));
  return last ? last() : nullptr;
}

// Dynamic shared memory past the 48 KiB a launch gets without opting in.
constexpr int64_t kRingBytes = 100000;

class FakeDriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    state = fake();
    ASSERT_NE(state, nullptr) << "cannot load the fake driver " << LOWBIT_FAKE_CUDA_PATH;
    std::string whyNot;
    ASSERT_NE(cuda::loadDriver(&whyNot), nullptr) << whyNot;
    Expected<db::DeviceFingerprint> device = db::readFingerprint(0);
    ASSERT_TRUE(device.ok()) << device.error();
    ASSERT_EQ(device->name, "Fake H100");
    path = dir.file("kernels.db");
    db::Database database = openOrDie(path);
    kernels::ProblemDesc problem = w4a16Problem();
    std::string small = addKernel(database, problem, {"small", "sm_90a", "gemv"});
    std::string large = addKernel(database, problem, {"large", "sm_90a", "mma", kLayoutA, 16});
    ASSERT_TRUE(database.putDevice(*device).ok());
    ASSERT_TRUE(database
                    .setDispatch(db::problemIdForSignature(core::signature(problem)), device->id(),
                                 {{1, 9, small}, {9, std::nullopt, large}})
                    .ok());
    kernels::ProblemDesc withZeros = w4a16Problem(1024, 4096);
    withZeros.scheme.zero = formats::ZeroMode::SubtractCode;
    addKernel(database, withZeros, {"with_zeros", "sm_90a", "gemv"});
    kernels::ProblemDesc withZeroCodes = w4a16Problem(1024, 4096);
    withZeroCodes.scheme.zero = formats::ZeroMode::SubtractCode;
    withZeroCodes.scheme.zeroCodes = formats::DataFormat::unsignedInt(4);
    addKernel(database, withZeroCodes, {"with_zero_codes", "sm_90a", "gemv"});
    kernels::ProblemDesc nvfp4Style = w4a16Problem(512, 4096);
    nvfp4Style.code = formats::DataFormat::signedInt(4);
    nvfp4Style.scheme.groupSize = 16;
    nvfp4Style.scheme.scale = formats::DataFormat::e4m3fn();
    nvfp4Style.scheme.tensorScale = formats::DataFormat::f32();
    addKernel(database, nvfp4Style, {"tensor_scaled", "sm_90a", "gemv"});
    kernels::ProblemDesc userTable = w4a16Problem(256, 4096);
    userTable.code = *formats::DataFormat::lut(4, userTableValues(), "");
    addKernel(database, userTable, {"user_table", "sm_90a", "gemv"});
    addKernel(database, w4a16Problem(2048, 2048), {"ampere_only", "sm_80", "gemv"});
    FakeKernel ring{"ring", "sm_90a", "mma", kLayoutA, 16};
    ring.dynamicSharedBytes = kRingBytes;
    addKernel(database, w4a16Problem(4096, 1024), ring);
    // The H200's failure: 16 KiB static + 48 KiB dynamic needs the opt-in,
    // though the dynamic bytes alone are within the default.
    FakeKernel staticAndRing{"static_and_ring", "sm_90a", "mma", kLayoutA, 16};
    staticAndRing.staticSharedBytes = 16 * 1024;
    staticAndRing.dynamicSharedBytes = 48 * 1024;
    addKernel(database, w4a16Problem(1024, 1024), staticAndRing);

    ASSERT_EQ(createContext(path, &context), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  }
  void TearDown() override { lowbit_context_destroy(context); }

  static std::vector<double> userTableValues() {
    std::vector<double> table(16);
    for (int i = 0; i < 16; ++i)
      table[i] = (i - 7) * 0.125;
    return table;
  }

  lowbit_plan *plan(const lowbit_problem &p) {
    lowbit_plan *made = nullptr;
    EXPECT_EQ(lowbit_plan_create(context, &p, &made), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
    return made;
  }
  lowbit_plan *plan(int64_t n, int64_t k, lowbit_zero_mode zero = LOWBIT_ZERO_NONE) {
    return plan(w4a16Abi(n, k, zero));
  }

  lowbit_choice explain(const lowbit_plan *p, int64_t m) {
    lowbit_choice choice;
    std::memset(&choice, 0, sizeof(choice));
    choice.struct_size = sizeof(choice);
    EXPECT_EQ(lowbit_plan_explain(p, m, &choice), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
    return choice;
  }

  void launchOnce(int64_t n, int64_t k, int64_t m, const char *function, unsigned sharedBytes,
                  int optIns);

  const LowbitFakeLaunch *state = nullptr;
  TempDir dir;
  std::string path;
  lowbit_context *context = nullptr;
};

// Fake device pointers: never dereferenced by a launch, only recorded.
void *at(uintptr_t address) {
  return reinterpret_cast<void *>(address);
}

// A user's codebook through the C ABI finds the kernel compiled for exactly
// that table; another table is another problem, with no kernel.
TEST_F(FakeDriverTest, UserTablesFindTheirTablesKernel) {
  std::vector<double> table = userTableValues();
  lowbit_problem problem = w4a16Abi(256, 4096);
  problem.weight = LOWBIT_WEIGHT_LUT4;
  problem.table = table.data();
  lowbit_plan *p = plan(problem);
  ASSERT_NE(p, nullptr);
  EXPECT_STREQ(explain(p, 1).kernel_name, "fake_user_table");
  lowbit_plan_destroy(p);

  table[3] += 1.0 / 1024;
  lowbit_plan *other = nullptr;
  EXPECT_EQ(lowbit_plan_create(context, &problem, &other), LOWBIT_STATUS_UNKNOWN_PROBLEM);
  EXPECT_EQ(other, nullptr);
}

// An application built against the header before lowbit_problem had its
// table passes the shorter struct; the library reads no byte past it.
TEST_F(FakeDriverTest, AnOlderHeadersProblemStillPlans) {
  const size_t older = offsetof(lowbit_problem, table);
  lowbit_problem full = w4a16Abi(4096, 4096);
  std::vector<unsigned char> bytes(older);
  std::memcpy(bytes.data(), &full, older);
  reinterpret_cast<lowbit_problem *>(bytes.data())->struct_size = older;
  // Read through a buffer of exactly `older` bytes: ASan would catch a read
  // of the table's place.
  lowbit_plan *p = nullptr;
  EXPECT_EQ(lowbit_plan_create(context, reinterpret_cast<const lowbit_problem *>(bytes.data()), &p),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  lowbit_plan_destroy(p);
}

TEST_F(FakeDriverTest, LaunchesTheRangesKernelWithItsGridAndRestoresTheContext) {
  lowbit_plan *p = plan(4096, 4096);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(state->modulesLoaded, 2) << "both range kernels are loaded up front";
  lowbit_weights w{sizeof(lowbit_weights), at(0x10000), 4096 * 4096 / 2, 0};
  ASSERT_EQ(lowbit_plan_layout_id(p, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  const cuda::DriverApi &api = *cuda::loadDriver();
  ASSERT_EQ(api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);

  ASSERT_EQ(
      lowbit_matmul(p, 1, at(0x20000), &w, at(0x30000), nullptr, at(0x40000), nullptr, 0, at(0x77)),
      LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(state->function, "fake_small");
  EXPECT_EQ(state->grid[0], 1024u);
  EXPECT_EQ(state->grid[1], 1u);
  EXPECT_EQ(state->grid[2], 1u);
  EXPECT_EQ(state->block[0], 128u);
  EXPECT_EQ(state->stream, at(0x77));
  EXPECT_EQ(state->contextWasCurrent, 1);
  EXPECT_EQ(state->m, 1);
  EXPECT_EQ(state->pointers[0], 0x20000u);
  EXPECT_EQ(state->pointers[1], 0x10000u);
  EXPECT_EQ(state->pointers[2], 0x30000u);
  EXPECT_EQ(state->pointers[3], 0x40000u);
  CUcontext after = reinterpret_cast<CUcontext>(0x1);
  ASSERT_EQ(api.cuCtxGetCurrent(&after), CUDA_SUCCESS);
  EXPECT_EQ(after, nullptr) << "the caller's (empty) current context is restored";

  ASSERT_EQ(lowbit_matmul(p, 300, at(0x20000), &w, at(0x30000), nullptr, at(0x40000), nullptr, 0,
                          nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(state->function, "fake_large");
  EXPECT_EQ(state->grid[1], 19u); // ceil(300 / 16)
  lowbit_choice choice = explain(p, 300);
  EXPECT_STREQ(choice.tier, "exact device");
  EXPECT_EQ(choice.heuristic, 0);
  EXPECT_EQ(choice.m_lo, 9);
  EXPECT_EQ(choice.m_hi, -1);

  int launches = state->launches;
  w.layout_id ^= 1;
  EXPECT_EQ(
      lowbit_matmul(p, 1, at(0x20000), &w, at(0x30000), nullptr, at(0x40000), nullptr, 0, nullptr),
      LOWBIT_STATUS_LAYOUT_MISMATCH);
  EXPECT_EQ(state->launches, launches) << "a refused call launches nothing";
  lowbit_plan_destroy(p);
  EXPECT_EQ(state->modulesLoaded, 0);
}

// Plans N x K (uint4 weights at fake pointers), runs M rows once and checks
// that `function` launched with `sharedBytes` of dynamic shared memory after
// `optIns` cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) calls at plan
// creation.
void FakeDriverTest::launchOnce(int64_t n, int64_t k, int64_t m, const char *function,
                                unsigned sharedBytes, int optIns) {
  const int optInsBefore = state->dynamicSharedOptIns;
  lowbit_plan *p = plan(n, k);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(state->dynamicSharedOptIns, optInsBefore + optIns);
  lowbit_weights w{sizeof(lowbit_weights), at(0x10000), static_cast<size_t>(n * k / 2), 0};
  ASSERT_EQ(lowbit_plan_layout_id(p, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  ASSERT_EQ(
      lowbit_matmul(p, m, at(0x20000), &w, at(0x30000), nullptr, at(0x40000), nullptr, 0, nullptr),
      LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(state->function, function);
  EXPECT_EQ(state->sharedBytes, sharedBytes);
  lowbit_plan_destroy(p);
}

// The database row's launch.dynamicSharedBytes reaches cuLaunchKernel, and
// the plan opts the function in when it loads (the fake fails the launch
// otherwise, as a GPU would).
TEST_F(FakeDriverTest, LaunchesWithTheRowsDynamicSharedMemory) {
  launchOnce(4096, 1024, 3, "fake_ring", static_cast<unsigned>(kRingBytes), 1);
  // A kernel without dynamic shared memory neither opts in nor passes any.
  launchOnce(4096, 4096, 1, "fake_small", 0, 0);
}

// Static + dynamic shared memory is what the 48 KiB default limits: a kernel
// with 16 KiB static and 48 KiB dynamic is opted in at plan creation and
// launches (before the fix, the opt-in looked at the dynamic bytes alone and
// the launch failed with CUDA_ERROR_INVALID_VALUE).
TEST_F(FakeDriverTest, OptsInWhenStaticPlusDynamicSharedMemoryPasses48KiB) {
  launchOnce(1024, 1024, 3, "fake_static_and_ring", 48u * 1024, 1);
}

TEST_F(FakeDriverTest, PassesZerosInTheKernelAbiOrder) {
  lowbit_plan *p = plan(1024, 4096, LOWBIT_ZERO_SUB_CODE);
  ASSERT_NE(p, nullptr);
  lowbit_weights w{sizeof(lowbit_weights), at(0x10000), 1024 * 4096 / 2, 0};
  ASSERT_EQ(lowbit_plan_layout_id(p, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  ASSERT_EQ(lowbit_matmul(p, 5, at(0x20000), &w, at(0x30000), at(0x50000), at(0x40000), nullptr, 0,
                          nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(state->function, "fake_with_zeros");
  EXPECT_EQ(state->pointers[3], 0x50000u); // x, w, scales, zeros, y
  EXPECT_EQ(state->pointers[4], 0x40000u);
  EXPECT_EQ(state->m, 5);
  lowbit_plan_destroy(p);
}

// NVFP4-style scales through the C API: scale_bytes counts the e4m3 block
// scales, the padding to 4 bytes and the f32 tensor scale; the scales buffer
// must be 16-byte aligned, as group scales are; the kernel gets the one
// buffer in the scales' place (the argument list is unchanged).
TEST_F(FakeDriverTest, TensorScaleRidesInTheScalesBuffer) {
  lowbit_problem problem = w4a16Abi(512, 4096);
  problem.weight = LOWBIT_WEIGHT_INT4;
  problem.scale = LOWBIT_DTYPE_E4M3;
  problem.group_size = 16;
  problem.tensor_scale = LOWBIT_DTYPE_F32;
  lowbit_plan *p = plan(problem);
  ASSERT_NE(p, nullptr);
  size_t scaleBytes = 0, zeroBytes = 1;
  ASSERT_EQ(lowbit_plan_packed_sizes(p, nullptr, &scaleBytes, &zeroBytes, nullptr),
            LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(scaleBytes, 512u * 256u + 4u);
  EXPECT_EQ(zeroBytes, 0u);
  lowbit_weights w{sizeof(lowbit_weights), at(0x10000), 512 * 4096 / 2, 0};
  ASSERT_EQ(lowbit_plan_layout_id(p, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(
      lowbit_matmul(p, 1, at(0x20000), &w, at(0x30002), nullptr, at(0x40000), nullptr, 0, nullptr),
      LOWBIT_STATUS_MISALIGNED);
  EXPECT_NE(std::string(lowbit_last_error()).find("scales = 0x30002 is not 16-byte aligned"),
            std::string::npos)
      << lowbit_last_error();
  ASSERT_EQ(
      lowbit_matmul(p, 1, at(0x20000), &w, at(0x30010), nullptr, at(0x40000), nullptr, 0, nullptr),
      LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(state->function, "fake_tensor_scaled");
  EXPECT_EQ(state->pointers[2], 0x30010u); // x, w, scales, y
  lowbit_plan_destroy(p);
}

// GPTQ-style uint4 zero codes through the C API: the plan's zero_bytes is
// the packed size (two codes a byte), lowbit_pack_zeros packs on the host and
// onto the device alike and rejects a code too wide, and lowbit_matmul hands
// the packed zeros to the kernel in the ABI's place.
TEST_F(FakeDriverTest, PacksZeroCodesAndPassesThem) {
  lowbit_plan *p = plan(1024, 4096, LOWBIT_ZERO_UINT4_CODES);
  ASSERT_NE(p, nullptr) << lowbit_last_error();
  size_t scaleBytes = 0, zeroBytes = 0;
  ASSERT_EQ(lowbit_plan_packed_sizes(p, nullptr, &scaleBytes, &zeroBytes, nullptr),
            LOWBIT_STATUS_SUCCESS);
  const size_t count = 1024 * (4096 / 128);
  EXPECT_EQ(scaleBytes, count * 2);
  EXPECT_EQ(zeroBytes, count / 2);
  std::vector<uint8_t> codes(count);
  for (size_t i = 0; i < count; ++i)
    codes[i] = static_cast<uint8_t>((i * 11 + 3) & 15);
  std::vector<uint8_t> host(zeroBytes);
  ASSERT_EQ(lowbit_pack_zeros(p, codes.data(), count, host.data(), host.size(), LOWBIT_MEMORY_HOST,
                              nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_EQ(host[0], codes[0] | codes[1] << 4);
  void *device = nullptr; // the fake's device memory is host memory
  ASSERT_EQ(lowbit_device_alloc(context, zeroBytes, &device), LOWBIT_STATUS_SUCCESS);
  ASSERT_EQ(
      lowbit_pack_zeros(p, codes.data(), count, device, zeroBytes, LOWBIT_MEMORY_DEVICE, nullptr),
      LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_EQ(std::memcmp(device, host.data(), zeroBytes), 0);
  EXPECT_EQ(lowbit_pack_zeros(p, codes.data(), count, device, zeroBytes - 1, LOWBIT_MEMORY_DEVICE,
                              nullptr),
            LOWBIT_STATUS_BUFFER_TOO_SMALL);
  codes[5] = 0x1F;
  EXPECT_EQ(lowbit_pack_zeros(p, codes.data(), count, host.data(), host.size(), LOWBIT_MEMORY_HOST,
                              nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lowbit_last_error()).find("does not fit uint4"), std::string::npos)
      << lowbit_last_error();

  lowbit_weights w{sizeof(lowbit_weights), at(0x10000), 1024 * 4096 / 2, 0};
  ASSERT_EQ(lowbit_plan_layout_id(p, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  ASSERT_EQ(
      lowbit_matmul(p, 3, at(0x20000), &w, at(0x30000), device, at(0x40000), nullptr, 0, nullptr),
      LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(state->function, "fake_with_zero_codes");
  EXPECT_EQ(state->pointers[3], reinterpret_cast<uintptr_t>(device));
  EXPECT_EQ(lowbit_device_free(context, device), LOWBIT_STATUS_SUCCESS);
  lowbit_plan_destroy(p);

  // A plan whose zeros are in the scale dtype has nothing to pack.
  lowbit_plan *floats = plan(1024, 4096, LOWBIT_ZERO_SUB_CODE);
  ASSERT_NE(floats, nullptr);
  EXPECT_EQ(lowbit_pack_zeros(floats, codes.data(), count, host.data(), host.size(),
                              LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lowbit_last_error()).find("not zero codes"), std::string::npos)
      << lowbit_last_error();
  lowbit_plan_destroy(floats);
}

TEST_F(FakeDriverTest, JitsPtxWhenNoCubinFitsTheDevice) {
  lowbit_plan *p = plan(2048, 2048);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(state->ptxLoads, 1);
  lowbit_choice choice = explain(p, 1);
  EXPECT_EQ(choice.jit_from_ptx, 1);
  EXPECT_STREQ(choice.arch, "sm_80");
  EXPECT_EQ(choice.heuristic, 1);
  lowbit_plan_destroy(p);
}

TEST_F(FakeDriverTest, PacksToTheDeviceAsOnTheHost) {
  lowbit_plan *p = plan(4096, 4096);
  ASSERT_NE(p, nullptr);
  size_t bytes = 0;
  ASSERT_EQ(lowbit_plan_packed_sizes(p, &bytes, nullptr, nullptr, nullptr), LOWBIT_STATUS_SUCCESS);
  std::vector<uint8_t> codes(4096u * 4096u);
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<uint8_t>(((i * 2654435761u) >> 28) & 15);
  std::vector<uint8_t> host(bytes);
  ASSERT_EQ(lowbit_pack_weights(p, codes.data(), host.data(), bytes, LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_SUCCESS);
  void *device = nullptr; // the fake's device memory is host memory
  ASSERT_EQ(lowbit_device_alloc(context, bytes, &device), LOWBIT_STATUS_SUCCESS);
  ASSERT_EQ(lowbit_pack_weights(p, codes.data(), device, bytes, LOWBIT_MEMORY_DEVICE, nullptr),
            LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_EQ(std::memcmp(device, host.data(), bytes), 0);
  EXPECT_EQ(lowbit_pack_weights(p, codes.data(), static_cast<char *>(device) + 8, bytes - 8,
                                LOWBIT_MEMORY_DEVICE, nullptr),
            LOWBIT_STATUS_MISALIGNED);
  EXPECT_EQ(lowbit_pack_weights(p, codes.data(), device, bytes - 1, LOWBIT_MEMORY_DEVICE, nullptr),
            LOWBIT_STATUS_BUFFER_TOO_SMALL);
  // A code uint4 does not have, on either path, with its position.
  codes[4096 + 3] = 16;
  for (lowbit_memory where : {LOWBIT_MEMORY_HOST, LOWBIT_MEMORY_DEVICE}) {
    EXPECT_EQ(lowbit_pack_weights(p, codes.data(),
                                  where == LOWBIT_MEMORY_HOST ? host.data() : device, bytes, where,
                                  nullptr),
              LOWBIT_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(lowbit_last_error()).find("code 16 at (1, 3) is not a valid uint4 code"),
              std::string::npos)
        << lowbit_last_error();
  }
  EXPECT_EQ(lowbit_device_free(context, device), LOWBIT_STATUS_SUCCESS);
  lowbit_plan_destroy(p);
}

TEST_F(FakeDriverTest, PlansOutliveTheirContextAndServeManyThreads) {
  lowbit_plan *p = plan(4096, 4096);
  ASSERT_NE(p, nullptr);
  lowbit_context_destroy(context);
  context = nullptr;
  lowbit_weights w{sizeof(lowbit_weights), at(0x10000), 4096 * 4096 / 2, 0};
  ASSERT_EQ(lowbit_plan_layout_id(p, &w.layout_id), LOWBIT_STATUS_SUCCESS);
  int before = state->launches;
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i)
        failures[t] += lowbit_matmul(p, 1 + (i % 400), at(0x20000), &w, at(0x30000), nullptr,
                                     at(0x40000), nullptr, 0, nullptr) != LOWBIT_STATUS_SUCCESS;
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int f : failures)
    EXPECT_EQ(f, 0);
  EXPECT_EQ(state->launches, before + 800);
  lowbit_plan_destroy(p);
  EXPECT_EQ(state->modulesLoaded, 0);
}

} // namespace
} // namespace lowbit::api::testing
