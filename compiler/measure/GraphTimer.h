// Timing as docs/architecture.md prescribes: many launches captured in one CUDA
// graph (so launch gaps shrink to what a real engine sees), timed with device
// events, one warm-up replay, then the median (and p10/p90) of the replays.
#pragma once

#include "runtime/cuda/Driver.h"
#include "core/support/Expected.h"

#include <functional>

namespace lowbit::measure {

struct Timing {
  double medianUs = 0, p10Us = 0, p90Us = 0; // per launch
  int launches = 0, replays = 0;
};

// `enqueue(i, stream)` adds launch i (0 <= i < launches) to the stream being
// captured. Times `replays` replays of the graph (at least 7).
Expected<Timing> timeGraph(const cuda::DriverApi &api, int launches, int replays,
                           const std::function<CUresult(int, CUstream)> &enqueue);

// RAII device allocation for the measuring side (no test framework here).
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  DeviceMemory(DeviceMemory &&other) noexcept { *this = std::move(other); }
  DeviceMemory &operator=(DeviceMemory &&other) noexcept;
  ~DeviceMemory();
  static Expected<DeviceMemory> allocate(const cuda::DriverApi &api, size_t bytes);
  CUdeviceptr get() const { return pointer_; }
  size_t bytes() const { return bytes_; }

private:
  const cuda::DriverApi *api_ = nullptr;
  CUdeviceptr pointer_ = 0;
  size_t bytes_ = 0;
};

} // namespace lowbit::measure
