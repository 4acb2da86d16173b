// Quantized activations through the C API, against the fake driver
// (FakeDriver.cpp): lowbit_matmul_quantized passes x's scales where
// core::kernelArguments puts them, and each entry point refuses the other's
// plans, and bad x_scales, before anything launches.
#include "lowbit/lowbit.h"
#include "runtime/cuda/Driver.h"
#include "tests/unit/runtime/api/FakeDriverLaunch.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace lowbit::api::testing {
namespace {

constexpr int64_t kN = 128, kK = 256;

// W4A8 (RuntimeTestSupport's w4a8Problem), optionally with zero points. The
// fake driver reads "x_scales" (and "zeros") in a kernel's name as the
// parameters it takes.
kernels::ProblemDesc w4a8(core::ActivationScale scale, bool withZeros) {
  kernels::ProblemDesc p = w4a8Problem(kN, kK, scale);
  if (withZeros)
    p.scheme.zero = formats::ZeroMode::SubtractCode;
  return p;
}

lowbit_problem w4a8Abi(lowbit_activation_scale scale, lowbit_zero_mode zero) {
  lowbit_problem p = w4a16Abi(kN, kK, zero);
  p.activation = LOWBIT_DTYPE_S8;
  p.activation_scale = scale;
  p.output = LOWBIT_DTYPE_F32;
  return p;
}

// W8A8 in fp8: e4m3fn weights with one f32 scale per channel, e4m3 x with
// one per token, bf16 y.
kernels::ProblemDesc fp8() {
  kernels::ProblemDesc p = w4a8Problem(kN, kK, core::ActivationScale::PerToken);
  p.name = "test.fp8";
  p.activation = core::Activation::E4M3;
  p.code = formats::DataFormat::e4m3fn();
  p.scheme.granularity = formats::Granularity::PerChannel;
  p.scheme.groupSize = 0;
  p.scheme.scale = formats::DataFormat::f32();
  core::setOutput(p, core::Output::BF16);
  return p;
}

// What lowbit compile derived for e4m3fn weights with e4m3 activations (the
// split-K mma's m16n8k32 fragments of bytes).
const char *const kFp8Layout = "lbwl1;bits=8;tile=64x32;basis=128,256,512,4,8,16,1,2,1024,32,64";

lowbit_problem fp8Abi() {
  lowbit_problem p = w4a16Abi(kN, kK);
  p.activation = LOWBIT_DTYPE_E4M3;
  p.activation_scale = LOWBIT_ACTIVATION_SCALE_TOKEN;
  p.output = LOWBIT_DTYPE_BF16;
  p.weight = LOWBIT_WEIGHT_E4M3;
  p.scale = LOWBIT_DTYPE_F32;
  p.granularity = LOWBIT_GRANULARITY_CHANNEL;
  p.group_size = 0;
  return p;
}

class FakeDriverQuantized : public ::testing::Test {
protected:
  void SetUp() override {
    void *fake = dlopen(LOWBIT_FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(fake, nullptr) << "cannot load the fake driver " << LOWBIT_FAKE_CUDA_PATH << ": "
                             << dlerror();
    auto last = reinterpret_cast<const LowbitFakeLaunch *(*)()>(
        dlsym(fake, "lowbit_fake_cuda_last_launch"));
    ASSERT_NE(last, nullptr);
    launch = last();
    std::string whyNot;
    ASSERT_NE(cuda::loadDriver(&whyNot), nullptr) << whyNot;
    path = dir.file("quantized.db");
    {
      db::Database database = openOrDie(path);
      addKernel(database, w4a8(core::ActivationScale::PerToken, false),
                {"w4a8_x_scales", "sm_90a", "gemv"});
      addKernel(database, w4a8(core::ActivationScale::PerTensor, true),
                {"w4a8_x_scales_zeros", "sm_90a", "gemv"});
      addKernel(database, w4a16Problem(kN, kK), {"w4a16", "sm_90a", "gemv"});
      FakeKernel fp8Kernel{"fp8_x_scales", "sm_90a", "mma"};
      fp8Kernel.layout = kFp8Layout;
      addKernel(database, fp8(), fp8Kernel);
    }
    ASSERT_EQ(createContext(path, &context), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  }
  void TearDown() override {
    lowbit_plan_destroy(plan);
    lowbit_context_destroy(context);
  }

  // Plans `problem` and points the buffers at 16-byte aligned host memory
  // (the fake driver's device memory) of the sizes the plan reports.
  void planFor(const lowbit_problem &problem) {
    ASSERT_EQ(lowbit_plan_create(context, &problem, &plan), LOWBIT_STATUS_SUCCESS)
        << lowbit_last_error();
    size_t weightBytes = 0, scaleBytes = 0, zeroBytes = 0;
    ASSERT_EQ(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, &zeroBytes, nullptr),
              LOWBIT_STATUS_SUCCESS);
    weightBuffer.resize(weightBytes + 16);
    scaleBuffer.resize(scaleBytes + 16);
    zeroBuffer.resize(zeroBytes + 16);
    weights = {sizeof(lowbit_weights), aligned16(weightBuffer), weightBytes, 0};
    ASSERT_EQ(lowbit_plan_layout_id(plan, &weights.layout_id), LOWBIT_STATUS_SUCCESS);
    scales = aligned16(scaleBuffer);
    zeros = zeroBytes ? aligned16(zeroBuffer) : nullptr;
  }

  lowbit_status matmulQuantized(const void *xScales) {
    return lowbit_matmul_quantized(plan, kM, aligned16(x), xScales, &weights, scales, zeros,
                                   aligned16(y), nullptr, 0, nullptr);
  }

  // The last launch took (x, x_scales, packed_w, scales, y, M), per token.
  void expectArgumentsWithoutZeros() {
    EXPECT_EQ(launch->pointers[0], address(aligned16(x)));
    EXPECT_EQ(launch->pointers[1], address(aligned16(xScales)));
    EXPECT_EQ(launch->pointers[2], address(weights.data));
    EXPECT_EQ(launch->pointers[3], address(scales));
    EXPECT_EQ(launch->pointers[4], address(aligned16(y)));
    EXPECT_EQ(launch->pointers[5], 0u) << "no sixth pointer";
    EXPECT_EQ(launch->m, kM);
  }

  // A refused call launches nothing and says why.
  void expectRefused(lowbit_status got, lowbit_status expected, const char *because) {
    EXPECT_EQ(got, expected) << lowbit_last_error();
    EXPECT_NE(std::string(lowbit_last_error()).find(because), std::string::npos)
        << lowbit_last_error();
    EXPECT_EQ(launch->launches, launchesBefore);
  }

  static constexpr int64_t kM = 5;
  TempDir dir;
  std::string path;
  const LowbitFakeLaunch *launch = nullptr;
  int launchesBefore = 0;
  lowbit_context *context = nullptr;
  lowbit_plan *plan = nullptr;
  std::vector<uint8_t> weightBuffer, scaleBuffer, zeroBuffer;
  lowbit_weights weights{};
  const void *scales = nullptr, *zeros = nullptr;
  std::vector<int8_t> x = std::vector<int8_t>(size_t(kM * kK) + 16);
  std::vector<float> y = std::vector<float>(size_t(kM * kN) + 4);
  std::vector<float> xScales = std::vector<float>(size_t(kM) + 4, 1.0f);
};

TEST_F(FakeDriverQuantized, PassesXScalesAfterXPerToken) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_ZERO_NONE));
  const int before = launch->launches;
  ASSERT_EQ(matmulQuantized(aligned16(xScales)), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  EXPECT_EQ(launch->launches, before + 1);
  EXPECT_STREQ(launch->function, "fake_w4a8_x_scales");
  expectArgumentsWithoutZeros();
}

