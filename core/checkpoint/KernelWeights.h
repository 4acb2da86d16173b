// A quantized matrix as lowbit's kernels read it: the problem, and the
// buffers the C ABI takes (codes one per byte, lowbit_pack_weights' input;
// scales in the scale dtype; zero codes one per byte, lowbit_pack_zeros'
// input, or zeros in the scale dtype), plus the act-order permutation.
//
// Checkpoints store some schemes no kernel reads as they are. Each is turned
// into one a kernel does read, exactly (every weight keeps its value), and
// the change is written into `notes` so an import can report it:
//  - act-order (GPTQ's g_idx): the columns are sorted by group, so groups
//    are contiguous again; y = x[:, perm] · W'ᵀ with W'[:, j] = W[:, perm[j]].
//    The permutation is the caller's to apply to x (docs/architecture.md,
//    "Importing checkpoints").
//  - two-level scales (GGUF k-quants) stay two-level: the sub-scale (and
//    min) codes become uint8 (or int8) codes of the same integers, followed
//    by their steps (core::superStepOffset). Only sub-scales no byte holds
//    are multiplied out into f32 scales (a step times a code is exact).
//  - integer codes whose width has no register decode (Q6_K's 6-bit codes)
//    are re-encoded as int8 or uint8 codes of the same values.
//  - zero codes in a format kernels do not read (GPTQ v1's z + 1) become
//    uint4 codes of the same values when all are below 16, else uint8 codes,
//    or zeros in the scale dtype when a value does not fit in a byte.
#pragma once

#include "core/Problem.h"
#include "core/formats/Quantize.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::checkpoint {

struct KernelWeights {
  core::Problem problem;
  std::vector<uint8_t> codes;  // N * K, row-major, one code per byte
  // The scales buffer kernels read (core::scaleBytes): scaleCount scales,
  // each scaleElementBytes, little-endian, then a tensor scale's f32 at
  // core::tensorScaleOffset.
  std::vector<uint8_t> scales;
  // Zero codes (one per byte) when problem.scheme.zeroCodes is set, zeros in
  // the scale dtype otherwise (with super-blocks: the mins' codes, then their
  // steps, as the scales); empty without zero points.
  std::vector<uint8_t> zeros;
  std::vector<int32_t> permutation; // act-order: K entries; empty otherwise
  std::vector<std::string> notes;
};

// `matrix` is consumed (its codes move into the result). The problem gets
// `activation` (with, for s8 and e4m3, its scales and y's type, which
// core::validate requires of them) and an empty name. An error says why no
// kernel scheme holds the matrix exactly; whether default schedules accept
// the problem is core::problemKernels' question.
Expected<KernelWeights>
toKernelWeights(formats::QuantizedMatrix matrix, core::Activation activation,
                core::ActivationScale activationScale = core::ActivationScale::None,
                std::optional<core::Output> output = std::nullopt);

// The f64 weights W'[N][K] the buffers describe (the formats library's
// dequantize of the same codes, scales and zeros): the reference an import is
// checked against. With a permutation, W'[:, j] is the checkpoint's
// W[:, permutation[j]].
Expected<std::vector<double>> dequantizeKernelWeights(const KernelWeights &weights);

// The act-order rewrite alone: sorts the columns by group (stable, so ties
// keep their order) and returns perm with W'[:, j] = W[:, perm[j]]. Every
// group must hold exactly groupSize columns, as GPTQ's do.
Expected<std::vector<int32_t>> sortColumnsByGroup(formats::QuantizedMatrix &matrix);

} // namespace lowbit::checkpoint
