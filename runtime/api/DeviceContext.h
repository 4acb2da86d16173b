// What a lowbit_context holds: the driver, the device and its primary
// context, the device's fingerprint, and the open kernel databases.
//
// Plans share ownership of it, so a plan stays usable after the caller
// destroys the context handle; the primary context is released when the last
// of them goes.
#pragma once

#include "lowbit/lowbit.h"
#include "runtime/api/ApiError.h"
#include "runtime/api/KernelDatabases.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/Driver.h"
#include "tuning_db/Fingerprint.h"

#include <memory>
#include <mutex>

namespace lowbit::api {

struct ContextState {
  const cuda::DriverApi *api = nullptr;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext primaryContext = nullptr; // retained; released in the destructor
  db::DeviceFingerprint fingerprint;
  KernelDatabases databases;
  // Plan creation reads the databases; one plan at a time keeps their
  // connections single-threaded, which is how tuning_db wants them used.
  std::mutex planCreation;
  // cuBLASLt for the dense path, loaded by the first plan that needs it
  // (under planCreation), or why it could not be.
  std::shared_ptr<const cuda::CublasLt> cublasLt;
  std::string cublasLtError;
  // Where cuBLASLt is looked for: $LOWBIT_CUBLASLT (a path or soname) when
  // set, else CublasLt::defaultLibraries().
  Result<std::shared_ptr<const cuda::CublasLt>> loadCublasLt();

  ContextState() = default;
  ContextState(const ContextState &) = delete;
  ContextState &operator=(const ContextState &) = delete;
  ~ContextState();
};

// NO_DEVICE when the driver cannot be loaded or the ordinal names no device;
// DATABASE_* from openKernelDatabases; DRIVER_ERROR if the primary context
// cannot be retained.
Result<std::shared_ptr<ContextState>> createContextState(const lowbit_context_options &options);

// Makes `context` current on the calling thread for its lifetime and then
// restores whatever was current before (the caller's thread state is theirs).
// Only driver calls that touch thread-local state: no allocation, no
// synchronization, allowed during stream capture.
class ScopedCurrentContext {
public:
  ScopedCurrentContext(const cuda::DriverApi &api, CUcontext context) noexcept;
  ~ScopedCurrentContext();
  ScopedCurrentContext(const ScopedCurrentContext &) = delete;
  ScopedCurrentContext &operator=(const ScopedCurrentContext &) = delete;

  CUresult result() const { return result_; }

private:
  const cuda::DriverApi &api_;
  CUcontext previous_ = nullptr;
  bool switched_ = false;
  CUresult result_ = CUDA_SUCCESS;
};

// "what: CUDA_ERROR_X: text" as an ApiError with a status that fits `result`.
ApiError driverError(const cuda::DriverApi &api, const std::string &what, CUresult result);

} // namespace lowbit::api

// The C handle: a shared reference to the state.
struct lowbit_context {
  std::shared_ptr<lowbit::api::ContextState> state;
};
