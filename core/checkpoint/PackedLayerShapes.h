// What the shapes of a GPTQ or AWQ layer's packed tensors say about the
// layer: its bits, K, N and group size, checked to fit together before any
// data is read. `lowbit import` (from safetensors files) and the Python
// package (from tensors in memory) share these, then fill in the data.
#pragma once

#include "core/formats/Gptq.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::checkpoint {

using Shape = std::vector<int64_t>;

std::string shapeText(const Shape &shape);

// GPTQ: qweight [K·bits/32, N], qzeros [G, N·bits/32], scales [G, N]. The
// result has every field but the data vectors set; `v2` says z is stored as
// is (GPTQModel) rather than as z - 1 (AutoGPTQ's v1).
Expected<formats::GptqCheckpoint> gptqLayerShape(const Shape &qweight, const Shape &qzeros,
                                                 const Shape &scales, bool v2);
// AWQ: qweight [K, N/8], qzeros [K/g, N/8], scales [K/g, N], 4-bit codes.
Expected<formats::AwqCheckpoint> awqLayerShape(const Shape &qweight, const Shape &qzeros,
                                               const Shape &scales);

} // namespace lowbit::checkpoint
