#include "compiler/import/SafetensorsLayers.h"

#include "core/checkpoint/PackedLayerShapes.h"
#include "core/formats/Gptq.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace lowbit::import {

using checkpoint::SafetensorsDtype;
using checkpoint::SafetensorsTensor;

namespace {

std::string str(int64_t value) {
  return std::to_string(value);
}

Status expectTensor(const SafetensorsTensor *tensor, const std::string &name,
                    std::initializer_list<SafetensorsDtype> dtypes, size_t rank) {
  if (!tensor)
    return makeError("no tensor '" + name + "'");
  if (std::find(dtypes.begin(), dtypes.end(), tensor->dtype) == dtypes.end()) {
    std::string allowed;
    for (SafetensorsDtype d : dtypes)
      allowed += (allowed.empty() ? "" : " or ") + std::string(safetensorsDtypeName(d));
    return makeError("tensor '" + name + "' is " + safetensorsDtypeName(tensor->dtype) +
                     ", expected " + allowed);
  }
  if (tensor->shape.size() != rank)
    return makeError("tensor '" + name + "' has shape " + shapeText(tensor->shape) + ", not " +
                     str(int64_t(rank)) + " dimensions");
  return Status::success();
}

// The tensor's elements as T; both file and host are little-endian (lowbit
// builds for x86-64 and aarch64 Linux), so the bytes copy as they are.
template <typename T> std::vector<T> copyElements(const SafetensorsTensor &tensor) {
  std::vector<T> out(size_t(tensor.elements));
  std::memcpy(out.data(), tensor.data, tensor.bytes);
  return out;
}

std::vector<int32_t> copyIndices(const SafetensorsTensor &tensor) {
  if (tensor.dtype == SafetensorsDtype::I64) {
    std::vector<int64_t> wide = copyElements<int64_t>(tensor);
    std::vector<int32_t> out;
    out.reserve(wide.size());
    for (int64_t v : wide)
      out.push_back(v < INT32_MIN || v > INT32_MAX ? -1 : int32_t(v));
    return out;
  }
  return copyElements<int32_t>(tensor);
}

// The three tensors GPTQ and AWQ both store for a layer: packed int32 codes
// and zeros, and f16 scales, each two-dimensional.
struct PackedLayer {
  const SafetensorsTensor *qweight, *qzeros, *scales;
};

Expected<PackedLayer> packedLayer(const SafetensorsSet &set, const std::string &prefix) {
  PackedLayer layer{set.find(prefix + ".qweight"), set.find(prefix + ".qzeros"),
                    set.find(prefix + ".scales")};
  const auto words = {SafetensorsDtype::I32, SafetensorsDtype::U32};
  for (Status s : {expectTensor(layer.qweight, prefix + ".qweight", words, 2),
                   expectTensor(layer.qzeros, prefix + ".qzeros", words, 2),
                   expectTensor(layer.scales, prefix + ".scales", {SafetensorsDtype::F16}, 2)})
    if (!s)
      return makeError(s.error());
  return layer;
}

} // namespace

