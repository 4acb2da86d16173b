// The C ABI's enums through core's tables: every value lowbit.h defines
// lands on the typed model's value, and what has no format is refused with
// the field named.
#include "core/AbiFormats.h"

#include <gtest/gtest.h>

namespace lowbit::core {
namespace {

TEST(AbiFormats, EveryWeightValueIsItsIntegerFormat) {
  for (int bits = 1; bits <= 8; ++bits) {
    Expected<formats::DataFormat> unsignedCode =
        weightFormatFromAbi(static_cast<lowbit_weight_format>(LOWBIT_WEIGHT_UINT1 + bits - 1));
    ASSERT_TRUE(unsignedCode.ok()) << unsignedCode.error();
    EXPECT_EQ(*unsignedCode, formats::DataFormat::unsignedInt(bits));
    Expected<formats::DataFormat> signedCode =
        weightFormatFromAbi(static_cast<lowbit_weight_format>(LOWBIT_WEIGHT_INT1 + bits - 1));
    if (bits == 1) {
      // A signed code needs two bits: the formats library says why.
      ASSERT_FALSE(signedCode.ok());
      EXPECT_NE(signedCode.error().find("weight int1"), std::string::npos) << signedCode.error();
      continue;
    }
    ASSERT_TRUE(signedCode.ok()) << signedCode.error();
    EXPECT_EQ(*signedCode, formats::DataFormat::signedInt(bits));
  }
  Expected<formats::DataFormat> outside = weightFormatFromAbi(static_cast<lowbit_weight_format>(9));
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().find("uint1"), std::string::npos) << outside.error();
}

TEST(AbiFormats, MinifloatAndTableWeightsAreTheFormatsLibrarys) {
  struct Row {
    lowbit_weight_format abi;
    formats::DataFormat format;
  };
  for (const Row &row : {Row{LOWBIT_WEIGHT_E2M1, formats::DataFormat::e2m1()},
                         Row{LOWBIT_WEIGHT_E4M3, formats::DataFormat::e4m3fn()},
                         Row{LOWBIT_WEIGHT_E5M2, formats::DataFormat::e5m2()},
                         Row{LOWBIT_WEIGHT_E2M3, formats::DataFormat::e2m3()},
                         Row{LOWBIT_WEIGHT_E3M2, formats::DataFormat::e3m2()},
                         Row{LOWBIT_WEIGHT_NF4, formats::DataFormat::nf4()}}) {
    Expected<formats::DataFormat> code = weightFormatFromAbi(row.abi);
    ASSERT_TRUE(code.ok()) << code.error();
    EXPECT_EQ(*code, row.format) << row.format.name();
    EXPECT_EQ(code->name(), row.format.name());
  }
}

TEST(AbiFormats, Lut4TakesItsTableAndOnlyItTakesOne) {
  std::vector<double> table(16);
  for (int i = 0; i < 16; ++i)
    table[i] = (i - 8) * 0.25;
  Expected<formats::DataFormat> code = weightFormatFromAbi(LOWBIT_WEIGHT_LUT4, table.data());
  ASSERT_TRUE(code.ok()) << code.error();
  EXPECT_EQ(*code, *formats::DataFormat::lut(4, table, ""));
  Expected<formats::DataFormat> missing = weightFormatFromAbi(LOWBIT_WEIGHT_LUT4, nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("needs table"), std::string::npos) << missing.error();
  Expected<formats::DataFormat> extra = weightFormatFromAbi(LOWBIT_WEIGHT_NF4, table.data());
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.error().find("LUT4's only"), std::string::npos) << extra.error();
}

