#include "compiler/import/CheckpointImport.h"

#include "compiler/import/SafetensorsLayers.h"

#include "compiler/spec/KernelSetSpec.h"
#include "core/Arch.h"
#include "core/FormatListing.h"
#include "core/checkpoint/GgufFile.h"
#include "core/checkpoint/GgufLayers.h"
#include "core/checkpoint/KernelWeights.h"
#include "core/checkpoint/MappedFile.h"
#include "core/checkpoint/Safetensors.h"
#include "core/formats/Gguf.h"
#include "core/formats/Gptq.h"
#include "core/support/CheckedMath.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace lowbit::import {
namespace {

using checkpoint::KernelWeights;
using checkpoint::SafetensorsDtype;
using checkpoint::SafetensorsTensor;

std::string str(int64_t value) {
  return std::to_string(value);
}

// ---- the output ---------------------------------------------------------------

std::string problemNameFor(const core::Problem &p) {
  const core::Scheme &s = p.scheme;
  std::string name = p.code.name() + ".";
  switch (s.granularity) {
  case formats::Granularity::PerGroup: name += "g" + str(s.groupSize); break;
  case formats::Granularity::PerChannel: name += "channel"; break;
  case formats::Granularity::PerTensor: name += "tensor"; break;
  }
  name += "." + s.scale.name();
  if (s.zeroCodes)
    name += ".zero-" + s.zeroCodes->name();
  else if (s.hasZeros())
    name += std::string(".zero-") + core::zeroSpelling(s.zero, false);
  name += std::string(".") + core::activationName(p.activation) + "." + str(p.n) + "x" + str(p.k);
  return name;
}

Expected<SafetensorsDtype> scaleDtype(const formats::DataFormat &format) {
  using formats::DataFormat;
  if (format == DataFormat::f16())
    return SafetensorsDtype::F16;
  if (format == DataFormat::bf16())
    return SafetensorsDtype::BF16;
  if (format == DataFormat::f32())
    return SafetensorsDtype::F32;
  if (format == DataFormat::e4m3fn())
    return SafetensorsDtype::F8E4M3;
  if (format == DataFormat::e8m0())
    return SafetensorsDtype::U8;
  return makeError("no safetensors dtype for " + format.name() + " scales");
}

std::vector<int64_t> scaleShape(const core::Problem &p) {
  switch (p.scheme.granularity) {
  case formats::Granularity::PerGroup: return {p.n, p.k / p.scheme.groupSize};
  case formats::Granularity::PerChannel: return {p.n};
  case formats::Granularity::PerTensor: return {1};
  }
  return {};
}

class Output {
public:
  Output(checkpoint::SafetensorsWriter writer, const ImportOptions &options)
      : writer_(std::move(writer)), options_(options) {}

  // Converts and writes one layer, or records why it was left out.
  Status add(const std::string &layer, Expected<formats::QuantizedMatrix> matrix,
             const SafetensorsTensor *bias, ImportReport &report) {
    if (!matrix)
      return leaveOut(layer, matrix.error(), report);
    Expected<KernelWeights> weights =
        checkpoint::toKernelWeights(std::move(matrix).value(), options_.activation,
                                    options_.activationScale, options_.output);
    if (!weights)
      return leaveOut(layer, weights.error(), report);
    core::Problem &problem = weights->problem;
    if (std::string why = unservable(problem); !why.empty())
      return leaveOut(layer, why, report);
    problem.name = problemNameFor(problem);
    auto known = std::find_if(report.problems.begin(), report.problems.end(),
                              [&](const core::Problem &p) { return p.sameAs(problem); });
    if (known == report.problems.end())
      report.problems.push_back(problem);
    else
      problem.name = known->name;
    if (Status s = write(layer, *weights, bias); !s)
      return s;
    report.layers.push_back(
        {layer, problem.name, problem, !weights->permutation.empty(), std::move(weights->notes)});
    return Status::success();
  }

