#include "core/FormatListing.h"

#include "core/Arch.h"
#include "core/FragmentFacts.h"
#include "core/ScheduleRules.h"
#include "core/formats/SchemeQuality.h"

#include <cstdio>
#include <sstream>

namespace lowbit::core {

namespace {

using formats::DataFormat;
using formats::QuantScheme;

// A Llama-scale square matrix: every group size the formats library uses
// (16 to 256) divides it, and so does every default schedule's tile.
constexpr int64_t kRepresentativeDimension = 4096;

KernelAvailability none(std::string reason) {
  KernelAvailability availability;
  availability.reason = std::move(reason);
  return availability;
}

// Marks the archs where some default schedule accepts `problem`, runs there
// (wgmma: sm_90a) and fits its shared memory; keeps the first rejection.
bool markArchs(const Problem &problem, std::vector<bool> &archHasKernels, std::string &reason) {
  bool accepted = false;
  const int bits = problem.code.bits();
  for (const Schedule &schedule : defaultSchedules()) {
    Status rules = checkSchedule(problem, schedule);
    if (!rules) {
      if (reason.empty())
        reason = rules.error();
      continue;
    }
    int64_t shared = staticSharedBytes(schedule, bits) + dynamicSharedBytes(schedule, problem);
    for (size_t a = 0; a < targetArchs().size(); ++a)
      if (shared <= targetArchs()[a].maxSharedBytesPerBlock &&
          checkScheduleArch(problem, schedule, targetArchs()[a]))
        archHasKernels[a] = accepted = true;
  }
  return accepted;
}

KernelAvailability collect(const std::vector<bool> &archHasKernels, KernelAvailability result) {
  for (size_t a = 0; a < targetArchs().size(); ++a)
    if (archHasKernels[a])
      result.archs.push_back(targetArchs()[a].name);
  if (result.any())
    result.reason.clear();
  return result;
}

// The rules' answer for `scheme` over both activations.
KernelAvailability availability(const DataFormat &code, const Scheme &scheme) {
  if (Expected<CodeFragment> fragment = codeFragment(code); !fragment)
    return none(fragment.error());
  std::vector<bool> archHasKernels(targetArchs().size(), false);
  KernelAvailability result;
  for (Activation activation : {Activation::F16, Activation::BF16}) {
    Problem problem;
    problem.n = problem.k = kRepresentativeDimension;
    problem.activation = activation;
    problem.code = code;
    problem.scheme = scheme;
    if (Status valid = validate(problem); !valid)
      return none(valid.error());
    if (markArchs(problem, archHasKernels, result.reason))
      result.activations.push_back(activation);
  }
  return collect(archHasKernels, std::move(result));
}

// "sm_80 sm_86 sm_89 sm_90a", "... (f16 only)" or "none: <why>".
std::string describe(const KernelAvailability &kernels) {
  if (!kernels.any())
    return "none: " + kernels.reason;
  std::string out;
  for (const std::string &arch : kernels.archs)
    out += (out.empty() ? "" : " ") + arch;
  if (kernels.activations.size() == 1)
    out += std::string(" (") + activationName(kernels.activations[0]) + " only)";
  return out;
}

// "f16 bf16 f32 s8 e4m3"; an inexact float target is marked with '~' (the
// decoded value is rounded, as nf4 is in f16).
std::string targetList(const DataFormat &format) {
  std::string list;
  for (const formats::DecodeTarget &target : format.decodeTargets()) {
    if (!list.empty())
      list += " ";
    list += formats::computeTypeName(target.type);
    if (!target.exact)
      list += "~";
  }
  return list;
}

std::string valueRange(const DataFormat &format) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "[%g, %g]", format.minFinite(), format.maxFinite());
  return buffer;
}

std::string pad(const std::string &text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

// The row names its activation: "(f16 only)" would say it twice.
KernelAvailability kernelsWithoutActivations(KernelAvailability kernels) {
  kernels.activations.clear();
  return kernels;
}

// Each activation dtype with 8-bit per-channel weights (int8, which f16,
// bf16 and s8 take; e4m3fn, which the fp8 tensor cores multiply e4m3 by),
// asked of the rules like the rest.
std::string activationListing() {
  std::ostringstream out;
  out << "\nActivation formats (kernels: per-channel int8 weights, e4m3fn for e4m3; f16 "
         "scales)\n";
  out << pad("  name", 12) << pad("scales", 30) << pad("y", 16) << "kernels\n";
  for (Activation activation : {Activation::F16, Activation::BF16, Activation::S8,
                                Activation::E4M3}) {
    Problem problem;
    problem.n = problem.k = kRepresentativeDimension;
    problem.activation = activation;
    problem.code =
        activation == Activation::E4M3 ? DataFormat::e4m3fn() : DataFormat::signedInt(8);
    problem.scheme.granularity = formats::Granularity::PerChannel;
    problem.scheme.groupSize = 0;
    const bool quantized = isQuantized(activation);
    if (quantized) {
      problem.activationScale = ActivationScale::PerToken;
      problem.output = Output::F16;
    }
    out << "  " << pad(activationName(activation), 10)
        << pad(quantized ? "f32 per token or per tensor" : "none", 30)
        << pad(quantized ? "f16, bf16, f32" : activationName(activation), 16)
        << describe(kernelsWithoutActivations(problemKernels(problem))) << "\n";
  }
  return out.str();
}

} // namespace

KernelAvailability elementKernels(const DataFormat &code) {
  return availability(code, Scheme{});
}

KernelAvailability schemeKernels(const QuantScheme &quant) {
  Expected<Scheme> scheme = kernelScheme(quant);
  if (!scheme)
    return none(scheme.error());
  return availability(quant.element, *scheme);
}

