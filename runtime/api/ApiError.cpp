#include "runtime/api/ApiError.h"

#include <algorithm>

namespace lowbit::api {
namespace {

// A plain pointer to a static text when the string itself cannot be stored,
// so that reporting an out-of-memory never needs memory.
struct LastFailure {
  std::string text;
  const char *fallback = nullptr;
};

LastFailure &lastFailure() {
  thread_local LastFailure failure;
  return failure;
}

// Larger struct_size values are surely not a struct from some header of ours
// (or of a future one): more likely an uninitialized field.
constexpr size_t kLargestPlausibleStruct = 4096;

} // namespace

lowbit_status recordFailure(lowbit_status status, const std::string &message) noexcept {
  LastFailure &failure = lastFailure();
  try {
    failure.text = message;
    failure.fallback = nullptr;
  } catch (...) {
    failure.fallback = "out of host memory while recording an error";
  }
  return status;
}

const char *lastFailureText() noexcept {
  const LastFailure &failure = lastFailure();
  return failure.fallback ? failure.fallback : failure.text.c_str();
}

ApiStatus checkInputStructSize(const void *object, size_t givenSize, size_t knownSize,
                               const char *typeName, std::initializer_list<size_t> olderSizes) {
  std::string name = typeName;
  const bool older = std::find(olderSizes.begin(), olderSizes.end(), givenSize) != olderSizes.end();
  if (givenSize < knownSize && !older) {
    std::string sizes;
    for (size_t size : olderSizes)
      sizes += (sizes.empty() ? "" : " or ") + std::to_string(size);
    return apiError(LOWBIT_STATUS_INVALID_ARGUMENT,
                    name + ".struct_size is " + std::to_string(givenSize) + ", less than sizeof(" +
                        name + ") = " + std::to_string(knownSize) +
                        (sizes.empty() ? std::string() : " and not an older header's " + sizes) +
                        ": set struct_size = sizeof(" + name + ")");
  }
  if (givenSize > kLargestPlausibleStruct)
    return apiError(LOWBIT_STATUS_INVALID_ARGUMENT,
                    name + ".struct_size is " + std::to_string(givenSize) +
                        ", not a plausible struct size (uninitialized?)");
  const unsigned char *bytes = static_cast<const unsigned char *>(object);
  for (size_t i = knownSize; i < givenSize; ++i)
    if (bytes[i] != 0)
      return apiError(LOWBIT_STATUS_UNSUPPORTED,
                      name + " sets fields from a newer lowbit.h (byte " + std::to_string(i) +
                          " past the " + std::to_string(knownSize) +
                          " this library knows is not zero); link a newer liblowbit_runtime");
  return ApiStatus();
}

ApiStatus checkOutputStructSize(size_t givenSize, size_t knownSize, const char *typeName) {
  std::string name = typeName;
  if (givenSize < knownSize || givenSize > kLargestPlausibleStruct)
    return apiError(LOWBIT_STATUS_INVALID_ARGUMENT,
                    name + ".struct_size is " + std::to_string(givenSize) + ", expected sizeof(" +
                        name + ") = " + std::to_string(knownSize) +
                        ": set struct_size before the call");
  return ApiStatus();
}

} // namespace lowbit::api
