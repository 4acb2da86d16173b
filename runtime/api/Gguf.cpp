// lowbit.h: the lowbit_gguf_* calls. A host app reads a GGUF layer into the
// buffers lowbit_matmul takes through the same steps as `lowbit import
// gguf`: checkpoint::parseGguf (the untrusted file), checkpoint::ggufLayer
// and readGgufLayer (which tensors are layers), checkpoint::toKernelWeights
// (the kernel scheme), core::problemToAbi (the struct).
#include "core/AbiFormats.h"
#include "core/checkpoint/GgufFile.h"
#include "core/checkpoint/GgufLayers.h"
#include "core/checkpoint/KernelWeights.h"
#include "core/checkpoint/MappedFile.h"
#include "lowbit/lowbit.h"
#include "runtime/api/ApiError.h"

#include <optional>
#include <string>
#include <vector>

using namespace lowbit;
using namespace lowbit::api;

struct lowbit_gguf {
  checkpoint::MappedFile file;
  checkpoint::GgufFile gguf;
  std::vector<checkpoint::GgufLayer> layers; // one per tensor
};

struct lowbit_gguf_layer {
  checkpoint::KernelWeights weights;
  lowbit_problem problem{};
  std::vector<double> table; // problem.table's storage (unused by GGUF's formats)
  std::string notes;
};

namespace {

lowbit_status fail(lowbit_status status, const char *entry, const std::string &message) {
  return recordFailure(status, std::string(entry) + ": " + message);
}

// The tensor at `index`, or the status that says why not.
lowbit_status checkIndex(const char *entry, const lowbit_gguf *file, size_t index) {
  if (!file)
    return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry, "file is NULL");
  if (index >= file->gguf.tensors.size())
    return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry,
                "index " + std::to_string(index) + " is past the file's " +
                    std::to_string(file->gguf.tensors.size()) + " tensors");
  return LOWBIT_STATUS_SUCCESS;
}

} // namespace

extern "C" {

lowbit_status lowbit_gguf_open(const char *path, lowbit_gguf **out_file) {
  return guardEntryPoint("lowbit_gguf_open", [&]() -> lowbit_status {
    const char *entry = "lowbit_gguf_open";
    if (!out_file)
      return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry, "out_file is NULL");
    *out_file = nullptr;
    if (!path)
      return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry, "path is NULL");
    Expected<checkpoint::MappedFile> mapped = checkpoint::MappedFile::open(path);
    if (!mapped)
      return fail(LOWBIT_STATUS_FILE_ERROR, entry, mapped.error());
    auto file = std::make_unique<lowbit_gguf>(lowbit_gguf{std::move(*mapped), {}, {}});
    Expected<checkpoint::GgufFile> gguf =
        checkpoint::parseGguf(file->file.data(), file->file.size(), path);
    if (!gguf)
      return fail(LOWBIT_STATUS_FILE_ERROR, entry, gguf.error());
    file->gguf = std::move(*gguf);
    for (const checkpoint::GgufTensor &tensor : file->gguf.tensors)
      file->layers.push_back(checkpoint::ggufLayer(tensor));
    *out_file = file.release();
    return LOWBIT_STATUS_SUCCESS;
  });
}

lowbit_status lowbit_gguf_close(lowbit_gguf *file) {
  delete file;
  return LOWBIT_STATUS_SUCCESS;
}

lowbit_status lowbit_gguf_tensor_count(const lowbit_gguf *file, size_t *out_count) {
  if (!file || !out_count)
    return fail(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_gguf_tensor_count",
                file ? "out_count is NULL" : "file is NULL");
  *out_count = file->gguf.tensors.size();
  return LOWBIT_STATUS_SUCCESS;
}

lowbit_status lowbit_gguf_tensor_info(const lowbit_gguf *file, size_t index,
                                      lowbit_gguf_tensor *out_tensor) {
  const char *entry = "lowbit_gguf_tensor_info";
  if (lowbit_status s = checkIndex(entry, file, index); s != LOWBIT_STATUS_SUCCESS)
    return s;
  if (!out_tensor)
    return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry, "out_tensor is NULL");
  if (ApiStatus s = checkOutputStructSize(out_tensor->struct_size, sizeof(lowbit_gguf_tensor),
                                          "lowbit_gguf_tensor");
      !s)
    return recordFailure(s.error());
  const checkpoint::GgufLayer &layer = file->layers[index];
  out_tensor->name = file->gguf.tensors[index].name.c_str();
  out_tensor->ggml_type = layer.typeName.c_str();
  out_tensor->n = layer.rows;
  out_tensor->k = layer.cols;
  out_tensor->quantized = layer.quantized ? 1 : 0;
  out_tensor->readable = layer.notRead.empty() ? 1 : 0;
  out_tensor->reason = layer.notRead.c_str();
  return LOWBIT_STATUS_SUCCESS;
}

