#include "tuning_db/FileCheck.h"

#include "tuning_db/Schema.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace lowbit::db {
namespace fs = std::filesystem;

FileProbe probeFile(const std::string &path) {
  FileProbe probe;
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    probe.kind = FileProbe::Kind::Missing;
    return probe;
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    probe.device = uint64_t(info.st_dev);
    probe.inode = uint64_t(info.st_ino);
  }
  if (!fs::is_regular_file(status)) {
    probe.kind = FileProbe::Kind::NotSqlite;
    probe.detail = "not a regular file";
    return probe;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    // Unreadable is not the same as bad: let SQLite produce the real error.
    probe.kind = FileProbe::Kind::Sqlite;
    return probe;
  }
  char header[16] = {};
  file.read(header, sizeof(header));
  std::streamsize got = file.gcount();
  if (got == 0) {
    probe.kind = FileProbe::Kind::Empty;
    return probe;
  }
  static const char kMagic[16] = "SQLite format 3"; // includes the trailing NUL
  if (got < 16 || std::memcmp(header, kMagic, 16) != 0) {
    probe.kind = FileProbe::Kind::NotSqlite;
    probe.detail = "not an SQLite database (the file does not start with the SQLite header)";
    return probe;
  }
  probe.kind = FileProbe::Kind::Sqlite;
  return probe;
}

namespace {

bool isCorruptionCode(int code) {
  int primary = code & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

// Runs a one-column query, collecting up to `limit` rows as text.
int collect(sqlite3 *db, const char *sqlText, std::vector<std::string> &rows, size_t limit) {
  sqlite3_stmt *stmt = nullptr;
  int code = sqlite3_prepare_v2(db, sqlText, -1, &stmt, nullptr);
  if (code != SQLITE_OK)
    return sqlite3_extended_errcode(db);
  while ((code = sqlite3_step(stmt)) == SQLITE_ROW) {
    if (rows.size() < limit) {
      const unsigned char *text = sqlite3_column_text(stmt, 0);
      rows.push_back(text ? reinterpret_cast<const char *>(text) : "");
    }
  }
  sqlite3_finalize(stmt);
  return code == SQLITE_DONE ? SQLITE_OK : sqlite3_extended_errcode(db);
}

Health checkHealthIn(sqlite3 *db, bool fullIntegrityCheck) {
  Health health;
  auto failed = [&](int code, const std::string &what) {
    health.kind = isCorruptionCode(code) ? Health::Kind::Corrupt : Health::Kind::Error;
    health.detail = what + ": " + sqlite3_errstr(code) + " (" + sqlite3_errmsg(db) + ")";
    return health;
  };
  std::vector<std::string> rows;
  if (int code = collect(db, "PRAGMA application_id", rows, 1); code != SQLITE_OK)
    return failed(code, "cannot read the application_id");
  health.applicationId = rows.empty() ? 0 : std::strtoll(rows[0].c_str(), nullptr, 10);
  rows.clear();
  if (int code = collect(db, "PRAGMA user_version", rows, 1); code != SQLITE_OK)
    return failed(code, "cannot read the user_version");
  health.userVersion = rows.empty() ? 0 : std::strtoll(rows[0].c_str(), nullptr, 10);
  rows.clear();

  const char *check = fullIntegrityCheck ? "PRAGMA integrity_check" : "PRAGMA quick_check";
  if (int code = collect(db, check, rows, 8); code != SQLITE_OK)
    return failed(code, std::string(check + 7) + " failed");
  if (rows.empty() || rows[0] != "ok") {
    health.kind = Health::Kind::Corrupt;
    std::ostringstream detail;
    detail << (check + 7) << " reports damage:";
    for (const std::string &row : rows)
      detail << " " << row << ";";
    health.detail = detail.str();
    return health;
  }

  if (health.applicationId == 0) {
    rows.clear();
    if (int code = collect(db, "SELECT count(*) FROM sqlite_master", rows, 1); code != SQLITE_OK)
      return failed(code, "cannot read the schema");
    if (health.userVersion == 0 && !rows.empty() && rows[0] == "0") {
      health.kind = Health::Kind::Fresh;
      return health;
    }
    health.kind = Health::Kind::Foreign;
    health.detail = "an SQLite database of another application (application_id 0 with " +
                    (rows.empty() ? std::string("?") : rows[0]) +
                    " schema objects), not a lowbit kernel database";
    return health;
  }
  if (health.applicationId != kApplicationId) {
    std::ostringstream detail;
    detail << "an SQLite database with application_id 0x" << std::hex
           << uint32_t(health.applicationId) << ", not a lowbit kernel database (0x"
           << uint32_t(kApplicationId) << ")";
    health.kind = Health::Kind::Foreign;
    health.detail = detail.str();
    return health;
  }
  health.kind = Health::Kind::Lowbit;
  return health;
}

} // namespace

Health checkHealth(sqlite3 *db, bool fullIntegrityCheck) {
  // One read transaction, so every answer comes from the same snapshot: a
  // process creating the schema at this moment must not make its file look
  // half-made (application_id 0 but tables present) and get it set aside.
  if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    Health health;
    int code = sqlite3_extended_errcode(db);
    health.kind = isCorruptionCode(code) ? Health::Kind::Corrupt : Health::Kind::Error;
    health.detail = std::string("cannot start a read transaction: ") + sqlite3_errstr(code);
    return health;
  }
  Health health = checkHealthIn(db, fullIntegrityCheck);
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  return health;
}


Expected<std::string> setAside(const std::string &path, const FileProbe *seen,
                               bool *replaced) {
  if (seen) {
    struct stat info {};
    bool same = ::stat(path.c_str(), &info) == 0 && uint64_t(info.st_dev) == seen->device &&
                uint64_t(info.st_ino) == seen->inode;
    if (!same) {
      if (replaced)
        *replaced = true;
      return makeError("`" + path + "` was replaced while it was being checked");
    }
  }
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  std::string base = path + ".corrupt-" + stamp;
  std::string target = base;
  std::error_code ec;
  for (int n = 2; fs::exists(target, ec) || fs::exists(target + "-wal", ec); ++n)
    target = base + "-" + std::to_string(n);
  fs::rename(path, target, ec);
  if (ec)
    return makeError("cannot move `" + path + "` aside to `" + target + "`: " + ec.message());
  // The -wal belongs to the damaged file; it moves with it so neither is
  // replayed into the new database. The -shm is an index of that -wal.
  for (const char *suffix : {"-wal", "-shm"}) {
    std::string sidecar = path + suffix;
    if (fs::exists(sidecar, ec)) {
      fs::rename(sidecar, target + suffix, ec);
      if (ec)
        fs::remove(sidecar, ec);
    }
  }
  return target;
}

} // namespace lowbit::db
