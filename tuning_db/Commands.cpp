// `lowbit db ls | show | explain`: read-only reports.
#include "tuning_db/Commands.h"

#include "tuning_db/Lookup.h"
#include "tuning_db/Schema.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace lowbit::db {
namespace {

std::string shortId(const std::string &id) { return id.substr(0, 12); }

std::string describeDevice(const DeviceFingerprint &f) {
  std::ostringstream out;
  out << f.name << ", cc " << f.ccMajor << "." << f.ccMinor << ", " << f.smCount << " SMs";
  return out.str();
}

std::string describeDatabase(const Database &db) {
  std::ostringstream out;
  out << "database " << db.path() << " (schema v" << db.fileSchemaVersion() << ", "
      << (db.readOnly() ? "read-only" : "read-write") << ")";
  return out.str();
}

std::string kernelLine(const KernelRecord &k) {
  std::ostringstream out;
  out << shortId(k.id) << "  " << k.arch << "  " << k.family << "  " << k.entry
      << "  regs=" << k.registers << " smem=" << k.sharedBytes << "+"
      << k.launch.dynamicSharedBytes << " spill=" << k.spillBytes;
  return out.str();
}

// The kernel's row from whichever database has it, for labelling ranges.
std::optional<KernelRecord> anyKernel(const std::vector<const Database *> &databases,
                                      const std::string &id) {
  for (const Database *db : databases)
    if (auto k = db->findKernel(id, false); k && *k)
      return **k;
  return std::nullopt;
}

std::string rangeLine(const std::vector<const Database *> &databases, int64_t lo,
                      std::optional<int64_t> hi, const std::string &kernelId) {
  std::ostringstream out;
  std::string range = formatRange(lo, hi);
  out << range << std::string(range.size() < 14 ? 14 - range.size() : 1, ' ') << "-> "
      << shortId(kernelId);
  if (auto k = anyKernel(databases, kernelId))
    out << " (" << k->family << ", " << k->arch << ")";
  else
    out << " (missing kernel)";
  return out.str();
}

} // namespace

Expected<std::string> listText(const std::vector<const Database *> &databases) {
  std::ostringstream out;
  for (const Database *db : databases) {
    out << describeDatabase(*db) << "\n";
    auto problems = db->problems();
    if (!problems)
      return std::move(problems).takeError();
    auto devices = db->devices();
    if (!devices)
      return std::move(devices).takeError();
    if (problems->empty())
      out << "  (no problems)\n";
    for (const ProblemRecord &p : *problems) {
      out << "  problem " << shortId(p.id) << "  " << p.signature << "\n";
      auto kernels = db->kernelsForProblem(p.id);
      if (!kernels)
        return std::move(kernels).takeError();
      out << "    kernels: " << kernels->size() << "\n";
      for (const KernelRecord &k : *kernels)
        out << "      " << kernelLine(k) << "\n";
      auto tuned = db->devicesWithDispatch(p.id);
      if (!tuned)
        return std::move(tuned).takeError();
      for (const DeviceRecord &d : *tuned) {
        out << "    dispatch on " << describeDevice(d.fingerprint) << " (" << shortId(d.id)
            << "):\n";
        auto ranges = db->dispatchRanges(p.id, d.id);
        if (!ranges)
          return std::move(ranges).takeError();
        for (const DispatchRange &r : *ranges)
          out << "      " << rangeLine(databases, r.mLo, r.mHi, r.kernelId) << "\n";
        if (Status s = validateRanges(*ranges); !s)
          out << "      warning: " << s.error() << "\n";
      }
    }
    out << "  devices: " << devices->size() << "\n";
    for (const DeviceRecord &d : *devices)
      out << "    " << shortId(d.id) << "  " << describeDevice(d.fingerprint) << "\n";
  }
  return out.str();
}

