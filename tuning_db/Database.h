// One kernel database file: opening (with health checks, migration and
// quarantine of bad files), and typed reads and writes of its rows.
#pragma once

#include "core/support/Expected.h"
#include "tuning_db/Records.h"
#include "tuning_db/Sqlite.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::db {

enum class OpenMode {
  ReadWrite, // create if missing, migrate forward, quarantine a bad file
  ReadOnly,  // never modify the file; a bad file is refused
};

struct OpenOptions {
  OpenMode mode = OpenMode::ReadWrite;
  // How long a writer waits for another process' write lock.
  int busyTimeoutMs = 10000;
  // ReadWrite only: after setting a bad file aside, start a new empty
  // database at the path (true) or fail with the report (false).
  bool recreateAfterSetAside = true;
};

// Reads may come from several threads (the connection is serialized).
// Writes and transaction() belong to one thread at a time: a transaction is a
// property of the connection, so two threads writing through one Database
// would share it. Concurrent writers use one Database (or process) each.
class Database {
public:
  // Opens `path`.
  //
  // ReadWrite: a missing or empty file becomes a new database. A file that is
  // not SQLite, is corrupt (quick_check), or is another application's SQLite
  // file is renamed to `<path>.corrupt-<UTC timestamp>` (with its -wal/-shm)
  // and reported in notes(); a new database then takes its place unless
  // recreateAfterSetAside is false. An older schema is migrated. A newer
  // schema is opened read-only: reads work, writes fail with readOnlyReason().
  //
  // ReadOnly: the file must exist and be healthy; nothing is renamed. An older
  // schema is copied into memory and migrated there, leaving the file as is.
  static Expected<Database> open(const std::string &path, const OpenOptions &options = {});

  Database(Database &&) noexcept = default;
  Database &operator=(Database &&) noexcept = default;
  ~Database() = default;

  const std::string &path() const { return path_; }
  // The schema version of the file (may exceed kSchemaVersion when read-only).
  int fileSchemaVersion() const { return fileSchemaVersion_; }
  bool readOnly() const { return !readOnlyReason_.empty(); }
  const std::string &readOnlyReason() const { return readOnlyReason_; }
  // Things the caller should tell the user: a file set aside, an in-memory
  // migration. Empty on an uneventful open.
  const std::vector<std::string> &notes() const { return notes_; }

  // -- writes (each is one BEGIN IMMEDIATE transaction, or part of the one
  //    opened by transaction()) --
  Status putDevice(const DeviceFingerprint &fingerprint);
  // Returns the problem id (sha256 of the signature).
  Expected<std::string> putProblem(const std::string &signature);
  // Stores a kernel; the id is computed from the cubin (a given id must match
  // it). Storing the same cubin again is a no-op if its problem, arch and
  // entry agree, and an error if not.
  Expected<std::string> putKernel(const KernelRecord &kernel);
  Status addResult(const ResultRecord &result);
  Status addResults(const std::vector<ResultRecord> &results);
  // Replaces the dispatch table of (problem, device) after validateRanges and
  // checking that every kernel exists and belongs to the problem.
  Status setDispatch(const std::string &problemId, const std::string &deviceId,
                     const std::vector<DispatchRange> &ranges);
  // Records a candidate that failed to compile, replacing an earlier record
  // of the same (problem, arch, schedule); the problem must be stored.
  Status putCandidateFailure(const CandidateFailureRecord &failure);
  // Forgets the failure of (problem, arch, schedule), once it compiled.
  Status clearCandidateFailure(const std::string &problemId, const std::string &arch,
                               const std::string &schedule);
  // Runs `body` inside one BEGIN IMMEDIATE transaction: committed if it
  // returns success, rolled back otherwise. Writes inside join it.
  template <typename Body> Status transaction(Body &&body);

  // -- reads --
  Expected<std::vector<ProblemRecord>> problems() const;
  Expected<std::optional<ProblemRecord>> findProblem(const std::string &problemId) const;
  Expected<std::vector<KernelRecord>> kernelsForProblem(const std::string &problemId,
                                                        bool withBlobs = false) const;
  Expected<std::optional<KernelRecord>> findKernel(const std::string &kernelId,
                                                   bool withBlobs = true) const;
  Expected<std::vector<DeviceRecord>> devices() const;
  Expected<std::optional<DeviceRecord>> findDevice(const std::string &deviceId) const;
  // Devices that have a dispatch table for the problem.
  Expected<std::vector<DeviceRecord>> devicesWithDispatch(const std::string &problemId) const;
  // Sorted by mLo; not validated (a hand-edited file may be wrong).
  Expected<std::vector<DispatchRange>> dispatchRanges(const std::string &problemId,
                                                      const std::string &deviceId) const;
  // All results of a kernel, optionally on one device, by (device, m, median).
  Expected<std::vector<ResultRecord>> results(const std::string &kernelId,
                                              const std::string &deviceId = "") const;
  // The problem's failed candidates (for one arch, or all), by arch and schedule.
  Expected<std::vector<CandidateFailureRecord>>
  candidateFailures(const std::string &problemId, const std::string &arch = "") const;
  // Ids that start with `prefix`, in kernels, problems and devices.
  struct IdMatches {
    std::vector<std::string> kernels, problems, devices;
  };
  Expected<IdMatches> matchIdPrefix(const std::string &prefix) const;

  // The raw connection, for tuning_db's own commands (merge, export, doctor).
  sqlite3 *handle() const { return connection_.get(); }

private:
  Database() = default;
  static Expected<Database> openOnce(const std::string &path, const OpenOptions &options,
                                     bool &replaced);
  Status requireWritable(const char *what) const;
  Status beginWrite(bool &owns);
  Status endWrite(bool owns, Status status);

  std::unique_ptr<sqlite3, sql::ConnectionDeleter> connection_;
  std::string path_;
  int fileSchemaVersion_ = 0;
  std::string readOnlyReason_;
  std::vector<std::string> notes_;
};

template <typename Body> Status Database::transaction(Body &&body) {
  bool owns = false;
  if (Status s = beginWrite(owns); !s)
    return s;
  Status status = body();
  return endWrite(owns, std::move(status));
}

} // namespace lowbit::db
