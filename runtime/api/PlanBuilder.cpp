#include "runtime/api/PlanBuilder.h"
#include "runtime/api/PlanRanges.h"

#include "runtime/api/PermuteColumnsPtx.h"
#include "runtime/api/QuantizeActivationsPtx.h"

#include "core/ScheduleRules.h"
#include "runtime/cuda/CublasLt.h"

#include "tuning_db/Sha256.h"

#include "runtime/api/Problem.h"
#include "runtime/kernels/KernelRecordCodec.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace lowbit::api {
namespace {

constexpr int64_t kMaxGridY = 65535;

std::string shortId(const std::string &id) {
  return id.substr(0, 12);
}

std::string describeKernel(const db::KernelRecord &record) {
  return "kernel " + shortId(record.id) + " (" + record.entry + ", " + record.arch + ")";
}

std::string archText(const db::DeviceFingerprint &device) {
  return "compute capability " + std::to_string(device.ccMajor) + "." +
         std::to_string(device.ccMinor);
}

// A record turned into something loadable, or the reason it is not.
Result<PlannedKernel> prepareKernel(const db::KernelRecord &record, const std::string &problemId,
                                    const db::DeviceFingerprint &device,
                                    std::vector<std::string> &notes) {
  auto corrupt = [&](const std::string &why) {
    return apiError(LOWBIT_STATUS_CORRUPT_KERNEL, describeKernel(record) + ": " + why);
  };
  if (record.problemId != problemId)
    return corrupt("belongs to problem " + shortId(record.problemId) + ", not " +
                   shortId(problemId) + " (a hand-edited dispatch table?)");
  Expected<kernels::KernelEntry> entry = kernels::kernelEntry(record);
  if (!entry)
    return apiError(LOWBIT_STATUS_CORRUPT_KERNEL, entry.error());
  Expected<layout::WeightLayout> layout = layout::parseWeightLayout(entry->weightLayout);
  if (!layout)
    return corrupt("bad weight layout: " + layout.error());
  std::string layoutId = layout::layoutId(*layout);
  if (layoutId != record.weightLayoutId)
    return corrupt("its weight layout hashes to " + layoutId + " but the row says " +
                   record.weightLayoutId);
  Expected<db::Arch> arch = db::parseArch(record.arch);
  if (!arch)
    return corrupt(arch.error());

  PlannedKernel kernel;
  kernel.id = record.id;
  kernel.name = record.entry;
  kernel.arch = record.arch;
  kernel.family = record.family;
  kernel.dense = record.family == core::familyName(core::Family::Dequant);
  kernel.layoutId = layoutId;
  bool hasPtx = !record.ptx.empty();
  db::Runnable runnable = db::runnableOn(*arch, hasPtx, device.computeCapability());
  if (runnable == db::Runnable::No)
    return apiError(LOWBIT_STATUS_NO_KERNEL, describeKernel(record) + " cannot run on " +
                                                 device.name + " (" + archText(device) + ")" +
                                                 (hasPtx ? "" : " and has no PTX"));
  bool usePtx = runnable == db::Runnable::PtxOnly;
  if (!usePtx && !looksLikeCubin(record.cubin)) {
    if (!hasPtx)
      return corrupt(record.cubin.empty() ? "the cubin is missing and there is no PTX"
                                          : "the cubin is not a CUDA ELF image (corrupt) and "
                                            "there is no PTX to fall back on");
    notes.push_back(describeKernel(record) +
                    ": the cubin is missing or not a CUDA ELF image; JIT-compiling its PTX "
                    "instead");
    usePtx = true;
  }
  // A kernel's id is its cubin's sha256: an image altered inside the
  // database (four flipped bytes once passed as the original kernel) is
  // never loaded under that id.
  if (!usePtx) {
    if (std::string hash = db::sha256Hex(record.cubin); hash != record.id) {
      if (!hasPtx)
        return corrupt("its cubin hashes to " + shortId(hash) +
                       ", not to its id (altered after it was stored), and there is no PTX "
                       "to fall back on");
      notes.push_back(describeKernel(record) + ": the cubin hashes to " + shortId(hash) +
                      ", not to its id (altered after it was stored); JIT-compiling its PTX "
                      "instead");
      usePtx = true;
    }
  }
  if (usePtx) {
    if (record.ptx.find(".target") == std::string::npos)
      return corrupt("its PTX has no .target directive (corrupt)");
    kernel.image.assign(record.ptx.begin(), record.ptx.end());
    kernel.image.push_back(0); // the driver reads PTX as a C string
    kernel.fromPtx = true;
  } else {
    kernel.image = record.cubin;
  }
  // The entry carries the row's launch.dynamicSharedBytes (kernelEntry).
  Result<LaunchGeometry> geometry = launchGeometry(*entry, device.smCount);
  if (!geometry)
    return corrupt(geometry.error().message);
  kernel.geometry = *geometry;
  Expected<core::Schedule> schedule = core::parseSchedule(entry->schedule);
  if (!schedule) // launchGeometry read it already; kept for its reason
    return corrupt(schedule.error());
  const std::vector<core::KernelArgument> arguments =
      core::kernelArguments(entry->problem, *schedule);
  std::copy(arguments.begin(), arguments.end(), kernel.arguments.begin());
  kernel.argumentCount = static_cast<int>(arguments.size());
  kernel.needsWorkspace = schedule->takesWorkspace();
  kernel.entry = std::move(*entry);
  return kernel;
}

// The first database (by precedence) holding the kernel, with its blobs.
Result<db::KernelRecord> findKernel(const std::vector<const db::Database *> &databases,
                                    const std::string &kernelId) {
  for (const db::Database *database : databases) {
    auto found = database->findKernel(kernelId, true);
    if (!found)
      return apiError(LOWBIT_STATUS_DATABASE_ERROR, found.error());
    if (*found)
      return std::move(**found);
  }
  return apiError(LOWBIT_STATUS_CORRUPT_KERNEL,
                  "kernel " + shortId(kernelId) +
                      " is named by the lookup but no database holds it");
}

// Every kernel of the problem that prepares cleanly on this device, by
// precedence (a kernel id seen in an earlier database shadows later ones).
Result<std::vector<PlannedKernel>>
allUsableKernels(const std::vector<const db::Database *> &databases, const std::string &problemId,
                 const db::DeviceFingerprint &device) {
  std::vector<PlannedKernel> usable;
  std::vector<std::string> seen;
  for (const db::Database *database : databases) {
    auto records = database->kernelsForProblem(problemId, true);
    if (!records)
      return apiError(LOWBIT_STATUS_DATABASE_ERROR, records.error());
    for (const db::KernelRecord &record : *records) {
      if (std::find(seen.begin(), seen.end(), record.id) != seen.end())
        continue;
      seen.push_back(record.id);
      std::vector<std::string> ignoredNotes;
      Result<PlannedKernel> kernel = prepareKernel(record, problemId, device, ignoredNotes);
      // The dense path needs a workspace, so it serves only where a tuned
      // table put it, never as a substitute.
      if (kernel && !kernel->dense)
        usable.push_back(std::move(*kernel));
    }
  }
  return usable;
}

// The ranges' kernels need different weight layouts, but one packed buffer
// must serve every M. (Today gemv and mma kernels derive different layouts,
// so an untuned plan that mixes them lands here.) Substitutes come from the
// problem's usable kernels of one layout:
//  1. Same family for every replaced range, layouts in table order.
//  2. Any family, layouts of the largest M first: a CUDA-core gemv re-reads
//     all weights for every few rows, so serving large M with it is
//     catastrophically slow, while a tensor-core kernel serving small M only
//     wastes compute in a memory-bound regime.
// Candidates rank by: same family, closest arch, cubin over PTX, an M tile
// near the range's typical M, smallest id. LAYOUT_CONFLICT only if no layout
// covers every range. The notes list every replacement.
ApiStatus reconcileLayouts(PlanSpec &spec, const std::vector<const db::Database *> &databases,
                           const db::DeviceFingerprint &device) {
  std::vector<std::string> layouts;
  for (const PlannedRange &range : spec.ranges) {
    const std::string &id = spec.kernels[range.kernel].layoutId;
    if (std::find(layouts.begin(), layouts.end(), id) == layouts.end())
      layouts.push_back(id);
  }
  if (layouts.size() <= 1)
    return ApiStatus();

  Result<std::vector<PlannedKernel>> usable = allUsableKernels(databases, spec.problemId, device);
  if (!usable)
    return usable.error();
  auto rank = [](const PlannedKernel &k, const PlannedKernel &current, const PlannedRange &range) {
    Expected<db::Arch> arch = db::parseArch(k.arch);
    double typicalM =
        range.mHi < 0
            ? 2.0 * static_cast<double>(range.mLo)
            : std::sqrt(static_cast<double>(range.mLo) * static_cast<double>(range.mHi - 1));
    double tileDistance =
        std::fabs(std::log2(static_cast<double>(k.geometry.rowsPerBlock)) - std::log2(typicalM));
    return std::make_tuple(k.family == current.family ? 0 : 1, arch ? -arch->number : 0,
                           k.fromPtx ? 1 : 0, tileDistance, k.id);
  };
  std::vector<std::string> largestMFirst(layouts.rbegin(), layouts.rend());
  for (bool sameFamilyOnly : {true, false}) {
    for (const std::string &layout : sameFamilyOnly ? layouts : largestMFirst) {
      std::vector<const PlannedKernel *> replacement(spec.ranges.size(), nullptr);
      bool complete = true;
      for (size_t r = 0; r < spec.ranges.size() && complete; ++r) {
        const PlannedRange &range = spec.ranges[r];
        const PlannedKernel &current = spec.kernels[range.kernel];
        if (current.layoutId == layout)
          continue;
        const PlannedKernel *best = nullptr;
        for (const PlannedKernel &candidate : *usable)
          if (candidate.layoutId == layout &&
              (!sameFamilyOnly || candidate.family == current.family) &&
              (!best || rank(candidate, current, range) < rank(*best, current, range)))
            best = &candidate;
        replacement[r] = best;
        complete = best != nullptr;
      }
      if (!complete)
        continue;
      for (size_t r = 0; r < spec.ranges.size(); ++r) {
        if (!replacement[r])
          continue;
        PlannedRange &range = spec.ranges[r];
        const PlannedKernel &old = spec.kernels[range.kernel];
        spec.notes.push_back("M " + rangeText(range.mLo, range.mHi) + ": kernel " +
                             shortId(old.id) + " (" + old.name + ", " + old.family + ", layout " +
                             old.layoutId + ") replaced by " + shortId(replacement[r]->id) + " (" +
                             replacement[r]->name + ", " + replacement[r]->family + ", layout " +
                             layout + ") so that one packed weight buffer serves every M");
        spec.kernels.push_back(*replacement[r]);
        range.kernel = spec.kernels.size() - 1;
      }
      return ApiStatus();
    }
  }
  std::string message = "the kernels chosen for problem " + spec.signature +
                        " read different weight layouts and no kernels of one layout cover "
                        "every M range on this device:";
  for (const PlannedRange &range : spec.ranges) {
    const PlannedKernel &k = spec.kernels[range.kernel];
    message +=
        "\n  M " + rangeText(range.mLo, range.mHi) + ": " + k.name + " (layout " + k.layoutId + ")";
  }
  return apiError(LOWBIT_STATUS_LAYOUT_CONFLICT, message);
}

} // namespace