TEST_F(FakeDriverQuantized, PassesZerosBetweenScalesAndYPerTensor) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TENSOR, LOWBIT_ZERO_SUB_CODE));
  // One scale for all of x: any 4-byte aligned f32 will do.
  const float *oneScale = aligned16(xScales) + 1;
  ASSERT_EQ(matmulQuantized(oneScale), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  EXPECT_STREQ(launch->function, "fake_w4a8_x_scales_zeros");
  // (x, x_scales, packed_w, scales, zeros, y, M)
  EXPECT_EQ(launch->pointers[0], address(aligned16(x)));
  EXPECT_EQ(launch->pointers[1], address(oneScale));
  EXPECT_EQ(launch->pointers[2], address(weights.data));
  EXPECT_EQ(launch->pointers[3], address(scales));
  EXPECT_EQ(launch->pointers[4], address(zeros));
  EXPECT_EQ(launch->pointers[5], address(aligned16(y)));
  EXPECT_EQ(launch->m, kM);
}

// An e4m3 plan takes the same entry point and argument list: its x is one
// byte an element too.
TEST_F(FakeDriverQuantized, Fp8PlansTakeTheQuantizedEntryPoint) {
  planFor(fp8Abi());
  ASSERT_EQ(matmulQuantized(aligned16(xScales)), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  EXPECT_STREQ(launch->function, "fake_fp8_x_scales");
  expectArgumentsWithoutZeros();
}

TEST_F(FakeDriverQuantized, LowbitMatmulOnAQuantizedPlanNamesTheQuantizedEntryPoint) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_ZERO_NONE));
  launchesBefore = launch->launches;
  expectRefused(lowbit_matmul(plan, kM, aligned16(x), &weights, scales, zeros, aligned16(y),
                              nullptr, 0, nullptr),
                LOWBIT_STATUS_INVALID_ARGUMENT, "call lowbit_matmul_quantized");
}

