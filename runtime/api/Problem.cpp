#include "runtime/api/Problem.h"

#include "core/AbiFormats.h"

#include <string>

namespace lowbit::api {
namespace {

constexpr int64_t kLargestDimension = (int64_t{1} << 31) - 1;

ApiError invalid(const std::string &message) {
  return apiError(LOWBIT_STATUS_INVALID_ARGUMENT, "lowbit_problem: " + message);
}
ApiError invalidShape(const std::string &message) {
  return apiError(LOWBIT_STATUS_INVALID_SHAPE, "lowbit_problem: " + message);
}

} // namespace

Result<core::Problem> problemFromApi(const lowbit_problem &problem) {
  // The shape first, as its own status: the caller got a dimension wrong,
  // not a format.
  if (problem.n <= 0 || problem.k <= 0 || problem.n > kLargestDimension ||
      problem.k > kLargestDimension)
    return invalidShape("N = " + std::to_string(problem.n) + " and K = " +
                        std::to_string(problem.k) + " must be in [1, 2^31 - 1]");
  core::Problem p;
  p.n = problem.n;
  p.k = problem.k;
  Expected<core::Activation> activation =
      core::activationFromAbi(core::abiField(problem.activation));
  if (!activation)
    return invalid(activation.error());
  p.activation = *activation;
  Expected<core::ActivationScale> activationScale =
      core::activationScaleFromAbi(core::abiField(problem.activation_scale));
  if (!activationScale)
    return invalid(activationScale.error());
  p.activationScale = *activationScale;
  Expected<std::optional<core::Output>> output =
      core::outputFromAbi(core::abiField(problem.output));
  if (!output)
    return invalid(output.error());
  if (*output)
    core::setOutput(p, **output);
  Expected<formats::DataFormat> weight = core::weightFormatFromAbi(
      core::abiField(problem.weight), problem.table, &problem.weight_float);
  if (!weight)
    return invalid(weight.error());
  p.code = *weight;
  Expected<formats::DataFormat> scale =
      core::scaleFormatFromAbi(core::abiField(problem.scale));
  if (!scale)
    return invalid(scale.error());
  p.scheme.scale = *scale;
  Expected<std::optional<formats::DataFormat>> tensorScale =
      core::tensorScaleFromAbi(core::abiField(problem.tensor_scale));
  if (!tensorScale)
    return invalid(tensorScale.error());
  p.scheme.tensorScale = *tensorScale;
  Expected<formats::Granularity> granularity =
      core::granularityFromAbi(core::abiField(problem.granularity));
  if (!granularity)
    return invalid(granularity.error());
  p.scheme.granularity = *granularity;
  if (*granularity == formats::Granularity::PerGroup) {
    if (problem.group_size <= 0 || problem.k % problem.group_size != 0)
      return invalidShape("group_size " + std::to_string(problem.group_size) +
                          " must be positive and divide K = " + std::to_string(problem.k));
  } else if (problem.group_size != 0) {
    // A group size with another granularity is a contradiction, not a hint.
    return invalid("group_size is " + std::to_string(problem.group_size) +
                   " but granularity is " + core::granularitySpelling(*granularity) +
                   "; set it to 0");
  }
  p.scheme.groupSize = problem.group_size;
  Expected<core::AbiZeroPoints> zero =
      core::zeroPointsFromAbi(core::abiField(problem.zero));
  if (!zero)
    return invalid(zero.error());
  p.scheme.zero = zero->mode;
  p.scheme.zeroCodes = zero->codes;
  p.scheme.superBlock = problem.super_block;
  Expected<std::optional<formats::DataFormat>> superStep =
      core::superStepFromAbi(core::abiField(problem.super_step));
  if (!superStep)
    return invalid(superStep.error());
  p.scheme.superStep = *superStep;
  // Whatever the checks above leave to the model (there should be nothing).
  if (Status valid = core::validate(p); !valid)
    return invalid(valid.error());
  return p;
}

} // namespace lowbit::api