Result<LaunchGeometry> launchGeometry(const kernels::KernelEntry &entry, int64_t smCount) {
  // launchShape owns the rules (tile validity, N divisible by the N tile, a
  // plausible dynamic shared size); asking it for M = 1 validates them once,
  // here, off the hot path.
  Expected<kernels::LaunchShape> shape = kernels::launchShape(entry, 1, smCount);
  if (!shape)
    return apiError(LOWBIT_STATUS_CORRUPT_KERNEL, shape.error());
  LaunchGeometry geometry;
  geometry.persistent = shape->schedule.walksTiles();
  if (shape->schedule.streamK()) {
    // Its workspace grows with the blocks; without a device's SM count it
    // would be a block a tile, unbounded.
    if (smCount <= 0)
      return apiError(LOWBIT_STATUS_UNSUPPORTED,
                      "kernel " + entry.name +
                          " is a stream-K kernel, whose workspace is sized by the device's SM "
                          "count, which is not known");
    geometry.kTiles = entry.problem.k / core::kWgmmaTileK;
    geometry.partialBytesPerBlock = core::streamKPartialBytes(shape->schedule, 1);
    geometry.flagBytesPerBlock = core::streamKFlagBytes(shape->schedule, 1);
  }
  geometry.columnTiles = entry.problem.n / entry.gridTile[0];
  geometry.smCount = smCount;
  geometry.gridX = shape->grid[0];
  geometry.gridZ = shape->grid[2];
  geometry.blockThreads = shape->block;
  geometry.rowsPerBlock = entry.gridTile[1];
  geometry.maxM = geometry.rowsPerBlock * kMaxGridY;
  geometry.dynamicSharedBytes = shape->dynamicSharedBytes;
  return geometry;
}

