// `lowbit db merge | export | doctor`.
#include "tuning_db/Commands.h"

#include "tuning_db/FileCheck.h"
#include "tuning_db/Schema.h"
#include "tuning_db/Sha256.h"

#include <filesystem>
#include <map>
#include <sstream>

namespace lowbit::db {
namespace {

std::string shortId(const std::string &id) { return id.substr(0, 12); }

bool sameRanges(const std::vector<DispatchRange> &a, const std::vector<DispatchRange> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].mLo != b[i].mLo || a[i].mHi != b[i].mHi || a[i].kernelId != b[i].kernelId)
      return false;
  return true;
}

// The destination's best result for one key, if any.
Expected<std::optional<ResultRecord>> bestResult(const Database &db, const ResultRecord &key) {
  auto results = db.results(key.kernelId, key.deviceId);
  if (!results)
    return std::move(results).takeError();
  std::optional<ResultRecord> best;
  for (const ResultRecord &r : *results)
    if (r.m == key.m && (!best || betterResult(r, *best)))
      best = r;
  return best;
}

Status mergeRows(Database &dst, const Database &src, MergeReport &report) {
  auto conflict = [&](const std::string &what) { report.conflicts.push_back(what); };

  auto problems = src.problems();
  if (!problems)
    return makeError(problems.error());
  std::map<std::string, bool> problemMerged;
  for (const ProblemRecord &p : *problems) {
    if (p.id != problemIdForSignature(p.signature)) {
      conflict("problem " + p.id + " skipped with its kernels and tables: its id is not the "
               "sha256 of its signature");
      continue;
    }
    auto had = dst.findProblem(p.id);
    if (!had)
      return makeError(had.error());
    if (auto id = dst.putProblem(p.signature); !id)
      return makeError(id.error());
    report.problemsAdded += had->has_value() ? 0 : 1;
    problemMerged[p.id] = true;
  }

  auto devices = src.devices();
  if (!devices)
    return makeError(devices.error());
  std::map<std::string, bool> deviceMerged;
  for (const DeviceRecord &d : *devices) {
    if (d.id != d.fingerprint.id()) {
      conflict("device " + d.id + " (" + d.fingerprint.name + ") skipped with its results "
               "and tables: its id is not the hash of its fingerprint");
      continue;
    }
    auto had = dst.findDevice(d.id);
    if (!had)
      return makeError(had.error());
    if (Status s = dst.putDevice(d.fingerprint); !s)
      return s;
    report.devicesAdded += had->has_value() ? 0 : 1;
    deviceMerged[d.id] = true;
  }

  for (const ProblemRecord &p : *problems) {
    if (!problemMerged.count(p.id))
      continue;
    // One problem's blobs at a time keeps memory bounded.
    auto kernels = src.kernelsForProblem(p.id, true);
    if (!kernels)
      return makeError(kernels.error());
    for (const KernelRecord &k : *kernels) {
      auto had = dst.findKernel(k.id, false);
      if (!had)
        return makeError(had.error());
      if (*had) {
        const KernelRecord &old = **had;
        if (old.problemId != k.problemId || old.arch != k.arch || old.entry != k.entry ||
            old.family != k.family || old.scheduleJson != k.scheduleJson ||
            old.weightLayoutId != k.weightLayoutId)
          conflict("kernel " + k.id + ": metadata differs from the destination's copy; kept "
                   "the destination's");
      } else {
        auto stored = dst.putKernel(k);
        if (!stored) {
          conflict("kernel " + k.id + " skipped: " + stored.error());
          continue;
        }
        ++report.kernelsAdded;
      }

      auto results = src.results(k.id);
      if (!results)
        return makeError(results.error());
      std::map<std::pair<std::string, int64_t>, ResultRecord> bestInSource;
      for (const ResultRecord &r : *results) {
        auto key = std::make_pair(r.deviceId, r.m);
        auto it = bestInSource.find(key);
        if (it == bestInSource.end() || betterResult(r, it->second))
          bestInSource[key] = r;
      }
      for (const auto &[key, r] : bestInSource) {
        if (!deviceMerged.count(r.deviceId)) {
          conflict("result of kernel " + shortId(k.id) + " on device " + shortId(r.deviceId) +
                   " at M = " + std::to_string(r.m) + " skipped: its device was not merged");
          continue;
        }
        auto best = bestResult(dst, r);
        if (!best)
          return makeError(best.error());
        if (*best && !betterResult(r, **best)) {
          ++report.resultsKept;
          continue;
        }
        if (Status s = dst.addResult(r); !s)
          return s;
        ++report.resultsAdded;
      }
    }

    auto failures = src.candidateFailures(p.id);
    if (!failures)
      return makeError(failures.error());
    for (const CandidateFailureRecord &f : *failures) {
      if (Status s = dst.putCandidateFailure(f); !s)
        return s;
      ++report.candidateFailuresAdded;
    }

    auto tuned = src.devicesWithDispatch(p.id);
    if (!tuned)
      return makeError(tuned.error());
    for (const DeviceRecord &d : *tuned) {
      std::string which = "dispatch of problem " + shortId(p.id) + " on device " +
                          d.fingerprint.name + " (" + shortId(d.id) + ")";
      if (!deviceMerged.count(d.id)) {
        conflict(which + " skipped: its device was not merged");
        continue;
      }
      auto theirs = src.dispatchRanges(p.id, d.id);
      if (!theirs)
        return makeError(theirs.error());
      auto ours = dst.dispatchRanges(p.id, d.id);
      if (!ours)
        return makeError(ours.error());
      if (ours->empty()) {
        if (Status s = dst.setDispatch(p.id, d.id, *theirs); !s) {
          conflict(which + " skipped: " + s.error());
          continue;
        }
        ++report.dispatchAdded;
      } else if (sameRanges(*ours, *theirs)) {
        ++report.dispatchSame;
      } else {
        conflict(which + " differs between `" + dst.path() + "` and `" + src.path() +
                 "`; kept the destination's (re-run the tuner to reconcile)");
      }
    }
  }
  return Status::success();
}

} // namespace

