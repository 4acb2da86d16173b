#include "compiler/measure/GraphTimer.h"

#include <algorithm>
#include <vector>

namespace lowbit::measure {
namespace {

Error driverError(const cuda::DriverApi &api, const char *what, CUresult result) {
  return makeError(std::string(what) + ": " + cuda::describe(api, result));
}

// Owns a stream, two events, a graph and its executable form.
struct GraphResources {
  const cuda::DriverApi &api;
  CUstream stream = nullptr;
  CUevent start = nullptr, stop = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ~GraphResources() {
    if (exec) api.cuGraphExecDestroy(exec);
    if (graph) api.cuGraphDestroy(graph);
    if (start) api.cuEventDestroy(start);
    if (stop) api.cuEventDestroy(stop);
    if (stream) api.cuStreamDestroy(stream);
  }
};

} // namespace

DeviceMemory &DeviceMemory::operator=(DeviceMemory &&other) noexcept {
  std::swap(api_, other.api_);
  std::swap(pointer_, other.pointer_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (api_ && pointer_)
    api_->cuMemFree(pointer_);
}

Expected<DeviceMemory> DeviceMemory::allocate(const cuda::DriverApi &api, size_t bytes) {
  DeviceMemory memory;
  memory.api_ = &api;
  memory.bytes_ = bytes;
  if (CUresult r = api.cuMemAlloc(&memory.pointer_, std::max<size_t>(bytes, 1)); r != CUDA_SUCCESS)
    return driverError(api, ("allocating " + std::to_string(bytes) + " bytes").c_str(), r);
  return memory;
}

Expected<Timing> timeGraph(const cuda::DriverApi &api, int launches, int replays,
                           const std::function<CUresult(int, CUstream)> &enqueue) {
  replays = std::max(replays, 7);
  GraphResources g{api};
  CUresult r;
  if ((r = api.cuStreamCreate(&g.stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
    return driverError(api, "cuStreamCreate", r);
  if ((r = api.cuEventCreate(&g.start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
      (r = api.cuEventCreate(&g.stop, CU_EVENT_DEFAULT)) != CUDA_SUCCESS)
    return driverError(api, "cuEventCreate", r);
  if ((r = api.cuStreamBeginCapture(g.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) !=
      CUDA_SUCCESS)
    return driverError(api, "cuStreamBeginCapture", r);
  CUresult enqueued = CUDA_SUCCESS;
  for (int i = 0; i < launches && enqueued == CUDA_SUCCESS; ++i)
    enqueued = enqueue(i, g.stream);
  r = api.cuStreamEndCapture(g.stream, &g.graph);
  if (enqueued != CUDA_SUCCESS)
    return driverError(api, "launch during capture", enqueued);
  if (r != CUDA_SUCCESS)
    return driverError(api, "cuStreamEndCapture", r);
  if ((r = api.cuGraphInstantiate(&g.exec, g.graph, 0)) != CUDA_SUCCESS)
    return driverError(api, "cuGraphInstantiate", r);

  std::vector<double> perLaunchUs;
  for (int replay = -1; replay < replays; ++replay) { // replay -1 warms up
    if ((r = api.cuEventRecord(g.start, g.stream)) != CUDA_SUCCESS ||
        (r = api.cuGraphLaunch(g.exec, g.stream)) != CUDA_SUCCESS ||
        (r = api.cuEventRecord(g.stop, g.stream)) != CUDA_SUCCESS ||
        (r = api.cuEventSynchronize(g.stop)) != CUDA_SUCCESS)
      return driverError(api, "graph replay", r);
    float ms = 0;
    if ((r = api.cuEventElapsedTime(&ms, g.start, g.stop)) != CUDA_SUCCESS)
      return driverError(api, "cuEventElapsedTime", r);
    if (replay >= 0)
      perLaunchUs.push_back(1000.0 * ms / launches);
  }
  std::sort(perLaunchUs.begin(), perLaunchUs.end());
  auto at = [&](double q) {
    return perLaunchUs[static_cast<size_t>(q * (perLaunchUs.size() - 1) + 0.5)];
  };
  Timing timing;
  timing.medianUs = at(0.5);
  timing.p10Us = at(0.1);
  timing.p90Us = at(0.9);
  timing.launches = launches;
  timing.replays = replays;
  return timing;
}

} // namespace lowbit::measure
