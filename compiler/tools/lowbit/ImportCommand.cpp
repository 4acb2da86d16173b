// `lowbit import`: a GPTQ, AWQ or GGUF checkpoint to lowbit's weights and a
// kernel-set spec (compiler/import/CheckpointImport.h says what it writes).
#include "compiler/tools/lowbit/Command.h"

#include "compiler/import/CheckpointImport.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <memory>

namespace lowbit::cli {
namespace {

struct ImportArguments {
  std::vector<std::string> paths;
  std::string format = "auto";
  std::string activation = "f16";
  std::string activationScale = "none";
  std::string outputType;
  std::vector<std::string> archs;
  std::string output;
  bool skipUnservable = false;
};

int runImport(ImportArguments args) {
  // `lowbit import gguf model.gguf`: a format name before the files, where
  // no file of that name exists, reads as --format.
  if (args.paths.size() > 1 && import::parseCheckpointFormat(args.paths[0]) &&
      !std::filesystem::exists(args.paths[0])) {
    if (args.format != "auto" && args.format != args.paths[0]) {
      std::cerr << "lowbit import: the format is named twice: '" << args.paths[0]
                << "' and --format " << args.format << "\n";
      return 2;
    }
    args.format = args.paths[0];
    args.paths.erase(args.paths.begin());
  }
  import::ImportOptions options;
  Expected<import::CheckpointFormat> format = import::parseCheckpointFormat(args.format);
  if (!format) {
    std::cerr << "lowbit import: " << format.error() << "\n";
    return 2;
  }
  Expected<core::Activation> activation = core::parseActivation(args.activation);
  if (!activation) {
    std::cerr << "lowbit import: " << activation.error() << "\n";
    return 2;
  }
  Expected<core::ActivationScale> activationScale =
      core::parseActivationScale(args.activationScale);
  if (!activationScale) {
    std::cerr << "lowbit import: " << activationScale.error() << "\n";
    return 2;
  }
  // s8 and e4m3 layers (W8A8, W4A8) name x's scales and y's type; f16 and
  // bf16 ones take neither.
  const bool quantized = core::isQuantized(*activation);
  const bool scaled = *activationScale != core::ActivationScale::None;
  if (quantized ? !(scaled && !args.outputType.empty()) : (scaled || !args.outputType.empty())) {
    std::cerr << "lowbit import: "
              << (quantized ? "--activation " + args.activation +
                            " needs --activation-scale token | tensor and --output-type f16 | "
                            "bf16 | f32"
                      : "--activation-scale and --output-type are for s8 and e4m3 "
                        "activations, not " + args.activation)
              << "\n";
    return 2;
  }
  if (!args.outputType.empty()) {
    Expected<core::Output> output = core::parseOutput(args.outputType);
    if (!output) {
      std::cerr << "lowbit import: " << output.error() << "\n";
      return 2;
    }
    options.output = *output;
  }
  options.format = *format;
  options.activation = *activation;
  options.activationScale = *activationScale;
  options.archs = args.archs;
  options.outputDir = args.output;
  options.skipUnservable = args.skipUnservable;
  Expected<import::ImportReport> report = import::importCheckpoints(args.paths, options);
  if (!report) {
    std::cerr << "lowbit import: " << report.error() << "\n";
    return 1;
  }
  size_t leftQuantized = 0;
  for (const import::LeftOut &left : report->leftOut)
    leftQuantized += left.quantized;
  for (const std::string &note : report->notes)
    std::cerr << "lowbit import: note: " << note << "\n";
  std::cout << "imported " << report->layers.size() << " layers ("
            << import::checkpointFormatName(report->format) << ") into " << report->problems.size()
            << " problems\n";
  if (leftQuantized)
    std::cout << "left out " << leftQuantized
              << " quantized layers no kernel serves (listed in import.txt)\n";
  std::cout << "left " << report->leftOut.size() - leftQuantized
            << " other tensors in the checkpoint\n"
            << "wrote " << args.output << "/weights.safetensors, " << args.output
            << "/spec.toml and " << args.output << "/import.txt\n"
            << "next: lowbit compile " << args.output << "/spec.toml -o kernels.db\n";
  return 0;
}

} // namespace

void addImportCommand(CLI::App &app) {
  auto args = std::make_shared<ImportArguments>();
  CLI::App *command = app.add_subcommand(
      "import", "a GPTQ, AWQ or GGUF checkpoint to lowbit weights and a kernel-set spec");
  command
      ->add_option("checkpoints", args->paths,
                   "safetensors files (all shards of one model) or one .gguf file, optionally "
                   "after the format's name (lowbit import gguf model.gguf)")
      ->required();
  command->add_option("-o,--output", args->output, "output directory")->required();
  command->add_option("--format", args->format, "auto | gptq | gptq-v2 | awq | gguf")
      ->capture_default_str();
  command->add_option("--activation", args->activation,
                      "the layers' activations: f16 | bf16 | s8 | e4m3")
      ->capture_default_str();
  command->add_option("--activation-scale", args->activationScale,
                      "s8 and e4m3 activations' scales: token | tensor");
  command->add_option("--output-type", args->outputType,
                      "y's type with s8 and e4m3 activations: f16 | bf16 | f32");
  command->add_option("--arch", args->archs, "archs for the spec (default: every arch)");
  command->add_flag("--skip-unservable", args->skipUnservable,
                    "leave out quantized layers no kernel serves instead of failing");
  command->callback([args] { setExitCode(runImport(*args)); });
}

} // namespace lowbit::cli
