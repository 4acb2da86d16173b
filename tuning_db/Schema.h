// The kernel database's on-disk schema: identity, version and migrations.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <string>

struct sqlite3;

namespace lowbit::db {

// PRAGMA application_id of every lowbit kernel database: "LBIT" in ASCII.
// `file(1)` and lowbit itself use it to tell our files from other SQLite files.
constexpr int32_t kApplicationId = 0x4C424954;

// PRAGMA user_version this library writes. A file with a larger value was
// written by a newer lowbit and is opened read-only.
constexpr int kSchemaVersion = 3;

// The lowbit release that built this library, recorded in `meta`.
const char *lowbitVersion();

// Brings an open, writable connection forward to `targetVersion` (at most
// kSchemaVersion), one migration per transaction. Each step takes the write
// lock with BEGIN IMMEDIATE and re-reads user_version inside it, so several
// processes opening one new file at once apply each step exactly once.
// Migrations only go forward; there is no downgrade.
Status migrate(sqlite3 *db, int targetVersion = kSchemaVersion);

// One line per migration ("v1: ..."), for `doctor`.
std::string describeMigrations();

// Current time as ISO 8601 UTC, "2025-01-31T12:34:56Z".
std::string nowUtcIso();

} // namespace lowbit::db
