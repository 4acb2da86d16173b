#include "codegen/nvrtc/NvrtcCompiler.h"

#include <gtest/gtest.h>

namespace lowbit::nvrtc {
namespace {

TEST(PtxasReport, ParsesEachEntryAndIgnoresDeviceFunctions) {
  const char *log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for helper\n"
      "    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'first' for 'sm_80'\n"
      "ptxas info    : Function properties for first\n"
      "    16 bytes stack frame, 12 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 96 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'second' for 'sm_80'\n"
      "ptxas info    : Function properties for second\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, 360 bytes cmem[0]\n";
  std::vector<KernelResources> kernels = parsePtxasReport(log);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].kernelName, "first");
  EXPECT_EQ(kernels[0].registers, 96);
  EXPECT_EQ(kernels[0].sharedBytes, 8192);
  EXPECT_EQ(kernels[0].stackFrameBytes, 16);
  EXPECT_EQ(kernels[0].spillStoreBytes, 12);
  EXPECT_EQ(kernels[0].spillLoadBytes, 4);
  EXPECT_EQ(kernels[0].constantBytes, 380);
  EXPECT_EQ(kernels[1].kernelName, "second");
  EXPECT_EQ(kernels[1].registers, 32);
  EXPECT_EQ(kernels[1].sharedBytes, 0);
}

} // namespace
} // namespace lowbit::nvrtc
