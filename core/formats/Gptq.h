// Importers for GPTQ and AWQ checkpoints (the tensors as stored in their
// safetensors files), decoding exactly as AutoGPTQ / AutoAWQ do.
//
// Both store the weight of an nn.Linear with in_features = K and
// out_features = N; we return W[N][K] (row n = output channel).
//
// The shape and the tensors come from an untrusted checkpoint: a shape whose
// N * K * 8 bytes (the f64 result) overflow int64, or tensors of other sizes
// than it needs, are errors before anything is allocated, and an allocation
// that still fails is an error too; nothing throws.
#pragma once

#include "core/formats/Quantize.h"

#include <cstdint>
#include <vector>

namespace lowbit::formats {

struct GptqCheckpoint {
  int bits = 4;             // 2, 4 or 8 (32 % bits == 0)
  int64_t inFeatures = 0;   // K
  int64_t outFeatures = 0;  // N
  int groupSize = 128;      // -1: one group over all of K
  // qweight[K * bits / 32][N]: word (i, n) holds codes k = i*(32/bits) + j at
  // bits [j*bits, (j+1)*bits), LSB first: packed along K.
  std::vector<int32_t> qweight;
  // qzeros[G][N * bits / 32]: word (g, w) holds the zeros of columns
  // n = w*(32/bits) + j at bits [j*bits, (j+1)*bits): packed along N.
  std::vector<int32_t> qzeros;
  std::vector<uint16_t> scales; // f16 bits, [G][N]
  std::vector<int32_t> gIdx;    // [K] group of each input column; empty: k / groupSize
  // AutoGPTQ's original ("v1") checkpoints store zero - 1, and its kernels add
  // the 1 back after unpacking: z = ((qzeros >> shift) & mask) + 1. GPTQ v2
  // (GPTQModel) stores z itself.
  bool zeroPointPlusOne = true;
};

// W[N][K] as AutoGPTQ's torch reference computes it, in f64:
//   W[n][k] = scales[g][n] * (q[k][n] - z[g][n]) with g = g_idx[k].
// AutoGPTQ evaluates this in f16; rounding our value to f16 gives its result
// (the product of an f16 and a small integer is exact before that rounding).
Expected<std::vector<double>> dequantizeGptq(const GptqCheckpoint &checkpoint);
// The same weights in our representation: uintB codes, f16 scales, (q - z)·s
// with zeros stored as uintB+1 (v1) or uintB (v2) codes, act-order when g_idx
// is given and is not the trivial k / groupSize.
Expected<QuantizedMatrix> importGptq(const GptqCheckpoint &checkpoint);

struct AwqCheckpoint {
  int bits = 4; // AutoAWQ's GEMM format is 4-bit only
  int64_t inFeatures = 0;  // K
  int64_t outFeatures = 0; // N
  int groupSize = 128;
  // qweight[K][N / 8] and qzeros[K / groupSize][N / 8], both packed along N
  // with the interleave described in importAwq.
  std::vector<int32_t> qweight;
  std::vector<int32_t> qzeros;
  std::vector<uint16_t> scales; // f16 bits, [K / groupSize][N]
};

// AutoAWQ packs eight columns n = 8w + c into word w with nibble i holding
// column c = [0, 2, 4, 6, 1, 3, 5, 7][i] (so a kernel's shift-and-mask yields
// even then odd columns). Zeros are plain codes, no +1:
//   W[n][k] = scales[g][n] * (q[k][n] - z[g][n]), g = k / groupSize.
Expected<std::vector<double>> dequantizeAwq(const AwqCheckpoint &checkpoint);
Expected<QuantizedMatrix> importAwq(const AwqCheckpoint &checkpoint);

} // namespace lowbit::formats
