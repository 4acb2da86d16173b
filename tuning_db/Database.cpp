#include "tuning_db/Database.h"

#include "tuning_db/FileCheck.h"
#include "tuning_db/Schema.h"

#include <algorithm>
#include <sys/statvfs.h>
#include <chrono>
#include <thread>

namespace lowbit::db {
namespace {

using Connection = std::unique_ptr<sqlite3, sql::ConnectionDeleter>;

Expected<Connection> openConnection(const std::string &path, int flags, int busyTimeoutMs) {
  sqlite3 *raw = nullptr;
  // FULLMUTEX: a Database may be shared by the runtime's threads.
  int code = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
  Connection connection(raw);
  if (code != SQLITE_OK) {
    std::string detail = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(code);
    return makeError("cannot open kernel database `" + path + "`: " + sqlite3_errstr(code) +
                     " (" + detail + ")");
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busyTimeoutMs);
  return connection;
}

// Changing the journal mode does not go through the busy handler, and it
// fails while another process creates the same file; it is retried for as
// long as the busy timeout allows.
Status switchToWal(sqlite3 *db, int busyTimeoutMs) {
  int waitedMs = 0;
  for (int attempt = 1;; ++attempt) {
    std::string mode;
    int code = SQLITE_OK;
    {
      auto wal = sql::Statement::prepare(db, "PRAGMA journal_mode = WAL");
      if (!wal)
        return makeError(wal.error());
      if (wal->step())
        mode = wal->text(0);
      else
        code = sqlite3_errcode(db);
    } // finalized here: an unfinished statement would block later COMMITs
    if (mode == "wal")
      return Status::success();
    bool busy = (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED;
    if (!busy || waitedMs >= busyTimeoutMs)
      return makeError("cannot switch to WAL mode: " +
                       (mode.empty() ? std::string(sqlite3_errstr(code))
                                     : "journal mode stayed `" + mode + "`"));
    int sleepMs = std::min(5 * attempt, 100);
    std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
    waitedMs += sleepMs;
  }
}

// A WAL database on a read-only filesystem cannot be read even by a
// read-only connection: SQLite must create its -shm file beside it. Nothing
// can write a file there either, so it is safe to open immutable.
bool onReadOnlyFilesystem(const std::string &path) {
  struct statvfs info {};
  return ::statvfs(path.c_str(), &info) == 0 && (info.f_flag & ST_RDONLY);
}

std::string immutableUri(const std::string &path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '?' || c == '#' || c == '%' || c < 0x20 || c >= 0x7f) {
      const char *hex = "0123456789ABCDEF";
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri + "?immutable=1";
}

std::string badFileReport(const std::string &path, const std::string &reason,
                          const std::string &movedTo) {
  return "kernel database `" + path + "` is not usable (" + reason + "); it was moved to `" +
         movedTo + "` and will not be read";
}

} // namespace

Expected<Database> Database::open(const std::string &path, const OpenOptions &options) {
  bool replaced = false;
  auto database = openOnce(path, options, replaced);
  // Another process set the bad file aside and created a new one between our
  // check and our rename: what is there now deserves a check of its own.
  if (!database && replaced)
    return openOnce(path, options, replaced);
  return database;
}

Expected<Database> Database::openOnce(const std::string &path, const OpenOptions &options,
                                      bool &replaced) {
  Database database;
  database.path_ = path;
  const bool readOnly = options.mode == OpenMode::ReadOnly;

  FileProbe probe = probeFile(path);
  if (readOnly) {
    if (probe.kind == FileProbe::Kind::Missing)
      return makeError("cannot open kernel database `" + path + "` read-only: no such file");
    if (probe.kind == FileProbe::Kind::Empty)
      return makeError("cannot open kernel database `" + path +
                       "` read-only: the file is empty, not a lowbit kernel database");
    if (probe.kind == FileProbe::Kind::NotSqlite)
      return makeError("refusing kernel database `" + path + "`: " + probe.detail +
                       " (opened read-only, so it was left in place)");
  } else if (probe.kind == FileProbe::Kind::NotSqlite) {
    auto moved = setAside(path, &probe, &replaced);
    if (!moved)
      return makeError("kernel database `" + path + "` is " + probe.detail + ", and " +
                       moved.error());
    std::string report = badFileReport(path, probe.detail, *moved);
    if (!options.recreateAfterSetAside)
      return makeError(report);
    database.notes_.push_back(report + "; a new empty database was created in its place");
  }

  int flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  auto connection = openConnection(path, flags, options.busyTimeoutMs);
  if (!connection)
    return std::move(connection).takeError();

  Health health = checkHealth(connection->get());
  if (readOnly && health.kind == Health::Kind::Error && onReadOnlyFilesystem(path)) {
    connection = openConnection(immutableUri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                                options.busyTimeoutMs);
    if (!connection)
      return std::move(connection).takeError();
    health = checkHealth(connection->get());
  }
  if (health.kind == Health::Kind::Error)
    return makeError("cannot check kernel database `" + path + "`: " + health.detail +
                     (readOnly ? " (a database to read where it cannot be written is best "
                                 "shipped as `lowbit db export` writes it)"
                               : ""));
  if (health.kind == Health::Kind::Corrupt || health.kind == Health::Kind::Foreign) {
    if (readOnly)
      return makeError("refusing kernel database `" + path + "`: " + health.detail +
                       " (opened read-only, so it was left in place)");
    connection->reset();
    auto moved = setAside(path, &probe, &replaced);
    if (!moved)
      return makeError("kernel database `" + path + "`: " + health.detail + ", and " +
                       moved.error());
    std::string report = badFileReport(path, health.detail, *moved);
    if (!options.recreateAfterSetAside)
      return makeError(report);
    database.notes_.push_back(report + "; a new empty database was created in its place");
    connection = openConnection(path, flags, options.busyTimeoutMs);
    if (!connection)
      return std::move(connection).takeError();
    health.kind = Health::Kind::Fresh;
    health.userVersion = 0;
  }
  if (readOnly && health.kind == Health::Kind::Fresh)
    return makeError("refusing kernel database `" + path +
                     "`: an empty SQLite file, not a lowbit kernel database");

  database.fileSchemaVersion_ = int(health.userVersion);
  if (health.userVersion > kSchemaVersion) {
    database.readOnlyReason_ =
        "kernel database `" + path + "` has schema v" + std::to_string(health.userVersion) +
        ", newer than this lowbit " + lowbitVersion() + " knows (v" +
        std::to_string(kSchemaVersion) +
        "); it was opened read-only and cannot be written. Use a newer lowbit to modify it";
    if (!readOnly) {
      connection->reset();
      connection = openConnection(path, SQLITE_OPEN_READONLY, options.busyTimeoutMs);
      if (!connection)
        return std::move(connection).takeError();
    }
    database.connection_ = std::move(*connection);
    return database;
  }

  if (readOnly) {
    database.readOnlyReason_ = "kernel database `" + path + "` was opened read-only";
    if (health.userVersion < kSchemaVersion) {
      // The file must not change, but the queries expect the current schema:
      // copy it into memory and migrate the copy.
      auto memory = openConnection(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                   options.busyTimeoutMs);
      if (!memory)
        return std::move(memory).takeError();
      sqlite3_backup *backup = sqlite3_backup_init(memory->get(), "main", connection->get(),
                                                   "main");
      if (!backup)
        return makeError(sql::describeError(memory->get(), "cannot copy `" + path + "`"));
      sqlite3_backup_step(backup, -1);
      if (int code = sqlite3_backup_finish(backup); code != SQLITE_OK)
        return makeError(sql::describeError(memory->get(), "cannot copy `" + path + "`"));
      if (Status s = migrate(memory->get()); !s)
        return makeError("kernel database `" + path + "`: " + s.error());
      database.notes_.push_back("kernel database `" + path + "` has the older schema v" +
                                std::to_string(health.userVersion) +
                                "; it was opened read-only, so it was migrated in memory to v" +
                                std::to_string(kSchemaVersion) + " and the file left as is");
      connection = std::move(memory);
    }
    database.connection_ = std::move(*connection);
    return database;
  }

  sqlite3 *db = connection->get();
  // WAL lets readers (the runtime) proceed while a tuner writes.
  if (Status s = switchToWal(db, options.busyTimeoutMs); !s)
    return makeError("kernel database `" + path + "`: " + s.error());
  if (Status s = sql::exec(db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL"); !s)
    return makeError("kernel database `" + path + "`: " + s.error());
  if (Status s = migrate(db); !s)
    return makeError("kernel database `" + path + "`: " + s.error());
  database.fileSchemaVersion_ = kSchemaVersion;
  database.connection_ = std::move(*connection);
  return database;
}

Status Database::requireWritable(const char *what) const {
  if (readOnly())
    return makeError(std::string("cannot ") + what + ": " + readOnlyReason_);
  return Status::success();
}

Status Database::beginWrite(bool &owns) {
  if (Status s = requireWritable("write"); !s)
    return s;
  owns = sqlite3_get_autocommit(handle()) != 0;
  if (!owns)
    return Status::success();
  if (Status s = sql::exec(handle(), "BEGIN IMMEDIATE"); !s)
    return makeError("kernel database `" + path_ + "`: cannot take the write lock: " +
                     s.error());
  return Status::success();
}

Status Database::endWrite(bool owns, Status status) {
  if (!owns)
    return status;
  if (!status) {
    sql::rollback(handle());
    return status;
  }
  if (Status s = sql::exec(handle(), "COMMIT"); !s) {
    sql::rollback(handle());
    return makeError("kernel database `" + path_ + "`: cannot commit: " + s.error());
  }
  return Status::success();
}

} // namespace lowbit::db