Expected<SafetensorsSet> openSafetensors(const std::vector<std::string> &paths) {
  SafetensorsSet set;
  set.files.reserve(paths.size());
  set.parsed.reserve(paths.size());
  for (const std::string &path : paths) {
    Expected<checkpoint::MappedFile> file = checkpoint::MappedFile::open(path);
    if (!file)
      return makeError(file.error());
    set.files.push_back(std::move(file).value());
    Expected<checkpoint::SafetensorsFile> parsed =
        checkpoint::parseSafetensors(set.files.back().data(), set.files.back().size(), path);
    if (!parsed)
      return makeError(parsed.error());
    set.parsed.push_back(std::move(parsed).value());
  }
  for (size_t f = 0; f < set.parsed.size(); ++f)
    for (const SafetensorsTensor &tensor : set.parsed[f].tensors)
      if (!set.byName.emplace(tensor.name, &tensor).second)
        return makeError(paths[f] + ": tensor '" + tensor.name + "' is also in an earlier file");
  return set;
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// GPTQ: qweight [K·bits/32, N], qzeros [G, N·bits/32], scales [G, N],
// g_idx [K]; the shapes give bits, K and the group.
Expected<formats::QuantizedMatrix> importGptqLayer(const SafetensorsSet &set,
                                                   const std::string &prefix, bool v2) {
  Expected<PackedLayer> layer = packedLayer(set, prefix);
  if (!layer)
    return makeError(layer.error());
  const SafetensorsTensor *qweight = layer->qweight, *qzeros = layer->qzeros,
                          *scales = layer->scales;
  const SafetensorsTensor *gIdx = set.find(prefix + ".g_idx");
  Expected<formats::GptqCheckpoint> c =
      checkpoint::gptqLayerShape(qweight->shape, qzeros->shape, scales->shape, v2);
  if (!c)
    return makeError("GPTQ layer '" + prefix + "': " + c.error());
  c->qweight = copyElements<int32_t>(*qweight);
  c->qzeros = copyElements<int32_t>(*qzeros);
  c->scales = copyElements<uint16_t>(*scales);
  if (gIdx) {
    if (Status s = expectTensor(gIdx, prefix + ".g_idx",
                                {SafetensorsDtype::I32, SafetensorsDtype::I64}, 1);
        !s)
      return makeError(s.error());
    c->gIdx = copyIndices(*gIdx);
  }
  Expected<formats::QuantizedMatrix> matrix = formats::importGptq(*c);
  if (!matrix)
    return makeError("GPTQ layer '" + prefix + "': " + matrix.error());
  return matrix;
}

// AWQ: qweight [K, N/8], qzeros [K/g, N/8], scales [K/g, N], 4-bit codes.
Expected<formats::QuantizedMatrix> importAwqLayer(const SafetensorsSet &set,
                                                  const std::string &prefix) {
  Expected<PackedLayer> layer = packedLayer(set, prefix);
  if (!layer)
    return makeError(layer.error());
  Expected<formats::AwqCheckpoint> c =
      checkpoint::awqLayerShape(layer->qweight->shape, layer->qzeros->shape,
                                layer->scales->shape);
  if (!c)
    return makeError("AWQ layer '" + prefix + "': " + c.error());
  c->qweight = copyElements<int32_t>(*layer->qweight);
  c->qzeros = copyElements<int32_t>(*layer->qzeros);
  c->scales = copyElements<uint16_t>(*layer->scales);
  Expected<formats::QuantizedMatrix> matrix = formats::importAwq(*c);
  if (!matrix)
    return makeError("AWQ layer '" + prefix + "': " + matrix.error());
  return matrix;
}

// GPTQ stores qweight [K/8, N] next to scales [G, N]; AWQ stores qweight
// [K, N/8]: the column counts tell them apart.
Expected<CheckpointFormat> detectSafetensorsFormat(const SafetensorsSet &set) {
  for (const auto &[name, tensor] : set.byName) {
    if (!endsWith(name, ".qweight"))
      continue;
    const std::string prefix = name.substr(0, name.size() - 8);
    const SafetensorsTensor *scales = set.find(prefix + ".scales");
    if (!scales || tensor->shape.size() != 2 || scales->shape.size() != 2)
      continue;
    if (tensor->shape[1] == scales->shape[1])
      return CheckpointFormat::Gptq;
    if (scales->shape[1] % 8 == 0 && tensor->shape[1] == scales->shape[1] / 8)
      return CheckpointFormat::Awq;
  }
  return makeError("no GPTQ or AWQ layer (a '.qweight' with its '.scales') in the checkpoint; "
                   "pass --format to say what it is");
}

// GPTQ's zero convention: v2 (GPTQModel's "gptq_v2") stores z, v1 z − 1.
// quantize_config.json (or config.json's quantization_config) next to the
// checkpoint says which.
std::optional<bool> gptqV2FromConfig(const std::string &checkpointPath) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(checkpointPath).parent_path();
  for (const char *name : {"quantize_config.json", "config.json"}) {
    std::ifstream in(dir / name);
    if (!in)
      continue;
    nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
    if (config.is_discarded() || !config.is_object())
      continue;
    if (config.contains("quantization_config") && config["quantization_config"].is_object())
      config = config["quantization_config"];
    if (config.contains("checkpoint_format") && config["checkpoint_format"].is_string())
      return config["checkpoint_format"].get<std::string>() == "gptq_v2";
  }
  return std::nullopt;
}

} // namespace lowbit::import
