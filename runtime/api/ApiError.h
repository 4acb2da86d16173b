// Errors inside the runtime's C API layer: a lowbit_status plus the detail
// text that lowbit_last_error() hands to the caller.
//
// The libraries below (tuning_db, kernels, layout) report failures as
// lowbit::Expected with a message only; this layer decides which status a
// failure means, since that is what a C caller branches on.
#pragma once

#include <initializer_list>

#include "core/support/Expected.h"
#include "lowbit/lowbit.h"

#include <exception>
#include <new>
#include <string>
#include <utility>
#include <variant>

namespace lowbit::api {

struct ApiError {
  lowbit_status status = LOWBIT_STATUS_INTERNAL_ERROR;
  std::string message;
};

inline ApiError apiError(lowbit_status status, std::string message) {
  return ApiError{status, std::move(message)};
}

template <typename T> class [[nodiscard]] Result : public ValueOr<T, ApiError> {
public:
  using ValueOr<T, ApiError>::ValueOr;
  const ApiError &error() const { return this->errorValue(); }
};

// Success, or an ApiError.
class [[nodiscard]] ApiStatus {
public:
  ApiStatus() = default;
  ApiStatus(ApiError error) : error_(std::move(error)) {}

  bool ok() const { return error_.status == LOWBIT_STATUS_SUCCESS; }
  explicit operator bool() const { return ok(); }
  const ApiError &error() const { return error_; }
  lowbit_status status() const { return error_.status; }

private:
  ApiError error_{LOWBIT_STATUS_SUCCESS, {}};
};

// Records `message` as this thread's lowbit_last_error() and returns
// `status`. Never throws: if the text cannot be stored, a fixed one is kept.
lowbit_status recordFailure(lowbit_status status, const std::string &message) noexcept;
inline lowbit_status recordFailure(const ApiError &error) noexcept {
  return recordFailure(error.status, error.message);
}
// This thread's last failure text ("" if none).
const char *lastFailureText() noexcept;

// Runs one C entry point's body so that no exception crosses the ABI: an
// allocation failure becomes OUT_OF_MEMORY, anything else INTERNAL_ERROR,
// both with the entry point's name in the detail.
template <typename Body>
lowbit_status guardEntryPoint(const char *entryPoint, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return recordFailure(LOWBIT_STATUS_OUT_OF_MEMORY,
                         std::string(entryPoint) + ": out of host memory");
  } catch (const std::exception &e) {
    return recordFailure(LOWBIT_STATUS_INTERNAL_ERROR,
                         std::string(entryPoint) + ": unexpected exception: " + e.what());
  } catch (...) {
    return recordFailure(LOWBIT_STATUS_INTERNAL_ERROR,
                         std::string(entryPoint) + ": unexpected non-standard exception");
  }
}

// Checks a caller's struct_size against the size this library was built
// with: smaller is an error (an uninitialized or truncated struct) unless it
// is one of `olderSizes`, the struct of an older header, whose missing
// fields the caller reads as zero; larger (a newer header) is fine when the
// fields we do not know are all zero. `object` points at the caller's
// struct, which is `givenSize` bytes long.
ApiStatus checkInputStructSize(const void *object, size_t givenSize, size_t knownSize,
                               const char *typeName, std::initializer_list<size_t> olderSizes = {});
// For structs the library writes: at least knownSize; the bytes past it are
// left alone.
ApiStatus checkOutputStructSize(size_t givenSize, size_t knownSize, const char *typeName);

} // namespace lowbit::api
