#include "core/ScheduleRules.h"

#include "core/DecodeFacts.h"
#include "core/ScheduleRulesSupport.h"

#include <limits>

namespace lowbit::core {
namespace rules {

std::string str(int64_t v) {
  return std::to_string(v);
}

// Sizes are positive once the structure holds, but the verifier takes any
// int64_t: byte counts saturate instead of overflowing, so an absurd schedule
// is rejected as too big rather than wrapping into one that fits.
int64_t mul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    return std::numeric_limits<int64_t>::max();
  return product;
}

int64_t add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    return std::numeric_limits<int64_t>::max();
  return sum;
}

Status reject(const Schedule &s, const std::string &why) {
  return makeError(scheduleSubject(s) + ": " + why);
}

bool isGrouped(const Problem &p) {
  return p.scheme.granularity == formats::Granularity::PerGroup;
}

} // namespace rules

namespace {

using namespace rules;

// The staged mma swizzles its activation tile in rows of eight 16-byte
// chunks, so tile K covers 8 x 16 bytes of activations.
constexpr int64_t kSwizzledRowK = 8 * 16 / kStagedActivationBytes;
// gemv_tiled: a warp's lanes form 8 groups of 4 (PTX groupID), each with a
// partial sum per row and subtile.
constexpr int64_t kLaneGroups = 8;
// A split-K mma warp's accumulator fragment: 32 lanes x 4 f32.
constexpr int64_t kFragmentFloats = 32 * 4;
constexpr int64_t kMaxSplitK = 32;

// Bytes of an n x k tile of codes, saturating.
int64_t codeTileBytes(int64_t n, int64_t k, int codeBits) {
  return mul(mul(n, k), codeBits) / 8;
}

} // namespace

namespace rules {

// The code type comes first in every family: a lane decodes it in registers.
Status checkCode(const Problem &p, const Schedule &s) {
  if (isQuantized(p.activation))
    return checkQuantizedActivation(p, s);
  if (Status decodable = checkDecodable(p.code, p.activation); !decodable)
    return reject(s, decodable.error());
  // The verifier keeps a group size positive; a core::Problem that was never
  // validated may not, and the rules below divide by it.
  if (isGrouped(p) && p.scheme.groupSize <= 0)
    return reject(s, "group size " + str(p.scheme.groupSize) + " must be positive");
  return Status::success();
}

// Quantization features no family implements, checked last. (Every zero
// mode is implemented: zeros and zero codes are loaded per column like the
// scales, and the decode subtracts them.)
Status checkQuantTail(const Problem &p, const Schedule &s) {
  if (p.scheme.actOrder)
    return reject(s, "act_order is not implemented");
  return Status::success();
}

// The families whose blocks take whole tile N x tile K tiles (the staged
// mma, wgmma) and load a lane's scales once per K tile, or, where groups are
// shorter, at each 32-wide block that starts one (groups of 16: the lane's
// half of every block).
Status checkWholeBlockTiles(const Problem &p, const Schedule &s) {
  if (p.n % s.tileN)
    return reject(s, "N = " + str(p.n) + " is not a multiple of tile N = " + str(s.tileN));
  if (p.k % s.tileK)
    return reject(s, "K = " + str(p.k) + " is not a multiple of tile K = " + str(s.tileK));
  // A cluster's blocks that got no chunk would only wait at its barriers.
  if (s.clusterK > 1 && p.k / s.tileK < s.kSlices())
    return reject(s, "split_k x cluster_k = " + str(s.kSlices()) + " slices of K, but K = " +
                         str(p.k) + " has only " + str(p.k / s.tileK) + " chunks of tile K = " +
                         str(s.tileK));
  const int64_t g = p.scheme.groupSize;
  if (isGrouped(p) && g != kUnitK && g % s.tileK && (g % kBlockK || s.tileK % g))
    return reject(s, "group size " + str(g) + " is neither " + str(kUnitK) +
                         ", a multiple of tile K = " + str(s.tileK) +
                         " nor a multiple of 32 dividing it (a lane's scales are loaded per K "
                         "tile or per 32-wide block)");
  return Status::success();
}

} // namespace rules

