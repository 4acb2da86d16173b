// The text `lowbit formats` prints: every element format and every built-in
// scheme, with bits per weight (metadata included), compute types, and
// whether `lowbit compile` makes kernels for it and on which archs.
//
// It lives in core, above the formats library, because the kernels column is
// the compiler's own answer: the fragment facts (core::codeFragment) and the
// schedule rules (core::checkSchedule) over the default schedules, never a
// list of its own.
#pragma once

#include "core/Problem.h"
#include "core/formats/DataFormat.h"
#include "core/formats/Scheme.h"

#include <string>
#include <vector>

namespace lowbit::core {

// Whether kernels exist for weights of one form, on a representative
// problem (N = K = 4096) with each activation dtype.
struct KernelAvailability {
  // core::targetArchs() names some accepted schedule fits (shared memory);
  // empty when there are no kernels.
  std::vector<std::string> archs;
  // The activation dtypes some default schedule accepts.
  std::vector<Activation> activations;
  // Why there are none: the conversion's, the fragment's or the first
  // default schedule's reason. Empty when there are kernels.
  std::string reason;

  bool any() const { return !archs.empty(); }
};

// An element format with the plainest scheme: groups of 128, f16 scales,
// no zero points.
KernelAvailability elementKernels(const formats::DataFormat &code);
// A built-in scheme, converted by core::kernelScheme.
KernelAvailability schemeKernels(const formats::QuantScheme &scheme);
// One concrete problem (its shape, activation and scheme): what `lowbit
// compile` with the default schedules would make kernels for.
KernelAvailability problemKernels(const Problem &problem);

std::string formatListing();

// `lowbit formats --snr`: each built-in scheme's bits per weight and the SNR
// of quantize -> dequantize (default options) on formats::QualityMatrix's
// seeded Gaussian matrix, or why the scheme cannot quantize it.
std::string formatQualityListing();

} // namespace lowbit::core
