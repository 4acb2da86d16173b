#include "compiler/measure/Cublas.h"

namespace lowbit::measure {

Expected<std::unique_ptr<Cublas>> Cublas::load(const cuda::DriverApi &api,
                                               const std::vector<std::string> &libraries) {
  Expected<std::unique_ptr<cuda::CublasLt>> lt = cuda::CublasLt::load(libraries);
  if (!lt.ok())
    return makeError(lt.error());
  Expected<DeviceMemory> workspace = DeviceMemory::allocate(api, kWorkspaceBytes);
  if (!workspace.ok())
    return makeError("cuBLASLt workspace: " + workspace.error());
  std::unique_ptr<Cublas> cublas(new Cublas());
  cublas->lt_ = std::move(*lt);
  cublas->workspace_ = std::move(*workspace);
  return cublas;
}

} // namespace lowbit::measure
