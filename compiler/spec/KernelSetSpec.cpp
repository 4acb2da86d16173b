#include "compiler/spec/KernelSetSpec.h"

#include "core/Arch.h"

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <fstream>
#include <set>
#include <sstream>

namespace lowbit::spec {
namespace {

std::string where(const std::string &sourceName, const toml::node *node) {
  std::string out = sourceName;
  if (node && node->source().begin)
    out += ":" + std::to_string(node->source().begin.line);
  return out;
}

// Reads `key` from `table` (falling back to `defaults`) into `out`; type
// mismatches are errors, absence keeps `out` as is.
template <typename T>
Status readKey(const toml::table &table, const toml::table *defaults,
               const char *key, T &out, const std::string &sourceName) {
  const toml::node *node = table.get(key);
  if (!node && defaults)
    node = defaults->get(key);
  if (!node)
    return Status::success();
  std::optional<T> value = node->value<T>();
  if (!value)
    return makeError(where(sourceName, node) + ": '" + key + "' has the wrong type");
  out = *value;
  return Status::success();
}

// The spelled fields of a [[problem]], before core parses them.
struct SpelledProblem {
  std::string name;
  int64_t n = 0, k = 0;
  std::string activation = "f16", weight = "uint4", scale = "f16", granularity = "group";
  int64_t groupSize = 128;
  std::string zero = "none", zeroCodes;
  std::string tensorScale; // empty: none
};

// `what 'text': why`, for a value core refused.
Error badValue(const std::string &at, const char *what, const std::string &text,
               const std::string &why) {
  return makeError(at + ": " + what + " '" + text + "': " + why);
}

Expected<core::Problem> toProblem(const SpelledProblem &s, const std::string &at) {
  if (s.name.empty())
    return makeError(at + ": a problem needs a 'name'");
  if (s.n <= 0 || s.k <= 0)
    return makeError(at + ": problem '" + s.name + "' needs positive n and k");
  core::Problem p;
  p.name = s.name;
  p.n = s.n;
  p.k = s.k;
  Expected<core::Activation> activation = core::parseActivation(s.activation);
  if (!activation)
    return badValue(at, "activation", s.activation, activation.error());
  p.activation = *activation;
  Expected<formats::DataFormat> code = formats::parseFormat(s.weight);
  if (!code)
    return badValue(at, "weight", s.weight, code.error());
  p.code = *code;
  Expected<formats::DataFormat> scale = formats::parseFormat(s.scale);
  if (!scale)
    return badValue(at, "scale", s.scale, scale.error());
  p.scheme.scale = *scale;
  if (!s.tensorScale.empty()) {
    Expected<formats::DataFormat> tensorScale = formats::parseFormat(s.tensorScale);
    if (!tensorScale)
      return badValue(at, "tensor_scale", s.tensorScale, tensorScale.error());
    p.scheme.tensorScale = *tensorScale;
  }
  Expected<formats::Granularity> granularity = core::parseGranularity(s.granularity);
  if (!granularity)
    return badValue(at, "granularity", s.granularity, granularity.error());
  p.scheme.granularity = *granularity;
  if (*granularity == formats::Granularity::PerGroup) {
    if (s.groupSize <= 0)
      return makeError(at + ": problem '" + s.name + "' needs a positive group_size");
    if (s.k % s.groupSize != 0)
      return makeError(at + ": problem '" + s.name + "': group size " +
                       std::to_string(s.groupSize) + " does not divide K = " +
                       std::to_string(s.k));
    p.scheme.groupSize = s.groupSize;
  } else {
    p.scheme.groupSize = 0; // a [defaults] group_size means nothing here
  }
  Expected<core::ZeroSpelling> zero = core::parseZero(s.zero);
  if (!zero)
    return badValue(at, "zero", s.zero, zero.error());
  p.scheme.zero = zero->mode;
  if (zero->quantized != !s.zeroCodes.empty())
    return makeError(at + ": problem '" + s.name +
                     "': zero = \"quantized\" and zero_codes (uint4 or uint8) go together");
  if (zero->quantized) {
    Expected<formats::DataFormat> zeroCodes = formats::parseFormat(s.zeroCodes);
    if (!zeroCodes)
      return badValue(at, "zero_codes", s.zeroCodes, zeroCodes.error());
    p.scheme.zeroCodes = *zeroCodes;
  }
  if (Status valid = core::validate(p); !valid)
    return makeError(at + ": problem '" + s.name + "': " + valid.error());
  return p;
}

} // namespace

Expected<KernelSetSpec> parseKernelSetSpec(const std::string &text,
                                           const std::string &sourceName) {
  toml::table root;
  try {
    root = toml::parse(text, sourceName);
  } catch (const toml::parse_error &error) {
    std::ostringstream message;
    message << sourceName << ":" << error.source().begin.line << ": "
            << error.description();
    return makeError(message.str());
  }

  KernelSetSpec spec;
  const toml::array *archs = root["archs"].as_array();
  if (!archs || archs->empty())
    return makeError(sourceName + ": 'archs' must list at least one arch");
  for (const toml::node &arch : *archs) {
    std::optional<std::string> name = arch.value<std::string>();
    if (!name || !core::findTargetArch(*name))
      return makeError(where(sourceName, &arch) + ": archs must be " + core::targetArchList());
    spec.archs.push_back(*name);
  }

  const toml::table *defaults = root["defaults"].as_table();
  const toml::array *problems = root["problem"].as_array();
  if (!problems || problems->empty())
    return makeError(sourceName + ": no [[problem]] entries");
  std::set<std::string> names;
  for (const toml::node &node : *problems) {
    const toml::table *table = node.as_table();
    std::string at = where(sourceName, &node);
    if (!table)
      return makeError(at + ": [[problem]] must be a table");
    SpelledProblem p;
    for (Status s : {readKey(*table, defaults, "name", p.name, sourceName),
                     readKey(*table, defaults, "n", p.n, sourceName),
                     readKey(*table, defaults, "k", p.k, sourceName),
                     readKey(*table, defaults, "activation", p.activation, sourceName),
                     readKey(*table, defaults, "weight", p.weight, sourceName),
                     readKey(*table, defaults, "scale", p.scale, sourceName),
                     readKey(*table, defaults, "tensor_scale", p.tensorScale, sourceName),
                     readKey(*table, defaults, "granularity", p.granularity, sourceName),
                     readKey(*table, defaults, "group_size", p.groupSize, sourceName),
                     readKey(*table, defaults, "zero", p.zero, sourceName),
                     readKey(*table, defaults, "zero_codes", p.zeroCodes, sourceName)})
      if (!s.ok())
        return makeError(s.error());
    Expected<core::Problem> problem = toProblem(p, at);
    if (!problem)
      return makeError(problem.error());
    if (!names.insert(p.name).second)
      return makeError(at + ": problem name '" + p.name + "' appears twice");
    spec.problems.push_back(std::move(*problem));
  }
  return spec;
}

Expected<KernelSetSpec> loadKernelSetSpec(const std::string &path) {
  std::ifstream file(path);
  if (!file)
    return makeError("cannot open spec '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  return parseKernelSetSpec(text.str(), path);
}

} // namespace lowbit::spec
