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
// lowbit_problem.tensor_scale: 0 is none, LOWBIT_DTYPE_F32 the f32 one.
Expected<std::optional<formats::DataFormat>> tensorScaleFromAbi(lowbit_dtype tensorScale);
Expected<formats::Granularity> granularityFromAbi(lowbit_granularity granularity);
// The zero mode and, for LOWBIT_ZERO_UINT4_CODES / UINT8_CODES (the typed
// model's "quantized"), the zero codes' format. LOWBIT_ZERO_SUB_CODE and
// SUB_VALUE take zeros in the scale dtype.
struct AbiZeroPoints {
  formats::ZeroMode mode = formats::ZeroMode::None;
  std::optional<formats::DataFormat> codes;
};
Expected<AbiZeroPoints> zeroPointsFromAbi(lowbit_zero_mode zero);

} // namespace lowbit::core
