// Everything a plan decides before it touches the device: which kernel serves
// each M range, which image (cubin, or PTX to JIT) to load for it, the launch
// geometry, the weight layout all of them share, and the buffer sizes.
//
// It works on database rows and a device fingerprint only, so all of it is
// unit-tested without a GPU; LoadedPlan then loads the chosen images.
#pragma once

#include "core/KernelArguments.h"
#include "core/layout/WeightLayout.h"
#include "runtime/api/ApiError.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/kernels/KernelSet.h"
#include "tuning_db/Database.h"
#include "tuning_db/Fingerprint.h"
#include "tuning_db/Lookup.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::api {

// How to launch one kernel for M rows: grid = {gridX, ceil(M / rowsPerBlock),
// gridZ}, block = {blockThreads, 1, 1}. Precomputed so the hot path does two
// integer operations instead of parsing or allocating.
struct LaunchGeometry {
  unsigned gridX = 0;
  unsigned gridZ = 1;
  unsigned blockThreads = 0;
  int64_t rowsPerBlock = 1;
  int64_t maxM = 0; // the largest M whose grid fits (gridDim.y <= 65535)
  unsigned dynamicSharedBytes = 0;

  // scheduler = persistent: the blocks walk the tiles, min(SMs, tiles) of
  // them along x (kernels::launchShape).
  bool persistent = false;
  int64_t columnTiles = 0, smCount = 0;
  // scheduler = stream_k (persistent too): min(SMs, tiles x kTiles) blocks,
  // and a workspace of partialBytesPerBlock, then flagBytesPerBlock, a
  // block (core::streamKPartialBytes, streamKFlagBytes); 0 otherwise.
  int64_t kTiles = 0, partialBytesPerBlock = 0, flagBytesPerBlock = 0;
  bool streamK() const { return flagBytesPerBlock > 0; }

  unsigned gridY(int64_t m) const {
    return persistent ? 1u : static_cast<unsigned>((m + rowsPerBlock - 1) / rowsPerBlock);
  }
  unsigned gridXFor(int64_t m) const {
    if (!persistent)
      return gridX;
    int64_t tiles = (m + rowsPerBlock - 1) / rowsPerBlock * columnTiles;
    int64_t units = streamK() ? tiles * kTiles : tiles;
    return static_cast<unsigned>(smCount > 0 ? std::min(smCount, units) : tiles);
  }
  // Stream-K's workspace for M rows: the blocks' partials, then their flags,
  // which lowbit_matmul clears on the call's stream before the launch.
  int64_t flagOffset(int64_t m) const { return gridXFor(m) * partialBytesPerBlock; }
  int64_t flagBytes(int64_t m) const { return gridXFor(m) * flagBytesPerBlock; }
  int64_t workspaceBytes(int64_t m) const { return flagOffset(m) + flagBytes(m); }
};

// Derives the geometry and checks it against kernels::launchShape's rules;
// `smCount` is the device's, the blocks a persistent kernel launches.
Result<LaunchGeometry> launchGeometry(const kernels::KernelEntry &entry, int64_t smCount);

// True for a 64-bit little-endian ELF image for the CUDA machine (EM_CUDA),
// which is what a cubin is; anything else would fail (or worse) in the driver.
bool looksLikeCubin(const std::vector<uint8_t> &bytes);

struct PlannedKernel {
  std::string id, name, arch, family;
  kernels::KernelEntry entry;
  std::string layoutId; // 16 hex digits
  // What cuModuleLoadData gets: the cubin, or the PTX text with its NUL.
  std::vector<uint8_t> image;
  bool fromPtx = false;
  LaunchGeometry geometry;
  // The dense path (family "dequant"): this kernel writes dequant(W) into
  // the workspace and cuBLASLt multiplies it by x. Only a tuned table
  // dispatches it, at the M where it measured fastest.
  bool dense = false;
  // Its parameters in order (core::kernelArguments of the problem and its
  // schedule), held in place so that lowbit_matmul builds its parameter
  // array without allocating.
  std::array<core::KernelArgument, core::kMaxKernelArguments> arguments{};
  int argumentCount = 0;

  // core::Schedule::takesWorkspace of the kernel's schedule.
  bool needsWorkspace = false;
};

struct PlannedRange {
  int64_t mLo = 1;
  int64_t mHi = -1;  // -1: open-ended
  size_t kernel = 0; // index into PlanSpec::kernels
  // For a range whose kernel needs a workspace (PlannedKernel::
  // needsWorkspace): the kernel that serves it instead when lowbit_matmul's
  // workspace is too small for it (the nearest range's that needs none,
  // below first), or -1 when the plan has none.
  int fallback = -1;
  std::string databasePath;

  bool contains(int64_t m) const { return m >= mLo && (mHi < 0 || m < mHi); }
};

