// Which tensors of a GGUF file are layers lowbit reads, and their weights as
// formats::QuantizedMatrix: the one decision `lowbit import gguf` and the C
// API's lowbit_gguf_* share.
//
// A layer is a tensor of two or more dimensions in a quantized ggml type:
// its rows N are ne[1] · ne[2] · ..., its K is ne[0] (contiguous). Plain
// tensors (f32, f16, bf16, f64, the integer types) and vectors stay in the
// checkpoint; quantized types the formats library does not decode are named.
#pragma once

#include "core/checkpoint/GgufFile.h"
#include "core/formats/Gguf.h"
#include "core/formats/Quantize.h"
#include "core/support/Expected.h"

#include <optional>
#include <string>

namespace lowbit::checkpoint {

struct GgufLayer {
  std::string name;       // the tensor's name less a trailing ".weight"
  int64_t rows = 1;       // N
  int64_t cols = 0;       // K
  std::string typeName;   // the ggml type's name ("q4_K", "f32", ...)
  bool quantized = false; // a quantized matrix, whether lowbit reads it or not
  // Set when the formats library decodes the tensor's ggml type.
  std::optional<formats::GgufType> type;
  // Non-empty: why the tensor is not a layer lowbit reads.
  std::string notRead;
};

GgufLayer ggufLayer(const GgufTensor &tensor);

// The weights of `tensor`, whose ggufLayer is `layer`, when lowbit reads it
// (else the error says why not). The tensor's bytes are untrusted:
// formats::importGguf checks them.
Expected<formats::QuantizedMatrix> readGgufLayer(const GgufTensor &tensor, const GgufLayer &layer);

} // namespace lowbit::checkpoint
