// lowbit_matmul's argument checks and range choice, and host packing, on a
// plan built from a hand-made database (no device needed).
#include "runtime/api/Dispatch.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <gtest/gtest.h>

namespace lowbit::api::testing {
namespace {

// Addresses are only compared and checked for alignment, never dereferenced.
const void *fakeDevicePointer(uintptr_t address) { return reinterpret_cast<const void *>(address); }

class DispatchTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string path = dir.file("kernels.db");
    kernels::ProblemDesc problem = w4a16Problem();
    {
      db::Database database = openOrDie(path);
      std::string small = addKernel(database, problem, {"small", "sm_90a", "gemv"});
      std::string large = addKernel(database, problem, {"large", "sm_90a", "mma", kLayoutA, 16});
      ASSERT_TRUE(database.putDevice(h100()).ok());
      ASSERT_TRUE(database
                      .setDispatch(db::problemIdForSignature(core::signature(problem)),
                                   h100().id(), {{1, 9, small}, {9, std::nullopt, large}})
                      .ok());
    }
    auto database = db::Database::open(path, {db::OpenMode::ReadOnly});
    ASSERT_TRUE(database.ok()) << database.error();
    Result<PlanSpec> built = buildPlanSpec({&*database}, problem, h100());
    ASSERT_TRUE(built.ok()) << built.error().message;
    spec = std::move(*built);
    weights.struct_size = sizeof(weights);
    weights.data = fakeDevicePointer(0x10000);
    weights.bytes = static_cast<size_t>(spec.weightBytes);
    weights.layout_id = spec.layoutId;
    args.m = 1;
    args.x = fakeDevicePointer(0x20000);
    args.w = &weights;
    args.scales = fakeDevicePointer(0x30000);
    args.y = reinterpret_cast<void *>(0x40000);
  }

  lowbit_status check(const MatmulArgs &a, std::string *why = nullptr) {
    int index = -1;
    size_t kernel = 0;
    std::string ignored;
    return checkMatmul(spec, a, &index, &kernel, why ? why : &ignored);
  }

  TempDir dir;
  PlanSpec spec;
  lowbit_weights weights{};
  MatmulArgs args;
};

TEST_F(DispatchTest, PicksTheRangeForM) {
  for (int64_t m : {1, 8, 9, 300, 100000}) {
    MatmulArgs a = args;
    a.m = m;
    int index = -1;
    size_t kernel = 0;
    std::string why;
    ASSERT_EQ(checkMatmul(spec, a, &index, &kernel, &why), LOWBIT_STATUS_SUCCESS)
        << m << ": " << why;
    EXPECT_EQ(index, m < 9 ? 0 : 1) << m;
    EXPECT_EQ(kernel, spec.ranges[static_cast<size_t>(index)].kernel) << m;
    EXPECT_TRUE(why.empty());
  }
}

TEST_F(DispatchTest, RejectsMOutOfRange) {
  for (int64_t m : {int64_t{0}, int64_t{-1}, INT64_MIN}) {
    MatmulArgs a = args;
    a.m = m;
    std::string why;
    EXPECT_EQ(check(a, &why), LOWBIT_STATUS_INVALID_SHAPE) << m;
    EXPECT_NE(why.find("at least 1"), std::string::npos) << why;
  }
  MatmulArgs tooMany = args;
  tooMany.m = 16 * 65535 + 1; // beyond the mma kernel's grid
  std::string why;
  EXPECT_EQ(check(tooMany, &why), LOWBIT_STATUS_INVALID_SHAPE);
  EXPECT_NE(why.find("split the rows"), std::string::npos) << why;
}

TEST_F(DispatchTest, RejectsNullPointers) {
  auto expectNull = [&](MatmulArgs a, const char *name) {
    std::string why;
    EXPECT_EQ(check(a, &why), LOWBIT_STATUS_INVALID_ARGUMENT) << name;
    EXPECT_NE(why.find(name), std::string::npos) << why;
  };
  MatmulArgs a = args;
  a.x = nullptr;
  expectNull(a, "x");
  a = args;
  a.y = nullptr;
  expectNull(a, "y");
  a = args;
  a.w = nullptr;
  expectNull(a, "w");
  a = args;
  a.scales = nullptr;
  expectNull(a, "scales");
  lowbit_weights noData = weights;
  noData.data = nullptr;
  a = args;
  a.w = &noData;
  expectNull(a, "w->data");
  lowbit_weights unsized = weights;
  unsized.struct_size = 0;
  a.w = &unsized;
  expectNull(a, "struct_size");
}