  Status finish(const std::string &source) {
    writer_.setMetadata("lowbit.format", "lowbit.weights.v1");
    writer_.setMetadata("lowbit.source", source);
    return writer_.finish();
  }

private:
  // Empty when default schedules serve the problem on one of the archs.
  std::string unservable(const core::Problem &problem) const {
    core::KernelAvailability kernels = core::problemKernels(problem);
    if (!kernels.any())
      return "no kernels: " + kernels.reason;
    if (options_.archs.empty())
      return {};
    for (const std::string &arch : kernels.archs)
      if (std::find(options_.archs.begin(), options_.archs.end(), arch) != options_.archs.end())
        return {};
    std::string archs;
    for (const std::string &arch : kernels.archs)
      archs += (archs.empty() ? "" : " ") + arch;
    return "kernels exist only for " + archs;
  }

  Status leaveOut(const std::string &layer, const std::string &why, ImportReport &report) {
    report.leftOut.push_back({layer, why, true});
    return Status::success();
  }

  Status write(const std::string &layer, const KernelWeights &w, const SafetensorsTensor *bias) {
    const core::Problem &p = w.problem;
    Status s = writer_.add(layer + ".codes", SafetensorsDtype::U8, {p.n, p.k}, w.codes.data(),
                           w.codes.size());
    if (p.scheme.hasSuperBlocks()) {
      // Two-level scales: each buffer as the C ABI takes it, flat bytes
      // (the codes, then the steps at core::superStepOffset).
      if (s)
        s = writer_.add(layer + ".scales", SafetensorsDtype::U8, {int64_t(w.scales.size())},
                        w.scales.data(), w.scales.size());
      if (s && p.scheme.hasZeros())
        s = writer_.add(layer + ".zeros", SafetensorsDtype::U8, {int64_t(w.zeros.size())},
                        w.zeros.data(), w.zeros.size());
      return finishLayer(layer, w, bias, s);
    }
    Expected<SafetensorsDtype> scales = scaleDtype(p.scheme.scale);
    if (!scales)
      return makeError(layer + ": " + scales.error());
    if (s)
      s = writer_.add(layer + ".scales", *scales, scaleShape(p), w.scales.data(), w.scales.size());
    if (s && p.scheme.hasZeros())
      s = p.scheme.zeroCodes ? writer_.add(layer + ".zero_codes", SafetensorsDtype::U8,
                                           scaleShape(p), w.zeros.data(), w.zeros.size())
                             : writer_.add(layer + ".zeros", *scales, scaleShape(p), w.zeros.data(),
                                           w.zeros.size());
    return finishLayer(layer, w, bias, s);
  }

  // The permutation, the bias and the signature, after the layer's buffers.
  Status finishLayer(const std::string &layer, const KernelWeights &w,
                     const SafetensorsTensor *bias, Status s) {
    const core::Problem &p = w.problem;
    if (s && !w.permutation.empty())
      s = writer_.add(layer + ".permutation", SafetensorsDtype::I32, {p.k}, w.permutation.data(),
                      w.permutation.size() * sizeof(int32_t));
    if (s && bias)
      s = writer_.add(layer + ".bias", bias->dtype, bias->shape, bias->data, bias->bytes);
    if (s)
      writer_.setMetadata(layer, core::signature(p));
    return s;
  }

