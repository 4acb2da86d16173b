// CUDA C++ -> cubin + PTX through NVRTC, with lowbit's device headers embedded.
//
// This half of codegen links NVRTC but no MLIR, so the tuner's measuring side
// and the GPU tests can use it on hosts without LLVM.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::nvrtc {

// One enumerator per core::targetArchs() entry (core/Arch.h holds their
// facts; NvrtcTest checks the two agree).
enum class Arch { Sm80, Sm86, Sm89, Sm90a };

const char *archName(Arch arch); // "sm_80", ...
Expected<Arch> parseArch(const std::string &name);
// Compute capability times ten (80, 86, 89, 90).
int archComputeCapability(Arch arch);

// The most shared memory, static plus dynamic, one block may use on `arch`
// once its function opts in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
// as core::TargetArch states it:
// the SM's shared memory less the 1 KiB the system reserves per block (CUDA C
// Programming Guide, "Technical Specifications per Compute Capability").
int64_t maxSharedBytesPerBlock(Arch arch);

// Fails when a kernel needing `staticBytes` (ptxas) plus `dynamicBytes` (its
// launch) of shared memory cannot launch on `arch`; the message says
// "needs N bytes of shared memory per block; <arch> allows at most M".
Status checkSharedBytesPerBlock(Arch arch, int64_t staticBytes, int64_t dynamicBytes);

// What ptxas reported for one kernel (from --ptxas-options=-v).
struct KernelResources {
  std::string kernelName;
  int registers = 0;
  int sharedBytes = 0;      // static shared memory
  int stackFrameBytes = 0;
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  int constantBytes = 0;
};

struct CompileRequest {
  std::string source;
  std::string sourceName = "kernel.cu";
  Arch arch = Arch::Sm80;
  std::vector<std::string> extraOptions;
};

struct CompileResult {
  std::vector<char> cubin;
  std::string ptx;
  std::string log; // NVRTC's full log, including the ptxas report
  std::vector<KernelResources> resources;
};

// Compiles `request.source`; `#include "lowbit/device/<header>.cuh"` resolves
// to the embedded device headers. A compile error returns the NVRTC log.
Expected<CompileResult> compile(const CompileRequest &request);

// Parses ptxas' -v report into one entry per kernel (exposed for tests).
std::vector<KernelResources> parsePtxasReport(const std::string &log);

// NVRTC's version, "major.minor".
std::string nvrtcVersion();

} // namespace lowbit::nvrtc
