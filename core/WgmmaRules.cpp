// The wgmma family's schedule rules and shared-memory sizes (sm_90a), each
// rule with the spill or error it came from.
#include "core/DecodeFacts.h"
#include "core/ScheduleRulesSupport.h"

namespace lowbit::core {
namespace rules {

// wgmma: [1, 4 c] warps are c consumer warpgroups; warp q of them owns the
// 64 columns 64 q .. of the block's tile N and multiplies them by the tile
// M rows of x staged in shared memory, in four m64 x tile M accumulators
// (one per 16-row slice of its layout tile). Or two warpgroups share four
// layout tiles, two slices each, so that tile M doubles to 128 with m64n128
// wgmmas (wgmmaSharesTiles). That measured slower (H200, before the
// producer was unrolled and before the codes were staged once for both
// warpgroups) until both: H100, W4 g128, 28672 x 8192 at M = 4096 4073 ->
// 3544 us.
// Groups shorter than the K tile: a set of subtile quant per 32-wide block.
bool groupsShorterThanTileK(const Problem &p, const Schedule &s) {
  return isGrouped(p) && p.scheme.groupSize < s.tileK;
}

// The decodes that leave a consumer registers to spare: units of at most 4
// words (4 bits), no zero points, one set of quant a K tile. Clusters and
// the overlap across K tiles take only these.
bool lightDecode(const Problem &p, const Schedule &s) {
  Expected<CodeFragment> fragment = codeFragment(p.code);
  return fragment && fragment->wordsPerUnit() <= 4 && !p.scheme.hasZeros() &&
         !groupsShorterThanTileK(p, s);
}

Status checkWgmma(const Problem &p, const Schedule &s) {
  if (Status c = checkCode(p, s); !c)
    return c;
  if (s.warpsM != 1 || (s.warpsN != kWarpgroupWarps && s.warpsN != 2 * kWarpgroupWarps))
    return reject(s, "warps must be [1, 4] or [1, 8] (one or two consumer warpgroups), got [" +
                         str(s.warpsM) + ", " + str(s.warpsN) + "]");
  const bool shared = wgmmaSharesTiles(s);
  if (s.tileN != s.warpsN * kColumnsPerUnit && !shared)
    return reject(s, "each consumer warp owns one " + str(kColumnsPerUnit) +
                         "-column layout tile (tile N = " + str(s.warpsN * kColumnsPerUnit) +
                         "), or two warpgroups share four (tile N = " +
                         str(kWarpgroupWarps * kColumnsPerUnit) + " over warps [1, 8]), got " +
                         str(s.tileN));
  // The register rules below were found at four slices a warp; a warp that
  // multiplies two slices of twice the tokens holds as many accumulator
  // floats, so they apply to this tile M.
  const int64_t accumulatorTileM = s.tileM * wgmmaSlicesPerWarp(s) / kWgmmaSlicesPerTile;
  // Two consumer warpgroups share the registers setmaxnreg gives them; the
  // f32 q·s − z of two-level mins spilled there (8 bytes: compact int4
  // 1536 x 4224, 48 x 512 x 64).
  if (heavyTwoLevel(p) && s.warpsN == 2 * kWarpgroupWarps && accumulatorTileM > 32)
    return reject(s, "two-level scales with mins or groups of 16 on two consumer warpgroups "
                     "need tile M <= 32 (64 where they share layout tiles), got " +
                         str(s.tileM));
  // Groups shorter than the K tile carry a set of subtile scales and mins
  // per 32-wide block, twice what a tile's one set held: with two-level
  // mins that spilled on two consumer warpgroups (16-40 bytes: Q4_K- and
  // Q5_K-like g32 at tile M 16 and 32) and on one at tile M 48 (40: Q2_K-like
  // g16), sm_90a.
  const bool shortGroups = groupsShorterThanTileK(p, s);
  if (shortGroups && p.scheme.hasSuperBlocks() && p.scheme.hasZeros()) {
    if (s.warpsN != kWarpgroupWarps)
      return reject(s, "two-level mins in groups shorter than tile K need one consumer "
                       "warpgroup (two scale and min sets a K tile), got " +
                           str(s.warpsN / kWarpgroupWarps));
    if (s.tileM > 32)
      return reject(s, "two-level mins in groups shorter than tile K need tile M <= 32 (two "
                       "scale and min sets a K tile), got " + str(s.tileM));
  }
  // Stream-K's consumer holds a second copy of the K-tile loop, for its
  // tail pieces: with two-level scales in groups shorter than tile K that
  // spilled 68-116 bytes at tile M 32 on one warpgroup (Q2_K-like g16 and
  // compact int4 g32 over super-blocks of 256, 1536 x 4096, sm_90a; Q6_K-like
  // g16 took 253 of 255 registers).
  if (s.streamK() && shortGroups && p.scheme.hasSuperBlocks())
    return reject(s, "scheduler = stream_k with two-level scales in groups shorter than tile K "
                     "spills (the second K-tile loop, for the split tail)");
  // A two-plane unit (3, 5 and 6 bits) holds its high words and their
  // shifted copies next to the low words; with zero points that spilled at
  // tile M 48 and 64 (6-bit sub_code 1024 x 2048: 8 bytes at 48 x 512 x 64,
  // 56 at 64 x 256 x 64; 3-bit: 8 at 64 x 256 x 64, sm_90a).
  if (Expected<CodeFragment> fragment = codeFragment(p.code);
      fragment && fragment->hasPlanes() && p.scheme.hasZeros() && accumulatorTileM > 32)
    return reject(s, "two-plane codes (3, 5 and 6 bits) with zero points need tile M <= 32 "
                     "(64 where warpgroups share layout tiles), got " + str(s.tileM));
  // Four accumulators of m64 x tile M (tile M / 2 floats each per thread),
  // or two of twice the tile M where warpgroups share tiles.
  const int64_t maxTileM = shared ? 128 : 64;
  if (s.tileM < 8 || s.tileM > maxTileM || s.tileM % 8)
    return reject(s, "tile M must be a multiple of 8 in 8 .. " + str(maxTileM) + " (" +
                         str(wgmmaSlicesPerWarp(s)) +
                         " m64 x tile M accumulators a warp, at most 128 registers a thread), "
                         "got " + str(s.tileM));
  if (shared && isQuantized(p.activation))
    return reject(s, "warpgroups that share layout tiles (tile N 256 over warps [1, 8]) are "
                     "implemented for f16 and bf16 activations only");
  // Two consumer warpgroups get 232 registers a thread (setmaxnreg): four
  // accumulators of tile M 64 (128 registers) fit next to a K tile's loads
  // in flight only without zero points, with units of at most 4 words (4 bits) and
  // with the integer decodes' few live values (int4 g128 sub_code spilled 88
  // bytes, uint8 per channel 40, e2m1 g128 56 and nf4's table constants 48,
  // on sm_90a).
  Expected<CodeFragment> fragment = codeFragment(p.code);
  if (s.warpsN > kWarpgroupWarps && accumulatorTileM > 56 &&
      (p.scheme.hasZeros() || fragment->wordsPerUnit() > 4 || !p.code.asInt()))
    return reject(s, "with two consumer warpgroups, zero points, codes of 5 bits or more, "
                     "minifloats and lookup tables need tile M <= 56 (112 where they share "
                     "layout tiles; a thread has 232 registers), got " +
                         str(s.tileM));
  // 8-bit codes spilled next to the accumulators (4096 x 1024, tile N 256
  // over one warpgroup and 512 over two, sm_90a), where bf16's decode goes
  // through f32 and zero points add to it:
  // - zero points, f16: 32-64 bytes at tile M 64 on one warpgroup (uint8
  //   sub_code, sub_value and uint8 zero codes, int8 sub_code; none at 32
  //   to 56);
  // - zero points, bf16: 8-224 bytes at tile M 24 to 64 on one warpgroup or
  //   two, unevenly (uint8 sub_value on two: 88 at 24, none at 32 or 48);
  //   none at 16;
  // - bf16 alone: 12-20 bytes at tile M 64 on one warpgroup (int8 per
  //   channel, e5m2 g128), 8-40 at 32 to 56 on two (uint8 g128, int8 per
  //   channel, e5m2); none at 24. (uint8 g128 spilled 24 bytes at tile M 40
  //   on one and none at 32, 48 or 56; the tuner records that one.)
  // - f16 minifloats whose bits move (a magnitude shift: e4m3fn, any
  //   float<4,3,b> or float<3,4,b>, not e5m2) with group scales: 12 bytes at
  //   tile M 64 on one warpgroup (e4m3fn g128, t64x256x64 s8); none at 56,
  //   nor per channel.
  if (!isQuantized(p.activation) && fragment && fragment->wordsPerUnit() == 8) {
    const bool bf16 = p.activation == Activation::BF16, one = s.warpsN == kWarpgroupWarps;
    const bool zeros = p.scheme.hasZeros();
    const bool movedGroupedFloat = [&] {
      if (!p.code.asFloat() || p.scheme.granularity != formats::Granularity::PerGroup)
        return false;
      Expected<MinifloatDecode> decode = minifloatDecode(p.code, p.activation);
      return decode && decode->magnitudeShift != 0;
    }();
    int64_t most = maxTileM;
    if (bf16 && zeros)
      most = 16;
    else if (bf16)
      most = one ? 56 : 24;
    else if ((zeros || movedGroupedFloat) && one)
      most = 56;
    if (s.tileM > most)
      return reject(s, "8-bit codes" + std::string(zeros ? " with zero points" : "") +
                           (movedGroupedFloat && !zeros ? " (a minifloat in groups)" : "") +
                           " need tile M <= " + str(most) + " with " +
                           activationName(p.activation) + " activations" +
                           (bf16 && zeros ? ""
                            : one         ? " on one consumer warpgroup"
                                          : " on two consumer warpgroups") +
                           ", got " + str(s.tileM));
  }
  // Zero values (sub_code without zero codes) decoded to bf16 spilled 16
  // bytes at tile M 64 on one warpgroup (uint4 g128, 4096 x 1024, sm_90a;
  // sub_value and uint4 zero codes fit).
  if (bf16ZeroValues(p) && s.warpsN == kWarpgroupWarps && s.tileM > 56)
    return reject(s, "sub_code zero values with bf16 activations on one consumer warpgroup need "
                     "tile M <= 56, got " +
                         str(s.tileM));
  // Two-plane codes of 5 and 6 bits in groups shorter than tile K spilled
  // 12-40 bytes at tile M 64 on one consumer warpgroup (uint5, int6, e2m3,
  // e3m2 g32, 4096 x 1024, sm_90a; none at 48 or 56; 3-bit uint3 g32 fit
  // at 64).
  if (s.warpsN == kWarpgroupWarps && fragment && fragment->hasPlanes() &&
      fragment->wordsPerUnit() > 4 && shortGroups && s.tileM > 56)
    return reject(s, "5- and 6-bit codes (two planes) in groups shorter than tile K on one "
                     "consumer warpgroup need tile M <= 56, got " +
                         str(s.tileM));
  if (s.tileK != kWgmmaTileK)
    return reject(s, "tile K must be " + str(kWgmmaTileK) +
                         " (one swizzled row of activations), got " + str(s.tileK));
  if (s.splitK != 1)
    return reject(s, "split_k > 1 is not implemented for wgmma (cluster_k splits K across "
                     "blocks)");
  // cluster_k: the cluster's blocks take equal runs of K tiles, and block
  // rank r adds up the partials of the slices r, r + cluster_k, ... of
  // every layout tile (where warpgroups share tiles, warpgroup g's slices
  // are 2 g and 2 g + 1), so cluster_k divides the four slices.
  if (s.clusterK > 1) {
    if (isQuantized(p.activation))
      return reject(s, "cluster_k > 1 with quantized activations is not implemented for "
                       "wgmma (their sums are scaled after the loop)");
    if (kWgmmaSlicesPerTile % s.clusterK)
      return reject(s, "cluster_k must divide a layout tile's " + str(kWgmmaSlicesPerTile) +
                           " slices (2 or 4), got " + str(s.clusterK));
    // The cluster's epilogue on top of a K tile's heavier quant or codes
    // spilled (sm_90a): at tile M 64 bf16 int8 g128 48 bytes (1536 x 4224,
    // one warpgroup), int4 g32 sub_code 44 (4096 x 4096, one), uint4 g16 32
    // (4096 x 4096, two); at tile M 48 8-bit codes with zero points or short
    // groups 8 to 228 (1024 x 2048). So clusters take the light tiles only.
    if (!lightDecode(p, s))
      return reject(s, "cluster_k > 1 is for codes of at most 4 bits without zero points and "
                       "with groups of at least tile K (the cluster's epilogue spilled on the "
                       "others)");
    // Where warpgroups share tiles, a warp's sum of one m64 x tile M slice
    // over four ranks spilled 160 bytes at tile M 128 (W4 g128, sm_90a;
    // none at 64, or over two ranks).
    if (shared && s.clusterK > 2 && s.tileM > 64)
      return reject(s, "where warpgroups share layout tiles, cluster_k > 2 needs tile M <= 64 "
                       "(the sums over the cluster's blocks spilled at 128), got " +
                           str(s.tileM));
    if (p.k % (kWgmmaTileK * s.clusterK))
      return reject(s, "cluster_k = " + str(s.clusterK) + " needs K a multiple of " +
                           str(kWgmmaTileK * s.clusterK) + " (equal runs of " +
                           str(kWgmmaTileK) + "-wide K tiles), got " + str(p.k));
  }
  // A persistent block's producer would wait at each tile's two cluster
  // barriers for the consumers' epilogue, which is the overlap it exists
  // for; so its tiles take one block each.
  if (s.walksTiles() && s.clusterK > 1)
    return reject(s, "scheduler = " + std::string(tileSchedulerName(s.scheduler)) +
                         " is not implemented with cluster_k > 1 (the cluster's barriers would "
                         "hold the producer at every tile's epilogue)");
  // The stream-K epilogue adds f32 partial sums; the 8-bit operands close
  // s32 sums (and group scales) in their own epilogue, which it does not
  // cover yet.
  if (s.streamK() && isQuantized(p.activation))
    return reject(s, "scheduler = stream_k is implemented for f16 and bf16 activations, not " +
                         std::string(activationName(p.activation)));
  // The ring hides the producer's copy latency: about 1.5 us against a
  // K tile's 0.3 us of wgmma at tile M 64, so up to 16 stages.
  if (s.stages < 2 || s.stages > 16)
    return reject(s, "stages (the activation ring) must be 2..16, got " + str(s.stages));
  if (wgmmaSharedBytes(s, p.activation, p.codeBits()) > kMaxSharedBytesPerBlock)
    return reject(s, "the activation ring" +
                         std::string(shared ? " and the weight ring" : "") +
                         std::string(s.clusterK > 1 ? " and the cluster's partial sums" : "") +
                         " need " + str(wgmmaSharedBytes(s, p.activation, p.codeBits())) +
                         " bytes of shared memory; at most " + str(kMaxSharedBytesPerBlock) +
                         " are supported");
  if (Status tiles = checkWholeBlockTiles(p, s); !tiles)
    return tiles;
  return checkQuantTail(p, s);
}

} // namespace rules

using namespace rules;

int64_t wgmmaRingBytes(const Schedule &s, Activation activation) {
  return add(mul(mul(s.stages, s.tileM), kWgmmaTileK * activationBytes(activation)),
             kWgmmaRingAlignment);
}

int64_t wgmmaClusterPartialBytes(const Schedule &s) {
  if (s.clusterK <= 1)
    return 0;
  constexpr int64_t kFloatBytes = 4;
  return mul(mul(s.warpsN * wgmmaSlicesPerWarp(s), s.tileM / 2), 32 * kFloatBytes);
}

int64_t streamKPartialBytes(const Schedule &s, int64_t blocks) {
  if (!s.streamK())
    return 0;
  constexpr int64_t kFloatBytes = 4;
  return mul(blocks, mul(mul(s.warpsN * wgmmaSlicesPerWarp(s), s.tileM / 2), 32 * kFloatBytes));
}

int64_t streamKFlagBytes(const Schedule &s, int64_t blocks) {
  return s.streamK() ? mul(blocks, s.warpsN * int64_t{4}) : 0;
}

int64_t streamKWholeTiles(int64_t tiles, int64_t blocks) {
  if (blocks <= 0)
    return 0;
  const int64_t lastWave = tiles % blocks;
  if (lastWave == 0 || 4 * lastWave >= kStreamKWholeLastWaveQuarters * blocks)
    return tiles;
  return std::max<int64_t>(tiles / blocks - 1, 0) * blocks;
}

bool wgmmaSharesTiles(const Schedule &s) {
  return s.family == Family::Wgmma && s.warpsN == 2 * kWarpgroupWarps &&
         s.tileN == kWarpgroupWarps * kColumnsPerUnit;
}

bool wgmmaOverlapsKTiles(const Problem &p, const Schedule &s) {
  // One consumer warpgroup only: with two, each one's drain is covered by
  // the other's wgmmas, and the overlap measured 0.94-1.09x (t128x256 w1x8
  // s8, grid and persistent) where one warpgroup took 0.91-1.04x (t64x256
  // w1x4 s8), W4 g128 at M = 256-4096, H100. Stream-K's second K-tile loop
  // (its tail) and the cluster's epilogue spilled with it at tile M 64
  // (Llama-3-8B: 16 bytes at t64x256 w1x4 stream_k, 20 at t64x512 w1x8
  // cluster_k 2; sm_90a).
  if (s.family != Family::Wgmma || s.warpsN != kWarpgroupWarps || s.streamK() || s.clusterK > 1 ||
      isQuantized(p.activation) || !p.code.asInt())
    return false;
  return lightDecode(p, s) && !p.scheme.hasSuperBlocks();
}

int64_t wgmmaSlicesPerWarp(const Schedule &s) {
  return wgmmaSharesTiles(s) ? kWgmmaSlicesPerTile / 2 : kWgmmaSlicesPerTile;
}

int64_t wgmmaWeightRingBytes(const Schedule &s, int codeBits) {
  if (!wgmmaSharesTiles(s))
    return 0;
  return mul(mul(s.stages, s.tileN), kWgmmaTileK * codeBits) / 8;
}

int64_t wgmmaSharedBytes(const Schedule &s, Activation activation, int codeBits) {
  // Dynamic buffers are carved 128-byte aligned, in order (lb-to-cuda): the
  // activation ring, the weight ring, the partials.
  constexpr int64_t kCarveAlignment = 128;
  auto carved = [](int64_t bytes) {
    return add(bytes, kCarveAlignment - 1) / kCarveAlignment * kCarveAlignment;
  };
  return add(add(carved(wgmmaRingBytes(s, activation)), carved(wgmmaWeightRingBytes(s, codeBits))),
             wgmmaClusterPartialBytes(s));
}

} // namespace lowbit::core
