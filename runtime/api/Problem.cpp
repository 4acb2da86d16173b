#include "runtime/api/Problem.h"

#include <string>

namespace lowbit::api {
namespace {

constexpr int64_t kLargestDimension = (int64_t{1} << 31) - 1;

ApiError invalid(const std::string &message) {
  return apiError(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_problem: " + message);
}

const char *dtypeName(lowbit_dtype dtype) {
  switch (dtype) {
  case LOWBIT_DTYPE_F16:
    return "f16";
  case LOWBIT_DTYPE_BF16:
    return "bf16";
  case LOWBIT_DTYPE_F32:
    return "f32";
  }
  return nullptr;
}

// "uint4" / "int4"; empty for a value outside the enum.
std::string weightName(lowbit_weight_format weight) {
  int value = static_cast<int>(weight);
  if (value >= LOWBIT_WEIGHT_UINT1 && value <= LOWBIT_WEIGHT_UINT8)
    return "uint" + std::to_string(value);
  if (value >= LOWBIT_WEIGHT_INT1 && value <= LOWBIT_WEIGHT_INT8)
    return "int" + std::to_string(value - LOWBIT_WEIGHT_INT1 + 1);
  return {};
}

} // namespace

Result<kernels::ProblemDesc> problemFromApi(const lowbit_problem &problem) {
  kernels::ProblemDesc desc;
  if (problem.n <= 0 || problem.k <= 0 || problem.n > kLargestDimension ||
      problem.k > kLargestDimension)
    return apiError(LOWBIT_STATUS_INVALID_SHAPE,
                    "lowbit_problem: N = " + std::to_string(problem.n) + " and K = " +
                        std::to_string(problem.k) + " must be in [1, 2^31 - 1]");
  desc.n = problem.n;
  desc.k = problem.k;

  if (problem.activation != LOWBIT_DTYPE_F16 && problem.activation != LOWBIT_DTYPE_BF16)
    return invalid("activation must be LOWBIT_DTYPE_F16 or LOWBIT_DTYPE_BF16, got " +
                   std::to_string(static_cast<int>(problem.activation)));
  desc.activation = dtypeName(problem.activation);

  desc.weight = weightName(problem.weight);
  if (desc.weight.empty())
    return invalid("weight must be a lowbit_weight_format (LOWBIT_WEIGHT_UINT1..UINT8 or "
                   "INT1..INT8), got " +
                   std::to_string(static_cast<int>(problem.weight)));

  const char *scale = dtypeName(problem.scale);
  if (!scale)
    return invalid("scale must be LOWBIT_DTYPE_F16, BF16 or F32, got " +
                   std::to_string(static_cast<int>(problem.scale)));
  desc.scale = scale;

  switch (problem.granularity) {
  case LOWBIT_GRANULARITY_TENSOR:
    desc.granularity = "tensor";
    break;
  case LOWBIT_GRANULARITY_CHANNEL:
    desc.granularity = "channel";
    break;
  case LOWBIT_GRANULARITY_GROUP:
    desc.granularity = "group";
    break;
  default:
    return invalid("granularity must be LOWBIT_GRANULARITY_TENSOR, CHANNEL or GROUP, got " +
                   std::to_string(static_cast<int>(problem.granularity)));
  }
  if (desc.granularity == "group") {
    if (problem.group_size <= 0 || problem.k % problem.group_size != 0)
      return apiError(LOWBIT_STATUS_INVALID_SHAPE,
                      "lowbit_problem: group_size " + std::to_string(problem.group_size) +
                          " must be positive and divide K = " + std::to_string(problem.k));
    desc.groupSize = problem.group_size;
  } else if (problem.group_size != 0) {
    // A group size with another granularity is a contradiction, not a hint.
    return invalid("group_size is " + std::to_string(problem.group_size) +
                   " but granularity is " + desc.granularity + "; set it to 0");
  }

  switch (problem.zero) {
  case LOWBIT_ZERO_NONE:
    desc.zero = "none";
    break;
  case LOWBIT_ZERO_SUB_CODE:
    desc.zero = "sub_code";
    break;
  case LOWBIT_ZERO_SUB_VALUE:
    desc.zero = "sub_value";
    break;
  default:
    return invalid("zero must be LOWBIT_ZERO_NONE, SUB_CODE or SUB_VALUE, got " +
                   std::to_string(static_cast<int>(problem.zero)));
  }
  return desc;
}

int scaleElementBytes(const kernels::ProblemDesc &problem) {
  return problem.scale == "f32" ? 4 : 2;
}

int64_t scaleCount(const kernels::ProblemDesc &problem) {
  if (problem.granularity == "tensor")
    return 1;
  if (problem.granularity == "channel")
    return problem.n;
  return problem.n * (problem.k / problem.groupSize);
}

int weightCodeBits(const kernels::ProblemDesc &problem) {
  // "uint4" -> 4, "int8" -> 8: the last character is the width (1..8).
  return problem.weight.empty() ? 0 : problem.weight.back() - '0';
}

} // namespace lowbit::api
