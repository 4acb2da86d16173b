// What a plan does to its ranges once each has a kernel: merging
// neighbours, the fallbacks of kernels that take the caller's workspace, the
// workspace itself, and the dense path's cuBLASLt fallback.
#include "runtime/api/PlanRanges.h"

#include "core/ScheduleRules.h"
#include "runtime/cuda/CublasLt.h"

#include <algorithm>
#include <map>

namespace lowbit::api {

std::string rangeText(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + ", " + (hi < 0 ? std::string("inf") : std::to_string(hi)) + ")";
}

// Drops kernels no range uses (after replacements) and merges neighbouring
// ranges served by one kernel (with one fallback), so explain() reports
// whole ranges. A range's fallback kernel stays.
void compact(PlanSpec &spec) {
  std::vector<PlannedKernel> kept;
  std::map<std::string, size_t> newIndex; // by kernel id: a substitute may repeat
  auto keep = [&](size_t old) {
    auto [at, inserted] = newIndex.emplace(spec.kernels[old].id, kept.size());
    if (inserted)
      kept.push_back(spec.kernels[old]);
    return at->second;
  };
  std::vector<PlannedRange> merged;
  for (PlannedRange range : spec.ranges) {
    range.kernel = keep(range.kernel);
    if (range.fallback >= 0)
      range.fallback = static_cast<int>(keep(static_cast<size_t>(range.fallback)));
    if (!merged.empty() && merged.back().kernel == range.kernel &&
        merged.back().fallback == range.fallback &&
        merged.back().databasePath == range.databasePath)
      merged.back().mHi = range.mHi;
    else
      merged.push_back(std::move(range));
  }
  spec.kernels = std::move(kept);
  spec.ranges = std::move(merged);
}

// The measured fallbacks (db::Choice::fallbackKernelId) must read the
// plan's weight layout; one that does not is dropped with a note.
void checkFallbackLayouts(PlanSpec &spec) {
  bool dropped = false;
  for (PlannedRange &range : spec.ranges) {
    if (range.fallback < 0)
      continue;
    const PlannedKernel &fallback = spec.kernels[static_cast<size_t>(range.fallback)];
    if (fallback.layoutId == spec.layoutIdHex)
      continue;
    spec.notes.push_back("M " + rangeText(range.mLo, range.mHi) + ": " + fallback.name +
                         ", the kernel measured best there without a workspace, reads layout " +
                         fallback.layoutId + ", not the plan's " + spec.layoutIdHex +
                         "; it is not the range's fallback");
    range.fallback = -1;
    dropped = true;
  }
  if (dropped)
    compact(spec);
}

// The fallbacks of the ranges whose kernel needs the caller's workspace (the
// dense path, stream-K) and that have no measured one: the nearest range's
// kernel that needs none, below first (M just under the range is served by
// what suits large M best).
void assignWorkspaceFallbacks(PlanSpec &spec) {
  auto plainKernelOf = [&](size_t r) -> int {
    const PlannedKernel &k = spec.kernels[spec.ranges[r].kernel];
    return k.needsWorkspace ? -1 : static_cast<int>(spec.ranges[r].kernel);
  };
  for (size_t r = 0; r < spec.ranges.size(); ++r) {
    PlannedRange &range = spec.ranges[r];
    if (!spec.kernels[range.kernel].needsWorkspace || range.fallback >= 0)
      continue;
    for (size_t d = 1; range.fallback < 0 && d < spec.ranges.size(); ++d) {
      if (d <= r)
        range.fallback = plainKernelOf(r - d);
      if (range.fallback < 0 && r + d < spec.ranges.size())
        range.fallback = plainKernelOf(r + d);
    }
  }
}

// The workspace a stream-K kernel needs at the most blocks it launches (one
// an SM), with a note for each range it serves.
void planStreamKWorkspace(PlanSpec &spec) {
  for (const PlannedRange &range : spec.ranges) {
    const LaunchGeometry &g = spec.kernels[range.kernel].geometry;
    if (!g.streamK())
      continue;
    const int64_t bytes = g.smCount * (g.partialBytesPerBlock + g.flagBytesPerBlock);
    spec.workspaceBytes = std::max(spec.workspaceBytes, bytes);
    spec.notes.push_back(
        "M " + rangeText(range.mLo, range.mHi) + ": " + spec.kernels[range.kernel].name +
        " splits the last wave's tiles along K (stream-K), which needs a "
        "workspace of up to " +
        std::to_string(bytes) + " bytes (lowbit_plan_workspace_bytes); " +
        (range.fallback < 0
             ? std::string("no other kernel serves these M, so lowbit_matmul "
                           "requires it")
             : "with less, " + spec.kernels[static_cast<size_t>(range.fallback)].name +
                   " serves them"));
  }
}

// The dense ranges' fallbacks and the workspace the dense path needs, with a
// note that says both. Quantized activations never take the dense path: its
// cuBLASLt matmul multiplies f16 or bf16 x by dequant(W), so their dense
// ranges go to the fallbacks (NO_KERNEL without one).
ApiStatus planDensePath(PlanSpec &spec) {
  if (!spec.hasDenseRange())
    return ApiStatus();
  if (core::isQuantized(spec.problem.activation))
    return dropDenseRanges(spec, std::string("the dense path multiplies f16 or bf16 x, not ") +
                                     core::activationName(spec.problem.activation));
  const int64_t denseBytes =
      core::activationBytes(spec.problem.activation) * spec.problem.n * spec.problem.k;
  // cuBLASLt's workspace starts 256-byte aligned, as cuMemAlloc's are.
  spec.denseWeightBytes = (denseBytes + 255) / 256 * 256;
  spec.workspaceBytes =
      spec.denseWeightBytes + static_cast<int64_t>(cuda::CublasLt::kWorkspaceBytes);
  for (const PlannedRange &range : spec.ranges) {
    const PlannedKernel &kernel = spec.kernels[range.kernel];
    if (!kernel.dense)
      continue;
    std::string note = "M " + rangeText(range.mLo, range.mHi) + ": the dense path (" + kernel.name +
                       " writes dequant(W) into the workspace, then cuBLASLt), "
                       "which needs a workspace of " +
                       std::to_string(spec.workspaceBytes) + " bytes; ";
    note += range.fallback < 0
                ? std::string("no other kernel serves these M, so lowbit_matmul requires it")
                : "with less, " + spec.kernels[static_cast<size_t>(range.fallback)].name +
                      " serves them";
    spec.notes.push_back(note);
  }
  return ApiStatus();
}

ApiStatus dropDenseRanges(PlanSpec &spec, const std::string &why) {
  for (PlannedRange &range : spec.ranges) {
    if (!spec.kernels[range.kernel].dense)
      continue;
    if (range.fallback < 0)
      return apiError(LOWBIT_STATUS_NO_KERNEL,
                      "the tuned table serves M " + rangeText(range.mLo, range.mHi) +
                          " with the dense path, which needs cuBLASLt, and no other kernel of "
                          "the plan serves those M: " +
                          why);
    spec.notes.push_back("M " + rangeText(range.mLo, range.mHi) +
                         ": the dense path needs "
                         "cuBLASLt (" +
                         why + "); " + spec.kernels[static_cast<size_t>(range.fallback)].name +
                         " serves these M");
    range.kernel = static_cast<size_t>(range.fallback);
    range.fallback = -1;
  }
  compact(spec);
  spec.denseWeightBytes = 0;
  spec.workspaceBytes = 0;
  spec.notesText.clear();
  for (const std::string &note : spec.notes)
    spec.notesText += (spec.notesText.empty() ? "" : "\n") + note;
  return ApiStatus();
}

} // namespace lowbit::api