  checkpoint::SafetensorsWriter writer_;
  const ImportOptions &options_;
};

std::string joined(const std::vector<std::string> &paths) {
  std::string text;
  for (const std::string &path : paths)
    text += (text.empty() ? "" : ", ") + path;
  return text;
}

Status importSafetensors(const std::vector<std::string> &paths, const ImportOptions &options,
                         Output &output, ImportReport &report) {
  Expected<SafetensorsSet> set = openSafetensors(paths);
  if (!set)
    return makeError(set.error());
  CheckpointFormat format = options.format;
  if (format == CheckpointFormat::Auto) {
    Expected<CheckpointFormat> detected = detectSafetensorsFormat(*set);
    if (!detected)
      return makeError(joined(paths) + ": " + detected.error());
    format = *detected;
    if (format == CheckpointFormat::Gptq) {
      std::optional<bool> v2 = gptqV2FromConfig(paths.front());
      if (v2 && *v2)
        format = CheckpointFormat::GptqV2;
      else if (!v2)
        report.notes.push_back("GPTQ's v1 zero convention (stored z - 1) assumed: no "
                               "quantize_config.json or config.json beside the checkpoint "
                               "names its checkpoint_format; pass --format gptq-v2 otherwise");
    }
  }
  report.format = format;
  std::set<std::string> used;
  for (const auto &[name, tensor] : set->byName) {
    if (!endsWith(name, ".qweight"))
      continue;
    const std::string layer = name.substr(0, name.size() - 8);
    for (const char *suffix : {".qweight", ".qzeros", ".scales", ".g_idx", ".bias"})
      used.insert(layer + suffix);
    Expected<formats::QuantizedMatrix> matrix =
        format == CheckpointFormat::Awq
            ? importAwqLayer(*set, layer)
            : importGptqLayer(*set, layer, format == CheckpointFormat::GptqV2);
    if (Status s = output.add(layer, std::move(matrix), set->find(layer + ".bias"), report); !s)
      return s;
  }
  for (const auto &[name, tensor] : set->byName)
    if (!used.count(name))
      report.leftOut.push_back({name,
                                std::string("not a quantized layer (") +
                                    safetensorsDtypeName(tensor->dtype) + " " +
                                    shapeText(tensor->shape) + "): left in the checkpoint",
                                false});
  return Status::success();
}

Status importGguf(const std::string &path, Output &output, ImportReport &report) {
  Expected<checkpoint::MappedFile> file = checkpoint::MappedFile::open(path);
  if (!file)
    return makeError(file.error());
  Expected<checkpoint::GgufFile> gguf = checkpoint::parseGguf(file->data(), file->size(), path);
  if (!gguf)
    return makeError(gguf.error());
  for (const checkpoint::GgufTensor &tensor : gguf->tensors) {
    const checkpoint::GgufLayer layer = checkpoint::ggufLayer(tensor);
    if (!layer.notRead.empty()) {
      report.leftOut.push_back({tensor.name, layer.notRead, layer.quantized});
      continue;
    }
    if (Status s =
            output.add(layer.name, checkpoint::readGgufLayer(tensor, layer), nullptr, report);
        !s)
      return s;
  }
  return Status::success();
}

bool isGguf(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

Status writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out)
    return makeError(path + ": cannot write");
  return Status::success();
}

