// The C ABI's enums (runtime/include/lowbit/lowbit.h) as the typed model's
// values, one table per enum. A format added to the ABI gets a row here and
// nothing under runtime/api/ changes: the runtime translates a lowbit_problem
// field by field through these and core::validate.
#pragma once

#include "core/Problem.h"
#include "lowbit/lowbit.h"

namespace lowbit::core {

// Errors name the field, the value given and the values allowed.
Expected<Activation> activationFromAbi(lowbit_dtype activation);
Expected<formats::DataFormat> weightFormatFromAbi(lowbit_weight_format weight);
Expected<formats::DataFormat> scaleFormatFromAbi(lowbit_dtype scale);
Expected<formats::Granularity> granularityFromAbi(lowbit_granularity granularity);
// LOWBIT_ZERO_SUB_CODE and SUB_VALUE take zeros in the scale dtype.
Expected<formats::ZeroMode> zeroModeFromAbi(lowbit_zero_mode zero);

} // namespace lowbit::core
