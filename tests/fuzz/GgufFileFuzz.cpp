// The GGUF container reader on arbitrary bytes: an error or a file whose
// every tensor lies inside the input, never a read past it, an exception or
// a crash. Each parsed tensor's bytes are read in full, so AddressSanitizer
// sees a pointer or size that escapes the buffer.
#include "core/checkpoint/GgufFile.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = lowbit::checkpoint::parseGguf(data, size, "fuzz");
  if (!file)
    return 0;
  unsigned sum = 0;
  for (const auto &tensor : file->tensors) {
    if ((tensor.data == nullptr) != (tensor.bytes == 0))
      std::abort(); // the reader promises data exactly when the size is known
    for (size_t i = 0; i < tensor.bytes; ++i)
      sum += tensor.data[i];
  }
  // Keeps the reads from being optimized away.
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