TEST_F(FakeDriverQuantized, TheQuantizedEntryPointOnAnF16PlanNamesLowbitMatmul) {
  planFor(w4a16Abi(kN, kK));
  launchesBefore = launch->launches;
  expectRefused(matmulQuantized(aligned16(xScales)), LOWBIT_STATUS_INVALID_ARGUMENT,
                "call lowbit_matmul");
  EXPECT_EQ(std::string(lowbit_last_error()).find("lowbit_matmul_quantized: "), 0u)
      << "the message starts with the entry point called: " << lowbit_last_error();
}

TEST_F(FakeDriverQuantized, RefusesMissingOrMisalignedXScales) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_ZERO_NONE));
  launchesBefore = launch->launches;
  expectRefused(matmulQuantized(nullptr), LOWBIT_STATUS_INVALID_ARGUMENT, "x_scales is NULL");
  const void *offByTwo = reinterpret_cast<const uint8_t *>(aligned16(xScales)) + 2;
  expectRefused(matmulQuantized(offByTwo), LOWBIT_STATUS_MISALIGNED, "x_scales");
}

TEST_F(FakeDriverQuantized, ActOrderWithQuantizedActivationsIsUnsupported) {
  lowbit_problem problem = w4a8Abi(LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_ZERO_NONE);
  problem.act_order = 1;
  EXPECT_EQ(lowbit_plan_create(context, &problem, &plan), LOWBIT_STATUS_UNSUPPORTED);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(std::string(lowbit_last_error()).find("act-order with s8 activations"),
            std::string::npos)
      << lowbit_last_error();
}

// lowbit_matmul_quantizing: f16 or bf16 x is quantized into the workspace,
// then the matmul reads the codes and scales from there.
class FakeDriverQuantizing : public FakeDriverQuantized {
protected:
  // The codes take round_up(M * K, 256) bytes; the scales follow.
  static constexpr size_t kCodeBytes = (kM * kK + 255) / 256 * 256;

  lowbit_status quantizing(const void *xIn, lowbit_dtype dtype, void *space, size_t bytes) {
    return lowbit_matmul_quantizing(plan, kM, xIn, dtype, &weights, scales, zeros, aligned16(y),
                                    space, bytes, nullptr);
  }
  size_t workspaceBytes() {
    size_t bytes = 0;
    EXPECT_EQ(lowbit_plan_workspace_bytes(plan, kM, &bytes), LOWBIT_STATUS_SUCCESS);
    return bytes;
  }
  void clearHistory() {
    const_cast<LowbitFakeLaunch *>(launch)->history[0] = 0;
    launchesBefore = launch->launches;
  }

  std::vector<uint16_t> x16 = std::vector<uint16_t>(size_t(kM * kK) + 8);
  std::vector<uint8_t> workspace = std::vector<uint8_t>(4096 + 16);
};

