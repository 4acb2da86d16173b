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

// A device runs cubins of its own major version up to its minor, so an
// sm_87 part takes sm_86's limits and a major version lowbit has no target of
// gets none (the heuristic then estimates nothing rather than guess).
TEST(Arch, DevicesMapToTheNewestTargetOfTheirMajorVersion) {
  Expected<TargetArch> orin = targetArchForDevice(87);
  ASSERT_TRUE(orin.ok()) << orin.error();
  EXPECT_EQ(orin->name, "sm_86");
  EXPECT_EQ(orin->maxThreadsPerSm, 1536);
  Expected<TargetArch> h200 = targetArchForDevice(90);
  ASSERT_TRUE(h200.ok());
  EXPECT_EQ(h200->name, "sm_90a");
  EXPECT_EQ(h200->sharedBytesPerSm, 228 * 1024);
  for (int cc : {75, 100}) {
    Expected<TargetArch> none = targetArchForDevice(cc);
    ASSERT_FALSE(none.ok()) << cc;
    EXPECT_NE(none.error().find("no target arch for compute capability"), std::string::npos);
  }
  // Every target says what an SM holds: the occupancy both the tuner and the
  // heuristic compute divides by these.
  for (const TargetArch &arch : targetArchs()) {
    EXPECT_GT(arch.sharedBytesPerSm, arch.maxSharedBytesPerBlock) << arch.name;
    EXPECT_GT(arch.maxThreadsPerSm, 0) << arch.name;
    EXPECT_GT(arch.maxBlocksPerSm, 0) << arch.name;
  }
}

} // namespace
} // namespace lowbit::core
