// Shared fixtures for the tuning_db tests: temporary directories and rows
// built by hand (no GPU is involved anywhere).
#pragma once

#include "tuning_db/Database.h"
#include "tuning_db/Fingerprint.h"
#include "tuning_db/Records.h"

#include <string>

namespace lowbit::db::testing {

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

DeviceFingerprint h100(); // cc 9.0, 132 SMs
DeviceFingerprint a100(); // cc 8.0, 108 SMs
DeviceFingerprint rtx4090(); // cc 8.9, 128 SMs

// A kernel for `problemId` whose cubin is derived from `tag`, so the id is
// stable and distinct per tag.
KernelRecord makeKernel(const std::string &problemId, const std::string &tag,
                        const std::string &arch, const std::string &family, bool withPtx = true);

// An sm_90a kernel named `tag` with the schedule and launch lowbit compile
// gives it: what the heuristic's estimate reads.
KernelRecord makeSm90aKernel(const std::string &problemId, const std::string &tag,
                             const std::string &family, const std::string &schedule,
                             const std::string &gridRule, int threads, int registers,
                             int64_t staticShared, int64_t dynamicShared);

ResultRecord makeResult(const std::string &kernelId, const std::string &deviceId, int64_t m,
                        double medianUs, bool passed = true, const std::string &runId = "run");

Database openOrDie(const std::string &path, OpenMode mode = OpenMode::ReadWrite);

// Lists file names in `dir` that start with `prefix`.
std::vector<std::string> filesStartingWith(const std::string &dir, const std::string &prefix);

} // namespace lowbit::db::testing
