// A value or an error message, for the plain C++ libraries (formats, tuning
// database, runtime internals) that must not throw across their boundaries.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace lowbit {

struct Error {
  std::string message;
};

inline Error makeError(std::string message) { return Error{std::move(message)}; }

// A value or an error of type E. The runtime's C layer uses it with an error
// that also carries a lowbit_status (runtime/api/ApiError.h).
template <typename T, typename E> class [[nodiscard]] ValueOr {
public:
  ValueOr(T value) : storage_(std::move(value)) {}
  ValueOr(E error) : storage_(std::move(error)) {}

  bool ok() const { return storage_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() & { return std::get<0>(storage_); }
  const T &value() const & { return std::get<0>(storage_); }
  T &&value() && { return std::get<0>(std::move(storage_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  const E &errorValue() const { return std::get<1>(storage_); }
  E takeError() && { return std::get<1>(std::move(storage_)); }

private:
  std::variant<T, E> storage_;
};

template <typename T> class [[nodiscard]] Expected : public ValueOr<T, Error> {
public:
  using ValueOr<T, Error>::ValueOr;
  const std::string &error() const { return this->errorValue().message; }
};

// Success or an error message, for operations with no result value.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : failed_(true), message_(std::move(error.message)) {}
  static Status success() { return Status(); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &error() const { return message_; }

private:
  bool failed_ = false;
  std::string message_;
};

} // namespace lowbit
