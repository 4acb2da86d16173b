// `lowbit import`: from a quantized checkpoint (GPTQ or AWQ safetensors, or a
// GGUF file) to what lowbit compiles, tunes and runs:
//  - <out>/weights.safetensors: for every quantized linear layer L,
//      L.codes       U8 [N, K]    one code per byte (lowbit_pack_weights' input)
//      L.scales      [N, G]       the scale dtype's bits (F16, BF16, F32; U8 for
//                                 one-byte block scales), as lowbit_matmul reads them
//      L.zero_codes  U8 [N, G]    zero codes (lowbit_pack_zeros' input), or
//      L.zeros       [N, G]       zeros in the scale dtype
//    except for two-level scales (GGUF k-quants), whose buffers are
//      L.scales      U8 [bytes]   the sub-scale codes, then the steps
//      L.zeros       U8 [bytes]   the min codes, then theirs (core::superStepOffset)
//    exactly as lowbit_matmul reads them, and
//      L.permutation I32 [K]      act-order: y = x[:, perm] · Wᵀ
//      L.bias        as stored, when the checkpoint has one
//    and in its metadata, L -> the problem's signature (core::signature),
//    "lowbit.format" -> "lowbit.weights.v1" and "lowbit.source" -> the input.
//  - <out>/spec.toml: one [[problem]] per distinct problem, for `lowbit
//    compile` and `lowbit tune --spec`.
//  - <out>/import.txt: every layer with its problem and what the import
//    changed, and every tensor left out with the reason.
//
// A checkpoint is read through a mapping and converted one layer at a time,
// so memory holds one converted layer, never the checkpoint.
#pragma once

#include "core/Problem.h"
#include "core/support/Expected.h"

#include <string>
#include <optional>
#include <vector>

namespace lowbit::import {

enum class CheckpointFormat { Auto, Gptq, GptqV2, Awq, Gguf };
// "auto", "gptq", "gptq-v2", "awq", "gguf".
const char *checkpointFormatName(CheckpointFormat format);
Expected<CheckpointFormat> parseCheckpointFormat(const std::string &text);

struct ImportOptions {
  CheckpointFormat format = CheckpointFormat::Auto;
  core::Activation activation = core::Activation::F16;
  // s8 and e4m3 activations: their scales and y's type (core::Problem's).
  core::ActivationScale activationScale = core::ActivationScale::None;
  std::optional<core::Output> output;
  std::vector<std::string> archs; // the spec's; empty: every arch lowbit targets
  std::string outputDir;
  // Quantized layers that no kernel serves are an error unless this is set;
  // then they are listed in import.txt and left out.
  bool skipUnservable = false;
};

struct ImportedLayer {
  std::string name;        // the checkpoint's prefix (GPTQ/AWQ) or tensor name less ".weight"
  std::string problemName; // its [[problem]] in spec.toml
  core::Problem problem;
  bool permuted = false;
  std::vector<std::string> notes;
};

struct LeftOut {
  std::string tensor;
  std::string reason;
  bool quantized = false; // a quantized layer lowbit could not import
};

struct ImportReport {
  CheckpointFormat format = CheckpointFormat::Auto; // what was read
  std::vector<ImportedLayer> layers;
  std::vector<LeftOut> leftOut;
  std::vector<core::Problem> problems; // spec.toml's, named
  std::vector<std::string> notes;      // about the whole import (a convention assumed)
};

// Imports every checkpoint in `paths` (one format; a model split over
// several safetensors files is several paths) into options.outputDir.
Expected<ImportReport> importCheckpoints(const std::vector<std::string> &paths,
                                         const ImportOptions &options);

// import.txt's text; the CLI prints its summary lines.
std::string describeImport(const ImportReport &report);

} // namespace lowbit::import