TEST_F(DispatchTest, ZerosMustMatchTheProblem) {
  MatmulArgs a = args;
  a.zeros = fakeDevicePointer(0x50000);
  std::string why;
  EXPECT_EQ(check(a, &why), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(why.find("zero"), std::string::npos) << why;
}

TEST_F(DispatchTest, RejectsMisalignedPointers) {
  auto expectMisaligned = [&](MatmulArgs a, const char *name) {
    std::string why;
    EXPECT_EQ(check(a, &why), LOWBIT_STATUS_MISALIGNED) << name;
    EXPECT_NE(why.find(name), std::string::npos) << why;
  };
  MatmulArgs a = args;
  a.x = fakeDevicePointer(0x20008);
  expectMisaligned(a, "x");
  a = args;
  a.y = reinterpret_cast<void *>(0x40002);
  expectMisaligned(a, "y");
  lowbit_weights shifted = weights;
  shifted.data = fakeDevicePointer(0x10004);
  a = args;
  a.w = &shifted;
  expectMisaligned(a, "w->data");
  a = args;
  a.scales = fakeDevicePointer(0x30001);
  expectMisaligned(a, "scales");
  // Group scales: a 2-byte aligned f16 buffer is not enough, since split-K
  // kernels load a row's scales of a chunk as one vector (lb.load_scale_run).
  a = args;
  a.scales = fakeDevicePointer(0x30002);
  expectMisaligned(a, "scales");
  a.scales = fakeDevicePointer(0x30010);
  EXPECT_EQ(check(a), LOWBIT_STATUS_SUCCESS);
}

TEST_F(DispatchTest, RejectsWeightsPackedForAnotherLayout) {
  lowbit_weights other = weights;
  other.layout_id = spec.layoutId ^ 1;
  MatmulArgs a = args;
  a.w = &other;
  std::string why;
  EXPECT_EQ(check(a, &why), LOWBIT_STATUS_LAYOUT_MISMATCH);
  EXPECT_NE(why.find(spec.layoutIdHex), std::string::npos) << why;

  lowbit_weights small = weights;
  small.bytes = static_cast<size_t>(spec.weightBytes) - 1;
  a.w = &small;
  EXPECT_EQ(check(a, &why), LOWBIT_STATUS_LAYOUT_MISMATCH);
}

// Only the dense path uses a workspace (DensePathTest).
TEST_F(DispatchTest, WorkspaceIsNotNeededWithoutTheDensePath) {
  MatmulArgs a = args;
  a.workspace = nullptr;
  a.workspaceBytes = 0;
  EXPECT_EQ(spec.workspaceBytes, 0);
  EXPECT_EQ(check(a), LOWBIT_STATUS_SUCCESS);
}

TEST_F(DispatchTest, PacksOnTheHostWithThePlansLayout) {
  const int64_t n = spec.problem.n, k = spec.problem.k;
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<uint8_t>((i * 7 + i / 4096) & 15);
  std::vector<uint8_t> packed(static_cast<size_t>(spec.weightBytes));
  ASSERT_TRUE(packOnHost(spec, codes.data(), packed.data(), packed.size()).ok());
  std::vector<uint8_t> expected(packed.size());
  ASSERT_TRUE(layout::packWeights(spec.layout, n, k, codes.data(), expected.data(),
                                  expected.size())
                  .ok());
  EXPECT_EQ(packed, expected);

  ApiStatus tooSmall = packOnHost(spec, codes.data(), packed.data(), packed.size() - 1);
  EXPECT_EQ(tooSmall.status(), LOWBIT_STATUS_BUFFER_TOO_SMALL);
  codes[12345] = 16; // not a 4-bit code
  ApiStatus badCode = packOnHost(spec, codes.data(), packed.data(), packed.size());
  EXPECT_EQ(badCode.status(), LOWBIT_STATUS_INVALID_ARGUMENT) << badCode.error().message;
}

// Packing takes only codes the plan's format has: every valid code of every
// width the kernels decode passes; ternary's 3, a bit above the width, or a
// signed code sign-extended into the byte is refused with the position and
// what the valid codes are, before anything is written.
TEST(PackOnHost, TakesEveryCodeOfTheFormatAndNoOther) {
  for (const char *name : {"uint1", "uint2", "int2", "ternary", "uint4", "int4", "uint8", "int8"}) {
    SCOPED_TRACE(name);
    PlanSpec spec;
    spec.problem.code = *formats::parseFormat(name);
    spec.problem.n = 4;
    spec.problem.k = 64;
    const int bits = spec.problem.code.bits();
    spec.layout.codeBits = bits;
    spec.layout.tileK = 64;
    for (uint32_t bit = 1; bit < 64; bit <<= 1)
      spec.layout.basis.push_back(bit);
    ASSERT_TRUE(layout::validateWeightLayout(spec.layout).ok());
    spec.weightBytes = 4 * 64 * bits / 8;
    const bool ternary = spec.problem.code.asInt()->ternary;
    const uint32_t valid = ternary ? 3 : 1u << bits;

    std::vector<uint8_t> codes(4 * 64), packed(static_cast<size_t>(spec.weightBytes), 0xA5);
    for (size_t i = 0; i < codes.size(); ++i)
      codes[i] = static_cast<uint8_t>(i % valid);
    ApiStatus ok = packOnHost(spec, codes.data(), packed.data(), packed.size());
    ASSERT_TRUE(ok.ok()) << ok.error().message;

    std::vector<uint8_t> invalid;
    if (ternary)
      invalid.push_back(3);
    if (bits < 8) {
      invalid.push_back(static_cast<uint8_t>(1u << bits));
      invalid.push_back(0xFF); // -1 sign-extended
    }
    for (uint8_t code : invalid) {
      SCOPED_TRACE("code " + std::to_string(code));
      std::vector<uint8_t> bad = codes;
      bad[64 + 5] = code;
      std::vector<uint8_t> untouched(packed.size(), 0x5A);
      ApiStatus refused = packOnHost(spec, bad.data(), untouched.data(), untouched.size());
      ASSERT_EQ(refused.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
      const std::string &why = refused.error().message;
      EXPECT_NE(why.find("lowbit_pack_weights: code " + std::to_string(code) + " at (1, 5)"),
                std::string::npos)
          << why;
      EXPECT_NE(why.find(ternary ? "ternary codes are 0, 1 and 2" : "codes are 0 to"),
                std::string::npos)
          << why;
      if (spec.problem.code.isSigned() && !ternary) {
        EXPECT_NE(why.find("not sign-extended"), std::string::npos) << why;
      }
      EXPECT_EQ(untouched, std::vector<uint8_t>(packed.size(), 0x5A));
    }
  }
}

TEST_F(DispatchTest, ZeroCodesAreOnlyPackedForProblemsThatHaveThem) {
  std::vector<uint8_t> codes(static_cast<size_t>(core::scaleCount(spec.problem)), 3);
  std::vector<uint8_t> packed(codes.size());
  ApiStatus none = packZerosOnHost(spec, codes.data(), codes.size(), packed.data(), packed.size());
  EXPECT_EQ(none.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(none.error().message.find("zero mode none"), std::string::npos) << none.error().message;
}

// A plan for uint4 zero codes: lowbit_pack_zeros' host half packs two codes a
// byte (even index low), checks sizes and codes, and lowbit_matmul takes the
// packed buffer at any alignment.
TEST_F(DispatchTest, PacksUint4ZeroCodesTwoAByte) {
  PlanSpec gptq = spec;
  gptq.problem.scheme.zero = formats::ZeroMode::SubtractCode;
  gptq.problem.scheme.zeroCodes = formats::DataFormat::unsignedInt(4);
  gptq.hasZeros = true;
  gptq.zeroAlignment = core::zeroAlignment(gptq.problem);
  gptq.zeroBytes = core::zeroBytes(gptq.problem);
  const size_t count = static_cast<size_t>(core::scaleCount(gptq.problem));
  ASSERT_EQ(gptq.zeroBytes, static_cast<int64_t>(count / 2));
  std::vector<uint8_t> codes(count);
  for (size_t i = 0; i < count; ++i)
    codes[i] = static_cast<uint8_t>((i * 5 + 1) & 15);
  std::vector<uint8_t> packed(static_cast<size_t>(gptq.zeroBytes));
  ASSERT_TRUE(packZerosOnHost(gptq, codes.data(), count, packed.data(), packed.size()).ok());
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ((packed[i / 2] >> (4 * (i % 2))) & 15, codes[i]) << i;

  EXPECT_EQ(packZerosOnHost(gptq, codes.data(), count, packed.data(), packed.size() - 1).status(),
            LOWBIT_STATUS_BUFFER_TOO_SMALL);
  ApiStatus fewer = packZerosOnHost(gptq, codes.data(), count - 1, packed.data(), packed.size());
  EXPECT_EQ(fewer.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
  codes[77] = 16; // not a uint4 code: an error, never masked
  ApiStatus wide = packZerosOnHost(gptq, codes.data(), count, packed.data(), packed.size());
  EXPECT_EQ(wide.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(wide.error().message.find("zero code 16"), std::string::npos) << wide.error().message;

  MatmulArgs a = args;
  a.zeros = fakeDevicePointer(0x50001); // bytes: no alignment needed
  int index = -1;
  size_t kernel = 0;
  std::string why;
  EXPECT_EQ(checkMatmul(gptq, a, &index, &kernel, &why), LOWBIT_STATUS_SUCCESS) << why;
  a.zeros = nullptr;
  EXPECT_EQ(checkMatmul(gptq, a, &index, &kernel, &why), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(why.find("quantized"), std::string::npos) << why;
}

// Quantized activations have their own entry point (lowbit_matmul_quantized,
// MatmulArgs::quantized): each refuses the other's plans and says which to
// call; x's f32 scales are required there and 4-byte aligned.
TEST_F(DispatchTest, QuantizedActivationsTakeTheirOwnEntryPointAndScales) {
  PlanSpec w4a8 = spec;
  w4a8.problem.activation = core::Activation::S8;
  w4a8.problem.activationScale = core::ActivationScale::PerToken;
  core::setOutput(w4a8.problem, core::Output::F32);
  int index = -1;
  size_t kernel = 0;
  std::string why;
  MatmulArgs a = args;
  a.xScales = fakeDevicePointer(0x60000);
  EXPECT_EQ(checkMatmul(w4a8, a, &index, &kernel, &why), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(why.find("lowbit_matmul: "), 0u) << why;
  EXPECT_NE(why.find("s8 with f32 per-token scales; call lowbit_matmul_quantized"),
            std::string::npos)
      << why;

  a.quantized = true;
  EXPECT_EQ(checkMatmul(w4a8, a, &index, &kernel, &why), LOWBIT_STATUS_SUCCESS) << why;
  a.xScales = fakeDevicePointer(0x60004); // an f32's alignment is enough
  EXPECT_EQ(checkMatmul(w4a8, a, &index, &kernel, &why), LOWBIT_STATUS_SUCCESS) << why;
  a.xScales = fakeDevicePointer(0x60002);
  EXPECT_EQ(checkMatmul(w4a8, a, &index, &kernel, &why), LOWBIT_STATUS_MISALIGNED);
  EXPECT_NE(why.find("lowbit_matmul_quantized: x_scales = "), std::string::npos) << why;
  EXPECT_NE(why.find("4-byte aligned"), std::string::npos) << why;
  a.xScales = nullptr;
  EXPECT_EQ(checkMatmul(w4a8, a, &index, &kernel, &why), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(why.find("x_scales is NULL"), std::string::npos) << why;

  a.xScales = fakeDevicePointer(0x60000);
  EXPECT_EQ(check(a, &why), LOWBIT_STATUS_INVALID_ARGUMENT) << "an f16 plan";
  EXPECT_NE(why.find("f16, which have no scales; call lowbit_matmul"), std::string::npos) << why;
}

// lowbit_matmul_quantizing (MatmulArgs::quantizing): s8 and e4m3 plans, f16 or
// bf16 x, and a workspace for the codes (256-byte rounded) and the scales.
TEST_F(DispatchTest, QuantizingTakesF16OrBf16XAndAWorkspaceForCodesAndScales) {
  PlanSpec w4a8 = spec;
  w4a8.problem.activation = core::Activation::S8;
  w4a8.problem.activationScale = core::ActivationScale::PerToken;
  core::setOutput(w4a8.problem, core::Output::F32);
  const size_t kernelsBefore = w4a8.kernels.size();
  addActivationQuantizer(w4a8);
  ASSERT_TRUE(w4a8.quantizesActivations);
  EXPECT_EQ(w4a8.kernels.size(), kernelsBefore + 1) << "per token: the quantizer alone";
  EXPECT_EQ(w4a8.kernels[w4a8.quantizeKernel].name, "lowbit_quantize_activations");
  const int64_t k = w4a8.problem.k; // 4096: M * K is a multiple of 256
  EXPECT_EQ(w4a8.quantizedActivationBytes(1), k + 256);
  EXPECT_EQ(w4a8.quantizedActivationBytes(100), 100 * k + 512) << "400 bytes of scales";
  PlanSpec perTensor = spec;
  perTensor.problem = w4a8.problem;
  perTensor.problem.activationScale = core::ActivationScale::PerTensor;
  addActivationQuantizer(perTensor);
  EXPECT_EQ(perTensor.kernels.size(), kernelsBefore + 2) << "and phase one, the absmax";
  EXPECT_EQ(perTensor.kernels[perTensor.absmaxKernel].name, "lowbit_activation_absmax");
  EXPECT_EQ(perTensor.quantizedActivationBytes(100), 100 * k + 256);
  EXPECT_EQ(spec.quantizedActivationBytes(100), 0) << "f16 plans quantize nothing";

  MatmulArgs a = args;
  a.quantizing = true;
  a.m = 3;
  a.workspace = reinterpret_cast<void *>(0x100000);
  a.workspaceBytes = static_cast<size_t>(w4a8.quantizedActivationBytes(3));
  int index = -1;
  size_t kernel = 0;
  std::string why;
  for (lowbit_dtype dtype : {LOWBIT_DTYPE_F16, LOWBIT_DTYPE_BF16}) {
    a.xDtype = dtype;
    EXPECT_EQ(checkMatmul(w4a8, a, &index, &kernel, &why), LOWBIT_STATUS_SUCCESS) << why;
  }
  a.xDtype = LOWBIT_DTYPE_E4M3;
  EXPECT_EQ(checkMatmul(w4a8, a, &index, &kernel, &why), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(why.find("lowbit_matmul_quantizing: x_dtype is 5"), std::string::npos) << why;
  a.xDtype = LOWBIT_DTYPE_F16;
  a.workspaceBytes -= 1;
  EXPECT_EQ(checkMatmul(w4a8, a, &index, &kernel, &why), LOWBIT_STATUS_BUFFER_TOO_SMALL);
  EXPECT_NE(why.find(std::to_string(w4a8.quantizedActivationBytes(3)) + " bytes at M = 3"),
            std::string::npos)
      << why;
  a.workspaceBytes += 1;
  EXPECT_EQ(check(a, &why), LOWBIT_STATUS_INVALID_ARGUMENT) << "an f16 plan";
  EXPECT_NE(why.find("call lowbit_matmul"), std::string::npos) << why;

  // e4m3 activations: the same quantizer (its e4m3 argument picks the codes),
  // a byte per code and the same workspace.
  PlanSpec e4m3 = spec;
  e4m3.problem = w4a8.problem;
  e4m3.problem.activation = core::Activation::E4M3;
  addActivationQuantizer(e4m3);
  ASSERT_TRUE(e4m3.quantizesActivations);
  EXPECT_EQ(e4m3.kernels.size(), kernelsBefore + 1);
  EXPECT_EQ(e4m3.kernels[e4m3.quantizeKernel].name, "lowbit_quantize_activations");
  EXPECT_EQ(e4m3.quantizedActivationBytes(3), w4a8.quantizedActivationBytes(3));
  EXPECT_EQ(checkMatmul(e4m3, a, &index, &kernel, &why), LOWBIT_STATUS_SUCCESS) << why;

  // A quantized plan built without the quantizer says so, never launches.
  e4m3.quantizesActivations = false;
  EXPECT_EQ(checkMatmul(e4m3, a, &index, &kernel, &why), LOWBIT_STATUS_UNSUPPORTED);
  EXPECT_NE(why.find("no quantizer"), std::string::npos) << why;
}

} // namespace
} // namespace lowbit::api::testing
