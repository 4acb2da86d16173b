// ptxas -v prints, per entry function:
//   ptxas info    : Compiling entry function 'NAME' for 'sm_80'
//   ptxas info    : Function properties for NAME
//       16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
//   ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 388 bytes cmem[0]
// Device functions that were not inlined get their own "Function properties"
// block without a "Used" line; they are folded into no kernel here.
#include "codegen/nvrtc/NvrtcCompiler.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace lowbit::nvrtc {
namespace {

// The integer immediately before `unit` in `line`, or -1.
int numberBefore(const std::string &line, const std::string &unit) {
  size_t at = line.find(unit);
  if (at == std::string::npos)
    return -1;
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ')
    --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1])))
    --begin;
  if (begin == end)
    return -1;
  return std::atoi(line.substr(begin, end - begin).c_str());
}

std::string quotedName(const std::string &line, const std::string &marker) {
  size_t at = line.find(marker);
  if (at == std::string::npos)
    return {};
  size_t begin = line.find('\'', at);
  size_t end = begin == std::string::npos ? begin : line.find('\'', begin + 1);
  if (end == std::string::npos)
    return {};
  return line.substr(begin + 1, end - begin - 1);
}

} // namespace

std::vector<KernelResources> parsePtxasReport(const std::string &log) {
  std::vector<KernelResources> kernels;
  KernelResources *current = nullptr;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    std::string entry = quotedName(line, "Compiling entry function");
    if (!entry.empty()) {
      kernels.push_back(KernelResources{});
      kernels.back().kernelName = entry;
      current = &kernels.back();
      continue;
    }
    if (!current)
      continue;
    if (line.find("Function properties for") != std::string::npos) {
      // Only the entry's own properties block belongs to it.
      std::string name = line.substr(line.find("for") + 4);
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r'))
        name.pop_back();
      if (name != current->kernelName)
        current = nullptr;
      continue;
    }
    if (int v = numberBefore(line, "bytes stack frame"); v >= 0)
      current->stackFrameBytes = v;
    if (int v = numberBefore(line, "bytes spill stores"); v >= 0)
      current->spillStoreBytes = v;
    if (int v = numberBefore(line, "bytes spill loads"); v >= 0)
      current->spillLoadBytes = v;
    if (int v = numberBefore(line, "registers"); v >= 0)
      current->registers = v;
    if (int v = numberBefore(line, "bytes smem"); v >= 0)
      current->sharedBytes = v;
    if (int v = numberBefore(line, "bytes cmem[0]"); v >= 0)
      current->constantBytes = v;
  }
  return kernels;
}

} // namespace lowbit::nvrtc
