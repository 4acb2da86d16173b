// The weight layout as the runtime applies it, without MLIR: a tile grid with
// an F2-linear code order inside each tile.
//
// The compiler derives the layout (tensor-core fragment ∘ decode interleave ∘
// vector-load layout, see LinearLayout.h), records serialize(layout) and its
// layoutId in the kernel metadata, and the runtime packer permutes the
// weights once, offline, so that every thread's 16-byte load decodes straight
// into mma operand registers.
//
// Storage. Codes [N, K] are cut into tileN x tileK tiles. Tiles are stored
// one after another, k-tile fastest:
//   tileIndex = (n / tileN) * (K / tileK) + k / tileK
// and a tile is tileN * tileK * codeBits / 8 contiguous bytes. Inside a tile,
// the code at (n_local, k_local) goes to code offset
//   offset = XOR of basis[i] over the set bits i of (n_local | k_local << log2(tileN))
// i.e. the first log2(tileN) basis entries belong to n_local's bits and the
// rest to k_local's. Codes pack little-endian in 32-bit words: offset o sits
// in word o / (32 / codeBits) at bits [(o % (32 / codeBits)) * codeBits, +codeBits).
//
// Code widths 1, 2, 4 and 8 divide 32, so no code straddles a word. Because
// the width divides 8 as well, the word rule is the same as an LSB-first bit
// stream over the bytes, so a tile need only be a whole number of bytes.
//
// Widths 3, 5 and 6 are stored in two *planes* (CodePlanes), as GGUF stores
// Q3_K, Q5_K and Q6_K: the low `lowBits` (2, 4, 4) of every code in a low
// plane, the remaining `highBits` (1, 1, 2) in a high plane after it. The
// low plane is exactly the packing of a lowBits-wide code under this layout
// (N * K * lowBits / 8 bytes, the basis giving each code's offset); the high
// plane follows at that byte count, its tiles in the same order, and within
// a tile a unit of 32 consecutive code offsets owns 32 * highBits contiguous
// bits, placed by highPlaneBit. So a lane that loads its unit's low words
// (4 * lowBits bytes) loads its high bits from one 4 * highBits-byte run, and
// both loads stay aligned. (7 bits would need three planes: rejected.)
#pragma once

#include "core/layout/LinearLayout.h"
#include "core/support/Expected.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::layout {

// Low and high plane widths of a code; highBits = 0 for a width stored whole.
struct CodePlanes {
  int lowBits = 0;
  int highBits = 0;
};
constexpr CodePlanes codePlanes(int codeBits) {
  switch (codeBits) {
  case 3: return {2, 1};
  case 5: return {4, 1};
  case 6: return {4, 2};
  default: return {codeBits, 0};
  }
}
// Codes a unit holds (core::kValuesPerUnit): the high plane's placement is
// per unit.
constexpr int kPlaneUnitCodes = 32;

// The bit, inside its unit's 32 * highBits high-plane bits, of the high part
// of the code at offset `offsetInUnit` (0..31) of the unit. That code sits in
// low word j = offset / c (c = 32 / lowBits codes a word) at field f = offset
// % c. The decode (passes/DecodeStrategy.cpp) pairs field f of a word's low
// half with field f + c / 2 of its high half in one register, so the high
// parts of such a pair are placed 16 bits apart: pair q = j (c / 2) + f mod
// (c / 2) of the unit at bit q * highBits of a 16-bit half, in word q *
// highBits / 16, the half the field is in. Then one shift and one mask put
// both high parts of a register where the code's top bits belong.
constexpr int highPlaneBit(int codeBits, int offsetInUnit) {
  const CodePlanes planes = codePlanes(codeBits);
  const int perWord = 32 / planes.lowBits, perHalf = perWord / 2;
  const int word = offsetInUnit / perWord, field = offsetInUnit % perWord;
  const int pair = word * perHalf + field % perHalf;
  const int bit = pair * planes.highBits;
  return (bit / 16) * 32 + (field / perHalf) * 16 + bit % 16;
}
static_assert(highPlaneBit(6, 0) == 0 && highPlaneBit(6, 4) == 16 && highPlaneBit(6, 9) == 10 &&
                  highPlaneBit(6, 31) == 32 + 16 + 14 && highPlaneBit(3, 8) == 16 &&
                  highPlaneBit(5, 31) == 16 + 15,
              "the pairs of a register share their bit, 16 apart");

