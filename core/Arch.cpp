#include "core/Arch.h"

namespace lowbit::core {

const std::vector<TargetArch> &targetArchs() {
  static const std::vector<TargetArch> archs = {
      {"sm_80", 80, 163 * 1024, false, 164 * 1024, 2048, 32},
      {"sm_86", 86, 99 * 1024, false, 100 * 1024, 1536, 16},
      {"sm_89", 89, 99 * 1024, false, 100 * 1024, 1536, 24},
      {"sm_90a", 90, 227 * 1024, /*hasWgmma=*/true, 228 * 1024, 2048, 32},
  };
  return archs;
}

std::string targetArchList() {
  const std::vector<TargetArch> &archs = targetArchs();
  std::string out;
  for (size_t i = 0; i < archs.size(); ++i)
    out += (i == 0 ? "" : i + 1 == archs.size() ? " or " : ", ") + archs[i].name;
  return out;
}

Expected<TargetArch> findTargetArch(const std::string &name) {
  for (const TargetArch &arch : targetArchs())
    if (arch.name == name)
      return arch;
  return makeError("unknown arch '" + name + "' (expected " + targetArchList() + ")");
}

Expected<TargetArch> targetArchForDevice(int cc) {
  const TargetArch *best = nullptr;
  for (const TargetArch &arch : targetArchs())
    if (arch.computeCapability / 10 == cc / 10 && arch.computeCapability <= cc)
      best = &arch;
  if (!best)
    return makeError("no target arch for compute capability " + std::to_string(cc / 10) + "." +
                     std::to_string(cc % 10) + " (lowbit targets " + targetArchList() + ")");
  return *best;
}

} // namespace lowbit::core
