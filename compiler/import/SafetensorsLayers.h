// The GPTQ and AWQ layers of safetensors checkpoints: the tensors of every
// file by name (a sharded checkpoint may put a layer's qweight and scales in
// different files), and each layer's tensors checked and handed to the
// formats library's importers.
#pragma once

#include "compiler/import/CheckpointImport.h"
#include "core/checkpoint/MappedFile.h"
#include "core/checkpoint/PackedLayerShapes.h"
#include "core/checkpoint/Safetensors.h"
#include "core/formats/Quantize.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::import {

struct SafetensorsSet {
  std::vector<checkpoint::MappedFile> files;
  std::vector<checkpoint::SafetensorsFile> parsed;
  std::map<std::string, const checkpoint::SafetensorsTensor *> byName;

  const checkpoint::SafetensorsTensor *find(const std::string &name) const {
    auto it = byName.find(name);
    return it == byName.end() ? nullptr : it->second;
  }
};

Expected<SafetensorsSet> openSafetensors(const std::vector<std::string> &paths);

// GPTQ: qweight [K·bits/32, N], qzeros [G, N·bits/32], scales [G, N],
// g_idx [K]; the shapes give bits, K and the group.
Expected<formats::QuantizedMatrix> importGptqLayer(const SafetensorsSet &set,
                                                   const std::string &prefix, bool v2);
// AWQ: qweight [K, N/8], qzeros [K/g, N/8], scales [K/g, N], 4-bit codes.
Expected<formats::QuantizedMatrix> importAwqLayer(const SafetensorsSet &set,
                                                  const std::string &prefix);
// GPTQ stores qweight [K/8, N] next to scales [G, N]; AWQ stores qweight
// [K, N/8]: the column counts tell them apart.
Expected<CheckpointFormat> detectSafetensorsFormat(const SafetensorsSet &set);
// GPTQ's zero convention: v2 (GPTQModel's "gptq_v2") stores z, v1 z − 1.
// quantize_config.json (or config.json's quantization_config) beside the
// checkpoint says which; nullopt when neither does.
std::optional<bool> gptqV2FromConfig(const std::string &checkpointPath);

using checkpoint::shapeText;
bool endsWith(const std::string &text, const std::string &suffix);

} // namespace lowbit::import
