// The serialized weight-layout parser (what a kernel database stores and
// the runtime reads back): any text gets a layout or an error; a parsed
// layout packs and unpacks a small matrix it accepts without leaving the
// buffers.
#include "FuzzInput.h"

#include "core/layout/WeightLayout.h"

#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lowbit::fuzz::FuzzInput in(data, size);
  int64_t n = in.take<uint8_t>(), k = in.take<uint16_t>() & 0x3ff;
  auto layout = lowbit::layout::parseWeightLayout(in.restText());
  if (!layout || !lowbit::layout::checkShape(*layout, n, k))
    return 0;
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<uint8_t>(i * 7u) & static_cast<uint8_t>((1u << layout->codeBits) - 1);
  int64_t bytes = lowbit::layout::packedBytes(*layout, n, k);
  if (bytes < 0)
    std::abort(); // checkShape accepted the shape
  std::vector<uint8_t> packed(static_cast<size_t>(bytes)), back(codes.size());
  if (!lowbit::layout::packWeights(*layout, n, k, codes.data(), packed.data(), packed.size()) ||
      !lowbit::layout::unpackWeights(*layout, n, k, packed.data(), packed.size(), back.data()) ||
      back != codes)
    std::abort(); // a valid layout is a bijection: packing must round-trip
  return 0;
}