Expected<ImportReport> importChecked(const std::vector<std::string> &paths,
                                     const ImportOptions &options) {
  if (paths.empty())
    return makeError("no checkpoint to import");
  if (options.outputDir.empty())
    return makeError("no output directory");
  for (const std::string &arch : options.archs)
    if (Expected<core::TargetArch> known = core::findTargetArch(arch); !known)
      return makeError(known.error());
  const bool gguf = options.format == CheckpointFormat::Gguf ||
                    (options.format == CheckpointFormat::Auto && isGguf(paths.front()));
  if (gguf && paths.size() != 1)
    return makeError("a GGUF import reads one file, got " + str(int64_t(paths.size())));

  std::error_code error;
  std::filesystem::create_directories(options.outputDir, error);
  if (error)
    return makeError(options.outputDir + ": cannot create: " + error.message());
  const std::string weightsPath = options.outputDir + "/weights.safetensors";
  Expected<checkpoint::SafetensorsWriter> writer =
      checkpoint::SafetensorsWriter::create(weightsPath);
  if (!writer)
    return makeError(writer.error());
  Output output(std::move(writer).value(), options);
  ImportReport report;
  Status read = gguf ? importGguf(paths.front(), output, report)
                     : importSafetensors(paths, options, output, report);
  if (gguf)
    report.format = CheckpointFormat::Gguf;
  if (!read)
    return makeError(read.error());

  std::vector<std::string> unservable;
  for (const LeftOut &left : report.leftOut)
    if (left.quantized)
      unservable.push_back(left.tensor + ": " + left.reason);
  if (!unservable.empty() && !options.skipUnservable) {
    std::string message = str(int64_t(unservable.size())) +
                          " quantized layers cannot be imported (--skip-unservable leaves "
                          "them out):";
    for (const std::string &line : unservable)
      message += "\n  " + line;
    return makeError(message);
  }
  if (report.layers.empty())
    return makeError(joined(paths) + ": no quantized layer lowbit serves");

  spec::KernelSetSpec spec;
  if (options.archs.empty())
    for (const core::TargetArch &arch : core::targetArchs())
      spec.archs.push_back(arch.name);
  else
    spec.archs = options.archs;
  spec.problems = report.problems;
  const std::string specText = spec::printKernelSetSpec(
      spec, "Written by `lowbit import` from " + joined(paths) +
                ": one problem per distinct layer form.\nThe layers and their problems are in "
                "import.txt and weights.safetensors' metadata.");
  // What is written must be what `lowbit compile` reads back.
  if (Expected<spec::KernelSetSpec> check = spec::parseKernelSetSpec(specText, "spec.toml"); !check)
    return makeError("the spec lowbit import made does not parse back (a bug): " + check.error());
  if (Status s = output.finish(joined(paths)); !s)
    return makeError(s.error());
  if (Status s = writeText(options.outputDir + "/spec.toml", specText); !s)
    return makeError(s.error());
  if (Status s = writeText(options.outputDir + "/import.txt", describeImport(report)); !s)
    return makeError(s.error());
  return report;
}

} // namespace

const char *checkpointFormatName(CheckpointFormat format) {
  switch (format) {
  case CheckpointFormat::Auto: return "auto";
  case CheckpointFormat::Gptq: return "gptq";
  case CheckpointFormat::GptqV2: return "gptq-v2";
  case CheckpointFormat::Awq: return "awq";
  case CheckpointFormat::Gguf: return "gguf";
  }
  return "auto";
}

Expected<CheckpointFormat> parseCheckpointFormat(const std::string &text) {
  for (CheckpointFormat format :
       {CheckpointFormat::Auto, CheckpointFormat::Gptq, CheckpointFormat::GptqV2,
        CheckpointFormat::Awq, CheckpointFormat::Gguf})
    if (text == checkpointFormatName(format))
      return format;
  return makeError("checkpoint format '" + text + "' is not auto, gptq, gptq-v2, awq or gguf");
}

Expected<ImportReport> importCheckpoints(const std::vector<std::string> &paths,
                                         const ImportOptions &options) {
  return catchingBadAlloc("lowbit import", [&] { return importChecked(paths, options); });
}

std::string describeImport(const ImportReport &report) {
  std::ostringstream out;
  out << "format: " << checkpointFormatName(report.format) << "\n";
  for (const std::string &note : report.notes)
    out << "note: " << note << "\n";
  out << "\n" << report.layers.size() << " layers in " << report.problems.size() << " problems:\n";
  for (const ImportedLayer &layer : report.layers) {
    out << "  " << layer.name << " -> " << layer.problemName << "\n";
    for (const std::string &note : layer.notes)
      out << "      " << note << "\n";
  }
  size_t quantized = 0;
  for (const LeftOut &left : report.leftOut)
    quantized += left.quantized;
  if (quantized) {
    out << "\n" << quantized << " quantized layers left out:\n";
    for (const LeftOut &left : report.leftOut)
      if (left.quantized)
        out << "  " << left.tensor << ": " << left.reason << "\n";
  }
  if (report.leftOut.size() > quantized) {
    out << "\n" << report.leftOut.size() - quantized << " other tensors left out:\n";
    for (const LeftOut &left : report.leftOut)
      if (!left.quantized)
        out << "  " << left.tensor << ": " << left.reason << "\n";
  }
  return out.str();
}

} // namespace lowbit::import
