// Health checks on a database file, shared by Database::open and `doctor`.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <string>

struct sqlite3;

namespace lowbit::db {

// What is at a path before SQLite touches it.
struct FileProbe {
  enum class Kind { Missing, Empty, Sqlite, NotSqlite } kind = Kind::Missing;
  std::string detail;
  // The inode seen, so a file replaced meanwhile (by another process that
  // set the bad one aside first) is not moved aside in its turn.
  uint64_t device = 0, inode = 0;
};
FileProbe probeFile(const std::string &path);

struct Health {
  enum class Kind {
    Fresh,   // a brand-new SQLite file with nothing in it
    Lowbit,  // our application_id and a clean quick_check
    Corrupt, // SQLite says the file is damaged
    Foreign, // a healthy SQLite file that is not a lowbit database
    Error,   // could not tell (I/O error, locked): never grounds to set a file aside
  } kind = Kind::Error;
  int64_t applicationId = 0;
  int64_t userVersion = 0;
  std::string detail;
};
// `fullIntegrityCheck` runs integrity_check instead of quick_check (doctor).
Health checkHealth(sqlite3 *db, bool fullIntegrityCheck = false);

// Renames `path` (and its -wal/-shm) to `<path>.corrupt-<UTC timestamp>`,
// adding -2, -3, ... if that name is taken. Returns the new path. When
// `seen` is given and `path` is no longer that file, nothing is renamed and
// `*replaced` is set.
Expected<std::string> setAside(const std::string &path, const FileProbe *seen = nullptr,
                               bool *replaced = nullptr);

} // namespace lowbit::db
