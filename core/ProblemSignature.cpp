// The problem's canonical signature (the kernel databases' key) and its
// exact inverse.
#include "core/Problem.h"

#include <cstdlib>
#include <map>
#include <sstream>
#include <vector>

namespace lowbit::core {
namespace {

// Strict decimal: digits only (a leading '-' allowed), no spaces, fits int64.
Expected<int64_t> parseDecimal(const std::string &text, const std::string &what) {
  if (text.empty() || text.size() > 19)
    return makeError(what + " '" + text + "' is not a decimal integer");
  size_t start = text[0] == '-' ? 1 : 0;
  if (start == text.size())
    return makeError(what + " '" + text + "' is not a decimal integer");
  for (size_t i = start; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9')
      return makeError(what + " '" + text + "' is not a decimal integer");
  return static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10));
}

} // namespace

std::string signature(const Problem &p) {
  const Scheme &s = p.scheme;
  std::string out = "lowbit.qmatmul.v1;n=" + std::to_string(p.n) + ";k=" + std::to_string(p.k) +
                    ";act=" + activationName(p.activation) + ";weight=" + p.code.name() +
                    ";scale=" + s.scale.name() +
                    ";granularity=" + granularitySpelling(s.granularity) +
                    ";group=" + std::to_string(s.groupSize) +
                    ";zero=" + zeroSpelling(s.zero, s.zeroCodes.has_value());
  if (s.tensorScale)
    out += ";tensor_scale=" + s.tensorScale->name();
  if (s.zeroCodes)
    out += ";zero_codes=" + s.zeroCodes->name();
  if (s.hasSuperBlocks())
    out += ";super_block=" + std::to_string(s.superBlock) +
           ";super_step=" + (s.superStep ? s.superStep->name() : std::string("?"));
  if (s.actOrder)
    out += ";act_order=1";
  if (p.activationScale != ActivationScale::None)
    out += std::string(";act_scale=") + activationScaleSpelling(p.activationScale);
  if (p.output)
    out += std::string(";out=") + outputName(*p.output);
  return out;
}

Expected<Problem> parseSignature(const std::string &text) {
  const std::string prefix = "lowbit.qmatmul.v1;";
  auto bad = [&](const std::string &why) {
    return makeError("problem signature '" + text + "': " + why);
  };
  if (text.compare(0, prefix.size(), prefix) != 0)
    return bad("does not start with " + prefix);
  // Fields in signature()'s order; the optional ones last.
  const char *required[] = {"n", "k", "act", "weight", "scale", "granularity", "group", "zero"};
  std::vector<std::pair<std::string, std::string>> fields;
  std::stringstream rest(text.substr(prefix.size()));
  for (std::string field; std::getline(rest, field, ';');) {
    size_t eq = field.find('=');
    if (eq == std::string::npos)
      return bad("field '" + field + "' has no '='");
    fields.emplace_back(field.substr(0, eq), field.substr(eq + 1));
  }
  size_t i = 0;
  for (const char *key : required)
    if (i >= fields.size() || fields[i++].first != key)
      return bad(std::string("expected field '") + key + "' in position " + std::to_string(i));
  Problem p;
  std::map<std::string, std::string> value(fields.begin(), fields.begin() + 8);
  Expected<int64_t> n = parseDecimal(value["n"], "n"), k = parseDecimal(value["k"], "k"),
                    group = parseDecimal(value["group"], "group");
  if (!n || !k || !group)
    return bad(!n ? n.error() : !k ? k.error() : group.error());
  p.n = *n, p.k = *k, p.scheme.groupSize = *group;
  Expected<Activation> activation = parseActivation(value["act"]);
  Expected<formats::DataFormat> code = formats::parseFormat(value["weight"]);
  Expected<formats::DataFormat> scale = formats::parseFormat(value["scale"]);
  Expected<formats::Granularity> granularity = parseGranularity(value["granularity"]);
  Expected<ZeroSpelling> zero = parseZero(value["zero"]);
  if (!activation)
    return bad(activation.error());
  if (!code)
    return bad(code.error());
  if (!scale)
    return bad(scale.error());
  if (!granularity)
    return bad(granularity.error());
  if (!zero)
    return bad(zero.error());
  p.activation = *activation, p.code = *code, p.scheme.scale = *scale;
  p.scheme.granularity = *granularity, p.scheme.zero = zero->mode;
  for (; i < fields.size(); ++i) {
    const auto &[key, v] = fields[i];
    if (key == "tensor_scale" && !p.scheme.tensorScale && !p.scheme.zeroCodes &&
        !p.scheme.actOrder) {
      Expected<formats::DataFormat> tensorScale = formats::parseFormat(v);
      if (!tensorScale)
        return bad(tensorScale.error());
      p.scheme.tensorScale = *tensorScale;
    } else if (key == "zero_codes" && !p.scheme.zeroCodes && !p.scheme.actOrder) {
      Expected<formats::DataFormat> zeroCodes = formats::parseFormat(v);
      if (!zeroCodes)
        return bad(zeroCodes.error());
      p.scheme.zeroCodes = *zeroCodes;
    } else if (key == "super_block" && !p.scheme.hasSuperBlocks() && !p.scheme.actOrder &&
               i + 1 < fields.size() && fields[i + 1].first == "super_step") {
      Expected<int64_t> size = parseDecimal(v, "super_block");
      Expected<formats::DataFormat> step = formats::parseFormat(fields[i + 1].second);
      if (!size || !step)
        return bad(!size ? size.error() : step.error());
      p.scheme.superBlock = *size;
      p.scheme.superStep = *step;
      ++i;
    } else if (key == "act_order" && v == "1" && !p.scheme.actOrder) {
      p.scheme.actOrder = true;
    } else if (key == "act_scale" && p.activationScale == ActivationScale::None) {
      Expected<ActivationScale> scale = parseActivationScale(v);
      if (!scale)
        return bad(scale.error());
      p.activationScale = *scale;
    } else if (key == "out" && !p.output) {
      Expected<Output> output = parseOutput(v);
      if (!output)
        return bad(output.error());
      p.output = *output;
    } else {
      return bad("unexpected field '" + key + "=" + v + "'");
    }
  }
  if (zero->quantized != p.scheme.zeroCodes.has_value())
    return bad("zero=quantized and zero_codes go together");
  if (signature(p) != text)
    return bad("not in canonical form (expected '" + signature(p) + "')");
  if (Status s = validate(p); !s)
    return bad(s.error());
  return p;
}

} // namespace lowbit::core
