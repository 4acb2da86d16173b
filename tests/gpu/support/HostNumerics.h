// Host-side helpers of the GPU tests: a small fast random generator (the tests
// draw hundreds of millions of values). f16 / bf16 bit patterns come from
// compiler/measure/ProblemInputs.h (measure::activationBits / Value), with the
// inputs and the reference the bench and the tuner use too.
#pragma once

#include <cstdint>

namespace lowbit::testing {

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
