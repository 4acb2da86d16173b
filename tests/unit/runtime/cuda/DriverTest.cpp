#include "runtime/cuda/Driver.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace lowbit::cuda {
namespace {

// Runs on every machine: with a driver the table is complete; without one the
// answer is a reason, never a crash or an empty message.
TEST(Driver, LoadsOrExplainsWhyNot) {
  std::string whyNot;
  const DriverApi *api = loadDriver(&whyNot);
  if (api) {
    EXPECT_NE(api->cuLaunchKernel, nullptr);
    EXPECT_NE(api->cuMemAlloc, nullptr);
    int version = 0;
    EXPECT_EQ(api->cuDriverGetVersion(&version), CUDA_SUCCESS);
    EXPECT_GE(version, 12000);
  } else {
    EXPECT_TRUE(whyNot.rfind("no CUDA driver", 0) == 0 ||
                whyNot.rfind("CUDA driver", 0) == 0)
        << whyNot;
  }
}

TEST(Driver, DeviceCountAgreesWithTheLoader) {
  std::string whyNot;
  int count = deviceCount(&whyNot);
  if (count == 0)
    EXPECT_FALSE(whyNot.empty());
  else
    EXPECT_NE(loadDriver(), nullptr);
}

// A table whose function has `staticBytes` of static shared memory and whose
// cuFuncSetAttribute records its call and answers `answer`.
struct SetAttributeCall {
  int calls = 0;
  CUfunction_attribute attribute{};
  int value = 0;
  CUresult answer = CUDA_SUCCESS;
  int staticBytes = 0;
};
SetAttributeCall &lastSetAttribute() {
  static SetAttributeCall call;
  return call;
}
DriverApi recordingApi() {
  DriverApi api;
  api.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute attribute, int value) {
    SetAttributeCall &call = lastSetAttribute();
    ++call.calls;
    call.attribute = attribute;
    call.value = value;
    return call.answer;
  };
  api.cuFuncGetAttribute = [](int *value, CUfunction_attribute attribute, CUfunction) {
    *value = attribute == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES ? lastSetAttribute().staticBytes : 0;
    return CUDA_SUCCESS;
  };
  return api;
}

TEST(Driver, DynamicSharedOptInOnlyAbove48KiB) {
  DriverApi api = recordingApi();
  lastSetAttribute() = {};
  EXPECT_EQ(allowDynamicSharedBytes(api, nullptr, 0), CUDA_SUCCESS);
  EXPECT_EQ(allowDynamicSharedBytes(api, nullptr, 48 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(lastSetAttribute().calls, 0);
  EXPECT_EQ(allowDynamicSharedBytes(api, nullptr, 48 * 1024 + 16), CUDA_SUCCESS);
  EXPECT_EQ(lastSetAttribute().calls, 1);
  EXPECT_EQ(lastSetAttribute().attribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  EXPECT_EQ(lastSetAttribute().value, 48 * 1024 + 16);
}

// The H200 failure: 16 KiB static + 48 KiB dynamic is past the 48 KiB
// default, which counts both; the dynamic bytes alone are not.
TEST(Driver, DynamicSharedOptInCountsStaticSharedMemory) {
  DriverApi api = recordingApi();
  lastSetAttribute() = {};
  lastSetAttribute().staticBytes = 16 * 1024;
  EXPECT_EQ(allowDynamicSharedBytes(api, nullptr, 32 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(lastSetAttribute().calls, 0);
  EXPECT_EQ(allowDynamicSharedBytes(api, nullptr, 48 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(lastSetAttribute().calls, 1);
  EXPECT_EQ(lastSetAttribute().attribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  EXPECT_EQ(lastSetAttribute().value, 48 * 1024);
}

TEST(Driver, DynamicSharedOptInFailureIsReturned) {
  DriverApi api = recordingApi();
  lastSetAttribute() = {};
  lastSetAttribute().answer = CUDA_ERROR_INVALID_VALUE;
  EXPECT_EQ(allowDynamicSharedBytes(api, nullptr, 200 * 1024), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(lastSetAttribute().calls, 1);
  // More than the attribute's int can say never reaches the driver.
  EXPECT_EQ(allowDynamicSharedBytes(api, nullptr, int64_t{1} << 32), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(lastSetAttribute().calls, 1);
}

} // namespace
} // namespace lowbit::cuda
