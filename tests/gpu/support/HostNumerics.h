// Host-side helpers of the GPU tests: rounding to f16 / bf16 bit patterns
// (round to nearest even) and back, for building inputs and references
// exactly as the GPU sees them, and a small fast random generator (the tests
// draw hundreds of millions of values).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace lowbit::testing {

inline uint16_t f32ToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float bf16ToF32(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

inline uint16_t f32ToF16(float value) {
  _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, 2);
  return bits;
}

inline float f16ToF32(uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, 2);
  return static_cast<float>(half);
}

// Rounds through the 16-bit type named `type` ("f16" or "bf16").
inline uint16_t toBits(const char *type, float value) {
  return type[0] == 'b' ? f32ToBf16(value) : f32ToF16(value);
}
inline float fromBits(const char *type, uint16_t bits) {
  return type[0] == 'b' ? bf16ToF32(bits) : f16ToF32(bits);
}

struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

} // namespace lowbit::testing
