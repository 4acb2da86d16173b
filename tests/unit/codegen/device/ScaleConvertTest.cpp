// codegen/device/scale.cuh compiled as host code: the very functions kernels
// call to widen e8m0 and e4m3fn scale bytes to f32, checked for all 256
// codes against the formats library's decode (bit for bit where the value is
// a number, NaN where the code is NaN). NVRTC compiles the same text for the
// device (DeviceHeadersCompileTest), where __CUDA_ARCH__ picks the
// intrinsic bit casts and cvt.f32.f16 for e4m3fn's f16 step (a host twin
// here); the integer logic is shared, and DeviceHeadersGpuTest checks every
// code on the GPU too.
#define __host__
#define __device__
#define __forceinline__ inline
#include "codegen/device/scale.cuh"
#undef __forceinline__
#undef __device__
#undef __host__

#include "core/formats/DataFormat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace lowbit::device {
namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Every code of `format` through `convert`: the same f32 as the formats
// library's f64 decode rounded to f32 (exact: both formats fit in f32), the
// same bits (signed zeros included), NaN for NaN codes.
template <typename Convert>
void expectEveryCodeDecodes(const formats::DataFormat &format, Convert convert) {
  for (uint32_t code = 0; code < 256; ++code) {
    const double expected = format.decode(code);
    const float got = convert(code);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << format.name() << " code " << code;
      continue;
    }
    const float wanted = static_cast<float>(expected);
    ASSERT_EQ(static_cast<double>(wanted), expected) << "exact in f32";
    EXPECT_EQ(bitsOf(got), bitsOf(wanted))
        << format.name() << " code " << code << ": got " << got << ", want " << wanted;
  }
}

TEST(ScaleConvert, E8m0EveryCode) {
  expectEveryCodeDecodes(formats::DataFormat::e8m0(), [](uint32_t c) { return e8m0_to_f32(c); });
  // The ends: 2^-127 is an f32 subnormal, kept (no flush), and 0xFF is NaN.
  EXPECT_EQ(e8m0_to_f32(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0_to_f32(127), 1.0f);
  EXPECT_EQ(e8m0_to_f32(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(e8m0_to_f32(255)));
}

TEST(ScaleConvert, E4m3fnEveryCode) {
  expectEveryCodeDecodes(formats::DataFormat::e4m3fn(),
                         [](uint32_t c) { return e4m3fn_to_f32(c); });
  // Subnormals m · 2^-9, the largest normal 448, the NaN codes of both signs.
  EXPECT_EQ(e4m3fn_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3fn_to_f32(0x87), -7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3fn_to_f32(0x7E), 448.0f);
  EXPECT_EQ(bitsOf(e4m3fn_to_f32(0x80)), 0x80000000u) << "-0";
  EXPECT_TRUE(std::isnan(e4m3fn_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3fn_to_f32(0xFF)));
}

} // namespace
} // namespace lowbit::device
