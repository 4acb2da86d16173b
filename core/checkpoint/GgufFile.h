// The GGUF container (llama.cpp's model file), versions 2 and 3: the header,
// the metadata key/value pairs and the tensor directory, read from bytes in
// memory (a mapped file). Tensor data stays where it is: each tensor points
// into the caller's buffer.
//
// Layout, little-endian throughout:
//   u32 magic "GGUF"; u32 version; u64 tensor_count; u64 kv_count;
//   kv_count x { string key; u32 value_type; value };
//   tensor_count x { string name; u32 n_dims; u64 ne[n_dims]; u32 ggml_type;
//                    u64 offset };
//   padding to `general.alignment` (a u32 key, default 32);
//   the data section: tensor i starts at data + offset_i.
// A string is a u64 length and that many bytes (no terminator). An array
// value is a u32 element type, a u64 count and the elements.
//
// The file is untrusted. Every count, length, dimension and offset is
// checked against the bytes that remain before it is used; sizes are
// computed with overflow checks; an error names the field and, past the
// header, the key or tensor. Nothing throws, nothing reads out of bounds.
#pragma once

#include "core/support/Expected.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace lowbit::checkpoint {

// The metadata value types, as GgufMetadata::type stores them.
namespace gguf_value {
enum ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
} // namespace gguf_value

// A metadata value: scalars and strings as they are; an array as its element
// type and count (lowbit reads no array values, e.g. the tokenizer's).
struct GgufArraySummary {
  uint32_t elementType = 0;
  uint64_t count = 0;
};
using GgufValue = std::variant<uint64_t, int64_t, double, bool, std::string, GgufArraySummary>;

struct GgufMetadata {
  std::string key;
  uint32_t type = 0; // the gguf value type as stored (0 = u8 ... 12 = f64)
  GgufValue value;   // unsigned types as uint64_t, signed as int64_t, floats as double
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims; // ne[0] first: ne[0] is the contiguous dimension (K of a weight)
  int type = 0;              // the ggml_type id as stored
  uint64_t offset = 0;       // from the start of the data section
  // The tensor's bytes in the caller's buffer, when its ggml type has a known
  // size (ggmlTypeSize); otherwise data is null and bytes is 0.
  const uint8_t *data = nullptr;
  size_t bytes = 0;
};

struct GgufFile {
  uint32_t version = 0;
  uint64_t alignment = 32;
  std::vector<GgufMetadata> metadata;
  std::vector<GgufTensor> tensors;
  const GgufMetadata *find(const std::string &key) const;
};

// A ggml type's storage: `bytes` per block of `elements` (1 for plain
// types). False for ids lowbit does not know; such tensors are listed but
// have no data.
struct GgmlTypeSize {
  int elements = 0;
  int bytes = 0;
};
bool ggmlTypeSize(int type, GgmlTypeSize *out);
// "q4_K", "f16", ...; "type <id>" for unknown ids.
std::string ggmlTypeName(int type);

// Parses a whole GGUF file held at [data, data + size). `label` (the path)
// starts every message. The checks: the magic, a version of 2 or 3, counts
// that the remaining bytes could hold, strings no longer than what remains
// (and keys and names at most 64 KiB), keys non-empty and unique (as ggml
// requires), known value types, bools of 0 or 1, arrays nested at most 8
// deep, 1 to 4 dimensions each in [1, 2^62] whose product fits in int64, an
// alignment that is a u32 power of two between 1 and 2^16, each tensor's
// offset a multiple of it and inside the data section, each known-size
// tensor's elements a whole number of blocks along ne[0] and its bytes inside
// the data section, and no two tensors sharing a name or overlapping (a
// tensor of unknown size counts as its first byte).
Expected<GgufFile> parseGguf(const uint8_t *data, size_t size, const std::string &label);

} // namespace lowbit::checkpoint
