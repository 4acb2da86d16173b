#include "compiler/spec/KernelSetSpec.h"

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

bool isOneOf(const std::string &value, std::initializer_list<const char *> allowed) {
  for (const char *candidate : allowed)
    if (value == candidate)
      return true;
  return false;
}

bool isWeightType(const std::string &name) {
  for (const char *prefix : {"uint", "int"}) {
    std::string p = prefix;
    if (name.rfind(p, 0) == 0 && name.size() == p.size() + 1) {
      char bits = name.back();
      return bits >= '1' && bits <= '8';
    }
  }
  return false;
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

Status validateProblem(const ProblemSpec &p, const std::string &at) {
  if (p.name.empty())
    return makeError(at + ": a problem needs a 'name'");
  if (p.n <= 0 || p.k <= 0)
    return makeError(at + ": problem '" + p.name + "' needs positive n and k");
  if (!isOneOf(p.activation, {"f16", "bf16"}))
    return makeError(at + ": activation '" + p.activation + "' is not f16 or bf16");
  if (!isWeightType(p.weight))
    return makeError(at + ": weight '" + p.weight + "' is not uint1..uint8 or int1..int8");
  if (!isOneOf(p.scale, {"f16", "bf16", "f32"}))
    return makeError(at + ": scale '" + p.scale + "' is not f16, bf16 or f32");
  if (!isOneOf(p.granularity, {"tensor", "channel", "group"}))
    return makeError(at + ": granularity '" + p.granularity +
                     "' is not tensor, channel or group");
  if (!isOneOf(p.zero, {"none", "sub_code", "sub_value"}))
    return makeError(at + ": zero '" + p.zero + "' is not none, sub_code or sub_value");
  if (p.granularity == "group") {
    if (p.groupSize <= 0)
      return makeError(at + ": problem '" + p.name + "' needs a positive group_size");
    if (p.k % p.groupSize != 0)
      return makeError(at + ": problem '" + p.name + "': group size " +
                       std::to_string(p.groupSize) + " does not divide K = " +
                       std::to_string(p.k));
  }
  return Status::success();
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
    if (!name || !isOneOf(*name, {"sm_80", "sm_86", "sm_89", "sm_90a"}))
      return makeError(where(sourceName, &arch) +
                       ": archs must be sm_80, sm_86, sm_89 or sm_90a");
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
    ProblemSpec p;
    for (Status s : {readKey(*table, defaults, "name", p.name, sourceName),
                     readKey(*table, defaults, "n", p.n, sourceName),
                     readKey(*table, defaults, "k", p.k, sourceName),
                     readKey(*table, defaults, "activation", p.activation, sourceName),
                     readKey(*table, defaults, "weight", p.weight, sourceName),
                     readKey(*table, defaults, "scale", p.scale, sourceName),
                     readKey(*table, defaults, "granularity", p.granularity, sourceName),
                     readKey(*table, defaults, "group_size", p.groupSize, sourceName),
                     readKey(*table, defaults, "zero", p.zero, sourceName)})
      if (!s.ok())
        return makeError(s.error());
    if (Status s = validateProblem(p, at); !s.ok())
      return makeError(s.error());
    if (!names.insert(p.name).second)
      return makeError(at + ": problem name '" + p.name + "' appears twice");
    spec.problems.push_back(p);
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
