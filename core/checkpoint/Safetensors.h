// safetensors files (Hugging Face): an 8-byte little-endian header length N,
// N bytes of JSON, then the data. The JSON maps each tensor's name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets from the start of
// the data), plus an optional "__metadata__" object of strings.
//
// The reader takes the file as untrusted: the header must fit in the file and
// in kMaxSafetensorsHeaderBytes, parse as a JSON object with unique names,
// and every tensor must have a known dtype, a shape of non-negative integers
// whose element count and byte size fit in int64, offsets inside the data
// with end - begin equal to that byte size, and no overlap with another
// tensor. Errors name the file and the tensor; nothing throws.
//
// The writer streams: each tensor's bytes go to disk as they are added, and
// finish() writes the header and moves the result into place, so a failed
// import leaves no partial file behind.
#pragma once

#include "core/support/Expected.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lowbit::checkpoint {

enum class SafetensorsDtype {
  Bool,
  U8,
  I8,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
  F8E4M3,
  F8E5M2
};

// "F16", "F8_E4M3", ... as the files spell them.
const char *safetensorsDtypeName(SafetensorsDtype dtype);
int safetensorsDtypeBytes(SafetensorsDtype dtype);
Expected<SafetensorsDtype> parseSafetensorsDtype(const std::string &name);

// The safetensors format's own limit on the header (100 MB).
constexpr int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::U8;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  const uint8_t *data = nullptr; // inside the caller's buffer
  size_t bytes = 0;
};

struct SafetensorsFile {
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<SafetensorsTensor> tensors; // in the header's order
  const SafetensorsTensor *find(const std::string &name) const;
  const std::string *metadataValue(const std::string &key) const;
};

// Parses the whole file held at [data, data + size); `label` (the path)
// starts every message.
Expected<SafetensorsFile> parseSafetensors(const uint8_t *data, size_t size,
                                           const std::string &label);

class SafetensorsWriter {
public:
  // Data goes to `path`.part while tensors are added; finish() writes `path`.
  static Expected<SafetensorsWriter> create(const std::string &path);
  SafetensorsWriter(SafetensorsWriter &&) noexcept;
  SafetensorsWriter &operator=(SafetensorsWriter &&) noexcept;
  ~SafetensorsWriter(); // without finish(): removes the partial files

  // `bytes` must be the shape's element count times the dtype's size; a
  // name given twice is an error.
  Status add(const std::string &name, SafetensorsDtype dtype, const std::vector<int64_t> &shape,
             const void *data, size_t bytes);
  void setMetadata(const std::string &key, const std::string &value);
  Status finish();

private:
  struct State;
  explicit SafetensorsWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

} // namespace lowbit::checkpoint