// LOWBIT_WEIGHT_FLOAT carries any minifloat by its parameters; one equal to
// a named format is that format, so both spell one problem one way.
TEST(AbiFormats, FloatWeightTakesItsParametersAndOnlyItTakesThem) {
  const lowbit_float_format e3m3{3, 3, 5, 0};
  Expected<formats::DataFormat> code = weightFormatFromAbi(LOWBIT_WEIGHT_FLOAT, nullptr, &e3m3);
  ASSERT_TRUE(code.ok()) << code.error();
  EXPECT_EQ(*code, *formats::DataFormat::minifloat(3, 3, 5, formats::kFloatFinite));
  EXPECT_EQ(code->bits(), 7);

  const lowbit_float_format e2m1{2, 1, 1, 0};
  Expected<formats::DataFormat> named = weightFormatFromAbi(LOWBIT_WEIGHT_FLOAT, nullptr, &e2m1);
  ASSERT_TRUE(named.ok()) << named.error();
  EXPECT_EQ(*named, formats::DataFormat::e2m1());
  EXPECT_EQ(named->name(), "e2m1");

  const lowbit_float_format e4m3fn{4, 3, 7, LOWBIT_FLOAT_NAN_ALL_ONES};
  Expected<formats::DataFormat> fn = weightFormatFromAbi(LOWBIT_WEIGHT_FLOAT, nullptr, &e4m3fn);
  ASSERT_TRUE(fn.ok()) << fn.error();
  EXPECT_EQ(*fn, formats::DataFormat::e4m3fn());

  auto refused = [](int weight, const lowbit_float_format *f, const char *why) {
    Expected<formats::DataFormat> r = weightFormatFromAbi(weight, nullptr, f);
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_NE(r.error().find(why), std::string::npos) << r.error();
  };
  const lowbit_float_format zero{};
  refused(LOWBIT_WEIGHT_FLOAT, nullptr, "needs weight_float");
  refused(LOWBIT_WEIGHT_FLOAT, &zero, "needs weight_float");
  refused(LOWBIT_WEIGHT_E2M1, &e3m3, "LOWBIT_WEIGHT_FLOAT's only");
  const lowbit_float_format unknownFlag{3, 2, 3, 64};
  refused(LOWBIT_WEIGHT_FLOAT, &unknownFlag, "bits lowbit.h does not define: 64");
  const lowbit_float_format noExponent{0, 3, 1, 0};
  refused(LOWBIT_WEIGHT_FLOAT, &noExponent, "weight_float {0, 3, 1, 0}");
  const lowbit_float_format wide{5, 10, 15, LOWBIT_FLOAT_IEEE}; // f16: 16 bits
  refused(LOWBIT_WEIGHT_FLOAT, &wide, "weight codes have at most 8");
  std::vector<double> table(16, 0.0);
  Expected<formats::DataFormat> both =
      weightFormatFromAbi(LOWBIT_WEIGHT_FLOAT, table.data(), &e3m3);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().find("LUT4's only"), std::string::npos) << both.error();
}

TEST(AbiFormats, TernaryIsTheFormatsLibrarysTernary) {
  Expected<formats::DataFormat> ternary = weightFormatFromAbi(LOWBIT_WEIGHT_TERNARY);
  ASSERT_TRUE(ternary.ok()) << ternary.error();
  EXPECT_EQ(*ternary, formats::DataFormat::ternary());
}

TEST(AbiFormats, DtypesGranularitiesAndZeroModes) {
  EXPECT_EQ(*activationFromAbi(LOWBIT_DTYPE_BF16), Activation::BF16);
  EXPECT_FALSE(activationFromAbi(LOWBIT_DTYPE_F32).ok()); // scales only
  EXPECT_EQ(*scaleFormatFromAbi(LOWBIT_DTYPE_F32), formats::DataFormat::f32());
  EXPECT_EQ(*granularityFromAbi(LOWBIT_GRANULARITY_CHANNEL), formats::Granularity::PerChannel);
  Expected<AbiZeroPoints> value = zeroPointsFromAbi(LOWBIT_ZERO_SUB_VALUE);
  ASSERT_TRUE(value.ok()) << value.error();
  EXPECT_EQ(value->mode, formats::ZeroMode::SubtractScaled);
  EXPECT_FALSE(value->codes.has_value());
  Expected<AbiZeroPoints> bad = zeroPointsFromAbi(static_cast<lowbit_zero_mode>(0));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("zero"), std::string::npos);
  // The error lists every value the table holds, zero codes included.
  EXPECT_NE(bad.error().find("quantized uint4"), std::string::npos) << bad.error();
}

