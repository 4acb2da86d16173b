#include "core/Activation.h"

namespace lowbit::core {

const char *activationName(Activation activation) {
  switch (activation) {
  case Activation::F16: return "f16";
  case Activation::BF16: return "bf16";
  case Activation::S8: return "s8";
  case Activation::E4M3: return "e4m3";
  }
  return "?";
}

Expected<Activation> parseActivation(const std::string &text) {
  for (Activation a : {Activation::F16, Activation::BF16, Activation::S8, Activation::E4M3})
    if (text == activationName(a))
      return a;
  return makeError("activation '" + text + "' is not f16, bf16, s8 or e4m3");
}

const char *activationScaleSpelling(ActivationScale scale) {
  switch (scale) {
  case ActivationScale::None: return "none";
  case ActivationScale::PerToken: return "token";
  case ActivationScale::PerTensor: return "tensor";
  }
  return "?";
}

Expected<ActivationScale> parseActivationScale(const std::string &text) {
  for (ActivationScale s :
       {ActivationScale::None, ActivationScale::PerToken, ActivationScale::PerTensor})
    if (text == activationScaleSpelling(s))
      return s;
  return makeError("activation scale '" + text + "' is not none, token or tensor");
}

const char *outputName(Output output) {
  switch (output) {
  case Output::F16: return "f16";
  case Output::BF16: return "bf16";
  case Output::F32: return "f32";
  }
  return "?";
}

Expected<Output> parseOutput(const std::string &text) {
  for (Output o : {Output::F16, Output::BF16, Output::F32})
    if (text == outputName(o))
      return o;
  return makeError("output '" + text + "' is not f16, bf16 or f32");
}

} // namespace lowbit::core
