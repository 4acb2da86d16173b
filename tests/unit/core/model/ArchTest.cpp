#include "core/Arch.h"

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {

TEST(Arch, TargetsAreTheArchsSpecsName) {
  EXPECT_EQ(targetArchList(), "sm_80, sm_86, sm_89 or sm_90a");
  Expected<TargetArch> hopper = findTargetArch("sm_90a");
  ASSERT_TRUE(hopper.ok());
  EXPECT_EQ(hopper->computeCapability, 90);
  EXPECT_EQ(hopper->maxSharedBytesPerBlock, 232448);
  Expected<TargetArch> plain = findTargetArch("sm_90");
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error().find("expected sm_80, sm_86, sm_89 or sm_90a"), std::string::npos);
}

} // namespace
} // namespace lowbit::core
