// The activation side of the typed model: the element type x arrives in,
// the scales of quantized activations, and y's type. One parse and one print
// each (core/Problem.h holds the rest of the problem).
#pragma once

#include "core/support/Expected.h"

#include <string>

namespace lowbit::core {

// The element type x arrives in. f16 and bf16 are also y's type; the
// quantized ones (s8, OCP e4m3fn) carry f32 scales of their own
// (ActivationScale) and write y in the problem's `output` type.
enum class Activation { F16, BF16, S8, E4M3 };

// "f16" | "bf16" | "s8" | "e4m3".
const char *activationName(Activation activation);
Expected<Activation> parseActivation(const std::string &text);
inline bool isQuantized(Activation activation) {
  return activation == Activation::S8 || activation == Activation::E4M3;
}
inline int activationBytes(Activation activation) { return isQuantized(activation) ? 1 : 2; }

// The f32 scales of quantized activations: x = q_x · s_x with one s_x per row
// of x (a token: "token", [M] f32) or one for all of x ("tensor", [1]).
// f16 and bf16 activations have none.
enum class ActivationScale { None, PerToken, PerTensor };
// "none" | "token" | "tensor".
const char *activationScaleSpelling(ActivationScale scale);
Expected<ActivationScale> parseActivationScale(const std::string &text);

// y's element type.
enum class Output { F16, BF16, F32 };
// "f16" | "bf16" | "f32".
const char *outputName(Output output);
Expected<Output> parseOutput(const std::string &text);

} // namespace lowbit::core