bool looksLikeCubin(const std::vector<uint8_t> &bytes) {
  constexpr size_t kElf64HeaderBytes = 64;
  constexpr uint16_t kMachineCuda = 190; // EM_CUDA
  if (bytes.size() < kElf64HeaderBytes)
    return false;
  bool magic = bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
  bool elf64LittleEndian = bytes[4] == 2 && bytes[5] == 1;
  uint16_t machine = static_cast<uint16_t>(bytes[18] | (bytes[19] << 8));
  return magic && elf64LittleEndian && machine == kMachineCuda;
}

Result<PlanSpec> buildPlanSpec(const std::vector<const db::Database *> &databases,
                               const core::Problem &problem, const db::DeviceFingerprint &device) {
  PlanSpec spec;
  spec.problem = problem;
  spec.signature = core::signature(problem);
  spec.problemId = db::problemIdForSignature(spec.signature);
  if (databases.empty())
    return apiError(LOWBIT_STATUS_DATABASE_ERROR, "no kernel database is open");

  std::string searched;
  bool known = false;
  for (const db::Database *database : databases) {
    auto found = database->findProblem(spec.problemId);
    if (!found)
      return apiError(LOWBIT_STATUS_DATABASE_ERROR, found.error());
    known = known || found->has_value();
    searched += (searched.empty() ? "`" : ", `") + database->path() + "`";
  }
  if (!known)
    return apiError(LOWBIT_STATUS_UNKNOWN_PROBLEM,
                    "no kernels for problem " + spec.signature + " in " + searched +
                        "; add it to a kernel-set spec and run `lowbit compile`");

  Expected<db::Resolution> resolution = db::resolve(databases, spec.problemId, device);
  if (!resolution) {
    // resolve() fails either because nothing runs on the device (its message
    // starts "no kernel") or because a database could not be read.
    bool noKernel = resolution.error().rfind("no kernel", 0) == 0;
    return apiError(noKernel ? LOWBIT_STATUS_NO_KERNEL : LOWBIT_STATUS_DATABASE_ERROR,
                    resolution.error());
  }
  spec.tier = resolution->tier;
  spec.notes = resolution->notes;

  std::map<std::string, size_t> kernelIndex;
  auto load = [&](const std::string &kernelId) -> Result<size_t> {
    auto [at, inserted] = kernelIndex.emplace(kernelId, spec.kernels.size());
    if (inserted) {
      Result<db::KernelRecord> record = findKernel(databases, kernelId);
      if (!record) {
        kernelIndex.erase(at);
        return std::move(record).takeError();
      }
      Result<PlannedKernel> kernel = prepareKernel(*record, spec.problemId, device, spec.notes);
      if (!kernel) {
        kernelIndex.erase(at);
        return std::move(kernel).takeError();
      }
      spec.kernels.push_back(std::move(*kernel));
    }
    return at->second;
  };
  for (const db::Choice &choice : resolution->ranges) {
    Result<size_t> kernel = load(choice.kernelId);
    if (!kernel)
      return std::move(kernel).takeError();
    PlannedRange range;
    range.mLo = choice.mLo;
    range.mHi = choice.mHi ? *choice.mHi : -1;
    range.kernel = *kernel;
    if (!choice.fallbackKernelId.empty()) {
      // A fallback that cannot be loaded costs only the fallback.
      Result<size_t> fallback = load(choice.fallbackKernelId);
      if (fallback)
        range.fallback = static_cast<int>(*fallback);
      else
        spec.notes.push_back("M " + rangeText(range.mLo, range.mHi) +
                             ": no fallback without a workspace: " + fallback.error().message);
    }
    range.databasePath = choice.databasePath;
    spec.ranges.push_back(std::move(range));
  }
  if (spec.ranges.empty() || spec.ranges.front().mLo != 1 || spec.ranges.back().mHi != -1)
    return apiError(LOWBIT_STATUS_INTERNAL_ERROR,
                    "the lookup for " + spec.signature + " did not cover every M >= 1");

  if (ApiStatus s = reconcileLayouts(spec, databases, device); !s)
    return s.error();
  compact(spec);

  const PlannedKernel &first = spec.kernels[spec.ranges.front().kernel];
  Expected<layout::WeightLayout> layout = layout::parseWeightLayout(first.entry.weightLayout);
  if (!layout) // prepareKernel parsed it already; this cannot fail
    return apiError(LOWBIT_STATUS_INTERNAL_ERROR, layout.error());
  spec.layout = *layout;
  spec.layoutIdHex = first.layoutId;
  spec.layoutId = std::stoull(first.layoutId, nullptr, 16);
  checkFallbackLayouts(spec);
  if (spec.layout.codeBits != problem.codeBits())
    return apiError(LOWBIT_STATUS_CORRUPT_KERNEL,
                    "kernel " + first.name + " packs " + std::to_string(spec.layout.codeBits) +
                        "-bit codes, but the problem's weights are " + problem.code.name());
  spec.weightBytes = layout::packedBytes(spec.layout, problem.n, problem.k);
  if (spec.weightBytes < 0) {
    Status shape = layout::checkShape(spec.layout, problem.n, problem.k);
    return apiError(LOWBIT_STATUS_INVALID_SHAPE,
                    "weights of " + std::to_string(problem.n) + " x " + std::to_string(problem.k) +
                        " cannot take layout " + spec.layoutIdHex + ": " +
                        (shape ? std::string("size overflow") : shape.error()));
  }
  spec.scaleAlignment = core::scaleAlignment(problem);
  spec.scaleBytes = core::scaleBytes(problem);
  spec.hasZeros = problem.scheme.hasZeros();
  spec.zeroAlignment = core::zeroAlignment(problem);
  spec.zeroBytes = core::zeroBytes(problem);
  assignWorkspaceFallbacks(spec);
  // dropDenseRanges (for quantized activations) writes notesText itself.
  if (ApiStatus dense = planDensePath(spec); !dense)
    return dense.error();
  planStreamKWorkspace(spec);
  spec.notesText.clear();
  for (const std::string &note : spec.notes)
    spec.notesText += (spec.notesText.empty() ? "" : "\n") + note;
  return spec;
}