lowbit_status lowbit_gguf_find_tensor(const lowbit_gguf *file, const char *name,
                                      size_t *out_index) {
  const char *entry = "lowbit_gguf_find_tensor";
  if (!file || !name || !out_index)
    return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry,
                !file   ? "file is NULL"
                : !name ? "name is NULL"
                        : "out_index is NULL");
  for (size_t i = 0; i < file->gguf.tensors.size(); ++i)
    if (file->gguf.tensors[i].name == name) {
      *out_index = i;
      return LOWBIT_STATUS_SUCCESS;
    }
  return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry,
              std::string("no tensor named '") + name + "' in the file");
}

lowbit_status lowbit_gguf_load_layer(const lowbit_gguf *file, size_t index, lowbit_dtype activation,
                                     lowbit_gguf_layer **out_layer) {
  return guardEntryPoint("lowbit_gguf_load_layer", [&]() -> lowbit_status {
    const char *entry = "lowbit_gguf_load_layer";
    if (!out_layer)
      return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry, "out_layer is NULL");
    *out_layer = nullptr;
    if (lowbit_status s = checkIndex(entry, file, index); s != LOWBIT_STATUS_SUCCESS)
      return s;
    const int activationValue = core::abiField(activation);
    if (activationValue != LOWBIT_DTYPE_F16 && activationValue != LOWBIT_DTYPE_BF16)
      return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry,
                  "activation must be LOWBIT_DTYPE_F16 or LOWBIT_DTYPE_BF16, got " +
                      std::to_string(activationValue));
    Expected<core::Activation> typed = core::activationFromAbi(activationValue);
    if (!typed)
      return fail(LOWBIT_STATUS_INTERNAL_ERROR, entry, typed.error());
    const checkpoint::GgufTensor &tensor = file->gguf.tensors[index];
    const checkpoint::GgufLayer &layer = file->layers[index];
    if (!layer.notRead.empty())
      return fail(LOWBIT_STATUS_UNSUPPORTED, entry, tensor.name + ": " + layer.notRead);
    // What formats::importGguf refuses is the file's (a short tensor, a
    // NaN d); what toKernelWeights refuses is a scheme no kernel reads.
    Expected<formats::QuantizedMatrix> matrix = checkpoint::readGgufLayer(tensor, layer);
    if (!matrix)
      return fail(LOWBIT_STATUS_FILE_ERROR, entry, matrix.error());
    Expected<checkpoint::KernelWeights> weights =
        checkpoint::toKernelWeights(std::move(*matrix), *typed);
    if (!weights)
      return fail(LOWBIT_STATUS_UNSUPPORTED, entry, tensor.name + ": " + weights.error());
    auto loaded = std::make_unique<lowbit_gguf_layer>();
    loaded->weights = std::move(*weights);
    if (Status s = core::problemToAbi(loaded->weights.problem, &loaded->problem, &loaded->table);
        !s)
      return fail(LOWBIT_STATUS_INTERNAL_ERROR, entry, tensor.name + ": " + s.error());
    for (const std::string &note : loaded->weights.notes)
      loaded->notes += (loaded->notes.empty() ? "" : "\n") + note;
    *out_layer = loaded.release();
    return LOWBIT_STATUS_SUCCESS;
  });
}

lowbit_status lowbit_gguf_layer_destroy(lowbit_gguf_layer *layer) {
  delete layer;
  return LOWBIT_STATUS_SUCCESS;
}

lowbit_status lowbit_gguf_layer_data_get(const lowbit_gguf_layer *layer,
                                         lowbit_gguf_layer_data *out_data) {
  const char *entry = "lowbit_gguf_layer_data_get";
  if (!layer || !out_data)
    return fail(LOWBIT_STATUS_INVALID_ARGUMENT, entry,
                layer ? "out_data is NULL" : "layer is NULL");
  if (ApiStatus s = checkOutputStructSize(out_data->struct_size, sizeof(lowbit_gguf_layer_data),
                                          "lowbit_gguf_layer_data");
      !s)
    return recordFailure(s.error());
  const checkpoint::KernelWeights &w = layer->weights;
  out_data->problem = layer->problem;
  out_data->codes = w.codes.data();
  out_data->code_count = w.codes.size();
  out_data->scales = w.scales.data();
  out_data->scale_bytes = w.scales.size();
  out_data->zeros = w.zeros.empty() ? nullptr : w.zeros.data();
  out_data->zero_bytes = w.zeros.size();
  out_data->notes = layer->notes.c_str();
  return LOWBIT_STATUS_SUCCESS;
}

} // extern "C"
