// The exported C API of liblowbit_runtime.so, without a device: version,
// status strings, last error, and every entry point's refusal of NULL and
// bad arguments. (With a device, tests/gpu/runtime covers the rest.)
#include "lowbit/lowbit.h"
#include "runtime/cuda/Driver.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

extern "C" int lowbit_c_header_check(void);

namespace {

bool mentions(const char *text, const char *part) {
  return std::string(text).find(part) != std::string::npos;
}

TEST(CApiTest, HeaderCompilesAsC99) { EXPECT_EQ(lowbit_c_header_check(), 1); }

TEST(CApiTest, VersionMatchesTheHeader) {
  EXPECT_EQ(lowbit_version(), static_cast<uint32_t>(LOWBIT_VERSION));
  std::string expected = std::to_string(LOWBIT_VERSION_MAJOR) + "." +
                         std::to_string(LOWBIT_VERSION_MINOR) + "." +
                         std::to_string(LOWBIT_VERSION_PATCH);
  EXPECT_EQ(lowbit_version_string(), expected);
}

TEST(CApiTest, EveryStatusHasItsOwnString) {
  std::set<std::string> seen;
  for (int s = LOWBIT_STATUS_SUCCESS; s <= LOWBIT_STATUS_FILE_ERROR; ++s) {
    const char *text = lowbit_status_string(static_cast<lowbit_status>(s));
    ASSERT_NE(text, nullptr) << s;
    EXPECT_STRNE(text, "unknown lowbit_status") << s;
    EXPECT_TRUE(seen.insert(text).second) << "duplicate string for status " << s;
  }
  EXPECT_STREQ(lowbit_status_string(static_cast<lowbit_status>(-1)), "unknown lowbit_status");
  EXPECT_STREQ(lowbit_status_string(static_cast<lowbit_status>(LOWBIT_STATUS_FILE_ERROR + 1)),
               "unknown lowbit_status");
}

TEST(CApiTest, LastErrorIsNeverNull) { EXPECT_NE(lowbit_last_error(), nullptr); }

TEST(CApiTest, ContextCreateRejectsBadArguments) {
  lowbit_context *context = reinterpret_cast<lowbit_context *>(0x1);
  lowbit_context_options options{};
  options.struct_size = sizeof(options);
  options.system_db_path = "/nonexistent.db";
  EXPECT_EQ(lowbit_context_create(&options, nullptr), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lowbit_last_error(), "out_context")) << lowbit_last_error();
  EXPECT_EQ(lowbit_context_create(nullptr, &context), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(context, nullptr) << "the out handle is cleared on failure";
  EXPECT_TRUE(mentions(lowbit_last_error(), "options")) << lowbit_last_error();
  options.struct_size = 3;
  EXPECT_EQ(lowbit_context_create(&options, &context), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lowbit_last_error(), "struct_size")) << lowbit_last_error();
  EXPECT_EQ(lowbit_context_destroy(nullptr), LOWBIT_STATUS_SUCCESS);
}

TEST(CApiTest, ContextCreateWithoutAGpuSaysNoDevice) {
  if (lowbit::cuda::deviceCount() > 0)
    GTEST_SKIP() << "a GPU is present; tests/gpu/runtime covers this path";
  lowbit_context_options options{};
  options.struct_size = sizeof(options);
  options.system_db_path = "/nonexistent.db";
  lowbit_context *context = nullptr;
  EXPECT_EQ(lowbit_context_create(&options, &context), LOWBIT_STATUS_NO_DEVICE);
  EXPECT_EQ(context, nullptr);
  EXPECT_STRNE(lowbit_last_error(), "");
  EXPECT_TRUE(mentions(lowbit_last_error(), "lowbit_context_create")) << lowbit_last_error();
}

TEST(CApiTest, PlanCallsRejectNullHandles) {
  lowbit_problem problem{};
  problem.struct_size = sizeof(problem);
  lowbit_plan *plan = reinterpret_cast<lowbit_plan *>(0x1);
  EXPECT_EQ(lowbit_plan_create(nullptr, &problem, &plan), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_TRUE(mentions(lowbit_last_error(), "context")) << lowbit_last_error();
  EXPECT_EQ(lowbit_plan_create(nullptr, &problem, nullptr), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_plan_destroy(nullptr), LOWBIT_STATUS_SUCCESS);

  lowbit_choice choice{};
  choice.struct_size = sizeof(choice);
  EXPECT_EQ(lowbit_plan_explain(nullptr, 1, &choice), LOWBIT_STATUS_INVALID_ARGUMENT);
  size_t bytes = 0;
  EXPECT_EQ(lowbit_plan_packed_sizes(nullptr, &bytes, &bytes, &bytes, &bytes),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  uint64_t layout = 0;
  EXPECT_EQ(lowbit_plan_layout_id(nullptr, &layout), LOWBIT_STATUS_INVALID_ARGUMENT);
  uint8_t codes[16] = {};
  uint8_t packed[16] = {};
  EXPECT_EQ(lowbit_pack_weights(nullptr, codes, packed, sizeof(packed), LOWBIT_MEMORY_HOST,
                                nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lowbit_last_error(), "plan")) << lowbit_last_error();
  EXPECT_EQ(lowbit_pack_zeros(nullptr, codes, sizeof(codes), packed, sizeof(packed),
                              LOWBIT_MEMORY_HOST, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lowbit_last_error(), "lowbit_pack_zeros: plan")) << lowbit_last_error();
}

TEST(CApiTest, MatmulRejectsANullPlan) {
  lowbit_weights w{};
  w.struct_size = sizeof(w);
  EXPECT_EQ(lowbit_matmul(nullptr, 1, nullptr, &w, nullptr, nullptr, nullptr, nullptr, 0,
                          nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lowbit_last_error(), "lowbit_matmul: plan is NULL"))
      << lowbit_last_error();
  EXPECT_EQ(lowbit_matmul_quantized(nullptr, 1, nullptr, nullptr, &w, nullptr, nullptr, nullptr,
                                    nullptr, 0, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lowbit_last_error(), "lowbit_matmul_quantized: plan is NULL"))
      << lowbit_last_error();
  EXPECT_EQ(lowbit_matmul_quantizing(nullptr, 1, nullptr, LOWBIT_DTYPE_F16, &w, nullptr, nullptr,
                                     nullptr, nullptr, 0, nullptr),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lowbit_last_error(), "lowbit_matmul_quantizing: plan is NULL"))
      << lowbit_last_error();
}

TEST(CApiTest, MemoryHelpersRejectNullContext) {
  void *pointer = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(lowbit_device_alloc(nullptr, 16, &pointer), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(pointer, nullptr);
  EXPECT_EQ(lowbit_device_alloc(nullptr, 16, nullptr), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_device_free(nullptr, nullptr), LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(lowbit_device_free(nullptr, reinterpret_cast<void *>(0x100)),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  char host[4] = {};
  EXPECT_EQ(lowbit_memcpy(nullptr, host, host, 4, LOWBIT_COPY_HOST_TO_DEVICE),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_memset(nullptr, host, 0, 4), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_stream_synchronize(nullptr, nullptr), LOWBIT_STATUS_INVALID_ARGUMENT);
}

} // namespace
