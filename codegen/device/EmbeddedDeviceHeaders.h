#pragma once
#include <cstddef>

namespace lowbit::device {
struct EmbeddedFile {
  const char *name;     // "lowbit/device/<file>.cuh"
  const char *contents;
};
extern const EmbeddedFile kEmbeddedFiles[];
extern const std::size_t kEmbeddedFileCount;
} // namespace lowbit::device
