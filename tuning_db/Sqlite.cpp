#include "tuning_db/Sqlite.h"

#include <utility>

namespace lowbit::db::sql {

Statement::Statement(Statement &&other) noexcept
    : db_(std::exchange(other.db_, nullptr)), stmt_(std::exchange(other.stmt_, nullptr)),
      sqlText_(std::move(other.sqlText_)), lastCode_(other.lastCode_),
      lastError_(std::move(other.lastError_)) {}

Statement &Statement::operator=(Statement &&other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    sqlText_ = std::move(other.sqlText_);
    lastCode_ = other.lastCode_;
    lastError_ = std::move(other.lastError_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Expected<Statement> Statement::prepare(sqlite3 *db, const char *sqlText) {
  Statement statement;
  statement.db_ = db;
  statement.sqlText_ = sqlText;
  int code = sqlite3_prepare_v2(db, sqlText, -1, &statement.stmt_, nullptr);
  if (code != SQLITE_OK)
    return makeError(describeError(db, std::string("cannot prepare `") + sqlText + "`"));
  return statement;
}

Statement &Statement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement &Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement &Statement::bind(int index, const std::string &value) {
  sqlite3_bind_text(stmt_, index, value.data(), int(value.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement &Statement::bindBlob(int index, const std::vector<uint8_t> &value) {
  // A zero-length blob must stay a blob, not turn into NULL.
  if (value.empty())
    sqlite3_bind_zeroblob(stmt_, index, 0);
  else
    sqlite3_bind_blob64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT);
  return *this;
}
Statement &Statement::bindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}
Statement &Statement::bind(int index, const std::optional<int64_t> &value) {
  return value ? bind(index, *value) : bindNull(index);
}
Statement &Statement::bind(int index, const std::optional<double> &value) {
  return value ? bind(index, *value) : bindNull(index);
}

bool Statement::step() {
  lastCode_ = sqlite3_step(stmt_);
  if (lastCode_ == SQLITE_ROW)
    return true;
  if (lastCode_ != SQLITE_DONE)
    lastError_ = describeError(db_, "cannot run `" + sqlText_ + "`");
  return false;
}

Status Statement::status() const {
  if (lastCode_ == SQLITE_OK || lastCode_ == SQLITE_ROW || lastCode_ == SQLITE_DONE)
    return Status::success();
  return makeError(lastError_);
}

Status Statement::run() {
  while (step()) {
  }
  Status result = status();
  reset();
  return result;
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  lastCode_ = SQLITE_OK;
}

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
std::string Statement::text(int column) const {
  const unsigned char *data = sqlite3_column_text(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  return data ? std::string(reinterpret_cast<const char *>(data), size_t(size)) : std::string();
}
std::vector<uint8_t> Statement::blob(int column) const {
  const auto *data = static_cast<const uint8_t *>(sqlite3_column_blob(stmt_, column));
  int size = sqlite3_column_bytes(stmt_, column);
  return data ? std::vector<uint8_t>(data, data + size) : std::vector<uint8_t>();
}
bool Statement::isNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::optional<int64_t> Statement::optionalInteger(int column) const {
  if (isNull(column))
    return std::nullopt;
  return integer(column);
}
std::optional<double> Statement::optionalReal(int column) const {
  if (isNull(column))
    return std::nullopt;
  return real(column);
}

Status exec(sqlite3 *db, const char *sqlText) {
  char *message = nullptr;
  int code = sqlite3_exec(db, sqlText, nullptr, nullptr, &message);
  if (code == SQLITE_OK)
    return Status::success();
  std::string detail = message ? message : sqlite3_errstr(code);
  sqlite3_free(message);
  return makeError(std::string("cannot run `") + sqlText + "`: " + sqlite3_errstr(code) +
                   " (" + detail + ")");
}

void rollback(sqlite3 *db) {
  if (!sqlite3_get_autocommit(db))
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
}

Expected<int64_t> queryInteger(sqlite3 *db, const char *sqlText) {
  auto statement = Statement::prepare(db, sqlText);
  if (!statement)
    return std::move(statement).takeError();
  if (!statement->step()) {
    Status status = statement->status();
    if (!status)
      return makeError(status.error());
    return makeError(std::string("`") + sqlText + "` returned no row");
  }
  return statement->integer(0);
}

std::string describeError(sqlite3 *db, const std::string &what) {
  int code = sqlite3_extended_errcode(db);
  return what + ": " + sqlite3_errstr(code) + " (" + sqlite3_errmsg(db) + ")";
}

} // namespace lowbit::db::sql