namespace {

Expected<std::string> showKernel(const std::vector<const Database *> &databases,
                                 const Database &db, const std::string &id) {
  auto found = db.findKernel(id, true);
  if (!found)
    return std::move(found).takeError();
  const KernelRecord &k = **found;
  std::ostringstream out;
  out << "kernel " << k.id << "\n"
      << "  database:         " << db.path() << "\n"
      << "  problem:          " << k.problemId << "\n"
      << "  arch:             " << k.arch << "\n"
      << "  family:           " << k.family << "\n"
      << "  entry:            " << k.entry << "\n"
      << "  weight layout:    " << k.weightLayoutId << "\n"
      << "  source hash:      " << k.sourceHash << "\n"
      << "  compiler version: " << k.compilerVersion << "\n"
      << "  cubin:            " << k.cubin.size() << " bytes\n"
      << "  ptx:              " << (k.ptx.empty() ? std::string("not kept")
                                                  : std::to_string(k.ptx.size()) + " bytes")
      << "\n"
      << "  ptxas:            " << k.registers << " registers, " << k.sharedBytes
      << " B shared, " << k.spillBytes << " B spilled, " << k.stackBytes << " B stack\n";
  if (k.launch.known())
    out << "  launch:           block (" << k.launch.blockX << ", " << k.launch.blockY << ", "
        << k.launch.blockZ << "), grid `" << k.launch.gridRule << "`, "
        << k.launch.dynamicSharedBytes << " B dynamic shared\n";
  else
    out << "  launch:           unknown (kernel written by schema v1; cannot be launched)\n";
  out << "  created:          " << k.createdAt << "\n";
  auto schedule = nlohmann::json::parse(k.scheduleJson, nullptr, false);
  if (schedule.is_discarded())
    out << "  schedule (not valid JSON): " << k.scheduleJson << "\n";
  else
    out << "  schedule:         "
        << schedule.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";

  for (const Database *other : databases) {
    auto results = other->results(k.id);
    if (!results)
      return std::move(results).takeError();
    if (results->empty())
      continue;
    out << "  results in " << other->path() << " (best per device and M):\n";
    std::string lastKey;
    for (const ResultRecord &r : *results) {
      std::string key = r.deviceId + "/" + std::to_string(r.m);
      if (key == lastKey)
        continue; // sorted best first within a key
      lastKey = key;
      out << "    device " << shortId(r.deviceId) << "  M=" << r.m << "  median " << r.medianUs
          << " us";
      if (r.p10Us && r.p90Us)
        out << " [p10 " << *r.p10Us << ", p90 " << *r.p90Us << "]";
      if (r.gbps)
        out << "  " << *r.gbps << " GB/s";
      if (r.tflops)
        out << "  " << *r.tflops << " TFLOP/s";
      if (r.maxRelError)
        out << "  max rel err " << *r.maxRelError;
      out << "  " << (r.passed ? "PASS" : "FAIL") << "  run " << r.runId << " at "
          << r.measuredAt << "\n";
    }
  }
  return out.str();
}

Expected<std::string> showProblem(const std::vector<const Database *> &databases,
                                  const Database &db, const std::string &id) {
  auto found = db.findProblem(id);
  if (!found)
    return std::move(found).takeError();
  std::ostringstream out;
  out << "problem " << id << "\n  signature: " << (*found)->signature << "\n";
  for (const Database *other : databases) {
    auto kernels = other->kernelsForProblem(id);
    if (!kernels)
      return std::move(kernels).takeError();
    auto tuned = other->devicesWithDispatch(id);
    if (!tuned)
      return std::move(tuned).takeError();
    if (kernels->empty() && tuned->empty())
      continue;
    out << "  in " << other->path() << ":\n    kernels: " << kernels->size() << "\n";
    for (const KernelRecord &k : *kernels)
      out << "      " << kernelLine(k) << "\n";
    for (const DeviceRecord &d : *tuned) {
      out << "    dispatch on " << describeDevice(d.fingerprint) << " (" << shortId(d.id)
          << "):\n";
      auto ranges = other->dispatchRanges(id, d.id);
      if (!ranges)
        return std::move(ranges).takeError();
      for (const DispatchRange &r : *ranges)
        out << "      " << rangeLine(databases, r.mLo, r.mHi, r.kernelId) << "\n";
    }
  }
  return out.str();
}

std::string showDevice(const DeviceRecord &d, const Database &db) {
  const DeviceFingerprint &f = d.fingerprint;
  std::ostringstream out;
  out << "device " << d.id << "\n"
      << "  database:             " << db.path() << "\n"
      << "  name:                 " << f.name << "\n"
      << "  compute capability:   " << f.ccMajor << "." << f.ccMinor << "\n"
      << "  SMs:                  " << f.smCount << "\n"
      << "  L2:                   " << f.l2Bytes << " B\n"
      << "  shared/block (optin): " << f.sharedMemPerBlockOptinBytes << " B\n"
      << "  memory clock:         " << f.memoryClockKhz << " kHz\n"
      << "  memory bus:           " << f.memoryBusWidthBits << " bits\n"
      << "  driver:               " << f.driverVersion << "\n"
      << "  CUDA (driver API):    " << f.cudaVersion << "\n"
      << "  UUID:                 " << f.uuid << "\n";
  if (d.id != f.id())
    out << "  warning: the stored id is not the hash of this fingerprint (" << f.id() << ")\n";
  return out.str();
}

} // namespace

