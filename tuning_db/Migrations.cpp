#include "tuning_db/Schema.h"

#include "tuning_db/Sqlite.h"

#include <ctime>
#include <sstream>

#ifndef LOWBIT_VERSION_STRING
#define LOWBIT_VERSION_STRING "unknown"
#endif

namespace lowbit::db {
namespace {

struct Migration {
  int version;
  const char *description;
  // Applied as one script inside the migration's transaction. Only DDL and
  // constant pragmas: no values from outside ever reach this text.
  const char *script;
};

// v1 is the first public layout. The application_id is set here, inside the
// same transaction, so a file is never half a lowbit database.
constexpr const char *kV1 = R"sql(
PRAGMA application_id = 1279412564;
CREATE TABLE meta (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);
CREATE TABLE devices (
  id                 TEXT PRIMARY KEY NOT NULL,
  canonical_key      TEXT NOT NULL,
  name               TEXT NOT NULL,
  cc_major           INTEGER NOT NULL,
  cc_minor           INTEGER NOT NULL,
  sm_count           INTEGER NOT NULL,
  l2_bytes           INTEGER NOT NULL,
  smem_optin_bytes   INTEGER NOT NULL,
  mem_clock_khz      INTEGER NOT NULL,
  mem_bus_width_bits INTEGER NOT NULL,
  driver_version     TEXT NOT NULL,
  cuda_version       INTEGER NOT NULL,
  uuid               TEXT NOT NULL,
  first_seen         TEXT NOT NULL
);
CREATE TABLE problems (
  id        TEXT PRIMARY KEY NOT NULL,
  signature TEXT NOT NULL UNIQUE
);
CREATE TABLE kernels (
  id               TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 64),
  problem_id       TEXT NOT NULL REFERENCES problems(id),
  arch             TEXT NOT NULL,
  family           TEXT NOT NULL,
  entry            TEXT NOT NULL,
  schedule_json    TEXT NOT NULL,
  weight_layout    TEXT NOT NULL,
  source_hash      TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  cubin            BLOB NOT NULL,
  ptx              BLOB,
  registers        INTEGER NOT NULL,
  shared_bytes     INTEGER NOT NULL,
  spill_bytes      INTEGER NOT NULL,
  created_at       TEXT NOT NULL
);
CREATE INDEX kernels_by_problem ON kernels(problem_id);
CREATE TABLE results (
  id            INTEGER PRIMARY KEY,
  kernel_id     TEXT NOT NULL REFERENCES kernels(id),
  device_id     TEXT NOT NULL REFERENCES devices(id),
  m             INTEGER NOT NULL CHECK (m >= 1),
  median_us     REAL NOT NULL,
  p10_us        REAL,
  p90_us        REAL,
  gbps          REAL,
  tflops        REAL,
  max_rel_error REAL,
  passed        INTEGER NOT NULL CHECK (passed IN (0, 1)),
  run_id        TEXT NOT NULL,
  measured_at   TEXT NOT NULL
);
CREATE INDEX results_by_key ON results(kernel_id, device_id, m);
CREATE TABLE dispatch (
  problem_id TEXT NOT NULL REFERENCES problems(id),
  device_id  TEXT NOT NULL REFERENCES devices(id),
  m_lo       INTEGER NOT NULL CHECK (m_lo >= 1),
  m_hi       INTEGER CHECK (m_hi IS NULL OR m_hi > m_lo),
  kernel_id  TEXT NOT NULL REFERENCES kernels(id),
  PRIMARY KEY (problem_id, device_id, m_lo)
);
)sql";

// v2: the runtime needs the launch configuration to launch a kernel without
// the compiler, and ptxas' stack size. Kernels written by v1 get block
// dimensions of 0, which the lookup treats as "cannot be launched".
constexpr const char *kV2 = R"sql(
ALTER TABLE kernels ADD COLUMN stack_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kernels ADD COLUMN block_x INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kernels ADD COLUMN block_y INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kernels ADD COLUMN block_z INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kernels ADD COLUMN grid_rule TEXT NOT NULL DEFAULT '';
ALTER TABLE kernels ADD COLUMN dynamic_smem_bytes INTEGER NOT NULL DEFAULT 0;
CREATE INDEX dispatch_by_kernel ON dispatch(kernel_id);
)sql";

