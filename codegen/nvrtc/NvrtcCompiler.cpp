#include "codegen/nvrtc/NvrtcCompiler.h"

#include "codegen/device/EmbeddedDeviceHeaders.h"
#include "core/Arch.h"

#include <nvrtc.h>

#include <memory>

namespace lowbit::nvrtc {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram program) const { nvrtcDestroyProgram(&program); }
};
using ProgramHandle =
    std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0)
    return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS)
    return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

Error nvrtcError(const std::string &what, nvrtcResult result, const std::string &log = {}) {
  std::string message = "NVRTC " + what + " failed: " +
                        nvrtcGetErrorString(result);
  if (!log.empty())
    message += "\n" + log;
  return makeError(message);
}

} // namespace

const char *archName(Arch arch) {
  switch (arch) {
  case Arch::Sm80: return "sm_80";
  case Arch::Sm86: return "sm_86";
  case Arch::Sm89: return "sm_89";
  case Arch::Sm90a: return "sm_90a";
  }
  return "unknown";
}

Expected<Arch> parseArch(const std::string &name) {
  for (Arch arch : {Arch::Sm80, Arch::Sm86, Arch::Sm89, Arch::Sm90a})
    if (name == archName(arch))
      return arch;
  return makeError("unknown arch '" + name + "' (expected " + core::targetArchList() + ")");
}

int archComputeCapability(Arch arch) {
  Expected<core::TargetArch> target = core::findTargetArch(archName(arch));
  return target ? target->computeCapability : 0;
}

int64_t maxSharedBytesPerBlock(Arch arch) {
  Expected<core::TargetArch> target = core::findTargetArch(archName(arch));
  // 48 KiB is what every arch allows without an opt-in.
  return target ? target->maxSharedBytesPerBlock : 48 * 1024;
}

Status checkSharedBytesPerBlock(Arch arch, int64_t staticBytes, int64_t dynamicBytes) {
  int64_t needed = staticBytes + dynamicBytes;
  if (needed <= maxSharedBytesPerBlock(arch))
    return Status::success();
  return makeError("needs " + std::to_string(needed) + " bytes of shared memory per block; " +
                   archName(arch) + " allows at most " +
                   std::to_string(maxSharedBytesPerBlock(arch)));
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

Expected<CompileResult> compile(const CompileRequest &request) {
  std::vector<const char *> headerNames, headerContents;
  for (size_t i = 0; i < device::kEmbeddedFileCount; ++i) {
    headerNames.push_back(device::kEmbeddedFiles[i].name);
    headerContents.push_back(device::kEmbeddedFiles[i].contents);
  }

  nvrtcProgram rawProgram = nullptr;
  nvrtcResult result = nvrtcCreateProgram(
      &rawProgram, request.source.c_str(), request.sourceName.c_str(),
      static_cast<int>(headerNames.size()), headerContents.data(),
      headerNames.data());
  if (result != NVRTC_SUCCESS)
    return nvrtcError("program creation", result);
  ProgramHandle program(rawProgram);

  std::vector<std::string> options = {
      std::string("--gpu-architecture=") + archName(request.arch),
      "--std=c++17", "--ptxas-options=-v", "-default-device"};
  options.insert(options.end(), request.extraOptions.begin(),
                 request.extraOptions.end());
  std::vector<const char *> optionPointers;
  for (const std::string &option : options)
    optionPointers.push_back(option.c_str());

  result = nvrtcCompileProgram(program.get(),
                               static_cast<int>(optionPointers.size()),
                               optionPointers.data());
  std::string log = programLog(program.get());
  if (result != NVRTC_SUCCESS)
    return nvrtcError(std::string("compilation of ") + request.sourceName + " for " +
                          archName(request.arch),
                      result, log);

  CompileResult out;
  out.log = log;
  size_t size = 0;
  if ((result = nvrtcGetCUBINSize(program.get(), &size)) != NVRTC_SUCCESS)
    return nvrtcError("cubin size query", result);
  out.cubin.resize(size);
  if ((result = nvrtcGetCUBIN(program.get(), out.cubin.data())) != NVRTC_SUCCESS)
    return nvrtcError("cubin retrieval", result);
  if ((result = nvrtcGetPTXSize(program.get(), &size)) != NVRTC_SUCCESS)
    return nvrtcError("PTX size query", result);
  out.ptx.resize(size);
  if ((result = nvrtcGetPTX(program.get(), out.ptx.data())) != NVRTC_SUCCESS)
    return nvrtcError("PTX retrieval", result);
  while (!out.ptx.empty() && out.ptx.back() == '\0')
    out.ptx.pop_back();
  out.resources = parsePtxasReport(log);
  return out;
}

} // namespace lowbit::nvrtc