Expected<std::string> showText(const std::vector<const Database *> &databases,
                               const std::string &idOrPrefix) {
  std::string prefix = idOrPrefix;
  std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (prefix.size() < 4)
    return makeError("`" + idOrPrefix + "` is too short: give at least 4 hex digits of an id");
  struct Hit {
    const Database *db;
    std::string kind, id;
  };
  std::vector<Hit> hits;
  for (const Database *db : databases) {
    auto matches = db->matchIdPrefix(prefix);
    if (!matches)
      return std::move(matches).takeError();
    for (auto &id : matches->kernels)
      hits.push_back({db, "kernel", id});
    for (auto &id : matches->problems)
      hits.push_back({db, "problem", id});
    for (auto &id : matches->devices)
      hits.push_back({db, "device", id});
  }
  if (hits.empty())
    return makeError("no kernel, problem or device id starts with `" + idOrPrefix + "`");
  // The same row in several databases is one answer; the first database wins.
  std::vector<Hit> distinct;
  for (const Hit &hit : hits)
    if (std::none_of(distinct.begin(), distinct.end(),
                     [&](const Hit &d) { return d.kind == hit.kind && d.id == hit.id; }))
      distinct.push_back(hit);
  if (distinct.size() > 1) {
    std::string message = "`" + idOrPrefix + "` is ambiguous; it matches:";
    for (const Hit &hit : distinct)
      message += "\n  " + hit.kind + " " + hit.id;
    return makeError(message);
  }
  const Hit &hit = distinct.front();
  if (hit.kind == "kernel")
    return showKernel(databases, *hit.db, hit.id);
  if (hit.kind == "problem")
    return showProblem(databases, *hit.db, hit.id);
  auto device = hit.db->findDevice(hit.id);
  if (!device)
    return std::move(device).takeError();
  return showDevice(**device, *hit.db);
}

Expected<std::string> explainText(const std::vector<const Database *> &databases,
                                  const std::string &problemIdOrPrefix,
                                  const DeviceFingerprint &device, int64_t m) {
  if (m <= 0)
    return makeError("invalid M = " + std::to_string(m) + ": M must be >= 1");
  std::string problemId = problemIdOrPrefix;
  if (problemId.size() < 64 && problemId.size() >= 4) {
    std::vector<std::string> ids;
    for (const Database *db : databases) {
      auto matches = db->matchIdPrefix(problemId);
      if (!matches)
        return std::move(matches).takeError();
      for (auto &id : matches->problems)
        if (std::find(ids.begin(), ids.end(), id) == ids.end())
          ids.push_back(id);
    }
    if (ids.size() > 1)
      return makeError("problem prefix `" + problemIdOrPrefix + "` is ambiguous (" +
                       std::to_string(ids.size()) + " problems match)");
    if (ids.size() == 1)
      problemId = ids.front();
  }
  auto resolution = resolve(databases, problemId, device);
  if (!resolution)
    return std::move(resolution).takeError();
  auto choice = resolution->at(m);
  if (!choice)
    return std::move(choice).takeError();

  std::ostringstream out;
  std::string signature;
  for (const Database *db : databases)
    if (auto p = db->findProblem(problemId); p && *p) {
      signature = (*p)->signature;
      break;
    }
  out << "problem: " << problemId << "\n  " << signature << "\n"
      << "device:  " << describeDevice(device) << " (fingerprint " << shortId(device.id())
      << ")\n"
      << "M = " << m << " -> kernel " << choice->kernelId << "\n";
  if (auto k = anyKernel(databases, choice->kernelId))
    out << "  " << k->family << ", " << k->arch << ", entry " << k->entry << "\n";
  out << "  range: " << formatRange(choice->mLo, choice->mHi) << "\n"
      << "  tier:  " << tierName(choice->tier);
  if (choice->tier != Tier::Heuristic)
    out << " (tuned on " << choice->deviceName << ", " << shortId(choice->deviceId) << ")";
  out << "\n  from:  " << choice->databasePath << "\n";
  out << "all ranges for this device:\n";
  for (const Choice &c : resolution->ranges)
    out << "  " << rangeLine(databases, c.mLo, c.mHi, c.kernelId) << "\n";
  for (const std::string &note : resolution->notes)
    out << "note: " << note << "\n";
  return out.str();
}

} // namespace lowbit::db
