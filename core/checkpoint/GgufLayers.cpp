#include "core/checkpoint/GgufLayers.h"

#include "core/checkpoint/PackedLayerShapes.h"

namespace lowbit::checkpoint {
namespace {

// ggml's plain storage types: f32, f16, bf16, f64 and the integers.
bool isPlainType(int type) {
  return type == 0 || type == 1 || type == 30 || (type >= 24 && type <= 28);
}

std::string typeList() {
  std::string list;
  for (formats::GgufType type : formats::kGgufTypes)
    list += (list.empty() ? "" : ", ") + std::string(formats::ggufTypeName(type));
  return list;
}

} // namespace

GgufLayer ggufLayer(const GgufTensor &tensor) {
  GgufLayer layer;
  const std::string suffix = ".weight";
  const std::string &name = tensor.name;
  layer.name = name.size() > suffix.size() &&
                       name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0
                   ? name.substr(0, name.size() - suffix.size())
                   : name;
  layer.cols = tensor.dims.empty() ? 0 : tensor.dims[0];
  for (size_t d = 1; d < tensor.dims.size(); ++d)
    layer.rows *= tensor.dims[d]; // parseGguf checked that the product fits
  layer.typeName = ggmlTypeName(tensor.type);
  if (isPlainType(tensor.type) || tensor.dims.size() < 2) {
    layer.notRead = "not a quantized layer (" + layer.typeName + " " + shapeText(tensor.dims) +
                    "): left in the checkpoint";
    return layer;
  }
  layer.quantized = true;
  Expected<formats::GgufType> type = formats::ggufTypeFromId(tensor.type);
  if (!type) {
    layer.notRead =
        "ggml type " + layer.typeName + ": lowbit's formats library reads " + typeList();
    return layer;
  }
  layer.type = *type;
  return layer;
}

Expected<formats::QuantizedMatrix> readGgufLayer(const GgufTensor &tensor, const GgufLayer &layer) {
  if (!layer.type)
    return makeError(tensor.name + ": " + layer.notRead);
  return formats::importGguf(*layer.type, tensor.data, tensor.bytes, layer.rows, layer.cols,
                             tensor.name);
}

} // namespace lowbit::checkpoint