// The bit, from the start of the packed weights, of the high part of the code
// at storage offset `offset` (tile index x tile codes + its offset in the
// tile) of `codes` two-plane codes: after the whole low plane, at its unit's
// run, then highPlaneBit. (Its low part is at offset x lowBits.)
constexpr int64_t highPlaneBitOfCode(int codeBits, int64_t codes, int64_t offset) {
  const CodePlanes planes = codePlanes(codeBits);
  return codes * planes.lowBits +
         offset / kPlaneUnitCodes * kPlaneUnitCodes * planes.highBits +
         highPlaneBit(codeBits, int(offset % kPlaneUnitCodes));
}

struct WeightLayout {
  int codeBits = 4; // 1, 2, 4 or 8; 3, 5 or 6 in planes
  int tileN = 1;    // powers of two; N and K must be multiples
  int tileK = 1;
  // log2(tileN) entries for n_local's bits, then log2(tileK) for k_local's.
  std::vector<uint32_t> basis;

  bool operator==(const WeightLayout &other) const {
    return codeBits == other.codeBits && tileN == other.tileN && tileK == other.tileK &&
           basis == other.basis;
  }
  bool operator!=(const WeightLayout &other) const { return !(*this == other); }
};

// Everything the packer relies on: a supported codeBits, power-of-two tiles of
// at most 2^24 codes and whole bytes, a basis of the right length whose
// entries are in range and form a bijection onto the tile's code offsets.
Status validateWeightLayout(const WeightLayout &layout);

// "lbwl1;bits=4;tile=64x16;basis=1,2,4,..." (decimal, no spaces). Does not
// validate; serialize a layout that validateWeightLayout accepts.
std::string serialize(const WeightLayout &layout);
// Strict inverse of serialize: exactly that field order, canonical decimal
// numbers, then validateWeightLayout. Every error names the problem.
Expected<WeightLayout> parseWeightLayout(const std::string &text);
// 16 lowercase hex digits: FNV-1a 64 of serialize(layout). Packed weights
// carry it, so a kernel and its weights can be matched without MLIR.
std::string layoutId(const WeightLayout &layout);

// From a LinearLayout with in dims n and k (either order) and a single out
// dim named "offset": the tile is 2^bits(n) x 2^bits(k). Must be a bijection.
Expected<WeightLayout> weightLayoutFromLinear(const LinearLayout &codeOffsetOf, int codeBits);
// The reverse: {n:log2(tileN), k:log2(tileK)} -> {offset}.
Expected<LinearLayout> linearFromWeightLayout(const WeightLayout &layout);

// Validates the layout, then N and K: non-negative multiples of the tile.
Status checkShape(const WeightLayout &layout, int64_t n, int64_t k);
// N * K * codeBits / 8, or -1 when checkShape fails or the size overflows.
int64_t packedBytes(const WeightLayout &layout, int64_t n, int64_t k);

// codes: row-major [N, K], one code per byte in its low codeBits bits. A code
// with a higher bit set is an error, never silently masked. `packed` must
// hold at least packedBytes(layout, n, k) bytes; exactly that many are
// written (bytes past them are untouched). On error nothing is written.
// O(N*K): offsets are precomputed per n_local and per k_local and XORed.
Status packWeights(const WeightLayout &layout, int64_t n, int64_t k, const uint8_t *codes,
                   uint8_t *packed, size_t packedBytes);
// The exact inverse of packWeights: writes N*K codes, one per byte.
Status unpackWeights(const WeightLayout &layout, int64_t n, int64_t k, const uint8_t *packed,
                     size_t packedBytes, uint8_t *codes);

} // namespace lowbit::layout
