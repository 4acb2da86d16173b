// What the stand-in libcublasLt (FakeCublasLt.cpp) shares with its tests: one
// object it exports as `lowbit_fake_cublaslt_state`, found with dlsym on the
// same library Cublas::load opened, and the f16/bf16 conversions both sides
// compute with. The tests set the failure fields and read what the fake saw.
// No CUDA header, so the test needs none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

struct LowbitFakeCublasLtState {
  // Set by a test: the function named here returns failStatus (until reset).
  char failFunction[64];
  int failStatus;
  int noAlgorithm;           // the heuristic finds nothing
  size_t algorithmWorkspace; // bytes the heuristic's algorithm needs
  // Counted by the fake.
  int heuristicCalls, matmulCalls;
  int alive; // handles, preferences, descriptors and layouts not destroyed
  uint64_t preferenceMaxWorkspace;
  const void *matmulWorkspace;
  size_t matmulWorkspaceBytes;
  int computeType, scaleType, matrixType, transA, transB; // of the last matmul
};

#define LOWBIT_FAKE_CUBLASLT_STATE "lowbit_fake_cublaslt_state"

namespace lowbit::testing {

inline double fakeHalfValue(uint16_t bits, bool bf16) {
  if (bf16) {
    uint32_t word = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &word, 4);
    return f;
  }
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<double>(h);
}

// Rounded to nearest even, as a GPU's f32 to bf16/f16 conversion does.
inline uint16_t fakeHalfBits(double value, bool bf16) {
  uint16_t bits;
  if (bf16) {
    float f = static_cast<float>(value);
    uint32_t word;
    std::memcpy(&word, &f, 4);
    word += 0x7FFF + ((word >> 16) & 1);
    bits = static_cast<uint16_t>(word >> 16);
  } else {
    _Float16 h = static_cast<_Float16>(value);
    std::memcpy(&bits, &h, 2);
  }
  return bits;
}

} // namespace lowbit::testing