struct PlanSpec {
  core::Problem problem;
  std::string signature, problemId;
  db::Tier tier = db::Tier::Heuristic;
  std::vector<PlannedKernel> kernels;
  std::vector<PlannedRange> ranges; // sorted, contiguous from 1, last open-ended
  layout::WeightLayout layout;
  uint64_t layoutId = 0;
  std::string layoutIdHex;
  // workspaceBytes: the most any kernel of the plan needs after an act-order
  // plan's gathered x (the dense path's, or a stream-K kernel's at the most
  // blocks it launches).
  int64_t weightBytes = 0, scaleBytes = 0, zeroBytes = 0, workspaceBytes = 0;
  // With a dense range: the workspace holds dequant(W) ([N, K], the
  // activation type) in its first denseWeightBytes and cuBLASLt's own
  // workspace (CublasLt::kWorkspaceBytes) after them; workspaceBytes is the
  // sum. 0 without one.
  int64_t denseWeightBytes = 0;
  int64_t denseWorkspaceBytes() const {
    return denseWeightBytes
               ? denseWeightBytes + static_cast<int64_t>(cuda::CublasLt::kWorkspaceBytes)
               : 0;
  }
  bool hasDenseRange() const {
    for (const PlannedRange &range : ranges)
      if (kernels[range.kernel].dense)
        return true;
    return false;
  }
  // Act-order (lowbit_problem.act_order): lowbit_matmul first gathers
  // x[:, perm] into the workspace with kernels[permuteKernel]; perm (K
  // int32) sits in the packed weights buffer at permutationOffset, after the
  // codes' weightBytes.
  bool permutedColumns = false;
  size_t permuteKernel = 0;
  int64_t permutationOffset = 0;
  // The buffer lowbit_plan_packed_sizes reports: the codes, then the
  // permutation of an act-order plan.
  int64_t packedWeightBytes() const {
    return permutedColumns ? permutationOffset + problem.k * int64_t(sizeof(int32_t)) : weightBytes;
  }
  // The workspace's front: the gathered x of an act-order plan at M.
  int64_t permutedActivationBytes(int64_t m) const {
    if (!permutedColumns)
      return 0;
    return (m * problem.k * core::activationBytes(problem.activation) + 255) / 256 * 256;
  }
  // s8 or e4m3 activations (addActivationQuantizer): lowbit_matmul_quantizing
  // first quantizes f16 or bf16 x into the workspace with kernels[quantizeKernel]
  // (and, per tensor, kernels[absmaxKernel] before it). The workspace holds
  // the codes [M, K] first, then the f32 scales (M of them per token; per
  // tensor the scale, then the 32-bit word that collects max |x|).
  bool quantizesActivations = false;
  size_t quantizeKernel = 0, absmaxKernel = 0;
  int64_t quantizedCodeBytes(int64_t m) const {
    return quantizesActivations ? (m * problem.k + 255) / 256 * 256 : 0;
  }
  int64_t quantizedActivationBytes(int64_t m) const {
    if (!quantizesActivations)
      return 0;
    const int64_t scales =
        problem.activationScale == core::ActivationScale::PerTensor ? 2 * 4 : m * 4;
    return quantizedCodeBytes(m) + (scales + 255) / 256 * 256;
  }
  int scaleAlignment = 2;   // a scale's bytes, at least 4 with a tensor scale
  int zeroAlignment = 1;    // core::zeroAlignment
  bool hasZeros = false;
  std::vector<std::string> notes;
  std::string notesText; // notes joined with newlines, for lowbit_choice

  // Index into `ranges` of the range containing m (m >= 1), or -1.
  int rangeIndex(int64_t m) const {
    for (size_t i = 0; i < ranges.size(); ++i)
      if (ranges[i].contains(m))
        return static_cast<int>(i);
    return -1;
  }
};

// The act-order gather's block: one thread per column of x.
constexpr unsigned kPermuteThreads = 256;

// Makes `spec` an act-order plan: the gather kernel (embedded PTX) joins its
// kernels, the permutation's place follows the codes, and a note says so.
// UNSUPPORTED for quantized activations: the gather moves 16-bit values.
ApiStatus addColumnPermutation(PlanSpec &spec);

// The activation quantizer's block: a block per row of x.
constexpr unsigned kQuantizeThreads = 256;

// For s8 and e4m3 activations: the quantize kernels (embedded PTX) join the
// plan's kernels, so lowbit_matmul_quantizing can take f16 or bf16 x. A no-op
// for f16 and bf16 activations.
void addActivationQuantizer(PlanSpec &spec);

// Resolves and prepares every kernel of `problem` for `device`. Errors:
// UNKNOWN_PROBLEM (no database has it), NO_KERNEL (nothing runs on the
// device), CORRUPT_KERNEL (an unusable row, cubin or PTX), LAYOUT_CONFLICT
// (the ranges need different weight layouts and no same-layout substitute
// exists), INVALID_SHAPE (N, K not servable by the layout), DATABASE_ERROR.
Result<PlanSpec> buildPlanSpec(const std::vector<const db::Database *> &databases,
                               const core::Problem &problem, const db::DeviceFingerprint &device);

} // namespace lowbit::api