// Block scales and NVFP4's tensor scale: the ABI values are the typed
// model's formats; a tensor scale of 0 is none, anything but f32 an error.
TEST(AbiFormats, BlockScalesAndTheTensorScale) {
  EXPECT_EQ(*scaleFormatFromAbi(LOWBIT_DTYPE_E8M0), formats::DataFormat::e8m0());
  EXPECT_EQ(*scaleFormatFromAbi(LOWBIT_DTYPE_E4M3), formats::DataFormat::e4m3fn());
  EXPECT_FALSE(activationFromAbi(LOWBIT_DTYPE_E8M0).ok()) << "scales only";
  Expected<std::optional<formats::DataFormat>> none =
      tensorScaleFromAbi(static_cast<lowbit_dtype>(0));
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(none->has_value());
  Expected<std::optional<formats::DataFormat>> f32 = tensorScaleFromAbi(LOWBIT_DTYPE_F32);
  ASSERT_TRUE(f32.ok()) << f32.error();
  EXPECT_EQ(*f32, formats::DataFormat::f32());
  Expected<std::optional<formats::DataFormat>> f16 = tensorScaleFromAbi(LOWBIT_DTYPE_F16);
  ASSERT_FALSE(f16.ok());
  EXPECT_EQ(f16.error(),
            "tensor_scale 1 is not a lowbit.h value here (allowed: f32); 0 is none");
}

// GPTQ / AWQ zeros: (q - z)·s with z a uint4 or uint8 code.
TEST(AbiFormats, ZeroCodesAreSubCodeWithTheirIntegerFormat) {
  const std::pair<lowbit_zero_mode, formats::DataFormat> cases[] = {
      {LOWBIT_ZERO_UINT4_CODES, formats::DataFormat::unsignedInt(4)},
      {LOWBIT_ZERO_UINT8_CODES, formats::DataFormat::unsignedInt(8)},
  };
  for (const auto &[abi, format] : cases) {
    Expected<AbiZeroPoints> zero = zeroPointsFromAbi(abi);
    ASSERT_TRUE(zero.ok()) << zero.error();
    EXPECT_EQ(zero->mode, formats::ZeroMode::SubtractCode);
    ASSERT_TRUE(zero->codes.has_value());
    EXPECT_EQ(*zero->codes, format);
  }
}

TEST(AbiFormats, QuantizedActivationsTheirScalesAndOutputs) {
  EXPECT_EQ(*activationFromAbi(LOWBIT_DTYPE_S8), Activation::S8);
  EXPECT_EQ(*activationFromAbi(LOWBIT_DTYPE_E4M3), Activation::E4M3);
  EXPECT_FALSE(activationFromAbi(LOWBIT_DTYPE_F32).ok());
  EXPECT_EQ(*activationScaleFromAbi(0), ActivationScale::None);
  EXPECT_EQ(*activationScaleFromAbi(LOWBIT_ACTIVATION_SCALE_TOKEN), ActivationScale::PerToken);
  EXPECT_EQ(*activationScaleFromAbi(LOWBIT_ACTIVATION_SCALE_TENSOR), ActivationScale::PerTensor);
  Expected<ActivationScale> badScale = activationScaleFromAbi(3);
  ASSERT_FALSE(badScale.ok());
  EXPECT_NE(badScale.error().find("activation_scale 3"), std::string::npos) << badScale.error();
  EXPECT_EQ(*outputFromAbi(0), std::nullopt);
  EXPECT_EQ(*outputFromAbi(LOWBIT_DTYPE_F32), std::optional<Output>(Output::F32));
  Expected<std::optional<Output>> badOutput = outputFromAbi(LOWBIT_DTYPE_S8);
  ASSERT_FALSE(badOutput.ok());
  EXPECT_NE(badOutput.error().find("or 0 for the activation's own dtype"), std::string::npos)
      << badOutput.error();
}

