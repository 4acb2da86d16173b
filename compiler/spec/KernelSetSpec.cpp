#include "compiler/spec/KernelSetSpec.h"

#include "core/Arch.h"

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>
#include <vector>

namespace lowbit::spec {
namespace {

std::string where(const std::string &sourceName, const toml::node *node) {
  std::string out = sourceName;
  if (node && node->source().begin)
    out += ":" + std::to_string(node->source().begin.line);
  return out;
}

// The keys a [[problem]] (and [defaults]) may hold, and the top-level keys.
// Anything else is a mistake that would silently change the problem
// (`weigth = "int4"` compiled the default uint4), so it is an error.
const char *const kProblemKeys[] = {
    "name",         "n",           "k",          "activation", "weight",    "scale",
    "tensor_scale", "granularity", "group_size", "zero",       "zero_codes", "super_block",
    "super_step",   "activation_scale", "output"};
const char *const kTopLevelKeys[] = {"archs", "defaults", "problem"};

// Levenshtein distance, for "did you mean" (keys are short).
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

template <size_t N>
Status checkKeys(const toml::table &table, const char *const (&known)[N], const std::string &what,
                 const std::string &sourceName) {
  for (const auto &[key, node] : table) {
    const std::string name(key.str());
    if (std::find(std::begin(known), std::end(known), name) != std::end(known))
      continue;
    std::string message = where(sourceName, &node) + ": unknown key '" + name + "' in " + what;
    // A near miss (at most 2 edits: 'weigth', 'groupsize'), else the longest
    // known key of 3 letters or more that the key contains or is part of
    // ('zero_point').
    const char *best = nullptr;
    size_t bestDistance = 3;
    for (const char *candidate : known)
      if (size_t d = editDistance(name, candidate); d < bestDistance)
        best = candidate, bestDistance = d;
    if (!best && name.size() >= 3)
      for (const char *candidate : known) {
        const std::string c = candidate;
        bool related = name.find(c) != std::string::npos || c.find(name) != std::string::npos;
        if (related && c.size() >= 3 && (!best || c.size() > std::strlen(best)))
          best = candidate;
      }
    if (best)
      message += " (did you mean '" + std::string(best) + "'?)";
    std::string allowed;
    for (const char *candidate : known)
      allowed += (allowed.empty() ? "" : ", ") + std::string(candidate);
    return makeError(message + "; known keys: " + allowed);
  }
  return Status::success();
}

// Reads `key` from `table` (falling back to `defaults`) into `out`; a value
// of another TOML type is an error (`n = true` once read as 1), absence
// keeps `out` as is.
template <typename T>
Status readKey(const toml::table &table, const toml::table *defaults, const char *key, T &out,
               const std::string &sourceName) {
  const toml::node *node = table.get(key);
  if (!node && defaults)
    node = defaults->get(key);
  if (!node)
    return Status::success();
  constexpr bool isString = std::is_same_v<T, std::string>;
  const bool typed = isString ? node->is_string() : node->is_integer();
  std::optional<T> value = typed ? node->value<T>() : std::nullopt;
  if (!value)
    return makeError(where(sourceName, node) + ": '" + key + "' must be " +
                     (isString ? "a string" : "an integer"));
  out = *value;
  return Status::success();
}

// Length of the well-formed UTF-8 sequence at text[i] (lead byte >= 0x80),
// or 0: no overlongs, no surrogates, nothing past U+10FFFF.
size_t utf8Length(const std::string &text, size_t i) {
  auto byte = [&](size_t j) { return j < text.size() ? static_cast<unsigned char>(text[j]) : 0u; };
  auto continuation = [&](size_t j) { return (byte(j) & 0xC0) == 0x80; };
  unsigned c = byte(i);
  if (c >= 0xC2 && c <= 0xDF)
    return continuation(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned next = byte(i + 1);
    bool ok = (c == 0xE0 ? next >= 0xA0 : c == 0xED ? next < 0xA0 : true);
    return ok && continuation(i + 1) && continuation(i + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned next = byte(i + 1);
    bool ok = (c == 0xF0 ? next >= 0x90 : c == 0xF4 ? next < 0x90 : true);
    return ok && continuation(i + 1) && continuation(i + 2) && continuation(i + 3) ? 4 : 0;
  }
  return 0;
}

// toml++ 3.3 (Debian's) reaches TOML_UNREACHABLE on some stray non-ASCII
// bytes outside strings (upstream issues #190 and #295; a fuzzer found 234
// such inputs in 5 minutes). So outside comments and quoted strings a spec
// is printable ASCII; inside them, well-formed UTF-8. Control characters
// other than tab and line breaks are errors anywhere. A quote opens a string
// only where toml++ would read one: at a line's start or after `=`, `[`,
// `,`, `{` or `.` (tests/fuzz found `x = +"...×..."`, where toml++ scans the
// quote and what follows as a bad number and meets the non-ASCII byte), and
// never inside a bare token: toml++ scans a value that does not start with a
// quote up to whitespace, `,`, `]`, `}` or `#`, quotes and `=` included
// (`g- =+"f1+="...ȅ` reached it again), and a key up to `=` or `.` too.
Status checkSpecText(const std::string &text, const std::string &sourceName) {
  if (text.size() > kMaxSpecBytes)
    return makeError(sourceName + ": a spec has at most " + std::to_string(kMaxSpecBytes) +
                     " bytes, got " + std::to_string(text.size()));
  enum class In { Code, Comment, Basic, Literal, MultiBasic, MultiLiteral } in = In::Code;
  int64_t line = 1;
  // The last character of code that was not a space or tab ('\n' at a
  // line's start), and whether a string may open after it.
  unsigned char last = '\n';
  auto opensString = [&] { return std::strchr("\n=[,{.", last) != nullptr; };
  // Inside a bare token (a key when it began a line or followed `{`).
  bool inBare = false, bareIsKey = false;
  auto bad = [&](unsigned char c, const char *why) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", c);
    return makeError(sourceName + ":" + std::to_string(line) + ": byte " + hex + " " + why);
  };
  auto at = [&](size_t i, const char *token) {
    return text.compare(i, std::strlen(token), token) == 0;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      if (in == In::Comment || in == In::Basic || in == In::Literal)
        in = In::Code; // an unterminated one-line string is toml++'s error to report
      if (in == In::Code)
        last = '\n';
      inBare = false;
      continue;
    }
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7F)
      return bad(c, "is a control character");
    if (c >= 0x80) {
      if (in == In::Code)
        return bad(c, "is not ASCII outside a comment or a string");
      size_t length = utf8Length(text, i);
      if (length == 0)
        return bad(c, "is not well-formed UTF-8");
      i += length - 1;
      continue;
    }
    switch (in) {
    case In::Code:
      if (inBare) {
        bool ends = std::strchr(" \t\r,]}#", c) != nullptr || (bareIsKey && (c == '=' || c == '.'));
        if (!ends) {
          last = c;
          break;
        }
        inBare = false;
      }
      if (c == '#')
        in = In::Comment;
      else if ((c == '"' || c == '\'') && opensString()) {
        if (at(i, "\"\"\""))
          in = In::MultiBasic, i += 2;
        else if (at(i, "\'\'\'"))
          in = In::MultiLiteral, i += 2;
        else
          in = c == '"' ? In::Basic : In::Literal;
        last = c;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        if (!std::strchr("=[]{},.\"'", c)) {
          inBare = true;
          bareIsKey = last == '\n' || last == '{';
        }
        last = c;
      }
      break;
    case In::Basic:
      if (c == '\\')
        ++i; // the escaped character cannot end the string
      else if (c == '"')
        in = In::Code;
      break;
    case In::MultiBasic:
      if (c == '\\') {
        // toml++ asks whether the character after a backslash, and after a
        // line-ending backslash the first one past the whitespace it
        // trims, is whitespace: for some non-ASCII ones its table reaches
        // TOML_UNREACHABLE (tests/fuzz: """u\<newline>...U+FEF6).
        size_t j = i + 1;
        while (j < text.size() && std::strchr(" \t\r\n", text[j]))
          ++j;
        unsigned char next = j < text.size() ? static_cast<unsigned char>(text[j]) : 0;
        if (next >= 0x80 && (j == i + 1 || std::strchr(" \t\r\n", text[i + 1])))
          return bad(next, "follows a backslash (and the whitespace it trims) in a multi-line "
                           "string; escape it as \\uXXXX");
        ++i;
        if (i < text.size() && text[i] == '\n')
          ++line;
      } else if (at(i, "\"\"\"")) {
        in = In::Code, i += 2;
      }
      break;
    case In::Literal:
      if (c == '\'')
        in = In::Code;
      break;
    case In::MultiLiteral:
      if (at(i, "\'\'\'"))
        in = In::Code, i += 2;
      break;
    case In::Comment: break;
    }
  }
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
  int64_t superBlock = 0;  // 0: one level
  std::string superStep;   // empty: none
  std::string activationScale = "none";
  std::string output;      // empty: the activation's own type
};

