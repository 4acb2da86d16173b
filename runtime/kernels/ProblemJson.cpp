#include "runtime/kernels/ProblemJson.h"

namespace lowbit::kernels {
namespace {

Expected<std::string> text(const nlohmann::json &in, const char *key) {
  if (!in.contains(key) || !in[key].is_string())
    return makeError(std::string("problem field '") + key + "' is missing or not a string");
  return in[key].get<std::string>();
}

Expected<int64_t> integer(const nlohmann::json &in, const char *key) {
  if (!in.contains(key) || !in[key].is_number_integer())
    return makeError(std::string("problem field '") + key + "' is missing or not an integer");
  return in[key].get<int64_t>();
}

// text(key) parsed by `parse`, the error naming the key.
template <typename T>
Expected<T> parsed(const nlohmann::json &in, const char *key,
                   Expected<T> (*parse)(const std::string &)) {
  Expected<std::string> value = text(in, key);
  if (!value)
    return makeError(value.error());
  Expected<T> result = parse(*value);
  if (!result)
    return makeError(std::string("problem field '") + key + "': " + result.error());
  return result;
}

} // namespace

void writeProblemJson(const core::Problem &p, const char *nameKey, nlohmann::json &out) {
  const core::Scheme &s = p.scheme;
  out[nameKey] = p.name;
  out["n"] = p.n;
  out["k"] = p.k;
  out["activation"] = core::activationName(p.activation);
  out["weight"] = p.code.name();
  out["scale"] = s.scale.name();
  if (s.tensorScale)
    out["tensor_scale"] = s.tensorScale->name();
  out["granularity"] = core::granularitySpelling(s.granularity);
  out["group_size"] = s.groupSize;
  out["zero"] = core::zeroSpelling(s.zero, s.zeroCodes.has_value());
  if (s.zeroCodes)
    out["zero_codes"] = s.zeroCodes->name();
  if (s.actOrder)
    out["act_order"] = true;
  if (s.hasSuperBlocks() && s.superStep) {
    out["super_block"] = s.superBlock;
    out["super_step"] = s.superStep->name();
  }
  if (p.activationScale != core::ActivationScale::None)
    out["activation_scale"] = core::activationScaleSpelling(p.activationScale);
  if (p.output)
    out["output"] = core::outputName(*p.output);
}

Expected<core::Problem> readProblemJson(const nlohmann::json &in, const char *nameKey) {
  if (!in.is_object())
    return makeError("a problem description must be a JSON object");
  core::Problem p;
  Expected<std::string> name = text(in, nameKey);
  Expected<int64_t> n = integer(in, "n"), k = integer(in, "k");
  Expected<core::Activation> activation = parsed(in, "activation", core::parseActivation);
  Expected<formats::DataFormat> code = parsed(in, "weight", formats::parseFormat);
  Expected<formats::DataFormat> scale = parsed(in, "scale", formats::parseFormat);
  Expected<formats::Granularity> granularity =
      parsed(in, "granularity", core::parseGranularity);
  Expected<core::ZeroSpelling> zero = parsed(in, "zero", core::parseZero);
  for (const std::string *error :
       {name ? nullptr : &name.error(), n ? nullptr : &n.error(), k ? nullptr : &k.error(),
        activation ? nullptr : &activation.error(), code ? nullptr : &code.error(),
        scale ? nullptr : &scale.error(), granularity ? nullptr : &granularity.error(),
        zero ? nullptr : &zero.error()})
    if (error)
      return makeError(*error);
  p.name = *name;
  p.n = *n, p.k = *k;
  p.activation = *activation;
  p.code = *code;
  p.scheme.scale = *scale;
  if (in.contains("tensor_scale")) {
    Expected<formats::DataFormat> tensorScale =
        parsed(in, "tensor_scale", formats::parseFormat);
    if (!tensorScale)
      return makeError(tensorScale.error());
    p.scheme.tensorScale = *tensorScale;
  }
  p.scheme.granularity = *granularity;
  if (*granularity == formats::Granularity::PerGroup) {
    Expected<int64_t> group = integer(in, "group_size");
    if (!group)
      return makeError(group.error());
    p.scheme.groupSize = *group;
  } else {
    p.scheme.groupSize = 0;
  }
  p.scheme.zero = zero->mode;
  if (zero->quantized) {
    Expected<formats::DataFormat> zeroCodes = parsed(in, "zero_codes", formats::parseFormat);
    if (!zeroCodes)
      return makeError(zeroCodes.error());
    p.scheme.zeroCodes = *zeroCodes;
  }
  p.scheme.actOrder = in.contains("act_order") && in["act_order"].is_boolean() &&
                      in["act_order"].get<bool>();
  if (in.contains("super_block") || in.contains("super_step")) {
    Expected<int64_t> superBlock = integer(in, "super_block");
    Expected<formats::DataFormat> superStep = parsed(in, "super_step", formats::parseFormat);
    if (!superBlock || !superStep)
      return makeError(!superBlock ? superBlock.error() : superStep.error());
    p.scheme.superBlock = *superBlock;
    p.scheme.superStep = *superStep;
  }
  if (in.contains("activation_scale")) {
    Expected<core::ActivationScale> scale =
        parsed(in, "activation_scale", core::parseActivationScale);
    if (!scale)
      return makeError(scale.error());
    p.activationScale = *scale;
  }
  if (in.contains("output")) {
    Expected<core::Output> output = parsed(in, "output", core::parseOutput);
    if (!output)
      return makeError(output.error());
    p.output = *output;
  }
  if (Status valid = core::validate(p); !valid)
    return makeError(valid.error());
  return p;
}

} // namespace lowbit::kernels