std::string MergeReport::text() const {
  std::ostringstream out;
  out << "merged " << source << ": " << problemsAdded << " problems, " << devicesAdded
      << " devices, " << kernelsAdded << " kernels added; " << resultsAdded
      << " results added, " << resultsKept << " kept (destination as good or better); "
      << dispatchAdded << " dispatch tables added, " << dispatchSame << " identical; "
      << candidateFailuresAdded << " failed candidates\n";
  for (const std::string &c : conflicts)
    out << "  conflict: " << c << "\n";
  return out.str();
}

Expected<MergeReport> mergeFrom(Database &destination, const Database &source) {
  MergeReport report;
  report.source = source.path();
  if (source.fileSchemaVersion() > kSchemaVersion)
    return makeError("cannot merge `" + source.path() + "`: its schema v" +
                     std::to_string(source.fileSchemaVersion()) +
                     " is newer than this lowbit knows (v" + std::to_string(kSchemaVersion) +
                     "), so columns would be lost; use a newer lowbit");
  std::error_code ec;
  if (std::filesystem::equivalent(source.path(), destination.path(), ec))
    return makeError("cannot merge `" + source.path() + "` into itself");
  if (destination.readOnly())
    return makeError("cannot merge into `" + destination.path() + "`: " +
                     destination.readOnlyReason());
  Status status =
      destination.transaction([&]() -> Status { return mergeRows(destination, source, report); });
  if (!status)
    return makeError("merge of `" + source.path() + "` into `" + destination.path() +
                     "` failed and was rolled back: " + status.error());
  return report;
}

Expected<std::vector<MergeReport>> mergeFiles(Database &destination,
                                              const std::vector<std::string> &sourcePaths) {
  std::vector<MergeReport> reports;
  for (const std::string &path : sourcePaths) {
    OpenOptions options;
    options.mode = OpenMode::ReadOnly;
    auto source = Database::open(path, options);
    if (!source)
      return std::move(source).takeError();
    auto report = mergeFrom(destination, *source);
    if (!report)
      return std::move(report).takeError();
    reports.push_back(std::move(*report));
  }
  return reports;
}

