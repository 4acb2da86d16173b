// lowbit_problem validation and translation, and struct_size checks.
#include "runtime/api/Problem.h"
#include "runtime/api/ApiError.h"
#include "core/AbiFormats.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

namespace lowbit::api {
namespace {

lowbit_problem w4a16() {
  return api::testing::w4a16Abi();
}

TEST(ProblemTest, TranslatesToTheCompilersSignature) {
  Result<core::Problem> desc = problemFromApi(w4a16());
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(core::signature(*desc),
            "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=f16;"
            "granularity=group;group=128;zero=none");
  lowbit_problem p = w4a16();
  p.weight = LOWBIT_WEIGHT_INT2;
  p.activation = LOWBIT_DTYPE_BF16;
  p.scale = LOWBIT_DTYPE_F32;
  p.granularity = LOWBIT_GRANULARITY_CHANNEL;
  p.group_size = 0;
  p.zero = LOWBIT_ZERO_SUB_VALUE;
  desc = problemFromApi(p);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(desc->code, formats::DataFormat::signedInt(2));
  EXPECT_EQ(desc->scheme.zero, formats::ZeroMode::SubtractScaled);
  EXPECT_EQ(core::scaleElementBytes(*desc), 4);
  EXPECT_EQ(core::scaleCount(*desc), 4096);
  EXPECT_EQ(desc->codeBits(), 2);
  EXPECT_EQ(core::signature(*desc),
            "lowbit.qmatmul.v1;n=4096;k=4096;act=bf16;weight=int2;scale=f32;"
            "granularity=channel;group=0;zero=sub_value");
}

// A user's codebook: LOWBIT_WEIGHT_LUT4 with its 16 values is the problem a
// spec's lut<4,[...]> of the same numbers compiled (one signature), and the
// NF4 values are nf4 whichever way they come.
TEST(ProblemTest, UserTablesThroughLut4) {
  const double table[16] = {-1.5, -1,     -0.75, -0.5, -0.375, -0.25, -0.125, -0.0625,
                            0,    0.0625, 0.125, 0.25, 0.5,    0.75,  1,      1.5};
  lowbit_problem p = w4a16();
  p.weight = LOWBIT_WEIGHT_LUT4;
  p.table = table;
  Result<core::Problem> desc = problemFromApi(p);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  ASSERT_NE(desc->code.asLut(), nullptr);
  EXPECT_EQ(desc->code.asLut()->table, std::vector<double>(table, table + 16));
  Expected<formats::DataFormat> spelled = formats::parseFormat(
      "lut<4,[-1.5, -1, -0.75, -0.5, -0.375, -0.25, -0.125, -0.0625, 0, 0.0625, 0.125, 0.25, "
      "0.5, 0.75, 1, 1.5]>");
  ASSERT_TRUE(spelled.ok()) << spelled.error();
  core::Problem fromSpec = *desc;
  fromSpec.code = *spelled;
  EXPECT_EQ(core::signature(*desc), core::signature(fromSpec));

  const std::vector<double> &nf4 = formats::nf4Table();
  p.table = nf4.data();
  desc = problemFromApi(p);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(desc->code, formats::DataFormat::nf4());
  EXPECT_NE(core::signature(*desc).find("weight=nf4;"), std::string::npos);

  p.table = nullptr;
  desc = problemFromApi(p);
  ASSERT_FALSE(desc.ok());
  EXPECT_EQ(desc.error().status, LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(desc.error().message.find("needs table"), std::string::npos) << desc.error().message;

  const double withNan[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, std::nan("")};
  p.table = withNan;
  EXPECT_FALSE(problemFromApi(p).ok());

  // A table with another weight format is a contradiction, not a hint.
  p = w4a16();
  p.table = table;
  desc = problemFromApi(p);
  ASSERT_FALSE(desc.ok());
  EXPECT_NE(desc.error().message.find("LOWBIT_WEIGHT_LUT4's only"), std::string::npos)
      << desc.error().message;
}

// GPTQ / AWQ zeros: (q - z)·s with uint4 or uint8 codes, packed densely.
TEST(ProblemTest, ZeroCodesAreQuantizedZeros) {
  lowbit_problem p = w4a16();
  p.zero = LOWBIT_ZERO_UINT4_CODES;
  Result<core::Problem> desc = problemFromApi(p);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(desc->scheme.zero, formats::ZeroMode::SubtractCode);
  ASSERT_TRUE(desc->scheme.zeroCodes.has_value());
  EXPECT_EQ(*desc->scheme.zeroCodes, formats::DataFormat::unsignedInt(4));
  EXPECT_EQ(core::signature(*desc),
            "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=f16;"
            "granularity=group;group=128;zero=quantized;zero_codes=uint4");
  EXPECT_EQ(core::zeroBytes(*desc), 4096 * 32 / 2); // two codes a byte
  p.zero = LOWBIT_ZERO_UINT8_CODES;
  p.granularity = LOWBIT_GRANULARITY_CHANNEL;
  p.group_size = 0;
  desc = problemFromApi(p);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(*desc->scheme.zeroCodes, formats::DataFormat::unsignedInt(8));
  EXPECT_EQ(core::zeroBytes(*desc), 4096);
}

// int4 with NVFP4's scales: e4m3 per 16 weights times one f32.
lowbit_problem nvfp4Style() {
  lowbit_problem p = w4a16();
  p.weight = LOWBIT_WEIGHT_INT4;
  p.scale = LOWBIT_DTYPE_E4M3;
  p.group_size = 16;
  p.tensor_scale = LOWBIT_DTYPE_F32;
  return p;
}

// MX and NVFP4 scales: one byte per group; NVFP4's f32 tensor scale after
// them, at the next multiple of 4 bytes, which the scales buffer's size and
// alignment include. (The invalid ones are in RejectsEveryBadField.)
TEST(ProblemTest, BlockScalesAndTheTensorScale) {
  lowbit_problem mx = w4a16();
  mx.scale = LOWBIT_DTYPE_E8M0;
  mx.group_size = 32;
  Result<core::Problem> desc = problemFromApi(mx);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(core::signature(*desc),
            "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=e8m0;"
            "granularity=group;group=32;zero=none");
  EXPECT_EQ(core::scaleBytes(*desc), 4096 * 128);
  desc = problemFromApi(nvfp4Style());
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(core::signature(*desc),
            "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=int4;scale=e4m3fn;"
            "granularity=group;group=16;zero=none;tensor_scale=f32");
  EXPECT_EQ(core::scaleBytes(*desc), 4096 * 256 + 4);
  EXPECT_EQ(core::scaleAlignment(*desc), 16);
}

// MXFP6 through the C ABI: fp6 codes (two planes in kernels) with e8m0
// scales per 32; the signature names the formats library's e2m3 and e3m2.
TEST(ProblemTest, Fp6WeightsWithMxScales) {
  for (auto [weight, name] : {std::pair{LOWBIT_WEIGHT_E2M3, "e2m3"},
                              std::pair{LOWBIT_WEIGHT_E3M2, "e3m2"}}) {
    lowbit_problem mx = w4a16();
    mx.weight = weight;
    mx.scale = LOWBIT_DTYPE_E8M0;
    mx.group_size = 32;
    Result<core::Problem> desc = problemFromApi(mx);
    ASSERT_TRUE(desc.ok()) << desc.error().message;
    EXPECT_EQ(desc->code.bits(), 6);
    EXPECT_EQ(core::signature(*desc), std::string("lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=") +
                                          name + ";scale=e8m0;granularity=group;group=32;zero=none");
    EXPECT_EQ(core::scaleBytes(*desc), 4096 * 128);
  }
}

// Any minifloat by its parameters: LOWBIT_WEIGHT_FLOAT is the problem a
// spec's float<e,m,bias,flags> compiled (one signature), and parameters equal
// to a named format are that format's problem.
TEST(ProblemTest, MinifloatsByTheirParameters) {
  lowbit_problem p = w4a16();
  p.weight = LOWBIT_WEIGHT_FLOAT;
  p.weight_float = {2, 2, 1, 0};
  p.scale = LOWBIT_DTYPE_E8M0;
  p.group_size = 32;
  Result<core::Problem> desc = problemFromApi(p);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  Expected<formats::DataFormat> spelled = formats::parseFormat("float<2,2,1>");
  ASSERT_TRUE(spelled.ok()) << spelled.error();
  EXPECT_EQ(desc->code, *spelled);
  EXPECT_EQ(desc->code.bits(), 5);
  EXPECT_NE(core::signature(*desc).find("weight=" + spelled->name() + ";"), std::string::npos)
      << core::signature(*desc);

  p.weight_float = {2, 1, 1, 0};
  Result<core::Problem> asFloat = problemFromApi(p);
  p.weight = LOWBIT_WEIGHT_E2M1;
  p.weight_float = {};
  Result<core::Problem> named = problemFromApi(p);
  ASSERT_TRUE(asFloat.ok()) << asFloat.error().message;
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(core::signature(*asFloat), core::signature(*named));

  p.weight_float = {3, 2, 3, 0};
  Result<core::Problem> stray = problemFromApi(p);
  ASSERT_FALSE(stray.ok());
  EXPECT_EQ(stray.error().status, LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(stray.error().message.find("weight_float is set"), std::string::npos)
      << stray.error().message;
}

// The compact int4 encoding: uint8 scale and min codes per 32, f16 steps per
// 256, each buffer's steps after its codes at a 16-byte offset.
lowbit_problem compactInt4() {
  lowbit_problem p = w4a16();
  p.scale = LOWBIT_DTYPE_U8;
  p.group_size = 32;
  p.zero = LOWBIT_ZERO_SUB_VALUE;
  p.super_block = 256;
  p.super_step = LOWBIT_DTYPE_F16;
  return p;
}

TEST(ProblemTest, TwoLevelScales) {
  Result<core::Problem> desc = problemFromApi(compactInt4());
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(core::signature(*desc),
            "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=uint8;"
            "granularity=group;group=32;zero=sub_value;super_block=256;super_step=f16");
  EXPECT_EQ(core::scaleBytes(*desc), 4096 * 128 + 4096 * 16 * 2);
  EXPECT_EQ(core::zeroBytes(*desc), core::scaleBytes(*desc));
  EXPECT_EQ(core::zeroAlignment(*desc), 16);
  // The ABI table read the other way gives the same struct back.
  lowbit_problem back{};
  std::vector<double> table;
  ASSERT_TRUE(core::problemToAbi(*desc, &back, &table).ok());
  EXPECT_EQ(back.scale, LOWBIT_DTYPE_U8);
  EXPECT_EQ(back.super_block, 256);
  EXPECT_EQ(back.super_step, LOWBIT_DTYPE_F16);
  lowbit_problem symmetric = compactInt4();
  symmetric.scale = LOWBIT_DTYPE_S8;
  symmetric.zero = LOWBIT_ZERO_NONE;
  symmetric.super_step = LOWBIT_DTYPE_F32;
  desc = problemFromApi(symmetric);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(desc->scheme.scale, formats::DataFormat::int8());
  EXPECT_EQ(core::zeroBytes(*desc), 0);
}

// Quantized activations: their dtype, scale and y's dtype cross the ABI into
// the typed model; f16 naming its own output is the f16 problem.
TEST(ProblemTest, QuantizedActivationsAndTheirOutput) {
  lowbit_problem p = w4a16();
  p.activation = LOWBIT_DTYPE_S8;
  p.activation_scale = LOWBIT_ACTIVATION_SCALE_TOKEN;
  p.output = LOWBIT_DTYPE_F32;
  Result<core::Problem> desc = problemFromApi(p);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(core::signature(*desc),
            "lowbit.qmatmul.v1;n=4096;k=4096;act=s8;weight=uint4;scale=f16;"
            "granularity=group;group=128;zero=none;act_scale=token;out=f32");
  p = w4a16();
  p.output = LOWBIT_DTYPE_F16;
  desc = problemFromApi(p);
  ASSERT_TRUE(desc.ok()) << desc.error().message;
  EXPECT_EQ(core::signature(*desc), core::signature(*problemFromApi(w4a16())));
}

TEST(ProblemTest, RejectsEveryBadField) {
  struct Case {
    void (*edit)(lowbit_problem &);
    lowbit_status status;
    const char *mentions;
  } cases[] = {
      {[](lowbit_problem &p) { p.n = 0; }, LOWBIT_STATUS_INVALID_SHAPE, "N = 0"},
      {[](lowbit_problem &p) { p.k = -5; }, LOWBIT_STATUS_INVALID_SHAPE, "K = -5"},
      {[](lowbit_problem &p) { p.n = int64_t{1} << 40; }, LOWBIT_STATUS_INVALID_SHAPE, "2^31"},
      {[](lowbit_problem &p) { p.activation = static_cast<lowbit_dtype>(0); },
       LOWBIT_STATUS_INVALID_ARGUMENT, "activation"},
      {[](lowbit_problem &p) { p.activation = LOWBIT_DTYPE_F32; }, LOWBIT_STATUS_INVALID_ARGUMENT,
       "activation"},
      // Quantized activations.
      {[](lowbit_problem &p) { p.activation = LOWBIT_DTYPE_S8, p.output = LOWBIT_DTYPE_F16; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "s8 activations need an activation scale"},
      {[](lowbit_problem &p) {
         p.activation = LOWBIT_DTYPE_E4M3, p.activation_scale = LOWBIT_ACTIVATION_SCALE_TENSOR;
       },
       LOWBIT_STATUS_INVALID_ARGUMENT, "need an output type"},
      {[](lowbit_problem &p) { p.activation_scale = LOWBIT_ACTIVATION_SCALE_TOKEN; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "f16 activations have none"},
      {[](lowbit_problem &p) { p.activation_scale = static_cast<lowbit_activation_scale>(3); },
       LOWBIT_STATUS_INVALID_ARGUMENT, "activation_scale 3"},
      {[](lowbit_problem &p) { p.output = LOWBIT_DTYPE_F32; }, LOWBIT_STATUS_INVALID_ARGUMENT,
       "write y in f16"},
      {[](lowbit_problem &p) { p.output = LOWBIT_DTYPE_S8; }, LOWBIT_STATUS_INVALID_ARGUMENT,
       "output 7"},
      {[](lowbit_problem &p) { p.weight = static_cast<lowbit_weight_format>(9); },
       LOWBIT_STATUS_INVALID_ARGUMENT, "weight"},
      // In the enum, but no format: a signed code needs two bits.
      {[](lowbit_problem &p) { p.weight = LOWBIT_WEIGHT_INT1; }, LOWBIT_STATUS_INVALID_ARGUMENT,
       "weight int1"},
      {[](lowbit_problem &p) { p.scale = static_cast<lowbit_dtype>(77); },
       LOWBIT_STATUS_INVALID_ARGUMENT, "scale"},
      {[](lowbit_problem &p) { p.granularity = static_cast<lowbit_granularity>(0); },
       LOWBIT_STATUS_INVALID_ARGUMENT, "granularity"},
      {[](lowbit_problem &p) { p.group_size = 0; }, LOWBIT_STATUS_INVALID_SHAPE, "group_size"},
      {[](lowbit_problem &p) { p.group_size = 100; }, LOWBIT_STATUS_INVALID_SHAPE, "divide"},
      {[](lowbit_problem &p) { p.granularity = LOWBIT_GRANULARITY_TENSOR; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "group_size"},
      {[](lowbit_problem &p) { p.zero = static_cast<lowbit_zero_mode>(0); },
       LOWBIT_STATUS_INVALID_ARGUMENT, "zero"},
      {[](lowbit_problem &p) { p.zero = static_cast<lowbit_zero_mode>(6); },
       LOWBIT_STATUS_INVALID_ARGUMENT, "quantized uint8"},
      // Block scales and the tensor scale.
      {[](lowbit_problem &p) { p = nvfp4Style(), p.tensor_scale = LOWBIT_DTYPE_BF16; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "tensor_scale 2 is not a lowbit.h value"},
      {[](lowbit_problem &p) { p.tensor_scale = LOWBIT_DTYPE_F32; }, LOWBIT_STATUS_INVALID_ARGUMENT,
       "a tensor scale multiplies e4m3fn block scales"},
      {[](lowbit_problem &p) { p.scale = LOWBIT_DTYPE_E8M0; }, LOWBIT_STATUS_INVALID_ARGUMENT,
       "group size must be 32, got 128"},
      {[](lowbit_problem &p) { p = nvfp4Style(), p.zero = LOWBIT_ZERO_SUB_CODE; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "block scales (e4m3fn) have no zero points"},
      // Two-level scales.
      {[](lowbit_problem &p) { p.scale = LOWBIT_DTYPE_U8; }, LOWBIT_STATUS_INVALID_ARGUMENT,
       "scale dtype 'uint8' is not"},
      {[](lowbit_problem &p) { p = compactInt4(), p.super_step = static_cast<lowbit_dtype>(0); },
       LOWBIT_STATUS_INVALID_ARGUMENT, "super_step"},
      {[](lowbit_problem &p) { p = compactInt4(), p.super_step = LOWBIT_DTYPE_E8M0; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "super_step 4 is not a lowbit.h value"},
      {[](lowbit_problem &p) { p = compactInt4(), p.super_block = 96; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "multiple of the group size"},
      {[](lowbit_problem &p) { p = compactInt4(), p.scale = LOWBIT_DTYPE_S8; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "mins are unsigned codes"},
      {[](lowbit_problem &p) { p = compactInt4(), p.scale = LOWBIT_DTYPE_F16; },
       LOWBIT_STATUS_INVALID_ARGUMENT, "uint8 or int8"},
  };
  for (const Case &c : cases) {
    lowbit_problem p = w4a16();
    c.edit(p);
    Result<core::Problem> desc = problemFromApi(p);
    ASSERT_FALSE(desc.ok()) << c.mentions;
    EXPECT_EQ(desc.error().status, c.status) << desc.error().message;
    EXPECT_NE(desc.error().message.find(c.mentions), std::string::npos) << desc.error().message;
  }
}

TEST(StructSizeTest, OlderOrGarbageSizesAreRejectedNewerOnesNeedZeroTails) {
  lowbit_problem p = w4a16();
  EXPECT_TRUE(checkInputStructSize(&p, sizeof(p), sizeof(p), "lowbit_problem").ok());
  ApiStatus small = checkInputStructSize(&p, 8, sizeof(p), "lowbit_problem");
  EXPECT_EQ(small.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(small.error().message.find("sizeof(lowbit_problem)"), std::string::npos);
  EXPECT_EQ(checkInputStructSize(&p, 1u << 20, sizeof(p), "lowbit_problem").status(),
            LOWBIT_STATUS_INVALID_ARGUMENT);
  // The struct of an older header (lowbit_problem before its table) is
  // accepted where the entry point names it, and no other smaller size.
  const size_t older = offsetof(lowbit_problem, table);
  EXPECT_TRUE(checkInputStructSize(&p, older, sizeof(p), "lowbit_problem", {older}).ok());
  ApiStatus between = checkInputStructSize(&p, older + 4, sizeof(p), "lowbit_problem", {older});
  EXPECT_EQ(between.status(), LOWBIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(between.error().message.find("older header's"), std::string::npos)
      << between.error().message;

  struct Newer {
    lowbit_problem base;
    int64_t futureField;
  } newer{w4a16(), 0};
  EXPECT_TRUE(checkInputStructSize(&newer, sizeof(newer), sizeof(lowbit_problem), "p").ok());
  newer.futureField = 3;
  EXPECT_EQ(checkInputStructSize(&newer, sizeof(newer), sizeof(lowbit_problem), "p").status(),
            LOWBIT_STATUS_UNSUPPORTED);

  EXPECT_TRUE(checkOutputStructSize(sizeof(lowbit_choice), sizeof(lowbit_choice), "c").ok());
  EXPECT_TRUE(checkOutputStructSize(sizeof(lowbit_choice) + 8, sizeof(lowbit_choice), "c").ok());
  EXPECT_FALSE(checkOutputStructSize(0, sizeof(lowbit_choice), "c").ok());
}

TEST(LastErrorTest, IsPerThreadAndSurvivesSuccess) {
  recordFailure(LOWBIT_STATUS_MISALIGNED, "main thread detail");
  std::string other;
  std::thread([&] { other = lastFailureText(); }).join();
  EXPECT_EQ(other, "");
  EXPECT_STREQ(lastFailureText(), "main thread detail");
}

} // namespace
} // namespace lowbit::api