namespace {

// gemv: one row per warp, a lane's 32-value units along K.
Status checkGemv(const Problem &p, const Schedule &s) {
  if (Status c = checkCode(p, s); !c)
    return c;
  const int64_t rowsPerWarp = s.warpsN > 0 && s.tileN % s.warpsN == 0 ? gemvRowsPerWarp(s) : 0;
  if (s.warpsM != 1 ||
      (rowsPerWarp != 1 && rowsPerWarp != 2 && rowsPerWarp != 4 && rowsPerWarp != 8))
    return reject(s, "each warp computes 1, 2, 4 or 8 rows: need warps = [1, W] with tile N = "
                     "W, 2 W, 4 W or 8 W, got warps [" +
                         str(s.warpsM) + ", " + str(s.warpsN) + "] for tile N " + str(s.tileN));
  if (s.tileM < 1 || s.tileM > 8)
    return reject(s, "tile M must be 1..8, got " + str(s.tileM));
  // A warp's rows share each activation load; their dots take registers:
  // rows of X times rows of W a warp carries stay at most 8 (tile M 8 with
  // one row of W).
  if (s.tileM * rowsPerWarp > kGemvMaxDotsPerLane)
    return reject(s, "tile M x rows per warp must be at most " + str(kGemvMaxDotsPerLane) +
                         ", got " + str(s.tileM) + " x " + str(rowsPerWarp));
  if (s.tileK % kGemvKPerWarpStep)
    return reject(s, "tile K must be a multiple of " + str(kGemvKPerWarpStep) + " (32 lanes x " +
                         str(kValuesPerUnit) + " codes), got " + str(s.tileK));
  if (s.splitK != 1)
    return reject(s, "split_k > 1 is not implemented for gemv");
  if (p.k % kValuesPerUnit)
    return reject(s, "K = " + str(p.k) + " is not a multiple of " + str(kValuesPerUnit));
  if (p.n % s.tileN)
    return reject(s, "N = " + str(p.n) + " is not a multiple of tile N = " + str(s.tileN));
  // Each half of a lane's unit must lie in one group: its scale is applied
  // once per unit, or once per half (kGemvGroupGranule).
  if (isGrouped(p) && p.scheme.groupSize % kGemvGroupGranule)
    return reject(s, "group size " + str(p.scheme.groupSize) + " is not a multiple of " +
                         str(kGemvGroupGranule) + " (half a lane's " + str(kValuesPerUnit) +
                         " codes)");
  return checkQuantTail(p, s);
}

// The staged mma: [warps M, warps N] warps of m16 fragments and 64-column
// units, both operands through `stages` shared-memory buffers.
Status checkStagedMma(const Problem &p, const Schedule &s) {
  if (Status c = checkCode(p, s); !c)
    return c;
  if (s.tileM % mul(s.warpsM, kMmaFragmentM))
    return reject(s, "tile M " + str(s.tileM) + " must give each of " + str(s.warpsM) +
                         " warp rows a multiple of " + str(kMmaFragmentM));
  if (s.tileN % mul(s.warpsN, kColumnsPerUnit))
    return reject(s, "tile N " + str(s.tileN) + " must give each of " + str(s.warpsN) +
                         " warp columns a multiple of " + str(kColumnsPerUnit));
  if (s.tileK % kSwizzledRowK)
    return reject(s, "tile K must be a multiple of " + str(kSwizzledRowK) +
                         " (eight 16-byte chunks a row, for the shared-memory swizzle), got " +
                         str(s.tileK));
  // cp.async.wait_group takes at most 7 pending groups: stages - 2 <= 7.
  if (s.stages < 2 || s.stages > 9)
    return reject(s, "stages must be 2..9, got " + str(s.stages));
  int64_t shared = mmaStagedSharedBytes(s, p.codeBits());
  if (shared > kStaticSharedBytesPerBlock)
    return reject(s, "needs " + str(shared) + " bytes of shared memory; at most " +
                         str(kStaticSharedBytesPerBlock) + " are supported");
  if (Status tiles = checkWholeBlockTiles(p, s); !tiles)
    return tiles;
  return checkQuantTail(p, s);
}

// What both split-K families need of the problem: whole 64-column layout
// tiles, whole chunks of whole 32-wide blocks, and chunks and groups that
// divide one another (a period's scales are loaded once). A group may also
// be half a 32-wide block (NVFP4's 16): each lane's values of a block lie in
// one of its two groups (core::pairedKOf).
Status checkSplitKProblem(const Problem &p, const Schedule &s) {
  if (Status c = checkCode(p, s); !c)
    return c;
  if (s.splitK > kMaxSplitK)
    return reject(s, "split_k (warps along K in a block) must be at most " + str(kMaxSplitK));
  if (s.stages < 1 || s.stages > 4)
    return reject(s, "stages (K chunks a warp has in flight) must be 1..4, got " + str(s.stages));
  if (p.n % kColumnsPerUnit)
    return reject(s, "N = " + str(p.n) + " is not a multiple of " + str(kColumnsPerUnit));
  if (s.tileK < kBlockK || s.tileK % kBlockK)
    return reject(s, "tile K (the K chunk a warp takes) must be a positive multiple of " +
                         str(kBlockK) + ", got " + str(s.tileK));
  if (p.k % s.tileK)
    return reject(s, "K = " + str(p.k) + " is not a multiple of tile K = " + str(s.tileK));
  // A cluster's blocks that got no chunk would only wait at its barriers.
  if (s.clusterK > 1 && p.k / s.tileK < s.kSlices())
    return reject(s, "split_k x cluster_k = " + str(s.kSlices()) + " slices of K, but K = " +
                         str(p.k) + " has only " + str(p.k / s.tileK) + " chunks of tile K = " +
                         str(s.tileK));
  if (isGrouped(p)) {
    int64_t g = p.scheme.groupSize;
    if (g == kUnitK)
      return checkQuantTail(p, s);
    if (g % kBlockK)
      return reject(s, "group size " + str(g) + " is neither " + str(kUnitK) +
                           " nor a multiple of " + str(kBlockK));
    if (s.tileK % g && g % s.tileK)
      return reject(s, "tile K = " + str(s.tileK) + " and group size " + str(g) +
                           " must divide one another (scales are loaded once per group)");
  }
  return checkQuantTail(p, s);
}

Status checkPartialSums(const Schedule &s, int64_t bytes) {
  if (bytes > kStaticSharedBytesPerBlock)
    return reject(s, "the warps' partial sums need " + str(bytes) +
                         " bytes of shared memory; at most " + str(kStaticSharedBytesPerBlock) +
                         " are supported");
  return Status::success();
}

} // namespace