TEST_F(FakeDriverQuantizing, PerTokenQuantizesIntoTheWorkspaceThenMultiplies) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_ZERO_NONE));
  // Codes, then M f32 scales rounded up to 256 bytes.
  const size_t needed = workspaceBytes();
  EXPECT_EQ(needed, kCodeBytes + 256);
  uint8_t *space = aligned16(workspace);
  clearHistory();
  ASSERT_EQ(quantizing(aligned16(x16), LOWBIT_DTYPE_F16, space, needed), LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(launch->history, "lowbit_quantize_activations;fake_w4a8_x_scales;");
  EXPECT_EQ(launch->quantizeX, address(aligned16(x16)));
  EXPECT_EQ(launch->quantizeBf16, 0);
  EXPECT_EQ(launch->quantizeE4m3, 0) << "s8 codes";
  EXPECT_EQ(launch->quantizeM, kM);
  EXPECT_EQ(launch->quantizeK, kK);
  EXPECT_EQ(launch->quantizeCodes, address(space));
  EXPECT_EQ(launch->quantizeScales, address(space + kCodeBytes));
  EXPECT_EQ(launch->quantizeTensorAbsmax, 0u) << "per token: no tensor absmax";
  EXPECT_EQ(launch->quantizeGrid[0], unsigned(kM)) << "a block per row";
  EXPECT_EQ(launch->quantizeBlock, 256u);
  // The matmul reads the workspace's codes and scales as x and x_scales.
  EXPECT_EQ(launch->pointers[0], address(space));
  EXPECT_EQ(launch->pointers[1], address(space + kCodeBytes));
  EXPECT_EQ(launch->pointers[2], address(weights.data));
  EXPECT_EQ(launch->pointers[3], address(scales));
  EXPECT_EQ(launch->pointers[4], address(aligned16(y)));
  EXPECT_EQ(launch->m, kM);
}

TEST_F(FakeDriverQuantizing, PerTensorZeroesTheAbsmaxOnTheStreamThenReducesThenQuantizes) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TENSOR, LOWBIT_ZERO_SUB_CODE));
  const size_t needed = workspaceBytes();
  EXPECT_EQ(needed, kCodeBytes + 256) << "the scale and the absmax word, rounded up";
  uint8_t *space = aligned16(workspace);
  const unsigned long long absmaxWord = address(space + kCodeBytes + 4);
  clearHistory();
  ASSERT_EQ(quantizing(aligned16(x16), LOWBIT_DTYPE_BF16, space, needed), LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(launch->history, "memset;lowbit_activation_absmax;lowbit_quantize_activations;"
                                "fake_w4a8_x_scales_zeros;");
  EXPECT_EQ(launch->memsetAddress, absmaxWord);
  EXPECT_EQ(launch->memsetValue, 0u);
  EXPECT_EQ(launch->memsetCount, 1u);
  EXPECT_EQ(launch->absmaxTarget, absmaxWord);
  EXPECT_EQ(launch->quantizeTensorAbsmax, absmaxWord);
  EXPECT_EQ(launch->quantizeBf16, 1);
  EXPECT_EQ(launch->quantizeScales, address(space + kCodeBytes));
  // (x, x_scales, packed_w, scales, zeros, y, M)
  EXPECT_EQ(launch->pointers[0], address(space));
  EXPECT_EQ(launch->pointers[1], address(space + kCodeBytes));
  EXPECT_EQ(launch->pointers[4], address(zeros));
  EXPECT_EQ(launch->pointers[5], address(aligned16(y)));
}

