// Choosing a kernel for (problem, device, M) from one or more databases.
//
// Tiers, tried in order; the first that yields a usable dispatch table wins:
//  1. ExactDevice:       a table tuned on a device with the same fingerprint id.
//  2. SameCcAndSmCount:  a table tuned on a device with the same compute
//                        capability and SM count (e.g. after a driver update).
//  3. SameCc:            a table tuned on a device with the same compute capability.
//  4. Heuristic:         no table applies; pick among the problem's compiled
//                        kernels (see below).
// Within tiers 1-3, databases are tried in the order given (a user database
// before the system one); within a database, devices that share more of the
// fingerprint (name, L2, memory clock, bus width, shared memory, driver) come
// first. A table that is malformed (gaps, overlaps, no open end) or names a
// kernel that no database holds is skipped with a note, never trusted.
//
// The heuristic:
//  - Candidates are the problem's kernels, from all databases, that this
//    device can run: a cubin compiled for the same major arch with minor <=
//    the device's, or else PTX (if kept) compiled for an arch <= the device's.
//    An arch-specific target (sm_90a) only runs on exactly that arch. Left
//    out: kernels without a launch configuration (migrated from schema v1),
//    kernels needing more shared memory than the device's opt-in limit, and
//    kernels whose every recorded measurement failed the reference check.
//  - M falls in a band: [1, 9), [9, 33), [33, 97), [97, 129), [129, 257),
//    then one an octave from 257: [257, 513), [513, 1025), [1025, 2049),
//    [2049, 4097), [4097, inf).
//    Up to M = 32 the mma family comes first (its split-K schedules stream
//    the weights best there), then gemv and wgmma up to M = 8, wgmma and
//    gemv from 9; from 33 to 256 mma and wgmma are ranked together, then
//    gemv; from 257 the order is wgmma, mma, gemv. The first family with a
//    candidate serves the band.
//  - Within the family, kernels are ranked by: the closest compiled-for arch
//    <= the device's; a runnable cubin over PTX that needs a JIT; a passing
//    measurement over an unmeasured one; below M = 257, a kernel that
//    streams the weights (splits K over warps or blocks, or is wgmma) over
//    the staged mma; in the first band, the
//    tile M closest to 8; then an estimate of the kernel's time at the
//    band's typical M (1, 16, 64, 128, 256, then each large band's top: 512 ..
//    4096, and 8192) on this device, from the
//    problem's N and K, the launch (grid rule, threads), the registers and
//    shared memory against the arch's per-SM limits, and the SM count:
//    waves of resident blocks, each decoding its columns over its share of
//    K and multiplying them by its rows, slowed where too few decoding
//    warps keep loads in flight, plus a cluster's
//    reduction (Lookup.cpp states the model and its fitted constants).
//    Ties, and kernels the estimate cannot rate, go to the tile M nearest
//    the band's, the fewest blocks along K, the narrowest column tile, and
//    the smallest id (so the answer is deterministic).
//  - Neighbouring bands that chose the same kernel merge into one range.
#pragma once

#include "core/support/Expected.h"
#include "tuning_db/Database.h"
#include "tuning_db/Fingerprint.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::db {

enum class Tier { ExactDevice, SameCcAndSmCount, SameCc, Heuristic };
// "exact device", "same compute capability and SM count", ...
const char *tierName(Tier tier);

// The kernel for one M range.
struct Choice {
  std::string kernelId;
  int64_t mLo = 1;
  std::optional<int64_t> mHi; // none: open-ended
  Tier tier = Tier::Heuristic;
  std::string databasePath; // the database whose table (or kernel, for Heuristic) answered
  std::string deviceId;     // the tuned device whose table was used; empty for Heuristic
  std::string deviceName;
  // A tuned range whose kernel takes the caller's workspace (the dense path,
  // stream-K): the kernel that measured best there without one, for a call
  // that cannot give it (assignMeasuredFallbacks); empty otherwise.
  std::string fallbackKernelId;

  bool contains(int64_t m) const { return m >= mLo && (!mHi || m < *mHi); }
};

// The kernels for every M >= 1, for one problem on one device: what a plan
// loads up front.
struct Resolution {
  Tier tier = Tier::Heuristic;
  std::vector<Choice> ranges; // sorted, contiguous from 1, last open-ended
  // Entries skipped on the way, and why; worth showing to the user.
  std::vector<std::string> notes;

  // The range containing m; fails for m <= 0.
  Expected<Choice> at(int64_t m) const;
};

// `databases` in precedence order. Fails for a problem no database knows, or
// when no kernel can run on the device.
Expected<Resolution> resolve(const std::vector<const Database *> &databases,
                             const std::string &problemId, const DeviceFingerprint &device);

// What the built-in heuristic alone picks on `device` from the problem's
// kernels that `keep` accepts (all, when empty), as if no dispatch table
// existed and none had been measured: what a device without a tuned table
// gets from a kernel set of those kernels (`lowbit db heuristic`).
using KernelFilter = std::function<bool(const KernelRecord &)>;
Expected<Resolution> resolveUntuned(const std::vector<const Database *> &databases,
                                    const std::string &problemId, const DeviceFingerprint &device,
                                    const KernelFilter &keep = {});

// resolve() then at(m); M must be >= 1.
Expected<Choice> lookup(const std::vector<const Database *> &databases,
                        const std::string &problemId, const DeviceFingerprint &device, int64_t m);

// Whether a kernel compiled for `arch` can run on a device of compute
// capability `deviceCc` (10 * major + minor): as a cubin, or only as PTX.
enum class Runnable { No, Cubin, PtxOnly };
Runnable runnableOn(const Arch &arch, bool hasPtx, int deviceCc);

} // namespace lowbit::db