namespace rules {

// Two-level scales whose kernels keep the most live per subtile: a code
// and a step for the scale and for the min, or for two scales (groups of 16).
bool heavyTwoLevel(const Problem &p) {
  return p.scheme.hasSuperBlocks() && (p.scheme.hasZeros() || p.scheme.groupSize == kUnitK);
}

bool bf16ZeroValues(const Problem &p) {
  return p.activation == Activation::BF16 && p.scheme.zero == formats::ZeroMode::SubtractCode &&
         !p.scheme.zeroCodes;
}

} // namespace rules

namespace {

Status checkGemvTiled(const Problem &p, const Schedule &s) {
  if (s.tileM < 1 || s.tileM > 8)
    return reject(s, "tile M must be 1..8, got " + str(s.tileM));
  if (Status c = checkPartialSums(s, gemvTiledPartialBytes(s)); !c)
    return c;
  // 16 warps leave a thread 128 registers; zero points (a zero and a scale
  // per subtile, and the centred codes) with two chunks in flight spilled
  // there (8 bytes for int4 g64 sub_code on sm_80).
  if (p.scheme.hasZeros() && s.splitK >= 16 && s.stages > 1)
    return reject(s, "zero points with split_k >= 16 and more than one chunk in flight need more "
                     "than the 128 registers a thread of 16 warps gets");
  // Two-level codes and steps (for each scale, and each min, of every
  // subtile) with two chunks in flight spilled: 32 bytes for bf16 compact
  // int4 4096 x 11008 (2 x 64 x 128, split_k 8), 16 for int8 codes per 16
  // (1 x 64 x 128, split_k 16), sm_90a.
  if (heavyTwoLevel(p) && s.stages > 1)
    return reject(s, "two-level scales with mins or groups of 16 and more than one chunk in "
                     "flight need more registers than a thread gets");
  // Groups of 16 take two scale picks and a select per column and block;
  // with 4 rows' dots that spilled at 128 registers (64 to 128 bytes, NVFP4
  // 4 x 64 x 128, split_k 8, sm_90a).
  if (isGrouped(p) && p.scheme.groupSize == kUnitK && s.tileM > 2)
    return reject(s, "groups of " + str(kUnitK) + " with tile M > 2 need more than the 128 "
                     "registers a thread gets, got tile M " + str(s.tileM));
  // One-byte block scales (MXFP4's e8m0) are widened with integer ops per
  // period; with 4 rows' dots that spilled at 128 registers (16 bytes, e2m1
  // e8m0 g32 5120 x 13824, 4 x 64 x 128, split_k 8, sm_90a; 1024 x 4096 did
  // not, so the rule takes the tile, not the shape).
  if (isGrouped(p) && scaleElementBytes(p) == 1 && s.tileM > 2)
    return reject(s, "one-byte block scales with tile M > 2 need more than the 128 registers "
                     "a thread gets, got tile M " + str(s.tileM));
  // Both with 2 rows, two chunks in flight and a cluster, once a lane's dot
  // spanned both k16 steps of a block: 8 bytes (uint4 g16) and 32 (MXFP4),
  // 2 x 64 x 128, split_k 8, cluster_k 2, 4096 x 4096, sm_90a; without the
  // cluster they fit.
  if (isGrouped(p) && (p.scheme.groupSize == kUnitK || scaleElementBytes(p) == 1) &&
      s.tileM > 1 && s.stages > 1 && s.clusterK > 1)
    return reject(s, "groups of " + str(kUnitK) + " and one-byte block scales with tile M > 1, "
                     "more than one chunk in flight and cluster_k > 1 need more than the 128 "
                     "registers a thread gets");
  // A lookup table's entries stay in registers; with 4 rows' dots that
  // took 124-128 of the 128 registers (4 x 64 x 128, split_k 8, sm_90a), and
  // with groups shorter than tile K it spilled 24 bytes (nf4 and a user
  // table, g64 with f16 activations, 4096 x 1024; 2048 and more fit, so the
  // rule takes the tile, not the shape).
  if (p.code.asLut() && isGrouped(p) && p.scheme.groupSize < s.tileK && s.tileM > 2)
    return reject(s, "lookup tables in groups shorter than tile K with tile M > 2 need more "
                     "than the 128 registers a thread gets, got tile M " +
                         str(s.tileM));
  // f32 products (e5m2) with 4 rows' dots spilled 88 bytes (4 x 64 x 128,
  // split_k 8, 4096 x 4096, sm_90a).
  if (needsWideDot(p.code, p.activation) && s.tileM > 2)
    return reject(s, "f32 dots (e5m2 codes) with tile M > 2 need more than the 128 registers "
                     "a thread gets, got tile M " + str(s.tileM));
  return checkSplitKProblem(p, s);
}

Status checkMmaSplitK(const Problem &p, const Schedule &s) {
  if (s.tileM != kMmaFragmentN && s.tileM != 2 * kMmaFragmentN && s.tileM != 4 * kMmaFragmentN)
    return reject(s, "tile M must be 8, 16 or 32 (more accumulators spill), got " + str(s.tileM));
  if (s.tileN != kColumnsPerUnit && s.tileN != 2 * kColumnsPerUnit)
    return reject(s,
                  "tile N must be 64 or 128 (one or two weight-layout tiles), got " + str(s.tileN));
  if (p.n % s.tileN)
    return reject(s, "N = " + str(p.n) + " is not a multiple of tile N = " + str(s.tileN));
  if (s.warpsM != 1 || s.warpsN != 1)
    return reject(s, "warps must be [1, 1]: the block's warps are its split_k warps along K");
  if (Status c = checkPartialSums(s, mmaSplitKPartialBytes(s)); !c)
    return c;
  if (Status c = checkSplitKProblem(p, s); !c)
    return c;
  // 16 warps leave a thread 128 registers; groups of 16 keep two picks per
  // column and the chunk's scale runs live, and spilled there (40 bytes,
  // NVFP4 8 x 64 x 128 on sm_90a, measured when each k16 step had its own
  // scales; not measured since a lane has one).
  if (isGrouped(p) && p.scheme.groupSize == kUnitK && s.splitK >= 16)
    return reject(s, "groups of " + str(kUnitK) + " with split_k >= 16 need more than the 128 "
                     "registers a thread of 16 warps gets");
  // Two-level codes and steps per subtile across 32 rows' accumulators
  // spilled at tile N 128 (72 bytes on sm_90a, 28 on sm_80: compact int4
  // 4096 x 4096, split_k 2; 24 bytes: int8 codes per 16), and with 16 warps'
  // 128 registers (8 to 40 bytes: compact int4, 8 x 64 x 128 and 8 x 64 x 256).
  if (heavyTwoLevel(p) && s.tileM == 4 * kMmaFragmentN && s.tileN == 2 * kColumnsPerUnit)
    return reject(s, "two-level scales with mins or groups of 16 at tile M 32 and tile N 128 "
                     "need more registers than a thread gets");
  // Zero values (sub_code without zero codes) decoded to bf16 at tile M 32
  // and tile N 128 took 246-255 registers and spilled 24 bytes (uint2 g128,
  // 4096 x 1024, split_k 2, sm_90a; uint1, 3, 4 and 8 fit at the edge).
  if (bf16ZeroValues(p) && s.tileM == 4 * kMmaFragmentN && s.tileN == 2 * kColumnsPerUnit)
    return reject(s, "sub_code zero values with bf16 activations at tile M 32 and tile N 128 "
                     "need more registers than a thread gets");
  if (heavyTwoLevel(p) && s.splitK >= 16)
    return reject(s, "two-level scales with mins or groups of 16 and split_k >= 16 need more "
                     "than the 128 registers a thread of 16 warps gets");
  // A cluster's reduction on top of two-level codes and steps at tile K 256
  // held 206-255 registers and spilled (32 bytes: Q5_K's uint5 with mins,
  // 4096 x 14336; 40 bytes: Q2_K's uint2 g16 with mins, bf16; both 8 x 64 x
  // 256, split_k 8, cluster_k 2, sm_90a).
  constexpr int64_t kHeavyTwoLevelClusterMaxTileK = 128;
  if (heavyTwoLevel(p) && s.clusterK > 1 && s.tileK > kHeavyTwoLevelClusterMaxTileK)
    return reject(s, "two-level scales with mins or groups of 16 in a cluster need more "
                     "registers than a thread gets at tile K " + str(s.tileK) + " (at most " +
                         str(kHeavyTwoLevelClusterMaxTileK) + ")");
  int64_t slots = mmaSplitKRingSlots(s);
  if (s.stages > 1 && slots > kMaxRingSlots)
    return reject(s, "stages x tile K / " + str(kBlockK) + " = " + str(slots) +
                         " ring slots per warp; at most " + str(kMaxRingSlots) + " are supported");
  int64_t ring = mmaSplitKRingBytes(s, p.codeBits()), partials = mmaSplitKPartialBytes(s);
  if (add(partials, ring) > kMaxSharedBytesPerBlock)
    return reject(s, "the warps' rings (" + str(ring) + " bytes) and partial sums (" +
                         str(partials) + ") need more shared memory than any GPU gives a block (" +
                         str(kMaxSharedBytesPerBlock) + ")");
  return Status::success();
}

// dequant: the gemv_tiled loads and decode, with every decoded value
// written instead of multiplied, so the same K rules; no partial sums.
Status checkDequant(const Problem &p, const Schedule &s) {
  return checkSplitKProblem(p, s);
}

} // namespace

