// A DriverApi for the measuring code's CPU tests: "device memory" is host
// memory and a launched "kernel" really computes Y = X · dequant(W)ᵀ on the
// CPU, reading W in the weight layout its "cubin" was built for. A kernel
// handed weights packed for another layout therefore computes wrong values,
// exactly as on a GPU, and the measurer's reference check must catch it.
//
// A fake cubin is the text makeFakeCubin returns. Launches while a stream is
// being captured are not computed (a graph is only timed); graph replays and
// events report a fixed time.
#pragma once

#include "compiler/measure/GraphTimer.h"
#include "runtime/cuda/Driver.h"
#include "runtime/kernels/KernelSet.h"

#include <string>
#include <vector>

namespace lowbit::testing {

// The image a fake module loads: the problem's shape and the layout the
// kernel reads its weights in.
std::vector<char> makeFakeCubin(const kernels::ProblemDesc &problem,
                                const std::string &weightLayout);

// The driver table; every function the measuring code calls is filled in.
const cuda::DriverApi &fakeComputeDriver();

struct FakeDriverCounters {
  int modulesLoaded = 0;   // cuModuleLoadDataEx calls
  int modulesAlive = 0;    // loaded and not yet unloaded
  int computedLaunches = 0; // launches outside capture, i.e. actually computed
  int capturedLaunches = 0;
  long long lastGridX = 0;
};
FakeDriverCounters &fakeDriverCounters();

} // namespace lowbit::testing
