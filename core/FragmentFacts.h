// Fragment facts: what one lane's code load holds, asked of the code type
// instead of written into the builders as constants.
//
// Every family decodes its weights in *units* of 32 values per lane: a
// gemv_row unit is 32 consecutive K of one row, an mma_b_paired unit is the
// lane's share of a 64 x 16 tile (8 subtiles of 8 columns, 2 f16x2/bf16x2
// registers each). The unit is fixed by the consumer (the mma fragment or the
// dot), so the schedule's tiles mean the same thing for every width; what
// the width changes is how many bytes the lane loads for its unit:
//   8 bits: 32 bytes (two 16-byte loads)   4 bits: 16 bytes (one)
//   2 bits:  8 bytes                        1 bit:   4 bytes
//   6 bits: 16 + 8 bytes, 5 bits: 16 + 4, 3 bits: 8 + 4 (two planes)
// and how many codes one 32-bit word decodes to (32 / bits). The bit order
// inside each word and the order of the words are derived by
// lb-propagate-layouts from the decode (passes/DecodeStrategy.h), and the
// packer applies them offline, so every load is one contiguous access.
#pragma once

#include "core/formats/DataFormat.h"
#include "core/layout/WeightLayout.h"
#include "core/support/Expected.h"

namespace lowbit::core {

// Decoded values per lane per unit.
constexpr int kValuesPerUnit = 32;
// mma_b_paired: a unit covers 64 columns x 16 K, two units make the 32-wide
// K block whose A values are one 16-byte activation load; an 8-column subtile
// is registers [2 s, 2 s + 2) of a unit.
constexpr int kColumnsPerUnit = 64;
constexpr int kUnitK = 16;
constexpr int kBlockK = 2 * kUnitK;
constexpr int kSubtileColumns = 8;
constexpr int kSubtilesPerUnit = kColumnsPerUnit / kSubtileColumns;
constexpr int kRegistersPerSubtile = 2;
static_assert(kSubtilesPerUnit * kRegistersPerSubtile * 2 == kValuesPerUnit,
              "a unit's registers are its subtiles' B fragments");

// Codes of 3, 5 and 6 bits are two planes (layout::codePlanes): a unit's
// words are its low-plane words, then its high-plane words, loaded from the
// two planes' runs (layout/WeightLayout.h); the decode ORs each register's
// high parts above its low fields. Everything per word below is the low
// plane's.
struct CodeFragment {
  int codeBits = 4;
  layout::CodePlanes planes() const { return layout::codePlanes(codeBits); }
  bool hasPlanes() const { return planes().highBits != 0; }
  int codesPerWord() const { return 32 / planes().lowBits; }
  // 32-bit words (and bytes) a lane loads for one unit, both planes.
  int wordsPerUnit() const { return kValuesPerUnit * codeBits / 32; }
  int bytesPerUnit() const { return 4 * wordsPerUnit(); }
  int lowWordsPerUnit() const { return kValuesPerUnit * planes().lowBits / 32; }
  // Units one load of the mma_b_paired fragment holds: when a unit's (low
  // plane) words are 8 bytes or fewer (2- and 1-bit codes, and 3-bit), the
  // two k16 steps of a 32-wide block share one load (their units adjacent
  // in the lane's memory), so a 2-bit lane moves 16 bytes per load
  // instruction and a 1-bit lane 8, instead of 8 and 4. (gemv_row keeps one
  // unit per load.)
  int pairedUnitsPerLoad() const { return 4 * lowWordsPerUnit() <= 8 ? 2 : 1; }
};

// Where a decoded register's codes sit in f16, shared by the decode
// (passes/DecodeStrategy.cpp) and the builders that scale its results.
// f16's decode of 1-, 2- and 4-bit codes takes a 16-bit half's fields in two
// windows of 8 bits (the word as loaded, and shifted right by 8), a field at
// bit p of its window. Register r of a word holds the fields at window r % 2
// and bit offset kF16FieldBitOffset(bits, r): registers 2 j and 2 j + 1 (one
// subtile's two registers) share their offset, so one factor describes both.
// 8-bit codes are a whole window: offset 0.
constexpr int kF16Windows = 2;
constexpr int f16FieldBitOffset(int codeBits, int registerInWord) {
  return codeBits == 8 ? 0 : (registerInWord / kF16Windows) * codeBits;
}
// A *raw* decode (lb.decode raw: f16 values, unsigned codes) only masks the
// fields in place: the half's bits are the code at bit p with a zero
// exponent, the exact subnormal code x 2^(p - 24). The mma multiplies
// subnormals exactly, so a kernel that scales its f32 sums (once per scale
// period) folds 2^(24 - p) into the scale and saves the one f16x2 fma or sub
// per register that normalizing costs. This is subtile s's p.
int rawSubtileBitOffset(const CodeFragment &fragment, int subtile);

// The paired K order inside a 32-wide block (the mma_b_paired fragment):
// lane t of a quad, k16 step j, register r and half h hold K = 8 t + 4 j +
// 2 r + h, so a lane's activations of both steps are 8 consecutive values.
// The wgmma family stages x in that order: its B operand's step j reads
// slot 16 j + 8 r + 2 t + h of a staged row, and pairs it with register r,
// half h of lane t's weights of step j. This is the slot of K.
constexpr int pairedSlotOfK(int k) {
  int h = k & 1, r = (k >> 1) & 1, j = (k >> 2) & 1, t = (k >> 3) & 3;
  return 16 * j + 8 * r + 2 * t + h;
}
constexpr int pairedKOf(int t, int j, int r, int h) { return 8 * t + 4 * j + 2 * r + h; }
// s8 takes a whole 32-wide block in one k32 step (m16n8k32, wgmma k32):
// lane t's A register j holds bytes b = 2 r + h at slots 16 j + 4 t + b,
// the same K values pairedKOf gives the 16-bit fragment's registers. The
// s8 wgmma stages x in that order; this is the slot of K.
constexpr int pairedS8SlotOfK(int k) {
  int b = k & 3, j = (k >> 2) & 1, t = (k >> 3) & 3;
  return 16 * j + 4 * t + b;
}
static_assert(pairedS8SlotOfK(pairedKOf(3, 1, 1, 1)) == 16 + 12 + 3,
              "slot 16 j + 4 t + 2 r + h holds K = pairedKOf(t, j, r, h)");
// So with groups of 16 (NVFP4), every value lane t holds in a block, both
// k16 steps', is in the block's (t / kPairedLanesPerUnitK)-th group: a
// lane's scale is the same for both steps, and the four lanes of a quad,
// which feed one mma, need two different ones.
constexpr int kPairedLanesPerUnitK = kUnitK / 8;
constexpr bool pairedLanesKeepTheirGroupOf16() {
  for (int t = 0; t < 4; ++t)
    for (int j = 0; j < 2; ++j)
      for (int r = 0; r < 2; ++r)
        for (int h = 0; h < 2; ++h)
          if (pairedKOf(t, j, r, h) / kUnitK != t / kPairedLanesPerUnitK)
            return false;
  return true;
}
static_assert(pairedLanesKeepTheirGroupOf16(), "a lane's 8 K values of a block share a group of 16");

// A run of block scales (lb.load_scale_run): `runBytes` consecutive bytes of
// a row of `rowBytes`, in a 16-byte aligned buffer. Loaded in pieces of the
// widest power of two up to 16 that both are multiples of, so that every
// row's run is aligned to it; 0 when that is under 4 bytes (then the scales
// are loaded one by one) or the run is more than one 16-byte load, which
// would hold too many registers across a chunk.
constexpr int64_t kMaxScaleRunBytes = 16;
constexpr int64_t scaleRunLoadBytes(int64_t runBytes, int64_t rowBytes) {
  if (runBytes <= 0 || runBytes > kMaxScaleRunBytes)
    return 0;
  int64_t width = kMaxScaleRunBytes;
  while (width >= 4 && (runBytes % width || rowBytes % width))
    width /= 2;
  return width >= 4 ? width : 0;
}
static_assert(scaleRunLoadBytes(8, 256) == 8 && scaleRunLoadBytes(16, 512) == 16 &&
                  scaleRunLoadBytes(16, 200) == 8 && scaleRunLoadBytes(4, 6) == 0 &&
                  scaleRunLoadBytes(32, 512) == 0,
              "runs load at the alignment every row's start has");

// The fragment of a code type the compiler can decode in registers: integer
// codes of 1, 2, 4 or 8 bits, or 3, 5 or 6 in planes (unsigned, two's complement, ternary, or with an
// offset), minifloats of 2, 4 or 8 bits and 4-bit lookup tables (whether
// one decodes to a given activation is core/DecodeFacts.h's question).
// Anything else gets the reason.
Expected<CodeFragment> codeFragment(const formats::DataFormat &code);

} // namespace lowbit::core