std::string scheduleSubject(const Schedule &s) {
  if (s.family == Family::Mma && s.splitK > 1)
    return "mma schedule with split_k > 1";
  return std::string(familyName(s.family)) + " schedule";
}

Status checkScheduleStructure(const Schedule &s) {
  for (int64_t size : {s.tileM, s.tileN, s.tileK})
    if (size <= 0)
      return makeError("tile sizes must be positive");
  for (int64_t count : {s.warpsM, s.warpsN})
    if (count <= 0)
      return makeError("warp counts must be positive");
  if (mul(s.warpsM, s.warpsN) > 32)
    return makeError("a block holds at most 32 warps, got " + str(mul(s.warpsM, s.warpsN)));
  if (s.stages < 1)
    return makeError("stages must be at least 1, got " + str(s.stages));
  if (s.splitK < 1)
    return makeError("split_k must be at least 1, got " + str(s.splitK));
  if (s.clusterK < 1 || s.clusterK > kMaxClusterK)
    return makeError("cluster_k (blocks of a cluster along K) must be 1.." + str(kMaxClusterK) +
                     ", got " + str(s.clusterK));
  if (s.clusterK > 1 &&
      ((!s.splitsK() && s.family != Family::Wgmma) || s.family == Family::Dequant))
    return makeError("cluster_k > 1 splits K across the blocks of a cluster, which only the "
                     "split-K families (gemv_tiled, and mma with split_k > 1) and wgmma do; "
                     "got a " +
                     std::string(familyName(s.family)) + " schedule with split_k = " +
                     str(s.splitK));
  if (s.walksTiles() && s.family != Family::Wgmma)
    return makeError("scheduler = " + std::string(tileSchedulerName(s.scheduler)) +
                     " (a block an SM walking the output tiles) is for the wgmma family, got a " +
                     std::string(familyName(s.family)) + " schedule");
  if (s.family == Family::GemvTiled &&
      (s.tileN != kColumnsPerUnit || s.warpsM != 1 || s.warpsN != 1 || s.tileK % kBlockK))
    return makeError("a 'gemv_tiled' schedule reads 64 x 32 weight tiles with split_k warps "
                     "along K, each taking tile K values at a time: need tile N = 64, warps = "
                     "[1, 1] and tile K a multiple of 32");
  if (s.family == Family::Dequant &&
      (s.tileM != 1 || s.tileN != kColumnsPerUnit || s.warpsM != 1 || s.warpsN != 1 ||
       s.tileK % kBlockK))
    return makeError("a 'dequant' schedule writes 64 x 32 weight tiles with split_k warps "
                     "along K, each taking tile K values at a time: need tile [1, 64, K] with "
                     "K a multiple of 32 and warps = [1, 1]");
  if (s.family == Family::Mma && s.splitK > 1) {
    // Split-K mma computes W·xᵀ: W's columns are the m16 side, x's rows the
    // n8 side, and K goes in 32-wide blocks of the paired K order.
    if (s.tileM % kMmaFragmentN || s.tileN % kMmaFragmentM || s.tileK % kBlockK)
      return makeError("an 'mma' tile with split_k > 1 needs M a multiple of 8, N of 16 and K "
                       "of 32, got tile [" +
                       str(s.tileM) + ", " + str(s.tileN) + ", " + str(s.tileK) + "]");
  } else if (s.family == Family::Wgmma) {
    // W·xᵀ again: warps own 64-column layout tiles (the m64 side of a
    // warpgroup's four warps), x's rows are wgmma's N in 8s, K in k16 steps.
    // Two warpgroups may instead share four layout tiles (wgmmaSharesTiles).
    if (s.tileM % kMmaFragmentN ||
        (s.tileN % (s.warpsN * kColumnsPerUnit) && !wgmmaSharesTiles(s)) || s.tileK % kUnitK)
      return makeError("a 'wgmma' tile needs M a multiple of 8, N of 64 per warp (or 256 over "
                       "two warpgroups that share it) and K of 16, "
                       "got tile [" +
                       str(s.tileM) + ", " + str(s.tileN) + ", " + str(s.tileK) + "] over warps [" +
                       str(s.warpsM) + ", " + str(s.warpsN) + "]");
  } else if (s.family == Family::Mma) {
    // Each warp covers a whole number of m16n8k16 instructions.
    int64_t warpM = s.tileM / s.warpsM, warpN = s.tileN / s.warpsN;
    if (s.tileM % s.warpsM || s.tileN % s.warpsN || warpM % kMmaFragmentM ||
        warpN % kSubtileColumns || s.tileK % kUnitK)
      return makeError(std::string("an '") + familyName(s.family) +
                       "' tile must give each warp a multiple of 16x8 and K a multiple of 16, "
                       "got tile [" +
                       str(s.tileM) + ", " + str(s.tileN) + ", " + str(s.tileK) + "] over warps [" +
                       str(s.warpsM) + ", " + str(s.warpsN) + "]");
  }
  return Status::success();
}

