// What the fake driver (FakeDriver.cpp) records of its latest launch, and
// counts, exported as lowbit_fake_cuda_last_launch(); its tests read it.
#pragma once

struct LowbitFakeLaunch {
  char function[256];
  unsigned grid[3], block[3], sharedBytes;
  void *stream;
  int contextWasCurrent;
  // x, [x_scales,] w, scales, [zeros,] y as passed: a function whose name
  // holds "x_scales" takes x's scales, one that holds "zeros" zeros.
  unsigned long long pointers[6];
  long long m;
  int launches;
  int modulesLoaded;
  int ptxLoads;
  int dynamicSharedOptIns; // cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) calls
  // The act-order gather runs here, on "device" memory that is host memory,
  // and leaves the fields above to the matmul launch that follows it.
  int gatherLaunches;
  unsigned gatherGrid[2];
  // Every launch's function and every cuMemsetD32Async ("memset"), ';' after
  // each, oldest first, for the order of a call's steps; a test empties it
  // (history[0] = 0) first. Truncated at its size.
  char history[512];
  // The activation quantizer's latest launches (they leave the fields above
  // to the matmul): lowbit_quantize_activations' (x, bf16, e4m3, M, K, q,
  // scales, tensorAbsmax), lowbit_activation_absmax's tensorAbsmax, and the
  // latest cuMemsetD32Async.
  unsigned long long quantizeX, quantizeCodes, quantizeScales, quantizeTensorAbsmax;
  int quantizeBf16, quantizeE4m3;
  long long quantizeM, quantizeK;
  unsigned quantizeGrid[2], quantizeBlock;
  unsigned long long absmaxTarget;
  unsigned long long memsetAddress;
  unsigned memsetValue;
  unsigned long long memsetCount;
  // A stream-K kernel's workspace (the parameter after M, for a function
  // whose name holds "stream_k"); 0 for the others.
  unsigned long long workspace;
};
