// A compiled kernel set as `lowbit compile` writes it (kernels.json plus one
// cubin per kernel and arch), and how to launch one of its kernels.
//
// The kernel database (tuning_db) stores the same fields; this directory form
// is what the compiler produces and the tests consume.
#pragma once

#include "core/Problem.h"
#include "core/Schedule.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::kernels {

// The problem a kernel computes: Y[M, N] = X[M, K] · dequant(W[N, K])ᵀ, in
// the typed model every layer shares.
using ProblemDesc = core::Problem;

struct KernelEntry {
  ProblemDesc problem;
  std::string name;   // the extern "C" entry point
  std::string arch;   // sm_80 ... sm_90a
  std::string family; // gemv | mma
  std::string schedule;
  std::string weightLayout;
  int64_t blockThreads = 0;
  std::vector<int64_t> gridTile; // {N per block, M per block, split-K}
  int registers = 0, sharedBytes = 0, spillBytes = 0; // sharedBytes: static, from ptxas
  // Dynamic shared memory every launch passes ("dynamic_shared_bytes" in
  // kernels.json, launch.dynamicSharedBytes in the database; 0 when absent).
  int64_t dynamicSharedBytes = 0;
  std::string cubinPath;
};

Expected<std::vector<KernelEntry>> readKernelSet(const std::string &directory);
Expected<std::vector<char>> readCubin(const KernelEntry &entry);

// More dynamic shared memory than this (no GPU has a tenth of it) marks a
// corrupt kernel entry.
constexpr int64_t kMaxPlausibleDynamicSharedBytes = int64_t{1} << 20;

struct LaunchShape {
  unsigned grid[3] = {1, 1, 1};
  unsigned block = 0;
  // cuLaunchKernel's sharedMemBytes; above 48 KiB the function must first
  // opt in (cuda::allowDynamicSharedBytes).
  unsigned dynamicSharedBytes = 0;
  // The entry's schedule, read once: the kernel's parameters
  // (core::kernelArguments) depend on it.
  core::Schedule schedule;
  // scheduler = stream_k: the workspace its launch needs for grid[0]
  // blocks (core::streamKWorkspaceBytes), whose flags, flagBytes from
  // flagOffset, the launch must clear on its stream first
  // (cuMemsetD32Async). 0 for the others.
  int64_t workspaceBytes = 0, flagOffset = 0, flagBytes = 0;
};

// The grid for M rows; M < 1, more rows than a grid can cover, or dynamic
// shared memory no GPU has is an error. A persistent kernel (its schedule's
// scheduler = persistent or stream_k) walks the tiles from min(blocks, tiles) blocks
// along x, where `persistentBlocks` is the device's SM count (one block an
// SM); 0, where no device is known, gives it a block a tile, which computes
// the same result. A stream-K kernel takes min(blocks, tiles x K tiles): it
// splits tiles along K, so fewer tiles than SMs still fill them.
Expected<LaunchShape> launchShape(const KernelEntry &entry, int64_t m, int64_t persistentBlocks);

} // namespace lowbit::kernels