// `what 'text': why`, for a value core refused.
Error badValue(const std::string &at, const char *what, const std::string &text,
               const std::string &why) {
  return makeError(at + ": " + what + " '" + text + "': " + why);
}

Expected<core::Problem> toProblem(const SpelledProblem &s, const std::string &at) {
  if (s.name.empty())
    return makeError(at + ": a problem needs a 'name'");
  if (s.name.size() > core::kMaxProblemNameLength)
    return makeError(at + ": a problem name has at most " +
                     std::to_string(core::kMaxProblemNameLength) + " characters, got " +
                     std::to_string(s.name.size()));
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
  Expected<core::ActivationScale> activationScale = core::parseActivationScale(s.activationScale);
  if (!activationScale)
    return badValue(at, "activation_scale", s.activationScale, activationScale.error());
  p.activationScale = *activationScale;
  if (!s.output.empty()) {
    Expected<core::Output> output = core::parseOutput(s.output);
    if (!output)
      return badValue(at, "output", s.output, output.error());
    core::setOutput(p, *output);
  }
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
                       std::to_string(s.groupSize) + " does not divide K = " + std::to_string(s.k));
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
  p.scheme.superBlock = s.superBlock;
  if (!s.superStep.empty()) {
    Expected<formats::DataFormat> step = formats::parseFormat(s.superStep);
    if (!step)
      return badValue(at, "super_step", s.superStep, step.error());
    p.scheme.superStep = *step;
  }
  if (Status valid = core::validate(p); !valid)
    return makeError(at + ": problem '" + s.name + "': " + valid.error());
  return p;
}

} // namespace

