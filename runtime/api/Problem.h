// The C API's lowbit_problem, translated to the problem description the
// compiler and the kernel database use (kernels::ProblemDesc and its
// canonical signature), and the buffer sizes it implies.
#pragma once

#include "lowbit/lowbit.h"
#include "runtime/api/ApiError.h"
#include "runtime/kernels/KernelSet.h"

#include <cstdint>

namespace lowbit::api {

// Validates every field (with a message naming the field and its allowed
// values) and translates it. Shape limits: N and K up to 2^31 - 1, so that
// N * K and every offset the kernels compute fit in 64 bits with room.
Result<kernels::ProblemDesc> problemFromApi(const lowbit_problem &problem);

// Bytes of one scale (and zero) element: 2 for f16/bf16, 4 for f32.
int scaleElementBytes(const kernels::ProblemDesc &problem);
// How many scales (and zeros, if any) the problem has.
int64_t scaleCount(const kernels::ProblemDesc &problem);
// Bits of one weight code: 4 for uint4/int4.
int weightCodeBits(const kernels::ProblemDesc &problem);
// Bytes of one activation element (x and y).
inline int activationElementBytes(const kernels::ProblemDesc &) { return 2; }

} // namespace lowbit::api
