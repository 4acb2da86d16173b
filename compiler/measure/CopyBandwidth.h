// The device's memory roof (docs/architecture.md, "Correctness and measurement"): a copy,
// counting bytes read plus bytes written, over buffers far larger than the
// L2, timed as a CUDA graph of launches with events (GraphTimer.h). The copy
// is a kernel (CopyKernel.cu), not cuMemcpy, so the roof is what a kernel
// achieves; its PTX is embedded at build time and JIT-compiled by the driver.
#pragma once

#include "compiler/measure/GraphTimer.h"
#include "runtime/cuda/Driver.h"
#include "core/support/Expected.h"

#include <cstddef>
#include <cstdint>

namespace lowbit::measure {

// The embedded PTX of the copy kernel (entry lowbit_copy16, .target sm_80).
const char *copyKernelPtx();
constexpr const char *kCopyKernelName = "lowbit_copy16";
constexpr unsigned kCopyKernelThreads = 256; // its __launch_bounds__

struct CopyBandwidth {
  double gbps = 0;        // (read + written bytes) / median time per launch
  size_t bufferBytes = 0; // each of source and target
  unsigned blocks = 0;
  Timing timing;
};

// Bytes per buffer: at least 4x the L2 (so nothing is served from it) and at
// least `minBytes`, rounded up to whole 16-byte vectors.
size_t copyBufferBytes(int64_t l2Bytes, size_t minBytes);

// One block per 256 resident threads on every SM: a single full wave.
unsigned copyBlocks(int smCount, int maxThreadsPerSm);

// Measures on `device` in the current context. Before timing, the copy is
// checked (the target's first and last 64 KiB must equal the source), so a
// kernel that did not run cannot report a bandwidth.
Expected<CopyBandwidth> measureCopyBandwidth(const cuda::DriverApi &api, CUdevice device,
                                             size_t minBytes = size_t{1} << 30);

} // namespace lowbit::measure
