#include "runtime/kernels/KernelRecordCodec.h"

#include "core/layout/WeightLayout.h"
#include "runtime/kernels/ProblemJson.h"

#include <nlohmann/json.hpp>

namespace lowbit::kernels {

db::KernelRecord kernelRecord(const KernelEntry &entry, const std::vector<char> &cubin,
                              const std::string &ptx, const std::string &sourceHash,
                              const std::string &compilerVersion) {
  db::KernelRecord record;
  record.problemId = db::problemIdForSignature(core::signature(entry.problem));
  record.arch = entry.arch;
  record.family = entry.family;
  record.entry = entry.name;
  nlohmann::json description = {
      {"encoding", 1},
      {"schedule", entry.schedule},
      {"weight_layout", entry.weightLayout},
      {"grid_tile", entry.gridTile},
      {"block_threads", entry.blockThreads}};
  writeProblemJson(entry.problem, "name", description["problem"]);
  record.scheduleJson = description.dump();
  Expected<layout::WeightLayout> layout = layout::parseWeightLayout(entry.weightLayout);
  record.weightLayoutId = layout.ok() ? layout::layoutId(*layout) : std::string();
  record.sourceHash = sourceHash;
  record.compilerVersion = compilerVersion;
  record.cubin.assign(cubin.begin(), cubin.end());
  record.ptx = ptx;
  record.registers = entry.registers;
  record.sharedBytes = entry.sharedBytes;
  record.spillBytes = entry.spillBytes;
  record.launch.blockX = static_cast<int>(entry.blockThreads);
  record.launch.dynamicSharedBytes = entry.dynamicSharedBytes;
  record.launch.gridRule = "n_tile=" + std::to_string(entry.gridTile.at(0)) +
                           ";m_tile=" + std::to_string(entry.gridTile.at(1)) +
                           ";split_k=" + std::to_string(entry.gridTile.at(2));
  return record;
}

Expected<KernelEntry> kernelEntry(const db::KernelRecord &record) {
  nlohmann::json d = nlohmann::json::parse(record.scheduleJson, nullptr, false);
  auto bad = [&](const std::string &what) {
    return makeError("kernel " + record.id.substr(0, 12) + " (" + record.entry + "): " + what);
  };
  if (d.is_discarded() || !d.is_object())
    return bad("schedule_json is not JSON");
  if (d.value("encoding", 0) != 1)
    return bad("unknown kernel encoding " + std::to_string(d.value("encoding", 0)) +
               " (written by a newer lowbit?)");
  KernelEntry e;
  e.name = record.entry;
  e.arch = record.arch;
  e.family = record.family;
  e.schedule = d.value("schedule", "");
  e.weightLayout = d.value("weight_layout", "");
  e.blockThreads = d.value("block_threads", int64_t{0});
  if (d.contains("grid_tile") && d["grid_tile"].is_array())
    for (const nlohmann::json &v : d["grid_tile"])
      if (v.is_number_integer())
        e.gridTile.push_back(v.get<int64_t>());
  if (!d.contains("problem") || !d["problem"].is_object())
    return bad("no problem description");
  Expected<ProblemDesc> problem = readProblemJson(d["problem"], "name");
  if (!problem)
    return bad(problem.error());
  e.problem = std::move(*problem);
  e.registers = record.registers;
  e.sharedBytes = static_cast<int>(record.sharedBytes);
  e.spillBytes = static_cast<int>(record.spillBytes);
  e.dynamicSharedBytes = record.launch.dynamicSharedBytes;
  if (e.name.empty() || e.blockThreads <= 0 || e.gridTile.size() != 3 || e.weightLayout.empty())
    return bad("incomplete launch description");
  if (db::problemIdForSignature(core::signature(e.problem)) != record.problemId)
    return bad("its problem description does not match its problem id");
  return e;
}

} // namespace lowbit::kernels