// v3: tuning candidates that never became a kernel row (NVRTC failed, or
// ptxas spilled) are recorded as failed with the reason, so a sweep reports
// them instead of losing them. One row per (problem, arch, schedule): the
// latest attempt's; a later compile that succeeds deletes it.
constexpr const char *kV3 = R"sql(
CREATE TABLE candidate_failures (
  problem_id       TEXT NOT NULL REFERENCES problems(id),
  arch             TEXT NOT NULL,
  schedule         TEXT NOT NULL,
  entry            TEXT NOT NULL,
  stage            TEXT NOT NULL CHECK (stage IN ('compile', 'spill')),
  reason           TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  PRIMARY KEY (problem_id, arch, schedule)
);
)sql";

constexpr Migration kMigrations[] = {
    {1, "tables meta, devices, problems, kernels, results, dispatch", kV1},
    {2, "kernel launch configuration (block dims, grid rule, dynamic shared memory) and "
        "stack bytes",
     kV2},
    {3, "candidate_failures: tuning candidates that failed to compile, with the reason", kV3},
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion,
              "one migration per schema version");

Status applyOne(sqlite3 *db, const Migration &migration) {
  if (Status s = sql::exec(db, "BEGIN IMMEDIATE"); !s)
    return makeError("cannot start migration to schema v" +
                     std::to_string(migration.version) + ": " + s.error());
  auto rollback = [&](const std::string &message) -> Status {
    sql::rollback(db);
    return makeError("migration to schema v" + std::to_string(migration.version) + " (" +
                     migration.description + ") failed: " + message);
  };
  auto current = sql::queryInteger(db, "PRAGMA user_version");
  if (!current)
    return rollback(current.error());
  if (*current >= migration.version) // another process got here first
    return sql::exec(db, "COMMIT");
  if (*current != migration.version - 1)
    return rollback("the file is at v" + std::to_string(*current) + ", expected v" +
                    std::to_string(migration.version - 1));
  if (Status s = sql::exec(db, migration.script); !s)
    return rollback(s.error());
  // PRAGMA takes no bound parameters; the value is our own constant.
  std::string setVersion = "PRAGMA user_version = " + std::to_string(migration.version);
  if (Status s = sql::exec(db, setVersion.c_str()); !s)
    return rollback(s.error());
  auto upsert = sql::Statement::prepare(
      db, "INSERT INTO meta(key, value) VALUES (?1, ?2) "
          "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  if (!upsert)
    return rollback(upsert.error());
  const std::pair<std::string, std::string> entries[] = {
      {"schema_version", std::to_string(migration.version)},
      {"lowbit_version", lowbitVersion()},
      {"migrated_at", nowUtcIso()},
  };
  for (const auto &[key, value] : entries)
    if (Status s = upsert->bind(1, key).bind(2, value).run(); !s)
      return rollback(s.error());
  if (migration.version == 1)
    if (Status s = upsert->bind(1, "created_by").bind(2, lowbitVersion()).run(); !s)
      return rollback(s.error());
  if (Status s = sql::exec(db, "COMMIT"); !s)
    return rollback(s.error());
  return Status::success();
}

} // namespace

const char *lowbitVersion() { return LOWBIT_VERSION_STRING; }

Status migrate(sqlite3 *db, int targetVersion) {
  if (targetVersion < 0 || targetVersion > kSchemaVersion)
    return makeError("cannot migrate to schema v" + std::to_string(targetVersion) +
                     ": this lowbit knows v0..v" + std::to_string(kSchemaVersion));
  auto current = sql::queryInteger(db, "PRAGMA user_version");
  if (!current)
    return makeError(current.error());
  for (const Migration &migration : kMigrations) {
    if (migration.version <= *current || migration.version > targetVersion)
      continue;
    if (Status s = applyOne(db, migration); !s)
      return s;
  }
  return Status::success();
}

std::string describeMigrations() {
  std::ostringstream out;
  for (const Migration &migration : kMigrations)
    out << "v" << migration.version << ": " << migration.description << "\n";
  return out.str();
}

std::string nowUtcIso() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

} // namespace lowbit::db
