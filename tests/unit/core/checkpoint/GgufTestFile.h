// GGUF files for tests, written by the project's own writer: version 3, no
// metadata, tensors aligned to 32 bytes; and random k-quant blocks whose f16
// d (and dmin) are small and finite.
#pragma once

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace lowbit::testing {

struct GgufTensorSpec {
  std::string name;
  std::vector<uint64_t> dims; // ne[0] first
  uint32_t type;              // ggml type id
  std::vector<uint8_t> data;
};

inline void writeGguf(const std::string &path, const std::vector<GgufTensorSpec> &tensors) {
  std::vector<uint8_t> bytes;
  auto put = [&](uint64_t value, int size) {
    for (int i = 0; i < size; ++i)
      bytes.push_back(uint8_t(value >> (8 * i)));
  };
  bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
  put(3, 4);
  put(tensors.size(), 8);
  put(0, 8);
  uint64_t offset = 0;
  for (const GgufTensorSpec &t : tensors) {
    put(t.name.size(), 8);
    bytes.insert(bytes.end(), t.name.begin(), t.name.end());
    put(t.dims.size(), 4);
    for (uint64_t d : t.dims)
      put(d, 8);
    put(t.type, 4);
    put(offset, 8);
    offset += (t.data.size() + 31) / 32 * 32;
  }
  for (const GgufTensorSpec &t : tensors) {
    bytes.resize((bytes.size() + 31) / 32 * 32, 0);
    bytes.insert(bytes.end(), t.data.begin(), t.data.end());
  }
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

// `blocks` random blocks of `blockBytes`, with each f16 at `scaleOffsets`
// small and finite (exponent bits 0x20..0x27 in its high byte).
inline std::vector<uint8_t> randomGgufBlocks(int blocks, int blockBytes,
                                             std::vector<int> scaleOffsets, std::mt19937 &rng) {
  std::vector<uint8_t> data(size_t(blocks * blockBytes));
  for (uint8_t &b : data)
    b = uint8_t(rng());
  for (int b = 0; b < blocks; ++b)
    for (int offset : scaleOffsets) {
      data[size_t(b * blockBytes + offset)] = uint8_t(rng());
      data[size_t(b * blockBytes + offset + 1)] = uint8_t(0x20 + rng() % 8);
    }
  return data;
}

} // namespace lowbit::testing
