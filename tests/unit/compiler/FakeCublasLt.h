// What the stand-in libcublasLt (FakeCublasLt.cpp) shares with its tests: one
// object it exports as `lowbit_fake_cublaslt_state`, found with dlsym on the
// same library Cublas::load opened. Both sides round f16/bf16 with
// measure::activationBits (ProblemInputs.h). The tests set the failure fields
// and read what the fake saw.
// No CUDA header, so the test needs none.
#pragma once

#include <cstddef>
#include <cstdint>

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
  uint32_t preferenceMinAlignment; // the latest MIN_ALIGNMENT_*_BYTES set (0: none)
  const void *matmulWorkspace;
  size_t matmulWorkspaceBytes;
  int computeType, scaleType, matrixType, transA, transB; // of the last matmul
};

#define LOWBIT_FAKE_CUBLASLT_STATE "lowbit_fake_cublaslt_state"

