#include "core/AbiFormats.h"

#include <cstring>
#include <string>

namespace lowbit::core {
namespace {

// Looks `value` up in `table`; the error lists what the table holds.
template <typename Enum, typename Value, size_t N>
Expected<Value> lookUp(const char *field, int value,
                       const std::pair<Enum, const char *> (&table)[N],
                       Expected<Value> (*parse)(const std::string &)) {
  std::string allowed;
  for (const auto &[abi, spelling] : table) {
    if (static_cast<int>(abi) == value) {
      Expected<Value> parsed = parse(spelling);
      if (!parsed)
        return makeError(std::string(field) + " " + spelling + ": " + parsed.error());
      return parsed;
    }
    allowed += (allowed.empty() ? "" : ", ") + std::string(spelling);
  }
  return makeError(std::string(field) + " " + std::to_string(value) +
                   " is not a lowbit.h value here (allowed: " + allowed + ")");
}

// Each row pairs an ABI value with its spelling in the typed model, which
// core's one parse turns into the value.
const std::pair<lowbit_dtype, const char *> kActivations[] = {
    {LOWBIT_DTYPE_F16, "f16"},
    {LOWBIT_DTYPE_BF16, "bf16"},
    {LOWBIT_DTYPE_S8, "s8"},
    {LOWBIT_DTYPE_E4M3, "e4m3"},
};
// 0 (none) is in the table: it is the typed model's value too.
const std::pair<lowbit_activation_scale, const char *> kActivationScales[] = {
    {LOWBIT_ACTIVATION_SCALE_NONE, "none"},
    {LOWBIT_ACTIVATION_SCALE_TOKEN, "token"},
    {LOWBIT_ACTIVATION_SCALE_TENSOR, "tensor"},
};
// y's dtype; 0 (the activation's own) is handled before the table.
const std::pair<lowbit_dtype, const char *> kOutputs[] = {
    {LOWBIT_DTYPE_F16, "f16"},
    {LOWBIT_DTYPE_BF16, "bf16"},
    {LOWBIT_DTYPE_F32, "f32"},
};
const std::pair<lowbit_dtype, const char *> kScales[] = {
    {LOWBIT_DTYPE_F16, "f16"},
    {LOWBIT_DTYPE_BF16, "bf16"},
    {LOWBIT_DTYPE_F32, "f32"},
    {LOWBIT_DTYPE_E8M0, "e8m0"},
    {LOWBIT_DTYPE_E4M3, "e4m3fn"},
    {LOWBIT_DTYPE_U8, "uint8"},
    {LOWBIT_DTYPE_S8, "int8"},
};
// Super-block steps; 0 (none) is handled before the table.
const std::pair<lowbit_dtype, const char *> kSuperSteps[] = {
    {LOWBIT_DTYPE_F16, "f16"},
    {LOWBIT_DTYPE_BF16, "bf16"},
    {LOWBIT_DTYPE_F32, "f32"},
};
// The second-level scale; 0 (none) is handled before the table.
const std::pair<lowbit_dtype, const char *> kTensorScales[] = {
    {LOWBIT_DTYPE_F32, "f32"},
};
const std::pair<lowbit_weight_format, const char *> kWeights[] = {
    {LOWBIT_WEIGHT_UINT1, "uint1"}, {LOWBIT_WEIGHT_UINT2, "uint2"},
    {LOWBIT_WEIGHT_UINT3, "uint3"}, {LOWBIT_WEIGHT_UINT4, "uint4"},
    {LOWBIT_WEIGHT_UINT5, "uint5"}, {LOWBIT_WEIGHT_UINT6, "uint6"},
    {LOWBIT_WEIGHT_UINT7, "uint7"}, {LOWBIT_WEIGHT_UINT8, "uint8"},
    {LOWBIT_WEIGHT_INT1, "int1"},   {LOWBIT_WEIGHT_INT2, "int2"},
    {LOWBIT_WEIGHT_INT3, "int3"},   {LOWBIT_WEIGHT_INT4, "int4"},
    {LOWBIT_WEIGHT_INT5, "int5"},   {LOWBIT_WEIGHT_INT6, "int6"},
    {LOWBIT_WEIGHT_INT7, "int7"},   {LOWBIT_WEIGHT_INT8, "int8"},
    {LOWBIT_WEIGHT_TERNARY, "ternary"}, {LOWBIT_WEIGHT_E2M1, "e2m1"},
    {LOWBIT_WEIGHT_E4M3, "e4m3fn"},     {LOWBIT_WEIGHT_E5M2, "e5m2"},
    {LOWBIT_WEIGHT_E2M3, "e2m3"},       {LOWBIT_WEIGHT_E3M2, "e3m2"},
    {LOWBIT_WEIGHT_NF4, "nf4"},
};
const std::pair<lowbit_granularity, const char *> kGranularities[] = {
    {LOWBIT_GRANULARITY_TENSOR, "tensor"},
    {LOWBIT_GRANULARITY_CHANNEL, "channel"},
    {LOWBIT_GRANULARITY_GROUP, "group"},
};
// Zero codes are spelled "quantized <zero_codes>", as a spec writes them.
const std::pair<lowbit_zero_mode, const char *> kZeros[] = {
    {LOWBIT_ZERO_NONE, "none"},
    {LOWBIT_ZERO_SUB_CODE, "sub_code"},
    {LOWBIT_ZERO_SUB_VALUE, "sub_value"},
    {LOWBIT_ZERO_UINT4_CODES, "quantized uint4"},
    {LOWBIT_ZERO_UINT8_CODES, "quantized uint8"},
};

Expected<AbiZeroPoints> parseZeroPoints(const std::string &text) {
  size_t space = text.find(' ');
  Expected<ZeroSpelling> zero = parseZero(text.substr(0, space));
  if (!zero)
    return makeError(zero.error());
  AbiZeroPoints out{zero->mode, std::nullopt};
  if (zero->quantized) {
    Expected<formats::DataFormat> codes =
        formats::parseFormat(space == std::string::npos ? "" : text.substr(space + 1));
    if (!codes)
      return makeError(codes.error());
    out.codes = *codes;
  }
  return out;
}

} // namespace

Expected<Activation> activationFromAbi(int activation) {
  return lookUp("activation", activation, kActivations, parseActivation);
}

Expected<ActivationScale> activationScaleFromAbi(int scale) {
  return lookUp("activation_scale", scale, kActivationScales, parseActivationScale);
}

Expected<std::optional<Output>> outputFromAbi(int output) {
  if (output == 0)
    return std::optional<Output>();
  Expected<Output> parsed = lookUp("output", output, kOutputs, parseOutput);
  if (!parsed)
    return makeError(parsed.error() + ", or 0 for the activation's own dtype");
  return std::optional<Output>(*parsed);
}

namespace {

bool isZero(const lowbit_float_format &f) {
  return f.exponent_bits == 0 && f.mantissa_bits == 0 && f.bias == 0 && f.flags == 0;
}

// lowbit.h's flag bits, each with the formats library's.
const std::pair<uint32_t, unsigned> kFloatFlags[] = {
    {LOWBIT_FLOAT_IEEE, formats::kFloatIeee},
    {LOWBIT_FLOAT_NAN_ALL_ONES, formats::kFloatNanAllOnes},
    {LOWBIT_FLOAT_UNSIGNED, formats::kFloatUnsigned},
    {LOWBIT_FLOAT_NO_SUBNORMALS, formats::kFloatNoSubnormals},
};

Expected<formats::DataFormat> minifloatFromAbi(const lowbit_float_format &f) {
  unsigned flags = 0;
  uint32_t unknown = f.flags;
  for (const auto &[abi, library] : kFloatFlags)
    if (f.flags & abi) {
      flags |= library;
      unknown &= ~abi;
    }
  if (unknown)
    return makeError("weight_float.flags has bits lowbit.h does not define: " +
                     std::to_string(unknown));
  Expected<formats::DataFormat> format =
      formats::DataFormat::minifloat(f.exponent_bits, f.mantissa_bits, f.bias, flags);
  if (!format)
    return makeError("weight_float {" + std::to_string(f.exponent_bits) + ", " +
                     std::to_string(f.mantissa_bits) + ", " + std::to_string(f.bias) + ", " +
                     std::to_string(f.flags) + "}: " + format.error());
  // Weight codes are at most a byte (lowbit_pack_weights takes one a byte).
  if (format->bits() > 8)
    return makeError("weight_float " + format->name() + " has " + std::to_string(format->bits()) +
                     " bits; weight codes have at most 8");
  return format;
}

} // namespace

Expected<formats::DataFormat> weightFormatFromAbi(int weight, const double *table,
                                                  const lowbit_float_format *minifloat) {
  const bool hasMinifloat = minifloat && !isZero(*minifloat);
  if (weight == LOWBIT_WEIGHT_FLOAT) {
    if (!hasMinifloat)
      return makeError("weight LOWBIT_WEIGHT_FLOAT needs weight_float: the minifloat's "
                       "exponent bits, mantissa bits, bias and flags");
    if (table)
      return makeError("table is set, but it is LOWBIT_WEIGHT_LUT4's only; weight is "
                       "LOWBIT_WEIGHT_FLOAT");
    return minifloatFromAbi(*minifloat);
  }
  if (hasMinifloat)
    return makeError("weight_float is set, but it is LOWBIT_WEIGHT_FLOAT's only; weight is " +
                     std::to_string(weight) + " (set weight_float to zero)");
  if (weight == LOWBIT_WEIGHT_LUT4) {
    if (!table)
      return makeError("weight LOWBIT_WEIGHT_LUT4 needs table: the 16 values of its codes");
    Expected<formats::DataFormat> format =
        formats::DataFormat::tableOfValues(4, std::vector<double>(table, table + 16));
    if (!format)
      return makeError("weight LOWBIT_WEIGHT_LUT4: " + format.error());
    return format;
  }
  if (table)
    return makeError("table is set, but it is LOWBIT_WEIGHT_LUT4's only; weight is " +
                     std::to_string(weight));
  Expected<formats::DataFormat> format = lookUp("weight", weight, kWeights, formats::parseFormat);
  if (!format)
    return makeError(format.error() +
                     ", or LOWBIT_WEIGHT_LUT4 with a table, or LOWBIT_WEIGHT_FLOAT with "
                     "weight_float");
  return format;
}

Expected<formats::DataFormat> scaleFormatFromAbi(int scale) {
  return lookUp("scale", scale, kScales, formats::parseFormat);
}

namespace {

// A dtype field where 0 means none.
template <size_t N>
Expected<std::optional<formats::DataFormat>>
optionalDtype(const char *field, int value, const std::pair<lowbit_dtype, const char *> (&table)[N]) {
  if (value == 0)
    return std::optional<formats::DataFormat>();
  Expected<formats::DataFormat> format = lookUp(field, value, table, formats::parseFormat);
  if (!format)
    return makeError(format.error() + "; 0 is none");
  return std::optional<formats::DataFormat>(*format);
}

} // namespace

Expected<std::optional<formats::DataFormat>> tensorScaleFromAbi(int tensorScale) {
  return optionalDtype("tensor_scale", tensorScale, kTensorScales);
}

Expected<std::optional<formats::DataFormat>> superStepFromAbi(int superStep) {
  return optionalDtype("super_step", superStep, kSuperSteps);
}

Expected<formats::Granularity> granularityFromAbi(int granularity) {
  return lookUp("granularity", granularity, kGranularities, parseGranularity);
}

Expected<AbiZeroPoints> zeroPointsFromAbi(int zero) {
  return lookUp("zero", zero, kZeros, parseZeroPoints);
}

namespace {

// The ABI value whose spelling parses to `value`.
template <typename Enum, typename Value, size_t N>
Expected<Enum> abiValueOf(const char *field, const Value &value, const std::string &valueName,
                          const std::pair<Enum, const char *> (&table)[N],
                          Expected<Value> (*parse)(const std::string &)) {
  for (const auto &[abi, spelling] : table) {
    Expected<Value> parsed = parse(spelling);
    if (parsed && *parsed == value)
      return abi;
  }
  return makeError(std::string(field) + " " + valueName + " has no lowbit.h value");
}

} // namespace

Status problemToAbi(const Problem &p, lowbit_problem *out, std::vector<double> *table) {
  lowbit_problem abi;
  std::memset(&abi, 0, sizeof abi);
  abi.struct_size = sizeof abi;
  abi.n = p.n;
  abi.k = p.k;
  Expected<lowbit_dtype> activation =
      abiValueOf("activation", p.activation, activationName(p.activation), kActivations,
                 parseActivation);
  if (!activation)
    return makeError(activation.error());
  abi.activation = *activation;
  Expected<lowbit_activation_scale> activationScale =
      abiValueOf("activation_scale", p.activationScale,
                 activationScaleSpelling(p.activationScale), kActivationScales,
                 parseActivationScale);
  if (!activationScale)
    return makeError(activationScale.error());
  abi.activation_scale = *activationScale;
  if (p.output) {
    Expected<lowbit_dtype> output =
        abiValueOf("output", *p.output, outputName(*p.output), kOutputs, parseOutput);
    if (!output)
      return makeError(output.error());
    abi.output = *output;
  }
  // Named formats first (nf4 is a table too, with a value of its own).
  Expected<lowbit_weight_format> weight =
      abiValueOf("weight", p.code, p.code.name(), kWeights, formats::parseFormat);
  if (weight) {
    abi.weight = *weight;
  } else if (const formats::FloatFormat *minifloat = p.code.asFloat()) {
    abi.weight = LOWBIT_WEIGHT_FLOAT;
    abi.weight_float.exponent_bits = minifloat->exponentBits;
    abi.weight_float.mantissa_bits = minifloat->mantissaBits;
    abi.weight_float.bias = minifloat->bias;
    for (const auto &[abiFlag, library] : kFloatFlags)
      if (minifloat->flags & library)
        abi.weight_float.flags |= abiFlag;
  } else if (p.code.asLut() && p.code.bits() == 4) {
    abi.weight = LOWBIT_WEIGHT_LUT4;
    table->clear();
    for (uint32_t code = 0; code < 16; ++code)
      table->push_back(p.code.decode(code));
    abi.table = table->data();
  } else {
    return makeError(weight.error());
  }
  Expected<lowbit_dtype> scale =
      abiValueOf("scale", p.scheme.scale, p.scheme.scale.name(), kScales, formats::parseFormat);
  if (!scale)
    return makeError(scale.error());
  abi.scale = *scale;
  if (p.scheme.tensorScale) {
    Expected<lowbit_dtype> tensorScale =
        abiValueOf("tensor_scale", *p.scheme.tensorScale, p.scheme.tensorScale->name(),
                   kTensorScales, formats::parseFormat);
    if (!tensorScale)
      return makeError(tensorScale.error());
    abi.tensor_scale = *tensorScale;
  }
  Expected<lowbit_granularity> granularity =
      abiValueOf("granularity", p.scheme.granularity, granularitySpelling(p.scheme.granularity),
                 kGranularities, parseGranularity);
  if (!granularity)
    return makeError(granularity.error());
  abi.granularity = *granularity;
  abi.group_size = p.scheme.groupSize;
  AbiZeroPoints zero{p.scheme.zero, p.scheme.zeroCodes};
  Expected<lowbit_zero_mode> zeroMode =
      abiValueOf("zero", zero, zeroSpelling(p.scheme.zero, p.scheme.zeroCodes.has_value()),
                 kZeros, parseZeroPoints);
  if (!zeroMode)
    return makeError(zeroMode.error());
  abi.zero = *zeroMode;
  abi.act_order = p.scheme.actOrder ? 1 : 0;
  abi.super_block = p.scheme.superBlock;
  if (p.scheme.superStep) {
    Expected<lowbit_dtype> step =
        abiValueOf("super_step", *p.scheme.superStep, p.scheme.superStep->name(), kSuperSteps,
                   formats::parseFormat);
    if (!step)
      return makeError(step.error());
    abi.super_step = *step;
  }
  *out = abi;
  return Status::success();
}

} // namespace lowbit::core
