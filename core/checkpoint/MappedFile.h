// A file mapped read-only into memory. Checkpoints are tens of gigabytes:
// mapping them lets the readers hand out pointers to tensors in place, so an
// import holds one copy of a layer (its converted form) at a time, never the
// checkpoint in memory.
#pragma once

#include "core/support/Expected.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace lowbit::checkpoint {

class MappedFile {
public:
  // Errors name the path and the system's reason. An empty file maps to no
  // bytes (data() is null, size() 0): the readers then report it as
  // truncated, with the format's words.
  static Expected<MappedFile> open(const std::string &path);

  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &path() const { return path_; }

private:
  MappedFile() = default;
  void release();

  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

} // namespace lowbit::checkpoint
