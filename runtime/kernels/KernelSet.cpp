#include "runtime/kernels/KernelSet.h"

#include "core/ScheduleRules.h"
#include "runtime/kernels/ProblemJson.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace lowbit::kernels {

Expected<std::vector<KernelEntry>> readKernelSet(const std::string &directory) {
  std::string manifestPath = directory + "/kernels.json";
  std::ifstream file(manifestPath);
  if (!file)
    return makeError("no kernel set at " + directory + " (cannot open kernels.json)");
  nlohmann::json manifest = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.contains("kernels") ||
      !manifest["kernels"].is_array())
    return makeError(manifestPath + " is not a kernel-set manifest");
  std::vector<KernelEntry> entries;
  for (const nlohmann::json &k : manifest["kernels"]) {
    auto text = [&](const char *key) {
      return k.contains(key) && k[key].is_string() ? k[key].get<std::string>() : std::string();
    };
    auto number = [&](const char *key) {
      return k.contains(key) && k[key].is_number_integer() ? k[key].get<int64_t>() : int64_t{0};
    };
    KernelEntry e;
    e.name = text("name");
    // The problem's fields sit at the top of each kernel's object, its name
    // under "problem".
    Expected<ProblemDesc> problem = readProblemJson(k, "problem");
    if (!problem)
      return makeError(manifestPath + ": kernel entry '" + e.name + "': " + problem.error());
    e.problem = std::move(*problem);
    e.arch = text("arch");
    e.family = text("family");
    e.schedule = text("schedule");
    e.weightLayout = text("weight_layout");
    e.blockThreads = number("block_threads");
    if (k.contains("grid_tile") && k["grid_tile"].is_array())
      for (const nlohmann::json &v : k["grid_tile"])
        if (v.is_number_integer())
          e.gridTile.push_back(v.get<int64_t>());
    e.registers = static_cast<int>(number("registers"));
    e.sharedBytes = static_cast<int>(number("shared_bytes"));
    e.spillBytes = static_cast<int>(number("spill_bytes"));
    e.dynamicSharedBytes = number("dynamic_shared_bytes"); // absent before dynamic smem: 0
    e.cubinPath = directory + "/" + text("cubin");
    if (e.name.empty() || e.blockThreads <= 0 || e.gridTile.size() != 3 ||
        e.weightLayout.empty())
      return makeError(manifestPath + ": kernel entry '" + e.name + "' is incomplete");
    entries.push_back(std::move(e));
  }
  return entries;
}

Expected<std::vector<char>> readCubin(const KernelEntry &entry) {
  std::ifstream file(entry.cubinPath, std::ios::binary);
  if (!file)
    return makeError("missing cubin " + entry.cubinPath);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bytes.size() < 4 || bytes[1] != 'E' || bytes[2] != 'L' || bytes[3] != 'F')
    return makeError("corrupt cubin " + entry.cubinPath + " (not an ELF image)");
  return bytes;
}

Expected<LaunchShape> launchShape(const KernelEntry &entry, int64_t m, int64_t persistentBlocks) {
  if (m < 1)
    return makeError("M must be at least 1, got " + std::to_string(m));
  const std::vector<int64_t> &tile = entry.gridTile;
  if (tile.size() != 3 || tile[0] <= 0 || tile[1] <= 0 || tile[2] <= 0)
    return makeError("kernel " + entry.name + " has no valid grid tile");
  if (entry.problem.n % tile[0] != 0)
    return makeError("N = " + std::to_string(entry.problem.n) + " is not a multiple of " +
                     std::to_string(tile[0]));
  // Far above any GPU's shared memory (227 KiB): a corrupt entry, caught
  // here rather than as a launch failure (or a wrapped unsigned).
  if (entry.dynamicSharedBytes < 0 || entry.dynamicSharedBytes > kMaxPlausibleDynamicSharedBytes)
    return makeError("kernel " + entry.name + " asks for " +
                     std::to_string(entry.dynamicSharedBytes) +
                     " bytes of dynamic shared memory, which is not plausible");
  if (persistentBlocks < 0)
    return makeError("a negative block count for a persistent launch: " +
                     std::to_string(persistentBlocks));
  int64_t blocksM = (m + tile[1] - 1) / tile[1];
  Expected<core::Schedule> schedule = core::parseSchedule(entry.schedule);
  if (!schedule)
    return makeError("kernel " + entry.name + ": " + schedule.error());
  LaunchShape shape;
  shape.schedule = *schedule;
  shape.block = static_cast<unsigned>(entry.blockThreads);
  shape.dynamicSharedBytes = static_cast<unsigned>(entry.dynamicSharedBytes);
  if (schedule->walksTiles()) {
    // core::checkWgmma keeps persistent schedules out of clusters.
    if (tile[2] != 1)
      return makeError("kernel " + entry.name + " walks tiles but splits K over " +
                       std::to_string(tile[2]) + " blocks (corrupt)");
    // The kernel reads its tile index as 32 bits (lb.warp_uniform).
    const int64_t tiles = blocksM * (entry.problem.n / tile[0]);
    if (tiles > 0x7fffffff)
      return makeError("M = " + std::to_string(m) + " gives " + std::to_string(tiles) +
                       " tiles; a persistent kernel walks at most 2^31 - 1");
    // Stream-K splits tiles along K, so it fills the SMs even with fewer
    // tiles than SMs, down to a K tile a block; the kernel counts on no run
    // being empty (blocks <= tiles x K tiles).
    const int64_t units =
        schedule->streamK() ? tiles * (entry.problem.k / core::kWgmmaTileK) : tiles;
    shape.grid[0] =
        static_cast<unsigned>(persistentBlocks > 0 ? std::min(persistentBlocks, units) : tiles);
    shape.flagOffset = core::streamKPartialBytes(*schedule, shape.grid[0]);
    shape.flagBytes = core::streamKFlagBytes(*schedule, shape.grid[0]);
    shape.workspaceBytes = shape.flagOffset + shape.flagBytes;
    return shape;
  }
  if (blocksM > 65535)
    return makeError("M = " + std::to_string(m) + " needs " + std::to_string(blocksM) +
                     " row blocks; the grid allows 65535 (use a kernel with a taller tile)");
  shape.grid[0] = static_cast<unsigned>(entry.problem.n / tile[0]);
  shape.grid[1] = static_cast<unsigned>(blocksM);
  shape.grid[2] = static_cast<unsigned>(tile[2]);
  return shape;
}

} // namespace lowbit::kernels