// problemToAbi is the tables read the other way: each field of the struct
// it writes reads back as the problem's.
TEST(AbiFormats, ProblemsCrossTheAbiAndComeBackTheSame) {
  auto withZeroCodes = [] {
    Problem p;
    p.n = 256, p.k = 512;
    p.scheme.zero = formats::ZeroMode::SubtractCode;
    p.scheme.zeroCodes = formats::DataFormat::unsignedInt(4);
    p.scheme.actOrder = true;
    return p;
  };
  auto nf4 = [] {
    Problem p;
    p.n = 128, p.k = 256;
    p.activation = Activation::BF16;
    p.code = formats::DataFormat::nf4();
    p.scheme.scale = formats::DataFormat::bf16();
    p.scheme.granularity = formats::Granularity::PerChannel;
    p.scheme.groupSize = 0;
    return p;
  };
  auto table = [] {
    Problem p;
    p.n = 64, p.k = 128;
    std::vector<double> values;
    for (int i = 0; i < 16; ++i)
      values.push_back(0.25 * (i - 7));
    p.code = *formats::DataFormat::tableOfValues(4, values);
    return p;
  };
  auto e4m3Activations = [] {
    Problem p;
    p.n = 64, p.k = 128;
    p.activation = Activation::E4M3;
    p.activationScale = ActivationScale::PerTensor;
    p.output = Output::F32;
    return p;
  };
  auto unnamedMinifloat = [] {
    Problem p;
    p.n = 64, p.k = 128;
    p.code = *formats::DataFormat::minifloat(2, 2, 1, formats::kFloatFinite);
    return p;
  };
  auto e8m0Element = [] { // every flag lowbit.h defines but IEEE's
    Problem p;
    p.n = 64, p.k = 128;
    p.code = formats::DataFormat::e8m0();
    return p;
  };
  for (const Problem &p : {Problem{}, withZeroCodes(), nf4(), table(), e4m3Activations(),
                           unnamedMinifloat(), e8m0Element()}) {
    lowbit_problem abi;
    std::vector<double> storage;
    ASSERT_TRUE(problemToAbi(p, &abi, &storage).ok()) << signature(p);
    EXPECT_EQ(abi.struct_size, sizeof(lowbit_problem));
    EXPECT_EQ(abi.n, p.n);
    EXPECT_EQ(abi.k, p.k);
    EXPECT_EQ(*activationFromAbi(abiField(abi.activation)), p.activation);
    EXPECT_EQ(*activationScaleFromAbi(abiField(abi.activation_scale)), p.activationScale);
    EXPECT_EQ(*outputFromAbi(abiField(abi.output)), p.output);
    Expected<formats::DataFormat> code =
        weightFormatFromAbi(abiField(abi.weight), abi.table, &abi.weight_float);
    ASSERT_TRUE(code.ok()) << code.error();
    EXPECT_EQ(*code, p.code) << signature(p);
    EXPECT_EQ(*scaleFormatFromAbi(abiField(abi.scale)), p.scheme.scale);
    EXPECT_EQ(*granularityFromAbi(abiField(abi.granularity)), p.scheme.granularity);
    EXPECT_EQ(abi.group_size, p.scheme.groupSize);
    Expected<AbiZeroPoints> zero = zeroPointsFromAbi(abiField(abi.zero));
    ASSERT_TRUE(zero.ok());
    EXPECT_EQ(zero->mode, p.scheme.zero);
    EXPECT_EQ(zero->codes, p.scheme.zeroCodes);
    EXPECT_EQ(abi.act_order, p.scheme.actOrder ? 1 : 0);
  }
  EXPECT_EQ(nf4().code.asLut() != nullptr, true);
  lowbit_problem abi;
  std::vector<double> storage;
  ASSERT_TRUE(problemToAbi(nf4(), &abi, &storage).ok());
  EXPECT_EQ(abi.weight, LOWBIT_WEIGHT_NF4);
  EXPECT_EQ(abi.table, nullptr);
  ASSERT_TRUE(problemToAbi(table(), &abi, &storage).ok());
  EXPECT_EQ(abi.weight, LOWBIT_WEIGHT_LUT4);
  EXPECT_EQ(abi.table, storage.data());

  // A minifloat without a name of its own crosses as LOWBIT_WEIGHT_FLOAT.
  Problem custom;
  custom.code = *formats::DataFormat::minifloat(2, 2, 1, formats::kFloatFinite);
  ASSERT_TRUE(problemToAbi(custom, &abi, &storage).ok());
  EXPECT_EQ(abi.weight, LOWBIT_WEIGHT_FLOAT);
  EXPECT_EQ(abi.weight_float.exponent_bits, 2);
  EXPECT_EQ(abi.weight_float.mantissa_bits, 2);
  EXPECT_EQ(abi.weight_float.bias, 1);
  EXPECT_EQ(abi.weight_float.flags, 0u);
  ASSERT_TRUE(problemToAbi(Problem{}, &abi, &storage).ok());
  EXPECT_EQ(abi.weight_float.exponent_bits, 0); // named formats leave it zero
}

} // namespace
} // namespace lowbit::core
