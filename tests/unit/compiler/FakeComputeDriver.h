// A DriverApi for the measuring code's CPU tests: "device memory" is host
// memory and a launched "kernel" really computes Y = X · dequant(W)ᵀ on the
// CPU, reading W in the weight layout its "cubin" was built for. A kernel
// handed weights packed for another layout therefore computes wrong values,
// exactly as on a GPU, and the measurer's reference check must catch it.
//
// A fake cubin is what makeFakeCubin returns: a CUDA ELF header (so the
// runtime's plan builder takes it for a cubin) and a text. The copy kernel's
// embedded PTX loads too, and copies. Launches while a stream is being
// captured are not computed (a graph is only timed); each graph replay takes
// kFakeReplayMs by the events. The device has 4 SMs, 2048 threads per SM and
// a 1 MiB L2. Shared memory follows the real rule: a launch whose static +
// dynamic shared memory passes 48 KiB fails unless its function opted in to
// at least the dynamic bytes (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
// and an opt-in whose static + dynamic passes the device's 227 KiB opt-in
// maximum is refused.
#pragma once

#include "compiler/measure/GraphTimer.h"
#include "runtime/cuda/Driver.h"
#include "runtime/kernels/KernelSet.h"

#include <string>
#include <vector>

namespace lowbit::testing {

// The image a fake module loads: the problem (its signature: formats, shape,
// scheme) and the layout the kernel reads its weights in. Its kernel computes
// with any code width, granularity and zero mode, as the real kernels do.
// `name` only makes images of otherwise equal kernels differ (a database
// keys kernels by their cubin's hash); `staticSharedBytes` is what the loaded
// function reports as CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES.
std::vector<char> makeFakeCubin(const kernels::ProblemDesc &problem,
                                const std::string &weightLayout, const std::string &name = "",
                                int staticSharedBytes = 0);

constexpr float kFakeReplayMs = 0.5f;

// Two real weight layouts (a row-major gemv's and an mma's) that pack the
// same codes differently, for N and K multiples of 64 and 32.
constexpr const char *kGemvLayout = "lbwl1;bits=4;tile=1x32;basis=4,1,2,8,16";
constexpr const char *kMmaLayout = "lbwl1;bits=4;tile=64x16;basis=128,256,512,2,8,16,4,32,64,1";

// An sm_90a entry of `problem` launched as tile M x tile N with 32 threads.
kernels::KernelEntry fakeKernelEntry(const kernels::ProblemDesc &problem, const std::string &name,
                                     const std::string &family, const std::string &layout,
                                     int64_t tileM, int64_t tileN);

// The driver table; every function the measuring code calls is filled in.
const cuda::DriverApi &fakeComputeDriver();

struct FakeDriverCounters {
  int modulesLoaded = 0;    // cuModuleLoadDataEx calls
  int modulesAlive = 0;     // loaded and not yet unloaded
  int computedLaunches = 0; // launches outside capture, i.e. actually computed
  int capturedLaunches = 0;
  long long lastGridX = 0;
  long long lastSharedBytes = 0; // the last launch's dynamic shared memory
  int dynamicSharedOptIns = 0;   // cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) calls
  int ptxLoads = 0;             // images that were the copy kernel's PTX
  bool brokenCopy = false;      // set by a test: the copy kernel copies nothing
  long long corruptColumn = -1; // set by a test: matmuls write this column of Y wrong
  std::string failLaunchesOf;   // set by a test: launches of this entry point fail
};
FakeDriverCounters &fakeDriverCounters();

} // namespace lowbit::testing
