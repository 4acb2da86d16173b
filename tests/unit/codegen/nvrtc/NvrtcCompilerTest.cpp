#include "codegen/nvrtc/NvrtcCompiler.h"
#include "core/Arch.h"

#include <gtest/gtest.h>

namespace lowbit::nvrtc {
namespace {

const char *kScaleKernel = R"(
extern "C" __global__ void scale(float *out, const float *in, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}
)";

TEST(NvrtcCompiler, CompilesForEveryArchAndReportsResources) {
  for (Arch arch : {Arch::Sm80, Arch::Sm86, Arch::Sm89, Arch::Sm90a}) {
    CompileRequest request;
    request.source = kScaleKernel;
    request.arch = arch;
    Expected<CompileResult> result = compile(request);
    ASSERT_TRUE(result.ok()) << archName(arch) << ": " << result.error();
    EXPECT_GT(result->cubin.size(), 64u);
    // An ELF image, the format cuModuleLoadData expects for a cubin.
    EXPECT_EQ(std::string(result->cubin.data() + 1, 3), "ELF");
    EXPECT_NE(result->ptx.find(".entry scale"), std::string::npos);
    EXPECT_NE(result->ptx.find(std::string(".target ") + archName(arch)),
              std::string::npos)
        << result->ptx.substr(0, 400);
    ASSERT_EQ(result->resources.size(), 1u) << result->log;
    EXPECT_EQ(result->resources[0].kernelName, "scale");
    EXPECT_GT(result->resources[0].registers, 0);
    EXPECT_EQ(result->resources[0].spillStoreBytes, 0);
  }
}

TEST(NvrtcCompiler, CompileErrorCarriesTheLog) {
  CompileRequest request;
  request.source = "extern \"C\" __global__ void broken() { undeclared_name = 1; }";
  request.sourceName = "broken.cu";
  Expected<CompileResult> result = compile(request);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("broken.cu"), std::string::npos) << result.error();
  EXPECT_NE(result.error().find("undeclared_name"), std::string::npos) << result.error();
}

TEST(NvrtcCompiler, ReportsSpills) {
  // A large array indexed at run time must live in local memory: the stack
  // frame is what the spill check in CI looks at besides spill bytes.
  CompileRequest request;
  request.source = R"(
extern "C" __global__ void local_array(float *out, int k) {
  float a[256];
  for (int i = 0; i < 256; ++i) a[i] = out[i] * i;
  out[0] = a[k & 255];
})";
  Expected<CompileResult> result = compile(request);
  ASSERT_TRUE(result.ok()) << result.error();
  ASSERT_EQ(result->resources.size(), 1u);
  EXPECT_GE(result->resources[0].stackFrameBytes, 1024);
}

TEST(NvrtcCompiler, ParsesArchNames) {
  EXPECT_TRUE(parseArch("sm_90a").ok());
  Expected<Arch> bad = parseArch("sm_90");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("sm_90a"), std::string::npos);
}

// The enum is NVRTC's spelling of core::targetArchs(): one enumerator each.
TEST(NvrtcCompiler, ArchesAreTheCoreTargets) {
  for (const core::TargetArch &target : core::targetArchs()) {
    Expected<Arch> arch = parseArch(target.name);
    ASSERT_TRUE(arch.ok()) << arch.error();
    EXPECT_EQ(archName(*arch), target.name);
    EXPECT_EQ(archComputeCapability(*arch), target.computeCapability);
  }
}

// The opt-in maxima of the CUDA C Programming Guide's per-arch table.
TEST(NvrtcCompiler, MaxSharedBytesPerBlockIsTheOptInMaximum) {
  EXPECT_EQ(maxSharedBytesPerBlock(Arch::Sm80), 166912);
  EXPECT_EQ(maxSharedBytesPerBlock(Arch::Sm86), 101376);
  EXPECT_EQ(maxSharedBytesPerBlock(Arch::Sm89), 101376);
  EXPECT_EQ(maxSharedBytesPerBlock(Arch::Sm90a), 232448);
}

TEST(NvrtcCompiler, SharedBytesCheckCountsStaticAndDynamic) {
  // Exactly at the limit fits; one byte more, from either part, does not.
  EXPECT_TRUE(checkSharedBytesPerBlock(Arch::Sm86, 1024, 101376 - 1024).ok());
  EXPECT_TRUE(checkSharedBytesPerBlock(Arch::Sm90a, 0, 0).ok());
  Status over = checkSharedBytesPerBlock(Arch::Sm86, 1025, 101376 - 1024);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error(),
            "needs 101377 bytes of shared memory per block; sm_86 allows at most 101376");
  // 150 KiB of ring fits an sm_80 or sm_90a block but no sm_86/sm_89 one.
  const int64_t ring = 150 * 1024;
  EXPECT_TRUE(checkSharedBytesPerBlock(Arch::Sm80, 512, ring).ok());
  EXPECT_TRUE(checkSharedBytesPerBlock(Arch::Sm90a, 512, ring).ok());
  EXPECT_FALSE(checkSharedBytesPerBlock(Arch::Sm89, 512, ring).ok());
  EXPECT_FALSE(checkSharedBytesPerBlock(Arch::Sm80, 0, 200 * 1024).ok());
}

} // namespace
} // namespace lowbit::nvrtc
