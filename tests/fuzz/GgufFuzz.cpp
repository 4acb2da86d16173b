// The GGUF tensor importers on a fuzzed type id, shape and block data: an
// error or a matrix, never a read past the buffer (the rows * cols wrap
// past 2^64), an exception, or a silent NaN.
#include "FuzzInput.h"

#include "core/formats/Gguf.h"

#include <cmath>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lowbit::fuzz::FuzzInput in(data, size);
  int id = in.take<uint8_t>();
  int64_t rows = in.take<int64_t>(), cols = in.take<int64_t>();
  auto type = lowbit::formats::ggufTypeFromId(id);
  if (!type)
    return 0;
  auto matrix = lowbit::formats::importGguf(*type, in.rest(), in.restSize(), rows, cols, "fuzz");
  auto values = lowbit::formats::dequantizeGgufF32(*type, in.rest(), in.restSize(), rows);
  if (values)
    for (float v : *values)
      if (!std::isfinite(v))
        std::abort(); // the importer promises finite weights or an error
  (void)matrix;
  return 0;
}
