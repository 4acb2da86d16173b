// Plain rows of the kernel database, as the library's callers see them.
#pragma once

#include "core/Schedule.h"
#include "core/support/Expected.h"
#include "tuning_db/Fingerprint.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::db {

// A problem: formats and shape, without a schedule. Its id is the sha256 hex
// of the canonical signature, which the compiler produces.
struct ProblemRecord {
  std::string id;
  std::string signature;
};

std::string problemIdForSignature(const std::string &signature);

struct LaunchConfig {
  int blockX = 0; // 0 means unknown (a kernel migrated from schema v1)
  int blockY = 1;
  int blockZ = 1;
  std::string gridRule; // interpreted by the runtime, e.g. "ceil(N/128),splitk,1"
  int64_t dynamicSharedBytes = 0;

  bool known() const { return blockX > 0 && blockY > 0 && blockZ > 0; }
};

struct KernelRecord {
  std::string id; // sha256 hex of `cubin`; putKernel fills it in when empty
  std::string problemId;
  std::string arch;   // "sm_80", "sm_86", "sm_89", "sm_90a"
  std::string family; // "gemv", "mma", "wgmma"
  std::string entry;  // the extern "C" __global__ function's name
  std::string scheduleJson;
  std::string weightLayoutId;
  std::string sourceHash;
  std::string compilerVersion;
  std::vector<uint8_t> cubin; // empty when read without blobs
  std::string ptx;            // empty when read without blobs or not kept
  int registers = 0;
  int64_t sharedBytes = 0; // static shared memory, from ptxas
  int64_t spillBytes = 0;
  int64_t stackBytes = 0;
  LaunchConfig launch;
  std::string createdAt;
};

// The kernel's schedule, from the "schedule" field of its schedule JSON;
// none when the record has no such field (or it does not parse).
std::optional<core::Schedule> kernelSchedule(const KernelRecord &kernel);

struct DeviceRecord {
  std::string id; // as stored; equals fingerprint.id() for rows this library wrote
  DeviceFingerprint fingerprint;
};

struct ResultRecord {
  std::string kernelId;
  std::string deviceId;
  int64_t m = 0;
  double medianUs = 0;
  std::optional<double> p10Us;
  std::optional<double> p90Us;
  std::optional<double> gbps;
  std::optional<double> tflops;
  std::optional<double> maxRelError;
  bool passed = false;
  std::string runId;
  std::string measuredAt; // ISO 8601 UTC; addResult fills in now when empty
};

// A tuning candidate that never became a kernel: its compile failed
// (stage "compile": NVRTC's error) or ptxas spilled (stage "spill"). The
// sweep reports it as failed; the same (problem, arch, schedule) compiling
// later removes it.
struct CandidateFailureRecord {
  std::string problemId;
  std::string arch;
  std::string schedule; // #lb.schedule text
  std::string entry;    // the kernel's entry point, as it would have been
  std::string stage;    // "compile" | "spill"
  std::string reason;
  std::string compilerVersion;
  std::string createdAt; // ISO 8601 UTC; putCandidateFailure fills in now when empty
};

// True when `a` is a better measurement than `b` of the same kernel, device
// and M: a passing result beats a failing one, then the lower median wins.
bool betterResult(const ResultRecord &a, const ResultRecord &b);

// One row of a dispatch table: kernel for M in [mLo, mHi); no mHi = open-ended.
struct DispatchRange {
  int64_t mLo = 1;
  std::optional<int64_t> mHi;
  std::string kernelId;

  bool contains(int64_t m) const { return m >= mLo && (!mHi || m < *mHi); }
};

// "[1, 9)" or "[257, inf)".
std::string formatRange(int64_t lo, std::optional<int64_t> hi);

// A dispatch table must cover every M >= 1 exactly once: sorted by mLo, it
// starts at 1, each range ends where the next begins, every range is
// non-empty, only the last is open-ended, and every kernel id is set.
Status validateRanges(const std::vector<DispatchRange> &ranges);

// A compiled-for architecture: "sm_90a" -> {90, archSpecific = true}.
struct Arch {
  int number = 0;
  bool archSpecific = false; // the "a" suffix: runs on exactly that arch only
};
Expected<Arch> parseArch(const std::string &arch);

} // namespace lowbit::db
