// The copy-bandwidth probe: its embedded PTX, its buffer and grid sizes, and
// the measurement itself over the fake driver (which JIT-"loads" the PTX and
// copies for real).
#include "compiler/measure/CopyBandwidth.h"
#include "FakeComputeDriver.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace lowbit::testing {
namespace {

TEST(CopyBandwidth, ThePtxIsEmbeddedForCompute80) {
  std::string ptx = measure::copyKernelPtx();
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos);
  EXPECT_NE(ptx.find(std::string(".entry ") + measure::kCopyKernelName), std::string::npos);
  // 16-byte vector loads and stores, as the kernel's source asks.
  EXPECT_NE(ptx.find("ld.global.nc.v4.u32"), std::string::npos);
  EXPECT_NE(ptx.find("st.global.v4.u32"), std::string::npos);
}

TEST(CopyBandwidth, BuffersAreAtLeastFourL2sAndWholeVectors) {
  EXPECT_EQ(measure::copyBufferBytes(50'000'000, size_t{1} << 30), size_t{1} << 30);
  EXPECT_EQ(measure::copyBufferBytes(int64_t{512} << 20, size_t{1} << 30), size_t{2} << 30);
  EXPECT_EQ(measure::copyBufferBytes(1001, 0), 4004u + 12u); // rounded up to 16
  EXPECT_EQ(measure::copyBlocks(132, 2048), 132u * 8u);
  EXPECT_EQ(measure::copyBlocks(4, 100), 4u); // at least one block per SM
}

TEST(CopyBandwidth, MeasuresReadPlusWrittenBytesPerLaunch) {
  FakeDriverCounters &counters = fakeDriverCounters();
  int ptxBefore = counters.ptxLoads;
  Expected<measure::CopyBandwidth> copy =
      measure::measureCopyBandwidth(fakeComputeDriver(), 0, size_t{1} << 20);
  ASSERT_TRUE(copy.ok()) << copy.error();
  EXPECT_EQ(counters.ptxLoads, ptxBefore + 1);
  // The fake device has a 1 MiB L2: buffers of 4 MiB; 4 SMs x 8 blocks.
  EXPECT_EQ(copy->bufferBytes, size_t{4} << 20);
  EXPECT_EQ(copy->blocks, 32u);
  EXPECT_EQ(counters.lastGridX, 32);
  // Each graph replay takes kFakeReplayMs for all its launches.
  double perLaunchUs = 1000.0 * kFakeReplayMs / copy->timing.launches;
  EXPECT_NEAR(copy->timing.medianUs, perLaunchUs, 1e-9);
  EXPECT_NEAR(copy->gbps, 2.0 * copy->bufferBytes / (perLaunchUs * 1e3), 1e-6);
  EXPECT_GE(copy->timing.replays, 7);
}

TEST(CopyBandwidth, AKernelThatDoesNotCopyReportsNoBandwidth) {
  fakeDriverCounters().brokenCopy = true;
  Expected<measure::CopyBandwidth> copy =
      measure::measureCopyBandwidth(fakeComputeDriver(), 0, size_t{1} << 20);
  fakeDriverCounters().brokenCopy = false;
  ASSERT_FALSE(copy.ok());
  EXPECT_NE(copy.error().find("did not copy"), std::string::npos) << copy.error();
}

} // namespace
} // namespace lowbit::testing
