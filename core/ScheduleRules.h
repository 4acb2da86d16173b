// The schedule rules: which schedules a kernel family can compile for which
// problems, and the shared memory each needs. The one copy of them: the
// `#lb.schedule` verifier (checkScheduleStructure), every lb-tile family
// (checkSchedule, whose message becomes the op's error) and the tuner's
// search space (checkSchedule, then its own arch limits) call these, so the
// tuner never proposes a schedule the compiler rejects.
//
// The rules ask the fragment facts (core/FragmentFacts.h) instead of
// assuming a width: every code type core::codeFragment accepts is accepted,
// because a lane always decodes 32 values per unit and only the bytes it
// loads change with the width. Staged codes take tile x bits / 8 bytes of
// shared memory.
#pragma once

#include "core/Arch.h"
#include "core/FragmentFacts.h"
#include "core/Problem.h"
#include "core/Schedule.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <string>

namespace lowbit::core {

// gemv: a lane's unit is 32 consecutive K of one row, so a warp covers
// 32 x 32 = 1024 values of K per step.
constexpr int64_t kGemvKPerWarpStep = 32 * kValuesPerUnit;
// gemv: the smallest group a lane's unit can split into. A gemv_row unit
// decodes to its 32 values in K order, registers 0-7 holding the first 16 and
// 8-15 the last, for every code width; so a group of 16 (or any multiple)
// gives each half one scale and zero. (The mma_b_paired families apply
// scales per 32-wide block of two k16 steps, or per K tile, and keep
// groups of 32.)
constexpr int64_t kGemvGroupGranule = kValuesPerUnit / 2;
// A gemv warp computes 1, 2, 4 or 8 rows of W (tile N / warps N), sharing each
// activation load between them: at M = 1 the activations, reloaded per row
// of W, were what saturated L1 (ncu on the H200: L1/TEX 97% busy, DRAM 31%,
// for any code width). Rows of X times rows of W per warp stay at most 8.
constexpr int64_t kGemvMaxDotsPerLane = 8;
inline int64_t gemvRowsPerWarp(const Schedule &s) {
  return s.warpsN > 0 ? s.tileN / s.warpsN : 1;
}
// mma: the m16n8k16 fragment's M.
constexpr int64_t kMmaFragmentM = 16;
// The 48 KiB of static shared memory every arch gives a block without an
// opt-in; the staged mma and the split-K partial sums live there.
constexpr int64_t kStaticSharedBytesPerBlock = 48 * 1024;
// The most shared memory any supported GPU gives a block (sm_90's opt-in);
// a split-K mma's rings and partial sums must fit it to run anywhere.
constexpr int64_t kMaxSharedBytesPerBlock = 232448;
// A split-K mma warp's cp.async ring has at most this many slots.
constexpr int64_t kMaxRingSlots = 16;
// f16 and bf16 activations (core::activationBytes) staged in shared memory.
constexpr int64_t kStagedActivationBytes = 2;

// wgmma: one swizzled row of activations per K tile (128 bytes of f16 or
// bf16, 64 of s8), 4
// warps a warpgroup, each of whose warps owns one 64-column layout tile.
constexpr int64_t kWgmmaTileK = 64;
constexpr int64_t kWarpgroupWarps = 4;
// A layout tile's 16-row slices: wgmma's m64 is slice r of a warpgroup's
// four tiles, and a warp keeps one accumulator a slice it multiplies.
constexpr int64_t kWgmmaSlicesPerTile = kColumnsPerUnit / 16;
// The split-K families' blocks along K in one cluster: 8 is the portable
// cluster size every sm_90 part launches without an opt-in.
constexpr int64_t kMaxClusterK = 8;
// Thread-block clusters and distributed shared memory: sm_90 and up.
constexpr int kClusterComputeCapability = 90;

// What the schedule's diagnostics start with: "gemv schedule", "mma
// schedule", "mma schedule with split_k > 1", "gemv_tiled schedule" or
// "wgmma schedule". A caller that rejects a problem before the rules run
// (it cannot express it as a core::Problem) starts its message the same way.
std::string scheduleSubject(const Schedule &schedule);

// The rules a schedule obeys whatever the problem, as the `#lb.schedule`
// verifier states them: positive sizes, at most 32 warps, stages, split_k
// and cluster_k at least 1 (cluster_k > 1 only for the split-K families,
// and at most kMaxClusterK), and each family's tile shape (gemv_tiled: 64 columns, warps
// [1, 1], K in 32-wide blocks; dequant: the same with tile M 1; split-K mma:
// M in 8s, N in 16s, K in 32s; mma and wgmma: whole m16n8k16 instructions per
// warp).
Status checkScheduleStructure(const Schedule &schedule);

// OK when the schedule's family can compute the problem with it, or the
// reason as lb-tile reports it ("<subject>: <why>", or the structure rule's
// message). Structure first, then the family's rules in the compiler's
// order: the code type (core::codeFragment), tile shape against the
// problem's N, K and group size, shared memory, and last the quantization
// features no family implements (act-order).
Status checkSchedule(const Problem &problem, const Schedule &schedule);

// Shared memory, in bytes, for codes of `codeBits` bits:
// - the staged mma: `stages` buffers of a tile M x tile K activation tile and
//   a tile N x tile K code tile (static);
int64_t mmaStagedSharedBytes(const Schedule &schedule, int codeBits);
// - gemv_tiled: the warps' partial sums, [split_k, tile M x 8 subtiles,
//   8 lane groups] f32 (static);
int64_t gemvTiledPartialBytes(const Schedule &schedule);
// - the split-K mma: the warps' W·xᵀ accumulator fragments, [split_k,
//   tile N / 16 x tile M / 8, 32 lanes x 4] f32 (static)...
int64_t mmaSplitKPartialBytes(const Schedule &schedule);
// (A split-K mma warp's accumulator fragments: tile N / 16 x tile M / 8.)
int64_t mmaSplitKAccumulators(const Schedule &schedule);
// ...and with stages > 1 each warp's cp.async ring of stages x tile K / 32
// slots, a slot holding one 32-wide block: tile N x 32 codes and tile M x 32
// activations (dynamic; 0 with one stage).
int64_t mmaSplitKRingSlots(const Schedule &schedule);
int64_t mmaSplitKRingBytes(const Schedule &schedule, int codeBits);

// - wgmma: the ring of `stages` tile M x 64 activation tiles (rows of 128
//   bytes for f16 and bf16, 64 for s8), and the bytes that aligning it to
//   the swizzle's pattern (at most 1024 bytes) may take (dynamic).
constexpr int64_t kWgmmaRingAlignment = 1024;
int64_t wgmmaRingBytes(const Schedule &schedule, Activation activation);
// ...and with cluster_k > 1, after the rings, every consumer warp's m64 x
// tile M f32 accumulators (four, or two where warpgroups share layout
// tiles), which the cluster's blocks add over distributed shared memory
// (tile M / 2 floats a thread each).
int64_t wgmmaClusterPartialBytes(const Schedule &schedule);
// ...and where warpgroups share layout tiles (wgmmaSharesTiles), a ring of
// the block's codes next to it: `stages` tile N x 64 codes of `codeBits`
// bits, which the producer copies with the activations, so the two
// warpgroups read their shared tiles once from global memory (0 otherwise).
int64_t wgmmaWeightRingBytes(const Schedule &schedule, int codeBits);
// scheduler = stream_k: the caller's workspace for a launch of `blocks`
// blocks. First each block's partial sums of the split tile its run starts
// inside, laid out as a cluster's partials (every consumer warp's m64 x
// tile M f32 accumulators, a float4 a lane at a time), then one u32 flag a
// consumer warp of each block, which the launch clears on its stream first
// (a block's warp sets it once its partials are out). 0 for the others.
int64_t streamKPartialBytes(const Schedule &schedule, int64_t blocks);
int64_t streamKFlagBytes(const Schedule &schedule, int64_t blocks);
inline int64_t streamKWorkspaceBytes(const Schedule &schedule, int64_t blocks) {
  return streamKPartialBytes(schedule, blocks) + streamKFlagBytes(schedule, blocks);
}
// scheduler = stream_k: of `tiles` output tiles on `blocks` blocks, how many
// run whole (tiles blockIdx.x, + blocks, ...); the rest are split along K
// into one run a block. A last wave at least kStreamKWholeLastWaveQuarters /
// 4 full runs whole with the others; otherwise the last full wave and the
// partial one are split, so that no block's run is shorter than a tile.
inline constexpr int64_t kStreamKWholeLastWaveQuarters = 3;
int64_t streamKWholeTiles(int64_t tiles, int64_t blocks);
// The rings and the partials: what a wgmma kernel's launch passes.
int64_t wgmmaSharedBytes(const Schedule &schedule, Activation activation, int codeBits);
// wgmma: how many of its layout tile's four 16-row slices a consumer warp
// multiplies. Four, unless two consumer warpgroups share the block's four
// layout tiles (tile N 256 over warps [1, 8]): then warpgroup g takes slices
// 2 g and 2 g + 1 of every tile, so each decoded weight meets twice the
// tokens (tile M up to 128) for the same accumulator registers.
int64_t wgmmaSlicesPerWarp(const Schedule &schedule);
bool wgmmaSharesTiles(const Schedule &schedule);
// wgmma: whether a consumer keeps its wgmmas running from one K tile into
// the next, giving a stage back to the producer once the next tile's first
// step is the only one in flight, instead of draining the pipe at the end
// of every tile. The overlap keeps one more step's fragments live, so only
// the light decodes take it: integer codes of at most 4 bits, f16 or bf16
// activations, no zero points and no super-blocks, groups of at least tile
// K (the heavier ones spilled 16-136 bytes with it on sm_90a); one consumer
// warpgroup (two cover each other's drains), and neither stream-K nor
// clusters, whose extra loop or epilogue spilled with it.
bool wgmmaOverlapsKTiles(const Problem &problem, const Schedule &schedule);

// Whether the schedule's family has kernels for the arch (wgmma: only
// sm_90a; cluster_k > 1: sm_90 and up); the reason when not.
Status checkScheduleArch(const Schedule &schedule, const TargetArch &arch);
// ...and whether the problem's own instructions exist there too (e4m3
// activations: the fp8 mma, sm_89 and up).
Status checkScheduleArch(const Problem &problem, const Schedule &schedule,
                         const TargetArch &arch);

// A block's static shared memory (what ptxas reports; 0 for gemv) and the
// dynamic shared memory its launch passes, by family.
int64_t staticSharedBytes(const Schedule &schedule, int codeBits);
int64_t dynamicSharedBytes(const Schedule &schedule, const Problem &problem);

} // namespace lowbit::core
