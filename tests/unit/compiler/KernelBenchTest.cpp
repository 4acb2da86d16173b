#include "compiler/measure/KernelBench.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lowbit::measure {
namespace {

kernels::KernelEntry entry(const char *name, const char *layout) {
  kernels::KernelEntry e;
  e.name = name;
  e.weightLayout = layout;
  // launchShape reads the schedule (whether the kernel walks tiles).
  e.schedule = "#lb.schedule<family = gemv, tile = [1, 4, 1024], warps = [1, 1], stages = 1, "
               "split_k = 1>";
  return e;
}

// The first benchmark run on the H200 packed one problem's weights once, in
// its first kernel's layout, and fed them to every kernel: all mma kernels
// (another layout) then failed their reference check. Kernels must be
// grouped by the layout they read.
TEST(KernelBench, KernelsWithDifferentWeightLayoutsNeverShareWeights) {
  kernels::KernelEntry gemv1 = entry("gemv1", "lbwl1;bits=4;tile=1x32;basis=4,1,2,8,16");
  kernels::KernelEntry gemv8 = entry("gemv8", "lbwl1;bits=4;tile=1x32;basis=4,1,2,8,16");
  kernels::KernelEntry mma = entry("mma", "lbwl1;bits=4;tile=64x16;basis=128,256,512,2,8,16,4,32,64,1");
  auto groups = groupByWeightLayout({&gemv1, &mma, &gemv8});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[gemv1.weightLayout].size(), 2u);
  ASSERT_EQ(groups[mma.weightLayout].size(), 1u);
  EXPECT_EQ(groups[mma.weightLayout][0]->name, "mma");
}

// The first split-K mma with 8-row tiles was never timed at M <= 8, where
// it is meant to beat gemv_tiled: the bench skipped every mma there.
TEST(KernelBench, EightRowMmaTilesAreTimedAtSmallM) {
  kernels::KernelEntry gemv = entry("gemv", "a"), mma8 = entry("mma8", "b"),
                       mma16 = entry("mma16", "b"), mma128 = entry("mma128", "b");
  gemv.family = "gemv";
  gemv.gridTile = {64, 4, 1};
  mma8.family = mma16.family = mma128.family = "mma";
  mma8.gridTile = {64, 8, 1};
  mma16.gridTile = {64, 16, 1};
  mma128.gridTile = {128, 128, 1};
  EXPECT_TRUE(worthBenchmarking(gemv, 1));
  EXPECT_FALSE(worthBenchmarking(gemv, 16));
  EXPECT_TRUE(worthBenchmarking(mma8, 1));
  EXPECT_FALSE(worthBenchmarking(mma16, 1));
  EXPECT_TRUE(worthBenchmarking(mma16, 4));
  EXPECT_FALSE(worthBenchmarking(mma128, 16));
  EXPECT_TRUE(worthBenchmarking(mma128, 32));
}

// NVFP4 (groups of 16) has gemv kernels only: at M = 16 none was worth
// timing, and the H200 bench printed 0 us without a word. Kernels that are
// not worth it are timed when nothing else is.
TEST(KernelBench, AProblemWithOnlyGemvKernelsIsTimedAtEveryM) {
  kernels::KernelEntry gemv1 = entry("gemv1", "a"), gemv4 = entry("gemv4", "a"),
                       mma16 = entry("mma16", "b");
  gemv1.family = gemv4.family = "gemv";
  gemv1.gridTile = {4, 1, 1};
  gemv4.gridTile = {4, 4, 1};
  mma16.family = "mma";
  mma16.gridTile = {64, 16, 1};
  EXPECT_EQ(kernelsToTime({&gemv1, &gemv4}, 1), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(kernelsToTime({&gemv1, &gemv4}, 16), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(kernelsToTime({&gemv1, &gemv4, &mma16}, 16), (std::vector<size_t>{2}));
  EXPECT_EQ(kernelsToTime({&gemv1, &mma16}, 1), (std::vector<size_t>{0}));
}

TEST(KernelBench, CsvHasOneRowPerProblemAndM) {
  BenchRow row;
  row.problem = "p";
  row.n = 4096;
  row.k = 4096;
  row.m = 16;
  row.kernel = "k";
  row.medianUs = 10;
  row.cublasUs = 12;
  std::ostringstream csv;
  writeBenchCsv({row, row}, csv);
  std::string text = csv.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_EQ(text.rfind("problem,n,k,m,kernel,median_us", 0), 0u);
  EXPECT_NE(text.find("p,4096,4096,16,k,10,"), std::string::npos) << text;
}

} // namespace
} // namespace lowbit::measure
