// The rules for quantized activations: which problems and schedules the
// integer and fp8 tensor cores compute, with the split-K mma (small M) and
// wgmma (large M) (ScheduleRules.cpp's code check asks them first).
#include "core/DecodeFacts.h"
#include "core/ScheduleRulesSupport.h"

namespace lowbit::core::rules {

// s8 activations meet the weights on the integer tensor cores: the split-K
// mma's m16n8k32 takes both operands as s8 bytes (core::s8Decode) and sums
// in s32, codes centred off 0 (and zero points) adding (c - z) Σx from an
// mma against ones, and scales apply once per group or once at the end,
// never inside the integer sum. The wgmma family's s8 form takes the same
// decoded bytes as its register A operand and x staged in shared memory,
// and scales its s32 sums once, in the epilogue. What these families do not
// do yet is refused here, with the reason.
namespace {

// wgmma keeps four m64 x tile M s32 accumulators (and one of Σx for codes
// centred off 0); group scales add four f32 ones, which each group's s32
// sums close into after its last K tile. No zero points.
Status checkWgmmaS8(const Problem &p, const Schedule &s) {
  if (isGrouped(p) && p.scheme.groupSize % kWgmmaTileK)
    return reject(s, "group scales with s8 activations on wgmma close after whole K tiles: "
                     "groups must be multiples of " + str(kWgmmaTileK) + ", got " +
                         str(p.scheme.groupSize));
  if (isGrouped(p) && s.tileM > 32)
    return reject(s, "group scales with s8 activations on wgmma keep f32 sums next to the s32 "
                     "ones: tile M must be at most 32, got " + str(s.tileM));
  if (p.scheme.hasZeros())
    return reject(s, "zero points with s8 activations on wgmma are not implemented (their "
                     "(c - z) Σx is per row, in f32): the split-K mma takes them");
  // Integer wgmma has N = 8, 16, 24, 32 and then multiples of 16 (ptxas:
  // "Illegal matrix shape '.m64n56k32' for instruction 'wgmma.mma_async
  // with integer types'").
  if (s.tileM > 32 && s.tileM % 16)
    return reject(s, "integer wgmma takes N = 8, 16, 24, 32 or a multiple of 16: tile M " +
                         str(s.tileM) + " is none of them");
  return Status::success();
}

// e4m3 activations meet e4m3 weights on the fp8 tensor cores (m16n8k32 and
// wgmma k32 with f32 sums): both operands are the bytes as stored, so the
// weights need no decode; the scales apply once, at the end.
Status checkE4M3(const Problem &p, const Schedule &s) {
  if (p.code != formats::DataFormat::e4m3fn())
    return reject(s, "e4m3 activations multiply e4m3fn weights (the fp8 mma takes both "
                     "operands as e4m3 bytes), not " + p.code.name());
  if (isGrouped(p) || p.scheme.hasZeros())
    return reject(s, "e4m3 activations take per-channel or per-tensor weight scales without "
                     "zero points; group scales and zero points are not implemented");
  // On sm_90a ptxas widens the e4m3 mma.sync's bytes in registers (Hopper's
  // fp8 is wgmma's): 16 accumulators spilled 96-224 bytes (16 x 128 x 128,
  // 32 x 64 x 128, 32 x 128 x 64; 512 x 1024), 8 fit.
  constexpr int64_t kMaxE4M3MmaAccumulators = 8;
  if (s.family == Family::Mma && mmaSplitKAccumulators(s) > kMaxE4M3MmaAccumulators)
    return reject(s, "e4m3 on the split-K mma: tile M x tile N / 128 must be at most " +
                         str(kMaxE4M3MmaAccumulators) + " (the fp8 mma.sync widens its operands "
                         "in registers), got " + str(mmaSplitKAccumulators(s)));
  return Status::success();
}

// What both quantized activations share: 8-bit operands on the split-K mma
// read straight into registers, and the registers 8-bit codes take.
Status checkEightBitOperands(const Problem &p, const Schedule &s) {
  if (s.family == Family::Mma && s.stages != 1)
    return reject(s, "the split-K mma reads " + std::string(activationName(p.activation)) +
                         " activations straight into registers: stages must be 1, got " +
                         str(s.stages));
  // 16 warps leave a thread 128 registers; a 256-wide chunk of 8-bit codes
  // (32 words a column tile and k16 step in flight) spilled there (8 bytes:
  // int8 28672 x 8192, 8 x 64 x 256, split_k 16, sm_90a).
  if (s.family == Family::Mma && p.codeBits() == 8 && s.splitK >= 16 && s.tileK > 128)
    return reject(s, "8-bit codes with quantized activations, split_k >= 16 and tile K > 128 "
                     "need more than the 128 registers a thread of 16 warps gets");
  // 8-bit codes are their own A registers, a K tile's 32 a lane, carried
  // one tile ahead; with two consumer warpgroups tile M 48 spilled (32
  // bytes: int8 512 x 1024, 48 x 512 x 64, sm_90a), 32 fit in 168.
  if (s.family == Family::Wgmma && p.codeBits() == 8 && s.warpsN > kWarpgroupWarps &&
      s.tileM > 32)
    return reject(s, "8-bit codes with quantized activations on two consumer warpgroups need "
                     "tile M <= 32, got " + str(s.tileM));
  return Status::success();
}

} // namespace

Status checkQuantizedActivation(const Problem &p, const Schedule &s) {
  const bool e4m3 = p.activation == Activation::E4M3;
  const bool splitKMma = s.family == Family::Mma && s.splitK > 1;
  if (!splitKMma && s.family != Family::Wgmma)
    return reject(s, std::string("only the split-K mma (family mma, split_k > 1) and wgmma "
                                 "multiply ") +
                         activationName(p.activation) + " activations, on the " +
                         (e4m3 ? "fp8" : "integer") + " tensor cores");
  if (p.scheme.hasSuperBlocks() || p.scheme.tensorScale)
    return reject(s, std::string("two-level and tensor scales with ") +
                         activationName(p.activation) + " activations are not implemented");
  if (Status operands = checkEightBitOperands(p, s); !operands)
    return operands;
  if (e4m3)
    return checkE4M3(p, s);
  Expected<S8Decode> decode = s8Decode(p.code);
  if (!decode)
    return reject(s, decode.error());
  // (q - z) s zero points come off as s (c - z) Σx; q s - z ones would need
  // z Σx outside the scale, which nothing builds yet.
  if (p.scheme.zero == formats::ZeroMode::SubtractScaled)
    return reject(s, "sub_value zero points (q·s - z) with s8 activations are not implemented; "
                     "(q - z)·s ones (sub_code, quantized) are");
  // A group's s32 sum closes at the end of each 32-wide block at the
  // earliest: both k16 units of a block are one m16n8k32.
  if (isGrouped(p) && p.scheme.groupSize % kBlockK)
    return reject(s, "groups of " + str(p.scheme.groupSize) + " with s8 activations: a group "
                     "must be whole 32-wide blocks (one m16n8k32 spans both k16 steps)");
  if (s.family == Family::Wgmma)
    if (Status wgmma = checkWgmmaS8(p, s); !wgmma)
      return wgmma;
  // Group scales carry f32 accumulators next to each period's s32 sums: 32
  // of each spilled (504 bytes: uint4 g128 with zero codes, 32 x 128 x 64,
  // split_k 2, sm_90a; 68 without zeros, int4 g64); 16 fit in 226-242
  // registers.
  constexpr int64_t kMaxGroupedS8Accumulators = 16;
  const int64_t accumulators = mmaSplitKAccumulators(s);
  if (splitKMma && isGrouped(p) && accumulators > kMaxGroupedS8Accumulators)
    return reject(s, "group scales with s8 activations keep f32 and s32 accumulators: tile M x "
                     "tile N / 128 must be at most " + str(kMaxGroupedS8Accumulators) + ", got " +
                         str(accumulators));
  // Σx (codes centred off 0, zero points) adds a token slice's sums and the
  // ones fragment: with 32 accumulators and 128-wide chunks that spilled
  // (16 bytes: uint8 per channel, 8: uint4 per tensor, 32 x 128 x 128,
  // split_k 2, sm_90a); 64-wide chunks fit.
  const bool tokenSums = decode->centre || p.scheme.hasZeros();
  if (splitKMma && tokenSums && accumulators > 16 && s.tileK > 64)
    return reject(s, "codes centred off 0 or zero points with s8 activations (Σx) and tile M x "
                     "tile N / 128 over 16 need tile K <= 64, got " + str(s.tileK));
  // With 16 warps' 128 registers a thread, a 256-wide chunk with group
  // scales and zero codes spilled (8 bytes: uint4 g128 4096 x 14336, 8 x 64
  // x 256, split_k 16, sm_90a; 14336 x 4096 held 128 exactly).
  if (splitKMma && isGrouped(p) && s.splitK >= 16 && s.tileK > 128)
    return reject(s, "group scales with s8 activations, split_k >= 16 and tile K > 128 need "
                     "more than the 128 registers a thread of 16 warps gets");
  // Each product is at most 128 x 128 = 2^14, so a warp's s32 sum stays
  // exact while its share of K is below 2^17; codes centred off 0 add
  // 2^shift c Σx (up to 2^14 a K again), which halves that.
  const int64_t kMaxExactShareK = int64_t{1} << (decode->centre ? 16 : 17);
  int64_t chunks = s.tileK > 0 ? (p.k + s.tileK - 1) / s.tileK : 0;
  int64_t share = mul((chunks + s.kSlices() - 1) / s.kSlices(), s.tileK);
  if (share >= kMaxExactShareK)
    return reject(s, "a warp's share of K (" + str(share) + ") must stay below " +
                         str(kMaxExactShareK) + " for its s32 sum of s8 products to be exact");
  return Status::success();
}

} // namespace lowbit::core::rules