Status checkSchedule(const Problem &problem, const Schedule &s) {
  if (Status structure = checkScheduleStructure(s); !structure)
    return structure;
  switch (s.family) {
  case Family::Gemv: return checkGemv(problem, s);
  case Family::GemvTiled: return checkGemvTiled(problem, s);
  case Family::Mma: return s.splitK > 1 ? checkMmaSplitK(problem, s) : checkStagedMma(problem, s);
  case Family::Wgmma: return checkWgmma(problem, s);
  case Family::Dequant: return checkDequant(problem, s);
  }
  return makeError("unknown kernel family");
}

int64_t mmaStagedSharedBytes(const Schedule &s, int codeBits) {
  int64_t activations = mul(mul(s.tileM, s.tileK), kStagedActivationBytes);
  return mul(s.stages, add(activations, codeTileBytes(s.tileN, s.tileK, codeBits)));
}

Status checkScheduleArch(const Schedule &s, const TargetArch &arch) {
  if (s.family == Family::Wgmma && !arch.hasWgmma)
    return makeError("wgmma schedule: wgmma, TMA and setmaxnreg exist only on sm_90a, not on " +
                     arch.name);
  if (s.clusterK > 1 && arch.computeCapability < kClusterComputeCapability)
    return makeError(scheduleSubject(s) + ": cluster_k > 1 needs thread-block clusters and "
                     "distributed shared memory, which exist from sm_90 on, not on " +
                     arch.name);
  return Status::success();
}

