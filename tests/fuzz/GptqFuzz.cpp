// The GPTQ and AWQ importers on fuzzed checkpoints: the header fields and
// every tensor's length come from the input, so shapes that wrap, tensors
// of the wrong size and bad group indices all get an error, never a crash,
// an abort from std::bad_alloc, or a read out of bounds.
#include "FuzzInput.h"

#include "core/formats/Gptq.h"

#include <vector>

namespace {

template <typename T> std::vector<T> takeVector(lowbit::fuzz::FuzzInput &in) {
  // Lengths up to 4095 elements keep a case's memory small; the shape fields
  // are free to disagree with them.
  size_t n = in.take<uint16_t>() & 0xfff;
  std::vector<T> v(n);
  for (T &x : v)
    x = in.take<T>();
  return v;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lowbit::fuzz::FuzzInput in(data, size);
  bool awq = in.take<uint8_t>() & 1;
  if (awq) {
    lowbit::formats::AwqCheckpoint c;
    c.bits = in.take<int8_t>();
    c.inFeatures = in.take<int64_t>();
    c.outFeatures = in.take<int64_t>();
    c.groupSize = in.take<int32_t>();
    c.qweight = takeVector<int32_t>(in);
    c.qzeros = takeVector<int32_t>(in);
    c.scales = takeVector<uint16_t>(in);
    (void)lowbit::formats::importAwq(c);
    (void)lowbit::formats::dequantizeAwq(c);
    return 0;
  }
  lowbit::formats::GptqCheckpoint c;
  c.bits = in.take<int8_t>();
  c.inFeatures = in.take<int64_t>();
  c.outFeatures = in.take<int64_t>();
  c.groupSize = in.take<int32_t>();
  c.zeroPointPlusOne = in.take<uint8_t>() & 1;
  c.qweight = takeVector<int32_t>(in);
  c.qzeros = takeVector<int32_t>(in);
  c.scales = takeVector<uint16_t>(in);
  c.gIdx = takeVector<int32_t>(in);
  (void)lowbit::formats::importGptq(c);
  (void)lowbit::formats::dequantizeGptq(c);
  return 0;
}
