// Thin RAII wrappers over the sqlite3 C API, used only inside tuning_db.
//
// Every value reaches SQL through a bound parameter; the only SQL strings are
// compile-time constants, so a signature or a path can never change a query.
#pragma once

#include "core/support/Expected.h"

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::db::sql {

struct ConnectionDeleter {
  void operator()(sqlite3 *handle) const { sqlite3_close_v2(handle); }
};

// A prepared statement. Binding is 1-based, columns are 0-based, as in SQLite.
class Statement {
public:
  Statement() = default;
  Statement(Statement &&other) noexcept;
  Statement &operator=(Statement &&other) noexcept;
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;
  ~Statement();

  static Expected<Statement> prepare(sqlite3 *db, const char *sqlText);

  Statement &bind(int index, int64_t value);
  Statement &bind(int index, int value) { return bind(index, int64_t(value)); }
  Statement &bind(int index, double value);
  Statement &bind(int index, const std::string &value);
  Statement &bind(int index, const char *value) { return bind(index, std::string(value)); }
  Statement &bindBlob(int index, const std::vector<uint8_t> &value);
  Statement &bindNull(int index);
  Statement &bind(int index, const std::optional<int64_t> &value);
  Statement &bind(int index, const std::optional<double> &value);

  // True while a row is available; false at the end. Errors end up in
  // status(), so loops stay simple: `while (s.step()) ...; if (!s.status())`.
  bool step();
  Status status() const;
  // Runs a statement that returns no rows (or ignores them).
  Status run();
  void reset();

  int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::vector<uint8_t> blob(int column) const;
  bool isNull(int column) const;
  std::optional<int64_t> optionalInteger(int column) const;
  std::optional<double> optionalReal(int column) const;

private:
  sqlite3 *db_ = nullptr;
  sqlite3_stmt *stmt_ = nullptr;
  std::string sqlText_;
  int lastCode_ = SQLITE_OK;
  std::string lastError_;
};

// Runs one or more statements without parameters (DDL, pragmas, BEGIN/COMMIT).
Status exec(sqlite3 *db, const char *sqlText);

// Rolls back the open transaction, if any. Used on paths that already carry
// the error worth reporting, so its own outcome is not.
void rollback(sqlite3 *db);

// A single integer from a query such as `PRAGMA user_version`.
Expected<int64_t> queryInteger(sqlite3 *db, const char *sqlText);

// "what: SQLITE_CODE message" for the connection's last error.
std::string describeError(sqlite3 *db, const std::string &what);

} // namespace lowbit::db::sql