// The e4m3 mma.sync and wgmma forms exist from sm_89 on.
constexpr int kE4M3ComputeCapability = 89;

Status checkScheduleArch(const Problem &p, const Schedule &s, const TargetArch &arch) {
  if (Status family = checkScheduleArch(s, arch); !family)
    return family;
  if (p.activation == Activation::E4M3 && arch.computeCapability < kE4M3ComputeCapability)
    return makeError(scheduleSubject(s) + ": e4m3 activations need the fp8 tensor cores, which "
                     "exist from sm_89 on, not on " + arch.name);
  return Status::success();
}

int64_t gemvTiledPartialBytes(const Schedule &s) {
  return mul(mul(mul(s.splitK, s.tileM), kSubtilesPerUnit * kLaneGroups), 4);
}

int64_t mmaSplitKAccumulators(const Schedule &s) {
  return mul(s.tileN / kMmaFragmentM, s.tileM / kMmaFragmentN);
}

int64_t mmaSplitKPartialBytes(const Schedule &s) {
  return mul(mul(s.splitK, mmaSplitKAccumulators(s)), kFragmentFloats * 4);
}

int64_t mmaSplitKRingSlots(const Schedule &s) {
  return mul(s.stages, s.tileK / kBlockK);
}

int64_t mmaSplitKRingBytes(const Schedule &s, int codeBits) {
  if (s.stages <= 1)
    return 0;
  int64_t slotBytes = add(codeTileBytes(s.tileN, kBlockK, codeBits),
                          mul(mul(s.tileM, kBlockK), kStagedActivationBytes));
  return mul(mul(s.splitK, mmaSplitKRingSlots(s)), slotBytes);
}

int64_t staticSharedBytes(const Schedule &s, int codeBits) {
  switch (s.family) {
  case Family::Gemv: return 0;
  case Family::GemvTiled: return gemvTiledPartialBytes(s);
  case Family::Mma:
    return s.splitK > 1 ? mmaSplitKPartialBytes(s) : mmaStagedSharedBytes(s, codeBits);
  case Family::Wgmma:
  case Family::Dequant: return 0;
  }
  return 0;
}

int64_t dynamicSharedBytes(const Schedule &s, const Problem &p) {
  if (s.family == Family::Wgmma)
    return wgmmaSharedBytes(s, p.activation, p.codeBits());
  return s.family == Family::Mma && s.splitK > 1 ? mmaSplitKRingBytes(s, p.codeBits()) : 0;
}

} // namespace lowbit::core