Expected<KernelSetSpec> parseKernelSetSpec(const std::string &text, const std::string &sourceName) {
  if (Status ascii = checkSpecText(text, sourceName); !ascii)
    return makeError(ascii.error());
  toml::table root;
  try {
    root = toml::parse(text, sourceName);
  } catch (const toml::parse_error &error) {
    std::ostringstream message;
    message << sourceName << ":" << error.source().begin.line << ": " << error.description();
    return makeError(message.str());
  }

  KernelSetSpec spec;
  if (Status keys = checkKeys(root, kTopLevelKeys, "the spec", sourceName); !keys)
    return makeError(keys.error());
  const toml::array *archs = root["archs"].as_array();
  if (!archs || archs->empty())
    return makeError(sourceName + ": 'archs' must list at least one arch");
  for (const toml::node &arch : *archs) {
    std::optional<std::string> name = arch.value<std::string>();
    if (!name || !core::findTargetArch(*name))
      return makeError(where(sourceName, &arch) + ": archs must be " + core::targetArchList());
    if (std::find(spec.archs.begin(), spec.archs.end(), *name) != spec.archs.end())
      return makeError(where(sourceName, &arch) + ": arch '" + *name + "' is listed twice");
    spec.archs.push_back(*name);
  }

  const toml::table *defaults = root["defaults"].as_table();
  if (root.contains("defaults") && !defaults)
    return makeError(where(sourceName, root.get("defaults")) + ": 'defaults' must be a table");
  if (defaults) {
    if (Status keys = checkKeys(*defaults, kProblemKeys, "[defaults]", sourceName); !keys)
      return makeError(keys.error());
  }
  const toml::array *problems = root["problem"].as_array();
  if (!problems || problems->empty())
    return makeError(sourceName + ": no [[problem]] entries");
  std::set<std::string> names;
  // Names become identifiers (core::problemSymbol); two that become the same
  // one would overwrite each other's files.
  std::map<std::string, std::string> symbols;
  for (const toml::node &node : *problems) {
    const toml::table *table = node.as_table();
    std::string at = where(sourceName, &node);
    if (!table)
      return makeError(at + ": [[problem]] must be a table");
    if (Status keys = checkKeys(*table, kProblemKeys, "[[problem]]", sourceName); !keys)
      return makeError(keys.error());
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
                     readKey(*table, defaults, "zero_codes", p.zeroCodes, sourceName),
                     readKey(*table, defaults, "super_block", p.superBlock, sourceName),
                     readKey(*table, defaults, "super_step", p.superStep, sourceName),
                     readKey(*table, defaults, "activation_scale", p.activationScale,
                             sourceName),
                     readKey(*table, defaults, "output", p.output, sourceName)})
      if (!s.ok())
        return makeError(s.error());
    Expected<core::Problem> problem = toProblem(p, at);
    if (!problem)
      return makeError(problem.error());
    if (!names.insert(p.name).second)
      return makeError(at + ": problem name '" + p.name + "' appears twice");
    auto [symbol, fresh] = symbols.emplace(core::problemSymbol(p.name), p.name);
    if (!fresh)
      return makeError(at + ": problem names '" + symbol->second + "' and '" + p.name +
                       "' both become the identifier '" + symbol->first +
                       "' (every character but letters and digits becomes '_')");
    spec.problems.push_back(std::move(*problem));
  }
  return spec;
}

