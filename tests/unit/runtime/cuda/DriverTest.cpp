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

} // namespace
} // namespace lowbit::cuda
