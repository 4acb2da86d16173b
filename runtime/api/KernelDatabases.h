// The kernel databases a context reads: the application's read-only system
// database and, taking precedence, the user database that `lowbit tune`
// writes on this machine. The runtime opens both read-only: it never creates,
// migrates or sets aside a file (the tuner owns that).
#pragma once

#include "runtime/api/ApiError.h"
#include "tuning_db/Database.h"

#include <memory>
#include <string>
#include <vector>

namespace lowbit::api {

struct KernelDatabases {
  std::vector<std::unique_ptr<db::Database>> owned; // highest precedence first
  std::vector<std::string> notes;                   // e.g. a user database not created yet

  std::vector<const db::Database *> view() const;
};

// Either path may be null or empty, not both. Errors:
//  - DATABASE_TOO_NEW: a file's schema is newer than this library knows; its
//    rows could mean something we would misread, so it is not used at all.
//  - DATABASE_ERROR: a missing system database, a corrupt or foreign file.
// A user database path whose file does not exist yet is skipped with a note.
Result<KernelDatabases> openKernelDatabases(const char *systemPath, const char *userPath);

} // namespace lowbit::api