KernelAvailability problemKernels(const Problem &problem) {
  if (Status valid = validate(problem); !valid)
    return none(valid.error());
  if (Expected<CodeFragment> fragment = codeFragment(problem.code); !fragment)
    return none(fragment.error());
  std::vector<bool> archHasKernels(targetArchs().size(), false);
  KernelAvailability result;
  if (markArchs(problem, archHasKernels, result.reason))
    result.activations.push_back(problem.activation);
  return collect(archHasKernels, std::move(result));
}

std::string formatListing() {
  std::ostringstream out;
  out << "Element formats (kernels: with groups of 128 and f16 scales)\n";
  out << pad("  name", 12) << pad("bits", 6) << pad("encoding", 34) << pad("range", 28)
      << pad("decodes to", 22) << "kernels\n";
  for (const DataFormat &format : formats::builtinElementFormats()) {
    out << "  " << pad(format.name(), 10) << pad(std::to_string(format.bits()), 6)
        << pad(format.spelling(), 34) << pad(valueRange(format), 28) << pad(targetList(format), 22)
        << describe(elementKernels(format)) << "\n";
  }
  // A user's codebook: any 16 values, here evenly spaced ones, as a spec
  // (weight = "lut<4,[...]>") or the C ABI (LOWBIT_WEIGHT_LUT4 and
  // lowbit_problem.table) gives them.
  std::vector<double> evenlySpaced(16);
  for (int i = 0; i < 16; ++i)
    evenlySpaced[i] = (i - 8) / 8.0;
  Expected<DataFormat> userTable = DataFormat::lut(4, evenlySpaced, "");
  out << "  " << pad("yours", 10) << pad("4", 6) << pad("lut<4,[v0, ..., v15]>", 34)
      << pad("16 values", 28) << pad("f16 bf16 f32", 22)
      << describe(userTable ? elementKernels(*userTable) : none(userTable.error())) << "\n";
  out << "  (a spec's weight = \"lut<4,[v0, ..., v15]>\", or LOWBIT_WEIGHT_LUT4 with "
         "lowbit_problem.table: kernels are compiled for their table)\n";
  // A minifloat no name covers, here 8 bits split 3 + 4 with bias 3: the
  // decode is derived from the parameters (core/DecodeFacts.h).
  Expected<DataFormat> userFloat = DataFormat::minifloat(3, 4, 3, formats::kFloatFinite);
  out << "  " << pad("yours", 10) << pad(userFloat ? std::to_string(userFloat->bits()) : "?", 6)
      << pad("float<e,m,bias[,flags]>", 34)
      << pad(userFloat ? "float<3,4,3>: " + valueRange(*userFloat) : "", 28)
      << pad(userFloat ? targetList(*userFloat) : "", 22)
      << describe(userFloat ? elementKernels(*userFloat) : none(userFloat.error())) << "\n";
  out << "  (a spec's weight = \"float<e,m,bias,flags>\", or LOWBIT_WEIGHT_FLOAT with "
         "lowbit_problem.weight_float: the decode follows from the parameters)\n";
  out << "\nScale formats: f16, bf16, f32 (any scheme); block scales, per group without zero "
         "points: e8m0 (MX, groups of 32), e4m3fn (with or without NVFP4's f32 tensor scale)\n";
  out << activationListing();
  out << "\nSchemes (bits per weight include scales, zeros and super-scales; "
         "per-channel metadata is charged at K = 4096)\n";
  out << pad("  name", 25) << pad("bits/w", 10) << pad("decodes to", 26) << pad("layout", 48)
      << "kernels\n";
  for (const QuantScheme &scheme : formats::builtinSchemes()) {
    char bits[32];
    std::snprintf(bits, sizeof bits, "%.6g", formats::bitsPerWeight(scheme));
    out << "  " << pad(scheme.name, 23) << pad(bits, 10) << pad(targetList(scheme.element), 26)
        << pad(formats::describeScheme(scheme), 48) << describe(schemeKernels(scheme)) << "\n";
  }
  out << "\n'~' marks a compute type that rounds the decoded element.\n"
         "Kernels: the archs `lowbit compile` makes kernels for with its default schedules "
         "(f16 and bf16 activations, N = K = "
      << kRepresentativeDimension << "), as the fragment facts and the schedule rules decide.\n";
  return out.str();
}

std::string formatQualityListing() {
  const formats::QualityMatrix matrix;
  std::ostringstream out;
  out << "Quantize -> dequantize of a seeded Gaussian matrix (" << matrix.rows << " x "
      << matrix.cols << ", standard normal, seed " << matrix.seed
      << "; splitmix64 + Box-Muller, values rounded to f32), default quantizer options\n";
  out << pad("  name", 25) << pad("bits/w", 10) << "SNR (dB)\n";
  for (const formats::SchemeQuality &row : formats::builtinSchemeQuality(matrix)) {
    char bits[32], snr[32];
    std::snprintf(bits, sizeof bits, "%.6g", row.bitsPerWeight);
    std::snprintf(snr, sizeof snr, "%.2f", row.snrDb);
    out << "  " << pad(row.scheme, 23) << pad(bits, 10)
        << (row.ok() ? std::string(snr) : "cannot quantize: " + row.error) << "\n";
  }
  out << "\nSNR = 10 log10(sum w^2 / sum (w - w')^2). Integer elements without zero points and "
         "super-block schemes search their scales (clamping outliers where that lowers the "
         "error); the others cover each slot's range.\n";
  return out.str();
}

} // namespace lowbit::core