namespace {

// TOML basic strings: escape what would end or break the string.
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "\"";
}

} // namespace

std::string printKernelSetSpec(const KernelSetSpec &spec, const std::string &comment) {
  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);)
    out << (line.empty() ? "#" : "# " + line) << "\n";
  out << "archs = [";
  for (size_t i = 0; i < spec.archs.size(); ++i)
    out << (i ? ", " : "") << quoted(spec.archs[i]);
  out << "]\n";
  for (const core::Problem &p : spec.problems) {
    const core::Scheme &s = p.scheme;
    out << "\n[[problem]]\n"
        << "name = " << quoted(p.name) << "\n"
        << "n = " << p.n << "\n"
        << "k = " << p.k << "\n"
        << "activation = " << quoted(core::activationName(p.activation)) << "\n";
    if (p.activationScale != core::ActivationScale::None)
      out << "activation_scale = " << quoted(core::activationScaleSpelling(p.activationScale))
          << "\n";
    if (p.output)
      out << "output = " << quoted(core::outputName(*p.output)) << "\n";
    out << "weight = " << quoted(p.code.name()) << "\n"
        << "scale = " << quoted(s.scale.name()) << "\n";
    if (s.tensorScale)
      out << "tensor_scale = " << quoted(s.tensorScale->name()) << "\n";
    out << "granularity = " << quoted(core::granularitySpelling(s.granularity)) << "\n";
    if (s.granularity == formats::Granularity::PerGroup)
      out << "group_size = " << s.groupSize << "\n";
    out << "zero = " << quoted(core::zeroSpelling(s.zero, s.zeroCodes.has_value())) << "\n";
    if (s.zeroCodes)
      out << "zero_codes = " << quoted(s.zeroCodes->name()) << "\n";
    if (s.hasSuperBlocks() && s.superStep)
      out << "super_block = " << s.superBlock << "\n"
          << "super_step = " << quoted(s.superStep->name()) << "\n";
  }
  return out.str();
}

Expected<KernelSetSpec> loadKernelSetSpec(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return makeError("cannot open spec '" + path + "'");
  // Read at most one byte past the limit: `lowbit compile /dev/zero` once
  // read until memory ran out.
  std::string text(kMaxSpecBytes + 1, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (file.bad())
    return makeError("cannot read spec '" + path + "'");
  text.resize(static_cast<size_t>(file.gcount()));
  return parseKernelSetSpec(text, path);
}

} // namespace lowbit::spec