Status exportDatabase(const Database &source, const std::string &destinationPath) {
  std::error_code ec;
  if (std::filesystem::exists(destinationPath, ec))
    return makeError("cannot export to `" + destinationPath + "`: the file exists");
  auto vacuum = sql::Statement::prepare(source.handle(), "VACUUM INTO ?1");
  if (!vacuum)
    return makeError("cannot export `" + source.path() + "`: " + vacuum.error());
  if (Status s = vacuum->bind(1, destinationPath).run(); !s)
    return makeError("cannot export `" + source.path() + "` to `" + destinationPath +
                     "`: " + s.error());
  // A shipped system database is opened read-only, maybe on a read-only
  // file system, where WAL would need a -shm file; rollback mode does not.
  sqlite3 *raw = nullptr;
  int code = sqlite3_open_v2(destinationPath.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  std::unique_ptr<sqlite3, sql::ConnectionDeleter> copy(raw);
  if (code != SQLITE_OK)
    return makeError("cannot reopen the export `" + destinationPath + "`: " +
                     sqlite3_errstr(code));
  if (Status s = sql::exec(raw, "PRAGMA journal_mode = DELETE"); !s)
    return makeError("cannot finish the export `" + destinationPath + "`: " + s.error());
  Health health = checkHealth(raw);
  if (health.kind != Health::Kind::Lowbit)
    return makeError("the export `" + destinationPath + "` does not check out: " +
                     health.detail);
  return Status::success();
}

namespace {

// A query of doctor's: the dangling checks yield one text column describing
// each bad row, the counts one integer.
struct DoctorQuery {
  const char *what;
  const char *sqlText;
  int sinceVersion = 1; // the schema version whose tables the query reads
};

constexpr DoctorQuery kDanglingChecks[] = {
    {"kernel with unknown problem",
     "SELECT k.id || ' -> problem ' || k.problem_id FROM kernels k "
     "WHERE NOT EXISTS (SELECT 1 FROM problems p WHERE p.id = k.problem_id)"},
    {"result with unknown kernel",
     "SELECT 'result ' || r.id || ' -> kernel ' || r.kernel_id FROM results r "
     "WHERE NOT EXISTS (SELECT 1 FROM kernels k WHERE k.id = r.kernel_id)"},
    {"result with unknown device",
     "SELECT 'result ' || r.id || ' -> device ' || r.device_id FROM results r "
     "WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.id = r.device_id)"},
    {"dispatch with unknown problem",
     "SELECT 'problem ' || x.problem_id || ' m_lo ' || x.m_lo FROM dispatch x "
     "WHERE NOT EXISTS (SELECT 1 FROM problems p WHERE p.id = x.problem_id)"},
    {"dispatch with unknown device",
     "SELECT 'device ' || x.device_id || ' m_lo ' || x.m_lo FROM dispatch x "
     "WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.id = x.device_id)"},
    {"dispatch with unknown kernel",
     "SELECT 'problem ' || x.problem_id || ' m_lo ' || x.m_lo || ' -> kernel ' || x.kernel_id "
     "FROM dispatch x WHERE NOT EXISTS (SELECT 1 FROM kernels k WHERE k.id = x.kernel_id)"},
    {"failed candidate with unknown problem",
     "SELECT f.schedule || ' on ' || f.arch || ' -> problem ' || f.problem_id "
     "FROM candidate_failures f "
     "WHERE NOT EXISTS (SELECT 1 FROM problems p WHERE p.id = f.problem_id)",
     3},
    {"dispatch naming another problem's kernel",
     "SELECT 'problem ' || x.problem_id || ' m_lo ' || x.m_lo || ' -> kernel ' || x.kernel_id "
     "|| ' of problem ' || k.problem_id FROM dispatch x JOIN kernels k ON k.id = x.kernel_id "
     "WHERE k.problem_id <> x.problem_id"},
};

void collectRows(sqlite3 *db, const char *sqlText, std::vector<std::string> &rows,
                 std::string &error) {
  auto s = sql::Statement::prepare(db, sqlText);
  if (!s) {
    error = s.error();
    return;
  }
  while (s->step())
    rows.push_back(s->text(0));
  if (Status status = s->status(); !status)
    error = status.error();
}

} // namespace

std::string DoctorReport::text() const {
  std::ostringstream out;
  for (const std::string &line : info)
    out << line << "\n";
  for (const std::string &line : warnings)
    out << "warning: " << line << "\n";
  for (const std::string &line : errors)
    out << "error: " << line << "\n";
  out << (healthy ? "healthy" : "NOT healthy") << "\n";
  return out.str();
}

DoctorReport doctor(const std::string &path) {
  DoctorReport report;
  auto finish = [&]() {
    report.healthy = report.errors.empty();
    return report;
  };
  report.info.push_back("file: " + path);
  FileProbe probe = probeFile(path);
  if (probe.kind == FileProbe::Kind::Missing) {
    report.errors.push_back("no such file");
    return finish();
  }
  if (probe.kind == FileProbe::Kind::Empty) {
    report.errors.push_back("the file is empty");
    return finish();
  }
  if (probe.kind == FileProbe::Kind::NotSqlite) {
    report.errors.push_back(probe.detail);
    return finish();
  }
  sqlite3 *raw = nullptr;
  int code = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, sql::ConnectionDeleter> connection(raw);
  if (code != SQLITE_OK) {
    report.errors.push_back(std::string("cannot open: ") + sqlite3_errstr(code));
    return finish();
  }
  sqlite3_busy_timeout(raw, 10000);

  Health health = checkHealth(raw, /*fullIntegrityCheck=*/true);
  switch (health.kind) {
  case Health::Kind::Lowbit:
    report.info.push_back("integrity_check: ok");
    break;
  case Health::Kind::Fresh:
    report.errors.push_back("an empty SQLite file, not a lowbit kernel database");
    return finish();
  case Health::Kind::Corrupt:
  case Health::Kind::Foreign:
  case Health::Kind::Error:
    report.errors.push_back(health.detail);
    return finish();
  }

  int version = int(health.userVersion);
  report.info.push_back("schema: v" + std::to_string(version) + " (this lowbit " +
                        lowbitVersion() + " writes v" + std::to_string(kSchemaVersion) + ")");
  if (version > kSchemaVersion)
    report.warnings.push_back("schema v" + std::to_string(version) +
                              " is newer than this lowbit knows; it can only read the file, "
                              "and checks below cover the columns it knows");
  else if (version < kSchemaVersion)
    report.warnings.push_back("schema v" + std::to_string(version) +
                              " is older; opening it read-write migrates it to v" +
                              std::to_string(kSchemaVersion));
  if (version < 1) {
    report.errors.push_back("no lowbit tables (schema v0)");
    return finish();
  }

  std::string error;
  std::vector<std::string> meta;
  collectRows(raw, "SELECT key || ' = ' || value FROM meta ORDER BY key", meta, error);
  for (const std::string &line : meta)
    report.info.push_back("meta: " + line);

  const DoctorQuery counts[] = {
      {"problems", "SELECT count(*) FROM problems"},
      {"kernels", "SELECT count(*) FROM kernels"},
      {"devices", "SELECT count(*) FROM devices"},
      {"results", "SELECT count(*) FROM results"},
      {"dispatch tables", "SELECT count(*) FROM (SELECT DISTINCT problem_id, device_id FROM "
                          "dispatch)"},
      {"failed candidates", "SELECT count(*) FROM candidate_failures", 3},
  };
  for (const auto &[what, sqlText, sinceVersion] : counts) {
    if (version < sinceVersion)
      continue;
    auto n = sql::queryInteger(raw, sqlText);
    if (!n)
      report.errors.push_back(std::string("cannot count ") + what + ": " + n.error());
    else
      report.info.push_back(std::string(what) + ": " + std::to_string(*n));
  }

  for (const DoctorQuery &check : kDanglingChecks) {
    if (version < check.sinceVersion)
      continue;
    std::vector<std::string> rows;
    error.clear();
    collectRows(raw, check.sqlText, rows, error);
    if (!error.empty())
      report.errors.push_back(std::string("cannot check for ") + check.what + ": " + error);
    for (const std::string &row : rows)
      report.errors.push_back(std::string(check.what) + ": " + row);
  }

  {
    auto s = sql::Statement::prepare(raw, "SELECT id, cubin FROM kernels");
    if (!s) {
      report.errors.push_back("cannot read kernels: " + s.error());
    } else {
      while (s->step()) {
        std::string id = s->text(0);
        std::string actual = sha256Hex(s->blob(1));
        if (actual != id)
          report.errors.push_back("kernel " + id + ": id is not the sha256 of its cubin (" +
                                  actual + ")");
      }
      if (Status status = s->status(); !status)
        report.errors.push_back("cannot read kernels: " + status.error());
    }
  }

  {
    auto s = sql::Statement::prepare(
        raw, "SELECT problem_id, device_id, m_lo, m_hi, kernel_id FROM dispatch "
             "ORDER BY problem_id, device_id, m_lo");
    std::map<std::pair<std::string, std::string>, std::vector<DispatchRange>> tables;
    if (s) {
      while (s->step())
        tables[{s->text(0), s->text(1)}].push_back(
            DispatchRange{s->integer(2), s->optionalInteger(3), s->text(4)});
      if (Status status = s->status(); !status)
        report.errors.push_back("cannot read dispatch: " + status.error());
    } else {
      report.errors.push_back("cannot read dispatch: " + s.error());
    }
    for (const auto &[key, ranges] : tables)
      if (Status v = validateRanges(ranges); !v)
        report.errors.push_back("dispatch of problem " + shortId(key.first) + " on device " +
                                shortId(key.second) + ": " + v.error());
  }

  if (version >= 2) {
    std::vector<std::string> rows;
    error.clear();
    collectRows(raw, "SELECT id FROM kernels WHERE block_x <= 0 OR block_y <= 0 OR block_z <= 0",
                rows, error);
    for (const std::string &id : rows)
      report.warnings.push_back("kernel " + id +
                                " has no launch configuration (from schema v1); the runtime "
                                "will not launch it");
  }
  return finish();
}

} // namespace lowbit::db
