// How the bindings turn lowbit's errors into Python exceptions: a failed C
// ABI call raises lowbit.LowbitError carrying the lowbit_status and
// lowbit_last_error's detail; a typed-model or formats error (an Expected
// that holds none) raises ValueError with its message.
#pragma once

#include "core/support/Expected.h"
#include "lowbit/lowbit.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace lowbit::python {

class StatusError : public std::runtime_error {
public:
  StatusError(lowbit_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  lowbit_status status() const { return status_; }

private:
  lowbit_status status_;
};

// Throws StatusError unless `status` is success; `call` names the entry point.
void check(lowbit_status status, const char *call);

template <typename T> T unwrap(Expected<T> value) {
  if (!value)
    throw std::invalid_argument(value.error());
  return std::move(*value);
}
inline void unwrap(const Status &status) {
  if (!status)
    throw std::invalid_argument(status.error());
}

} // namespace lowbit::python
