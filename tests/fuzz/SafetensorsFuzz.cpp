// The safetensors reader on arbitrary bytes: an error or a file whose every
// tensor lies inside the input with the bytes its dtype and shape need,
// never a read past it, an exception or a crash. Each tensor's bytes are
// read in full, so AddressSanitizer sees a pointer or size that escapes.
#include "core/checkpoint/Safetensors.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = lowbit::checkpoint::parseSafetensors(data, size, "fuzz");
  if (!file)
    return 0;
  unsigned sum = 0;
  for (const auto &tensor : file->tensors) {
    if (tensor.bytes != size_t(tensor.elements) *
                            size_t(lowbit::checkpoint::safetensorsDtypeBytes(tensor.dtype)))
      std::abort(); // the reader promises the shape's bytes
    for (size_t i = 0; i < tensor.bytes; ++i)
      sum += tensor.data[i];
  }
  volatile unsigned sink = sum; // keeps the reads
  (void)sink;
  return 0;
}