namespace {
// A kernel of the runtime's own (embedded PTX), not of a database.
PlannedKernel builtInKernel(const char *name, const char *family, const char *ptx,
                            unsigned threads) {
  PlannedKernel kernel;
  kernel.id = std::string(name) + " (built in)";
  kernel.name = name;
  kernel.family = family;
  kernel.arch = "compute_80 (PTX)";
  kernel.image.assign(ptx, ptx + std::char_traits<char>::length(ptx) + 1);
  kernel.fromPtx = true;
  kernel.geometry.blockThreads = threads;
  return kernel;
}
} // namespace

void addActivationQuantizer(PlanSpec &spec) {
  if (!core::isQuantized(spec.problem.activation))
    return;
  spec.quantizeKernel = spec.kernels.size();
  spec.kernels.push_back(builtInKernel("lowbit_quantize_activations", "activation quantizer",
                                       kQuantizeActivationsPtx, kQuantizeThreads));
  // Only a per-tensor plan needs phase one; each kernel is a module of its
  // own, so a per-token plan JIT-compiles the image once, not twice.
  if (spec.problem.activationScale == core::ActivationScale::PerTensor) {
    spec.absmaxKernel = spec.kernels.size();
    spec.kernels.push_back(builtInKernel("lowbit_activation_absmax", "activation quantizer",
                                         kQuantizeActivationsPtx, kQuantizeThreads));
  }
  spec.quantizesActivations = true;
}

ApiStatus addColumnPermutation(PlanSpec &spec) {
  if (core::isQuantized(spec.problem.activation))
    return apiError(LOWBIT_STATUS_UNSUPPORTED,
                    std::string("act-order with ") + core::activationName(spec.problem.activation) +
                        " activations: the gather of x[:, perm] moves 16-bit values; quantize "
                        "x after permuting its columns and plan the problem without act_order");
  spec.permuteKernel = spec.kernels.size();
  spec.kernels.push_back(builtInKernel("lowbit_permute_columns", "act-order gather",
                                       kPermuteColumnsPtx, kPermuteThreads));
  spec.permutedColumns = true;
  // 256 bytes keeps the permutation as aligned as the buffer's start.
  spec.permutationOffset = (spec.weightBytes + 255) / 256 * 256;
  spec.notes.push_back("act-order: each lowbit_matmul first gathers x[:, perm] into the "
                       "workspace (M * K activation values; lowbit_plan_workspace_bytes)");
  spec.notesText += (spec.notesText.empty() ? "" : "\n") + spec.notes.back();
  return ApiStatus();
}

} // namespace lowbit::api
