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
};

// Oldest first.
const std::vector<TargetArch> &targetArchs();
// "sm_80, sm_86, sm_89 or sm_90a", for messages.
std::string targetArchList();
Expected<TargetArch> findTargetArch(const std::string &name);

} // namespace lowbit::core
