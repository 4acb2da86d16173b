// Typed reads and writes of Database rows.
#include "tuning_db/Database.h"

#include "tuning_db/Schema.h"
#include "tuning_db/Sha256.h"

namespace lowbit::db {
namespace {

constexpr const char *kKernelColumns =
    "id, problem_id, arch, family, entry, schedule_json, weight_layout, source_hash, "
    "compiler_version, registers, shared_bytes, spill_bytes, stack_bytes, block_x, block_y, "
    "block_z, grid_rule, dynamic_smem_bytes, created_at";

KernelRecord readKernel(const sql::Statement &s, bool withBlobs) {
  KernelRecord k;
  k.id = s.text(0);
  k.problemId = s.text(1);
  k.arch = s.text(2);
  k.family = s.text(3);
  k.entry = s.text(4);
  k.scheduleJson = s.text(5);
  k.weightLayoutId = s.text(6);
  k.sourceHash = s.text(7);
  k.compilerVersion = s.text(8);
  k.registers = int(s.integer(9));
  k.sharedBytes = s.integer(10);
  k.spillBytes = s.integer(11);
  k.stackBytes = s.integer(12);
  k.launch.blockX = int(s.integer(13));
  k.launch.blockY = int(s.integer(14));
  k.launch.blockZ = int(s.integer(15));
  k.launch.gridRule = s.text(16);
  k.launch.dynamicSharedBytes = s.integer(17);
  k.createdAt = s.text(18);
  if (withBlobs) {
    k.cubin = s.blob(19);
    auto ptx = s.blob(20);
    k.ptx.assign(ptx.begin(), ptx.end());
  }
  return k;
}

constexpr const char *kDeviceColumns =
    "id, name, cc_major, cc_minor, sm_count, l2_bytes, smem_optin_bytes, mem_clock_khz, "
    "mem_bus_width_bits, driver_version, cuda_version, uuid";

DeviceRecord readDevice(const sql::Statement &s) {
  DeviceRecord d;
  d.id = s.text(0);
  DeviceFingerprint &f = d.fingerprint;
  f.name = s.text(1);
  f.ccMajor = int(s.integer(2));
  f.ccMinor = int(s.integer(3));
  f.smCount = int(s.integer(4));
  f.l2Bytes = s.integer(5);
  f.sharedMemPerBlockOptinBytes = s.integer(6);
  f.memoryClockKhz = s.integer(7);
  f.memoryBusWidthBits = int(s.integer(8));
  f.driverVersion = s.text(9);
  f.cudaVersion = int(s.integer(10));
  f.uuid = s.text(11);
  return d;
}

constexpr const char *kResultColumns =
    "kernel_id, device_id, m, median_us, p10_us, p90_us, gbps, tflops, max_rel_error, passed, "
    "run_id, measured_at";

ResultRecord readResult(const sql::Statement &s) {
  ResultRecord r;
  r.kernelId = s.text(0);
  r.deviceId = s.text(1);
  r.m = s.integer(2);
  r.medianUs = s.real(3);
  r.p10Us = s.optionalReal(4);
  r.p90Us = s.optionalReal(5);
  r.gbps = s.optionalReal(6);
  r.tflops = s.optionalReal(7);
  r.maxRelError = s.optionalReal(8);
  r.passed = s.integer(9) != 0;
  r.runId = s.text(10);
  r.measuredAt = s.text(11);
  return r;
}

constexpr const char *kFailureColumns =
    "problem_id, arch, schedule, entry, stage, reason, compiler_version, created_at";

CandidateFailureRecord readFailure(const sql::Statement &s) {
  return CandidateFailureRecord{s.text(0), s.text(1), s.text(2), s.text(3),
                                s.text(4), s.text(5), s.text(6), s.text(7)};
}

// Runs a query and turns every row into a T.
template <typename T, typename Read, typename Bind>
Expected<std::vector<T>> queryAll(sqlite3 *db, const std::string &sqlText, Bind &&bind,
                                  Read &&read) {
  auto s = sql::Statement::prepare(db, sqlText.c_str());
  if (!s)
    return std::move(s).takeError();
  bind(*s);
  std::vector<T> rows;
  while (s->step())
    rows.push_back(read(*s));
  if (Status status = s->status(); !status)
    return makeError(status.error());
  return rows;
}

template <typename T> Expected<std::optional<T>> firstOf(Expected<std::vector<T>> rows) {
  if (!rows)
    return std::move(rows).takeError();
  if (rows->empty())
    return std::optional<T>();
  return std::optional<T>(std::move(rows->front()));
}

Expected<bool> exists(sqlite3 *db, const char *sqlText, const std::string &key) {
  auto s = sql::Statement::prepare(db, sqlText);
  if (!s)
    return std::move(s).takeError();
  s->bind(1, key);
  bool found = s->step();
  if (Status status = s->status(); !status)
    return makeError(status.error());
  return found;
}

} // namespace

Status Database::putDevice(const DeviceFingerprint &f) {
  return transaction([&]() -> Status {
    auto s = sql::Statement::prepare(
        handle(), "INSERT INTO devices(id, canonical_key, name, cc_major, cc_minor, sm_count, "
                  "l2_bytes, smem_optin_bytes, mem_clock_khz, mem_bus_width_bits, "
                  "driver_version, cuda_version, uuid, first_seen) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
                  "ON CONFLICT(id) DO NOTHING");
    if (!s)
      return makeError(s.error());
    s->bind(1, f.id()).bind(2, f.canonicalKey()).bind(3, f.name).bind(4, f.ccMajor);
    s->bind(5, f.ccMinor).bind(6, f.smCount).bind(7, f.l2Bytes);
    s->bind(8, f.sharedMemPerBlockOptinBytes).bind(9, f.memoryClockKhz);
    s->bind(10, f.memoryBusWidthBits).bind(11, f.driverVersion).bind(12, f.cudaVersion);
    s->bind(13, f.uuid).bind(14, nowUtcIso());
    if (Status status = s->run(); !status)
      return makeError("cannot store device `" + f.name + "`: " + status.error());
    return Status::success();
  });
}

Expected<std::string> Database::putProblem(const std::string &signature) {
  if (signature.empty())
    return makeError("cannot store a problem with an empty signature");
  std::string id = problemIdForSignature(signature);
  Status status = transaction([&]() -> Status {
    auto s = sql::Statement::prepare(
        handle(), "INSERT INTO problems(id, signature) VALUES (?1, ?2) "
                  "ON CONFLICT(id) DO NOTHING");
    if (!s)
      return makeError(s.error());
    if (Status r = s->bind(1, id).bind(2, signature).run(); !r)
      return makeError("cannot store problem " + id + ": " + r.error());
    return Status::success();
  });
  if (!status)
    return makeError(status.error());
  return id;
}

Expected<std::string> Database::putKernel(const KernelRecord &k) {
  if (k.cubin.empty())
    return makeError("cannot store kernel `" + k.entry + "`: its cubin is empty");
  std::string id = sha256Hex(k.cubin);
  if (!k.id.empty() && k.id != id)
    return makeError("cannot store kernel `" + k.entry + "`: its id " + k.id +
                     " is not the sha256 of its cubin (" + id + ")");
  if (auto arch = parseArch(k.arch); !arch)
    return makeError("cannot store kernel " + id + ": " + arch.error());
  if (k.family.empty() || k.entry.empty())
    return makeError("cannot store kernel " + id + ": family and entry point must be set");
  if (!k.launch.known())
    return makeError("cannot store kernel " + id + ": its launch configuration (block "
                     "dimensions) is missing; the runtime could not launch it");
  Status status = transaction([&]() -> Status {
    auto problemKnown = exists(handle(), "SELECT 1 FROM problems WHERE id = ?1", k.problemId);
    if (!problemKnown)
      return makeError(problemKnown.error());
    if (!*problemKnown)
      return makeError("cannot store kernel " + id + ": unknown problem `" + k.problemId +
                       "` (store the problem first)");
    auto existing = findKernel(id, false);
    if (!existing)
      return makeError(existing.error());
    if (*existing) {
      const KernelRecord &old = **existing;
      if (old.problemId != k.problemId || old.arch != k.arch || old.entry != k.entry)
        return makeError("cannot store kernel " + id + ": the same cubin is already stored "
                         "for problem " + old.problemId + ", " + old.arch + ", entry `" +
                         old.entry + "`");
      return Status::success();
    }
    auto s = sql::Statement::prepare(
        handle(),
        "INSERT INTO kernels(id, problem_id, arch, family, entry, schedule_json, weight_layout, "
        "source_hash, compiler_version, cubin, ptx, registers, shared_bytes, spill_bytes, "
        "stack_bytes, block_x, block_y, block_z, grid_rule, dynamic_smem_bytes, created_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
        "?18, ?19, ?20, ?21)");
    if (!s)
      return makeError(s.error());
    s->bind(1, id).bind(2, k.problemId).bind(3, k.arch).bind(4, k.family).bind(5, k.entry);
    s->bind(6, k.scheduleJson).bind(7, k.weightLayoutId).bind(8, k.sourceHash);
    s->bind(9, k.compilerVersion).bindBlob(10, k.cubin);
    if (k.ptx.empty())
      s->bindNull(11);
    else
      s->bindBlob(11, std::vector<uint8_t>(k.ptx.begin(), k.ptx.end()));
    s->bind(12, k.registers).bind(13, k.sharedBytes).bind(14, k.spillBytes);
    s->bind(15, k.stackBytes).bind(16, k.launch.blockX).bind(17, k.launch.blockY);
    s->bind(18, k.launch.blockZ).bind(19, k.launch.gridRule);
    s->bind(20, k.launch.dynamicSharedBytes);
    s->bind(21, k.createdAt.empty() ? nowUtcIso() : k.createdAt);
    if (Status r = s->run(); !r)
      return makeError("cannot store kernel " + id + ": " + r.error());
    return Status::success();
  });
  if (!status)
    return makeError(status.error());
  return id;
}

Status Database::addResult(const ResultRecord &result) { return addResults({result}); }

Status Database::addResults(const std::vector<ResultRecord> &results) {
  return transaction([&]() -> Status {
    auto s = sql::Statement::prepare(
        handle(), "INSERT INTO results(kernel_id, device_id, m, median_us, p10_us, p90_us, "
                  "gbps, tflops, max_rel_error, passed, run_id, measured_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    if (!s)
      return makeError(s.error());
    std::string now = nowUtcIso();
    for (const ResultRecord &r : results) {
      std::string which = "result of kernel " + r.kernelId + " at M = " + std::to_string(r.m);
      if (r.m < 1)
        return makeError("cannot store " + which + ": M must be >= 1");
      for (const auto &[table, key] : {std::pair<const char *, const std::string *>{
                                           "SELECT 1 FROM kernels WHERE id = ?1", &r.kernelId},
                                       {"SELECT 1 FROM devices WHERE id = ?1", &r.deviceId}}) {
        auto known = exists(handle(), table, *key);
        if (!known)
          return makeError(known.error());
        if (!*known)
          return makeError("cannot store " + which + ": unknown " +
                           (key == &r.kernelId ? "kernel" : "device") + " `" + *key + "`");
      }
      s->bind(1, r.kernelId).bind(2, r.deviceId).bind(3, r.m).bind(4, r.medianUs);
      s->bind(5, r.p10Us).bind(6, r.p90Us).bind(7, r.gbps).bind(8, r.tflops);
      s->bind(9, r.maxRelError).bind(10, int64_t(r.passed ? 1 : 0)).bind(11, r.runId);
      s->bind(12, r.measuredAt.empty() ? now : r.measuredAt);
      if (Status status = s->run(); !status)
        return makeError("cannot store " + which + ": " + status.error());
    }
    return Status::success();
  });
}

Status Database::putCandidateFailure(const CandidateFailureRecord &f) {
  std::string which = "the failure of " + f.schedule + " for problem " + f.problemId;
  if (auto arch = parseArch(f.arch); !arch)
    return makeError("cannot store " + which + ": " + arch.error());
  if (f.stage != "compile" && f.stage != "spill")
    return makeError("cannot store " + which + ": stage `" + f.stage +
                     "` is neither compile nor spill");
  if (f.schedule.empty() || f.reason.empty())
    return makeError("cannot store " + which + ": schedule and reason must be set");
  return transaction([&]() -> Status {
    auto problemKnown = exists(handle(), "SELECT 1 FROM problems WHERE id = ?1", f.problemId);
    if (!problemKnown)
      return makeError(problemKnown.error());
    if (!*problemKnown)
      return makeError("cannot store " + which + ": unknown problem (store it first)");
    auto s = sql::Statement::prepare(
        handle(), "INSERT INTO candidate_failures(problem_id, arch, schedule, entry, stage, "
                  "reason, compiler_version, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                  "ON CONFLICT(problem_id, arch, schedule) DO UPDATE SET entry = excluded.entry, "
                  "stage = excluded.stage, reason = excluded.reason, "
                  "compiler_version = excluded.compiler_version, created_at = excluded.created_at");
    if (!s)
      return makeError(s.error());
    s->bind(1, f.problemId).bind(2, f.arch).bind(3, f.schedule).bind(4, f.entry);
    s->bind(5, f.stage).bind(6, f.reason).bind(7, f.compilerVersion);
    s->bind(8, f.createdAt.empty() ? nowUtcIso() : f.createdAt);
    if (Status r = s->run(); !r)
      return makeError("cannot store " + which + ": " + r.error());
    return Status::success();
  });
}

Status Database::clearCandidateFailure(const std::string &problemId, const std::string &arch,
                                       const std::string &schedule) {
  return transaction([&]() -> Status {
    auto s = sql::Statement::prepare(
        handle(), "DELETE FROM candidate_failures WHERE problem_id = ?1 AND arch = ?2 AND "
                  "schedule = ?3");
    if (!s)
      return makeError(s.error());
    if (Status r = s->bind(1, problemId).bind(2, arch).bind(3, schedule).run(); !r)
      return makeError("cannot clear the failure of " + schedule + " for problem " + problemId +
                       ": " + r.error());
    return Status::success();
  });
}

Status Database::setDispatch(const std::string &problemId, const std::string &deviceId,
                             const std::vector<DispatchRange> &ranges) {
  std::string which = "dispatch of problem " + problemId + " on device " + deviceId;
  if (Status s = validateRanges(ranges); !s)
    return makeError("cannot store " + which + ": " + s.error());
  return transaction([&]() -> Status {
    auto problemKnown = exists(handle(), "SELECT 1 FROM problems WHERE id = ?1", problemId);
    if (!problemKnown)
      return makeError(problemKnown.error());
    if (!*problemKnown)
      return makeError("cannot store " + which + ": unknown problem");
    auto deviceKnown = exists(handle(), "SELECT 1 FROM devices WHERE id = ?1", deviceId);
    if (!deviceKnown)
      return makeError(deviceKnown.error());
    if (!*deviceKnown)
      return makeError("cannot store " + which + ": unknown device (store it first)");
    for (const DispatchRange &r : ranges) {
      auto kernel = findKernel(r.kernelId, false);
      if (!kernel)
        return makeError(kernel.error());
      if (!*kernel)
        return makeError("cannot store " + which + ": range " + formatRange(r.mLo, r.mHi) +
                         " names unknown kernel " + r.kernelId);
      if ((*kernel)->problemId != problemId)
        return makeError("cannot store " + which + ": range " + formatRange(r.mLo, r.mHi) +
                         " names kernel " + r.kernelId + ", which belongs to problem " +
                         (*kernel)->problemId);
    }
    auto clear = sql::Statement::prepare(
        handle(), "DELETE FROM dispatch WHERE problem_id = ?1 AND device_id = ?2");
    if (!clear)
      return makeError(clear.error());
    if (Status s = clear->bind(1, problemId).bind(2, deviceId).run(); !s)
      return makeError("cannot store " + which + ": " + s.error());
    auto insert = sql::Statement::prepare(
        handle(), "INSERT INTO dispatch(problem_id, device_id, m_lo, m_hi, kernel_id) "
                  "VALUES (?1, ?2, ?3, ?4, ?5)");
    if (!insert)
      return makeError(insert.error());
    for (const DispatchRange &r : ranges) {
      insert->bind(1, problemId).bind(2, deviceId).bind(3, r.mLo).bind(4, r.mHi);
      insert->bind(5, r.kernelId);
      if (Status s = insert->run(); !s)
        return makeError("cannot store " + which + ": " + s.error());
    }
    return Status::success();
  });
}

Expected<std::vector<ProblemRecord>> Database::problems() const {
  return queryAll<ProblemRecord>(
      handle(), "SELECT id, signature FROM problems ORDER BY signature", [](sql::Statement &) {},
      [](const sql::Statement &s) { return ProblemRecord{s.text(0), s.text(1)}; });
}

Expected<std::optional<ProblemRecord>> Database::findProblem(const std::string &problemId) const {
  return firstOf(queryAll<ProblemRecord>(
      handle(), "SELECT id, signature FROM problems WHERE id = ?1",
      [&](sql::Statement &s) { s.bind(1, problemId); },
      [](const sql::Statement &s) { return ProblemRecord{s.text(0), s.text(1)}; }));
}

Expected<std::vector<KernelRecord>> Database::kernelsForProblem(const std::string &problemId,
                                                                bool withBlobs) const {
  std::string text = std::string("SELECT ") + kKernelColumns +
                     (withBlobs ? ", cubin, ptx" : "") +
                     " FROM kernels WHERE problem_id = ?1 ORDER BY arch, family, id";
  return queryAll<KernelRecord>(
      handle(), text, [&](sql::Statement &s) { s.bind(1, problemId); },
      [&](const sql::Statement &s) { return readKernel(s, withBlobs); });
}

Expected<std::optional<KernelRecord>> Database::findKernel(const std::string &kernelId,
                                                           bool withBlobs) const {
  std::string text = std::string("SELECT ") + kKernelColumns +
                     (withBlobs ? ", cubin, ptx" : "") + " FROM kernels WHERE id = ?1";
  return firstOf(queryAll<KernelRecord>(
      handle(), text, [&](sql::Statement &s) { s.bind(1, kernelId); },
      [&](const sql::Statement &s) { return readKernel(s, withBlobs); }));
}

Expected<std::vector<DeviceRecord>> Database::devices() const {
  return queryAll<DeviceRecord>(
      handle(), std::string("SELECT ") + kDeviceColumns + " FROM devices ORDER BY name, id",
      [](sql::Statement &) {}, readDevice);
}

Expected<std::optional<DeviceRecord>> Database::findDevice(const std::string &deviceId) const {
  return firstOf(queryAll<DeviceRecord>(
      handle(), std::string("SELECT ") + kDeviceColumns + " FROM devices WHERE id = ?1",
      [&](sql::Statement &s) { s.bind(1, deviceId); }, readDevice));
}

Expected<std::vector<DeviceRecord>>
Database::devicesWithDispatch(const std::string &problemId) const {
  return queryAll<DeviceRecord>(
      handle(),
      std::string("SELECT ") + kDeviceColumns +
          " FROM devices WHERE id IN (SELECT device_id FROM dispatch WHERE problem_id = ?1) "
          "ORDER BY id",
      [&](sql::Statement &s) { s.bind(1, problemId); }, readDevice);
}

Expected<std::vector<DispatchRange>> Database::dispatchRanges(const std::string &problemId,
                                                              const std::string &deviceId) const {
  return queryAll<DispatchRange>(
      handle(),
      "SELECT m_lo, m_hi, kernel_id FROM dispatch WHERE problem_id = ?1 AND device_id = ?2 "
      "ORDER BY m_lo",
      [&](sql::Statement &s) { s.bind(1, problemId).bind(2, deviceId); },
      [](const sql::Statement &s) {
        return DispatchRange{s.integer(0), s.optionalInteger(1), s.text(2)};
      });
}

Expected<std::vector<ResultRecord>> Database::results(const std::string &kernelId,
                                                      const std::string &deviceId) const {
  return queryAll<ResultRecord>(
      handle(),
      std::string("SELECT ") + kResultColumns +
          " FROM results WHERE kernel_id = ?1 AND (?2 = '' OR device_id = ?2) "
          "ORDER BY device_id, m, passed DESC, median_us",
      [&](sql::Statement &s) { s.bind(1, kernelId).bind(2, deviceId); }, readResult);
}

Expected<std::vector<CandidateFailureRecord>>
Database::candidateFailures(const std::string &problemId, const std::string &arch) const {
  return queryAll<CandidateFailureRecord>(
      handle(),
      std::string("SELECT ") + kFailureColumns +
          " FROM candidate_failures WHERE problem_id = ?1 AND (?2 = '' OR arch = ?2) "
          "ORDER BY arch, schedule",
      [&](sql::Statement &s) { s.bind(1, problemId).bind(2, arch); }, readFailure);
}

Expected<Database::IdMatches> Database::matchIdPrefix(const std::string &prefix) const {
  IdMatches matches;
  // substr() instead of LIKE so '%' or '_' in the prefix are not wildcards.
  struct Table {
    const char *sqlText;
    std::vector<std::string> *into;
  };
  Table tables[] = {
      {"SELECT id FROM kernels WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id",
       &matches.kernels},
      {"SELECT id FROM problems WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id",
       &matches.problems},
      {"SELECT id FROM devices WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id",
       &matches.devices},
  };
  for (Table &table : tables) {
    auto ids = queryAll<std::string>(
        handle(), table.sqlText, [&](sql::Statement &s) { s.bind(1, prefix); },
        [](const sql::Statement &s) { return s.text(0); });
    if (!ids)
      return std::move(ids).takeError();
    *table.into = std::move(*ids);
  }
  return matches;
}

} // namespace lowbit::db
