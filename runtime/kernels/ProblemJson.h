// A problem as JSON fields, for kernels.json and the kernel row's
// schedule_json: readable keys (n, k, activation, weight, scale, granularity,
// group_size, zero, and zero_codes / act_order only when set), each value
// printed and parsed by core's one print and parse per field.
#pragma once

#include "core/Problem.h"

#include <nlohmann/json.hpp>

#include <string>

namespace lowbit::kernels {

// Writes the fields into `out`, the name under `nameKey` ("name" in a
// kernel row, "problem" in kernels.json).
void writeProblemJson(const core::Problem &problem, const char *nameKey, nlohmann::json &out);

// The problem whose fields are in `in`; a missing or unknown value is an
// error naming the key. A group_size with another granularity than group is
// ignored: earlier writers stored the spec's default (128) there, and the
// signature has always printed 0 for it.
Expected<core::Problem> readProblemJson(const nlohmann::json &in, const char *nameKey);

} // namespace lowbit::kernels