// An e4m3 plan quantizes with the same kernel, told to write e4m3 codes,
// into the same workspace (a byte a code), and its matmul reads them there.
TEST_F(FakeDriverQuantizing, AnE4m3PlanQuantizesToE4m3Codes) {
  planFor(fp8Abi());
  const size_t needed = workspaceBytes();
  EXPECT_EQ(needed, kCodeBytes + 256);
  uint8_t *space = aligned16(workspace);
  clearHistory();
  ASSERT_EQ(quantizing(aligned16(x16), LOWBIT_DTYPE_BF16, space, needed), LOWBIT_STATUS_SUCCESS)
      << lowbit_last_error();
  EXPECT_STREQ(launch->history, "lowbit_quantize_activations;fake_fp8_x_scales;");
  EXPECT_EQ(launch->quantizeE4m3, 1);
  EXPECT_EQ(launch->quantizeBf16, 1);
  EXPECT_EQ(launch->quantizeM, kM);
  EXPECT_EQ(launch->quantizeK, kK);
  EXPECT_EQ(launch->quantizeCodes, address(space));
  EXPECT_EQ(launch->quantizeScales, address(space + kCodeBytes));
  EXPECT_EQ(launch->quantizeTensorAbsmax, 0u) << "per token";
  EXPECT_EQ(launch->pointers[0], address(space));
  EXPECT_EQ(launch->pointers[1], address(space + kCodeBytes));
}

TEST_F(FakeDriverQuantizing, TheQuantizedEntryPointStillNeedsNoWorkspace) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_ZERO_NONE));
  clearHistory();
  ASSERT_EQ(matmulQuantized(aligned16(xScales)), LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  EXPECT_STREQ(launch->history, "fake_w4a8_x_scales;") << "no quantizer for s8 x";
}

TEST_F(FakeDriverQuantizing, RefusesBadArgumentsBeforeLaunchingAnything) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_ZERO_NONE));
  const size_t needed = workspaceBytes();
  uint8_t *space = aligned16(workspace);
  const uint16_t *xs = aligned16(x16);
  clearHistory();
  for (lowbit_dtype dtype : {LOWBIT_DTYPE_S8, LOWBIT_DTYPE_F32, static_cast<lowbit_dtype>(0)})
    expectRefused(quantizing(xs, dtype, space, needed), LOWBIT_STATUS_INVALID_ARGUMENT,
                  "x_dtype");
  expectRefused(quantizing(nullptr, LOWBIT_DTYPE_F16, space, needed),
                LOWBIT_STATUS_INVALID_ARGUMENT, "x is NULL");
  expectRefused(quantizing(xs + 1, LOWBIT_DTYPE_F16, space, needed), LOWBIT_STATUS_MISALIGNED,
                "x = ");
  expectRefused(quantizing(xs, LOWBIT_DTYPE_F16, nullptr, 0), LOWBIT_STATUS_BUFFER_TOO_SMALL,
                "lowbit_plan_workspace_bytes");
  expectRefused(quantizing(xs, LOWBIT_DTYPE_F16, space, needed - 1),
                LOWBIT_STATUS_BUFFER_TOO_SMALL, "lowbit_plan_workspace_bytes");
  expectRefused(quantizing(xs, LOWBIT_DTYPE_F16, space + 8, needed), LOWBIT_STATUS_MISALIGNED,
                "workspace");
  EXPECT_EQ(std::string(lowbit_last_error()).find("lowbit_matmul_quantizing: "), 0u)
      << lowbit_last_error();
  EXPECT_STREQ(launch->history, "") << "nothing launched";
}

TEST_F(FakeDriverQuantizing, AnF16PlanNamesLowbitMatmul) {
  planFor(w4a16Abi(kN, kK));
  size_t needed = 1;
  ASSERT_EQ(lowbit_plan_workspace_bytes(plan, kM, &needed), LOWBIT_STATUS_SUCCESS);
  EXPECT_EQ(needed, 0u) << "f16 activations are never quantized";
  clearHistory();
  expectRefused(quantizing(aligned16(x16), LOWBIT_DTYPE_F16, aligned16(workspace), 4096),
                LOWBIT_STATUS_INVALID_ARGUMENT, "call lowbit_matmul");
  EXPECT_STREQ(launch->history, "");
}

TEST_F(FakeDriverQuantizing, LowbitMatmulOnAnS8PlanAlsoNamesTheQuantizingEntryPoint) {
  planFor(w4a8Abi(LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_ZERO_NONE));
  clearHistory();
  expectRefused(lowbit_matmul(plan, kM, aligned16(x16), &weights, scales, zeros, aligned16(y),
                              nullptr, 0, nullptr),
                LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_matmul_quantizing");
}

} // namespace
} // namespace lowbit::api::testing
