#include "core/Arch.h"

namespace lowbit::core {

const std::vector<TargetArch> &targetArchs() {
  static const std::vector<TargetArch> archs = {
      {"sm_80", 80, 163 * 1024},
      {"sm_86", 86, 99 * 1024},
      {"sm_89", 89, 99 * 1024},
      {"sm_90a", 90, 227 * 1024, /*hasWgmma=*/true},
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

} // namespace lowbit::core
