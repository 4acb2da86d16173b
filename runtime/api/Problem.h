// The C API's lowbit_problem, translated to the typed problem model
// (core::Problem) that the compiler and the kernel database use. The enum
// tables live in core/AbiFormats.h, and the buffer sizes a problem implies
// (core::scaleBytes, scaleAlignment, zeroElementBytes) in core/Problem.h,
// so a new format changes nothing here.
#pragma once

#include "core/Problem.h"
#include "lowbit/lowbit.h"
#include "runtime/api/ApiError.h"

namespace lowbit::api {

// Validates every field (with a message naming the field and its allowed
// values) and translates it. Shape limits (core::validate): N and K up to
// 2^31 - 1, so that N * K and every offset the kernels compute fit in 64 bits
// with room. Shape errors are LOWBIT_STATUS_INVALID_SHAPE, the rest
// LOWBIT_STATUS_INVALID_ARGUMENT.
Result<core::Problem> problemFromApi(const lowbit_problem &problem);

} // namespace lowbit::api
