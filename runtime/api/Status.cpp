// lowbit.h: version, status strings, last error.
#include "lowbit/lowbit.h"
#include "runtime/api/ApiError.h"

#define LOWBIT_STRINGIFY_EXPANDED(x) LOWBIT_STRINGIFY(x)
#define LOWBIT_STRINGIFY(x) #x

extern "C" {

uint32_t lowbit_version(void) { return LOWBIT_VERSION; }

const char *lowbit_version_string(void) {
  return LOWBIT_STRINGIFY_EXPANDED(LOWBIT_VERSION_MAJOR) "." LOWBIT_STRINGIFY_EXPANDED(
      LOWBIT_VERSION_MINOR) "." LOWBIT_STRINGIFY_EXPANDED(LOWBIT_VERSION_PATCH);
}

const char *lowbit_status_string(lowbit_status status) {
  switch (status) {
  case LOWBIT_STATUS_SUCCESS:
    return "success";
  case LOWBIT_STATUS_INVALID_ARGUMENT:
    return "invalid argument (a NULL handle or pointer, a bad enum value or struct_size)";
  case LOWBIT_STATUS_INVALID_SHAPE:
    return "invalid shape (M, N, K or group size out of range for the plan)";
  case LOWBIT_STATUS_MISALIGNED:
    return "a pointer is not aligned as the kernels require";
  case LOWBIT_STATUS_UNSUPPORTED:
    return "not supported by this version of the lowbit runtime";
  case LOWBIT_STATUS_NO_DEVICE:
    return "no usable CUDA device (no driver, no GPU, or no such device ordinal)";
  case LOWBIT_STATUS_DATABASE_ERROR:
    return "a kernel database cannot be opened or read";
  case LOWBIT_STATUS_DATABASE_TOO_NEW:
    return "a kernel database was written by a newer lowbit (newer schema)";
  case LOWBIT_STATUS_UNKNOWN_PROBLEM:
    return "no kernel database has kernels for this problem";
  case LOWBIT_STATUS_NO_KERNEL:
    return "no kernel for this problem can run on this device";
  case LOWBIT_STATUS_CORRUPT_KERNEL:
    return "a kernel's cubin, PTX or launch description is missing or corrupt";
  case LOWBIT_STATUS_LAYOUT_CONFLICT:
    return "the problem's kernels need different weight layouts";
  case LOWBIT_STATUS_LAYOUT_MISMATCH:
    return "the weights were packed for another layout (or the buffer is too small)";
  case LOWBIT_STATUS_BUFFER_TOO_SMALL:
    return "a buffer is too small";
  case LOWBIT_STATUS_DRIVER_ERROR:
    return "a CUDA driver call failed";
  case LOWBIT_STATUS_LAUNCH_FAILED:
    return "the kernel launch failed";
  case LOWBIT_STATUS_OUT_OF_MEMORY:
    return "out of memory";
  case LOWBIT_STATUS_INTERNAL_ERROR:
    return "internal error in the lowbit runtime";
  case LOWBIT_STATUS_FILE_ERROR: return "a file cannot be read or is malformed";
  }
  return "unknown lowbit_status";
}

const char *lowbit_last_error(void) { return lowbit::api::lastFailureText(); }

} // extern "C"
