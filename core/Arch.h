// The GPU archs lowbit compiles kernels for, with the one per-arch fact the
// compiler needs before a kernel exists: how much shared memory a block may
// use. The spec parser accepts exactly these, NVRTC targets them, and
// `lowbit formats` reports kernels against them.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::core {

struct TargetArch {
  // "sm_80", "sm_86", "sm_89", "sm_90a" (sm_90a, not sm_90: wgmma and
  // setmaxnreg exist only in the arch-specific target).
  std::string name;
  int computeCapability = 0; // times ten: 80, 86, 89, 90
  // The most shared memory, static plus dynamic, one block may use once its
  // function opts in: the SM's shared memory less the 1 KiB the system
  // reserves per block (CUDA C Programming Guide, "Technical Specifications
  // per Compute Capability").
  int64_t maxSharedBytesPerBlock = 0;
  // wgmma, TMA and setmaxnreg: the `wgmma` family runs only here.
  bool hasWgmma = false;
  // What one SM holds at once, which decides how many blocks of a kernel
  // run side by side (the tuner's occupancy, the runtime heuristic's
  // estimate): shared memory, threads and blocks (the same guide's table).
  int64_t sharedBytesPerSm = 0;
  int64_t maxThreadsPerSm = 0;
  int64_t maxBlocksPerSm = 0;
  static constexpr int64_t kRegistersPerSm = 65536;
};

// Oldest first.
const std::vector<TargetArch> &targetArchs();
// "sm_80, sm_86, sm_89 or sm_90a", for messages.
std::string targetArchList();
Expected<TargetArch> findTargetArch(const std::string &name);
// The newest target arch a device of compute capability `cc` (times ten)
// runs kernels of: its own, or the closest older one of its major version
// (sm_87 -> sm_86). Fails for a major version lowbit has no target of.
Expected<TargetArch> targetArchForDevice(int cc);

} // namespace lowbit::core
