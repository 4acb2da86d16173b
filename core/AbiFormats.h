// The C ABI's enums (runtime/include/lowbit/lowbit.h) as the typed model's
// values, one table per enum. A format added to the ABI gets a row here and
// nothing under runtime/api/ changes: the runtime translates a lowbit_problem
// field by field through these and core::validate.
#pragma once

#include "core/Problem.h"
#include "lowbit/lowbit.h"

#include <cstring>
#include <vector>

namespace lowbit::core {

// Errors name the field, the value given and the values allowed. Each takes
// the field's stored integer, not the enum: a caller's C struct may hold any
// int there, and in C++ loading or casting to an enum a value outside its
// range is undefined (UndefinedBehaviorSanitizer caught lowbit_dtype 77).
// abiField reads one without such a load.
Expected<Activation> activationFromAbi(int activation);
Expected<ActivationScale> activationScaleFromAbi(int scale);
// lowbit_problem.output: 0 is the activation's own dtype (none set).
Expected<std::optional<Output>> outputFromAbi(int output);
// `table`: lowbit_problem.table, LOWBIT_WEIGHT_LUT4's 16 values (NULL for
// every other weight format). `minifloat`: lowbit_problem.weight_float,
// LOWBIT_WEIGHT_FLOAT's parameters (NULL, or all zero, for every other).
Expected<formats::DataFormat> weightFormatFromAbi(int weight, const double *table = nullptr,
                                                  const lowbit_float_format *minifloat = nullptr);
Expected<formats::DataFormat> scaleFormatFromAbi(int scale);
// lowbit_problem.tensor_scale: 0 is none, LOWBIT_DTYPE_F32 the f32 one.
Expected<std::optional<formats::DataFormat>> tensorScaleFromAbi(int tensorScale);
// Two-level scales' step dtype; 0 is none.
Expected<std::optional<formats::DataFormat>> superStepFromAbi(int superStep);
Expected<formats::Granularity> granularityFromAbi(int granularity);
// The zero mode and, for LOWBIT_ZERO_UINT4_CODES / UINT8_CODES (the typed
// model's "quantized"), the zero codes' format. LOWBIT_ZERO_SUB_CODE and
// SUB_VALUE take zeros in the scale dtype.
struct AbiZeroPoints {
  formats::ZeroMode mode = formats::ZeroMode::None;
  std::optional<formats::DataFormat> codes;
  bool operator==(const AbiZeroPoints &o) const { return mode == o.mode && codes == o.codes; }
};
Expected<AbiZeroPoints> zeroPointsFromAbi(int zero);

// The other way: the lowbit_problem the C ABI takes for a typed problem,
// through the same tables, so a problem crosses the ABI and comes back the
// same. A LUT4 problem's 16 values go to *table, which problem.table points
// into: keep it alive as long as the struct. A minifloat without a
// lowbit_weight_format of its own is LOWBIT_WEIGHT_FLOAT with its parameters
// in weight_float. An error names the field that
// has no lowbit.h value (a code or scale dtype the ABI does not spell).
Status problemToAbi(const Problem &problem, lowbit_problem *out, std::vector<double> *table);

// The integer stored in a C enum field of a lowbit.h struct.
template <typename Enum> int abiField(const Enum &field) {
  static_assert(sizeof(Enum) == sizeof(int), "lowbit.h's enums are int-sized");
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

} // namespace lowbit::core
