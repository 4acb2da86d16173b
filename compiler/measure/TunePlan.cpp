#include "compiler/measure/TunePlan.h"

#include "core/FormatListing.h"
#include "core/formats/Scheme.h"

#include "compiler/spec/KernelSetSpec.h"

#include "runtime/kernels/KernelRecordCodec.h"
#include "tuning_db/Records.h"
#include "tuning_db/Sqlite.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>

namespace lowbit::tune {
namespace {

std::string normalized(const std::string &name) {
  std::string out;
  for (char c : name)
    if (c != '-' && c != '.' && c != '_' && c != ' ')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trimmed(const std::string &text) {
  size_t b = text.find_first_not_of(" \t"), e = text.find_last_not_of(" \t");
  return b == std::string::npos ? "" : text.substr(b, e - b + 1);
}

// A positive decimal integer, whole string; nullopt-like -1 otherwise.
int64_t positiveInteger(const std::string &text) {
  if (text.empty() || text.size() > 12 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  int64_t value = std::stoll(text);
  return value > 0 ? value : -1;
}


} // namespace

// The shapes come from each model's published config.json (hidden_size,
// intermediate_size, num_attention_heads, num_key_value_heads; head_dim 128):
// q/o is hidden x hidden, fused q/k/v is (heads + 2 x kv heads) x 128 by
// hidden, gate/up is intermediate x hidden (one projection, as
// examples/specs/llama3-8b-w4a16.toml has it), down is hidden x intermediate.
const std::vector<ModelPreset> &modelPresets() {
  static const std::vector<ModelPreset> presets = {
      // Llama-3-8B: hidden 4096, intermediate 14336, 32 heads, 8 kv heads.
      {"Llama-3-8B",
       "llama3-8b",
       {{"qo_proj", 4096, 4096},
        {"qkv_proj", 6144, 4096},
        {"gate_up_proj", 14336, 4096},
        {"down_proj", 4096, 14336}}},
      // Llama-3-70B: hidden 8192, intermediate 28672, 64 heads, 8 kv heads.
      {"Llama-3-70B",
       "llama3-70b",
       {{"qo_proj", 8192, 8192},
        {"qkv_proj", 10240, 8192},
        {"gate_up_proj", 28672, 8192},
        {"down_proj", 8192, 28672}}},
      // Qwen2.5-7B: hidden 3584, intermediate 18944, 28 heads, 4 kv heads.
      {"Qwen2.5-7B",
       "qwen2.5-7b",
       {{"qkv_proj", 4608, 3584},
        {"o_proj", 3584, 3584},
        {"gate_up_proj", 18944, 3584},
        {"down_proj", 3584, 18944}}},
      // Mistral-7B: hidden 4096, intermediate 14336, 32 heads, 8 kv heads.
      {"Mistral-7B",
       "mistral-7b",
       {{"qkv_proj", 6144, 4096},
        {"o_proj", 4096, 4096},
        {"gate_up_proj", 14336, 4096},
        {"down_proj", 4096, 14336}}},
  };
  return presets;
}

Expected<ModelPreset> findModelPreset(const std::string &name) {
  std::string known;
  for (const ModelPreset &preset : modelPresets()) {
    if (normalized(preset.name) == normalized(name) || normalized(preset.key) == normalized(name))
      return preset;
    known += (known.empty() ? "" : ", ") + preset.name;
  }
  return makeError("unknown model '" + name + "' (known: " + known + ")");
}

Expected<std::vector<Shape>> parseShapes(const std::string &text) {
  std::vector<Shape> shapes;
  std::set<std::pair<int64_t, int64_t>> seen;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    item = trimmed(item);
    if (item.empty())
      continue;
    size_t x = item.find_first_of("xX");
    int64_t n = x == std::string::npos ? -1 : positiveInteger(item.substr(0, x));
    int64_t k = x == std::string::npos ? -1 : positiveInteger(item.substr(x + 1));
    if (n <= 0 || k <= 0)
      return makeError("bad shape '" + item + "': expected NxK with positive integers, e.g. 4096x4096");
    if (seen.insert({n, k}).second)
      shapes.push_back({"", n, k});
  }
  if (shapes.empty())
    return makeError("no shapes in '" + text + "'");
  return shapes;
}

namespace {

// A scheme `lowbit formats` lists, by its name, with ":bf16" for bf16
// activations; std::nullopt when `text` names none.
std::optional<Expected<Format>> parseSchemeFormat(const std::string &text) {
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  Expected<formats::QuantScheme> quant = formats::findScheme(name);
  if (!quant)
    return std::nullopt;
  Format format;
  format.name = name;
  if (colon != std::string::npos) {
    if (text.substr(colon + 1) != "bf16")
      return Expected<Format>(makeError("bad format '" + text + "': after '" + name +
                                        ":' only bf16 (bf16 activations) is accepted"));
    format.activation = core::Activation::BF16;
    format.name += "-bf16";
  }
  // What `lowbit formats` says of the scheme, so that a scheme without
  // kernels fails here, naming why, not after compiling every candidate.
  const core::KernelAvailability kernels = core::schemeKernels(*quant);
  if (!kernels.any())
    return Expected<Format>(
        makeError("format '" + text + "': no kernel reads scheme " + name + ": " + kernels.reason));
  if (std::find(kernels.activations.begin(), kernels.activations.end(), format.activation) ==
      kernels.activations.end())
    return Expected<Format>(makeError("format '" + text + "': no kernel reads scheme " + name +
                                      " with " + core::activationName(format.activation) +
                                      " activations (lowbit formats lists its compute types)"));
  Expected<core::Scheme> scheme = core::kernelScheme(*quant);
  if (!scheme)
    return Expected<Format>(
        makeError("format '" + text + "': no kernel reads scheme " + name + ": " + scheme.error()));
  format.code = quant->element;
  format.scheme = *scheme;
  return Expected<Format>(std::move(format));
}

} // namespace

Expected<Format> parseFormat(const std::string &text) {
  if (std::optional<Expected<Format>> scheme = parseSchemeFormat(text))
    return std::move(*scheme);
  Format format;
  format.name = text;
  std::vector<std::string> parts;
  std::stringstream tokens(text);
  for (std::string part; std::getline(tokens, part, '-');)
    parts.push_back(part);
  auto bad = [&](const std::string &why) {
    return makeError("bad format '" + text + "': " + why +
                     " (expected e.g. w4a16-g128, w4bf16-g64, w4a16-ch, w4a16-int-g128, or a "
                     "scheme `lowbit formats` lists, e.g. mxfp4, nvfp4, gguf-q4_k, nf4-g64:bf16)");
  };
  if (parts.empty() || parts[0].size() < 2 || parts[0][0] != 'w')
    return bad("it must start with w<bits>");
  const std::string &head = parts[0];
  size_t digits = 1;
  while (digits < head.size() && std::isdigit(static_cast<unsigned char>(head[digits])))
    ++digits;
  int64_t bits = positiveInteger(head.substr(1, digits - 1));
  if (bits < 1 || bits > 8)
    return bad("weight bits must be 1..8");
  std::string activation = head.substr(digits);
  if (activation == "a16") {
    format.activation = core::Activation::F16;
    format.scheme.scale = formats::DataFormat::f16();
  } else if (activation == "bf16" || activation == "a16bf16") {
    format.activation = core::Activation::BF16;
    format.scheme.scale = formats::DataFormat::bf16();
  } else {
    return bad("activations must be a16 (f16) or bf16");
  }
  bool signedCodes = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string &p = parts[i];
    if (p == "ch") {
      format.scheme.granularity = formats::Granularity::PerChannel;
      format.scheme.groupSize = 0;
    } else if (p == "int") {
      signedCodes = true;
    } else if (p.size() > 1 && p[0] == 'g' && positiveInteger(p.substr(1)) > 0) {
      format.scheme.granularity = formats::Granularity::PerGroup;
      format.scheme.groupSize = positiveInteger(p.substr(1));
    } else {
      return bad("unknown option '" + p + "'");
    }
  }
  Expected<formats::DataFormat> code =
      formats::DataFormat::integer(static_cast<int>(bits), signedCodes);
  if (!code)
    return bad(code.error());
  format.code = *code;
  return format;
}

kernels::ProblemDesc problemFor(const std::string &name, const Shape &shape, const Format &format) {
  kernels::ProblemDesc p;
  p.name = name;
  p.n = shape.n;
  p.k = shape.k;
  p.activation = format.activation;
  p.code = format.code;
  p.scheme = format.scheme;
  return p;
}

std::string problemName(const std::string &prefix, const Shape &shape) {
  if (!shape.layer.empty())
    return prefix + "." + shape.layer;
  return prefix + "." + std::to_string(shape.n) + "x" + std::to_string(shape.k);
}

std::string oneProblemSpecText(const kernels::ProblemDesc &p, const std::string &arch) {
  // The spec module's one printer, so every scheme field it parses is written.
  spec::KernelSetSpec one;
  one.archs = {arch};
  one.problems = {p};
  return spec::printKernelSetSpec(
      one, "Written by `lowbit tune`: one problem, compiled with its own schedule list.");
}

std::string problemIdOf(const kernels::ProblemDesc &problem) {
  return db::problemIdForSignature(core::signature(problem));
}

std::vector<std::string> compileArgs(const std::string &specPath, const std::string &database,
                                     const std::vector<std::string> &schedules) {
  std::vector<std::string> args = {specPath, "-o", database};
  for (const std::string &s : schedules) {
    args.push_back("--schedule");
    args.push_back(s);
  }
  return args;
}

Expected<int64_t> dropPtx(db::Database &database, const std::vector<std::string> &problemIds,
                          const std::string &arch) {
  int64_t changed = 0;
  Status updated = database.transaction([&]() -> Status {
    for (const std::string &problemId : problemIds) {
      auto update = db::sql::Statement::prepare(
          database.handle(), "UPDATE kernels SET ptx = NULL WHERE problem_id = ?1 AND arch = ?2 "
                             "AND ptx IS NOT NULL AND length(cubin) > 0");
      if (!update)
        return Status(makeError(update.error()));
      update->bind(1, problemId).bind(2, arch);
      if (Status s = update->run(); !s)
        return s;
      changed += sqlite3_changes(database.handle());
    }
    return Status::success();
  });
  if (!updated)
    return makeError("dropping PTX from " + database.path() + ": " + updated.error());
  // The freed pages go back to the file system only with VACUUM (outside
  // any transaction), and in WAL mode only once the log is checkpointed into
  // the file: what gets copied to the GPU host is the file.
  if (Status s = db::sql::exec(database.handle(), "VACUUM; PRAGMA wal_checkpoint(TRUNCATE);");
      !s)
    return makeError("compacting " + database.path() + ": " + s.error());
  return changed;
}

} // namespace lowbit::tune
