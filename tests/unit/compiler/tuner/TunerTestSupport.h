// Shared fixtures for the tuner tests: problems, temporary databases and
// kernel rows that decode (cubins are placeholder bytes; nothing launches).
#pragma once

#include "core/Problem.h"
#include "core/Schedule.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "runtime/kernels/KernelSet.h"
#include "tuning_db/Database.h"

#include <cstdlib>
#include <filesystem>
#include <string>

namespace lowbit::tuner::testing {

inline kernels::ProblemDesc w4a16(int64_t n, int64_t k, const std::string &name = "") {
  kernels::ProblemDesc p;
  p.name = name.empty() ? std::to_string(n) + "x" + std::to_string(k) : name;
  p.n = n;
  p.k = k; // the rest: the model's defaults (f16, uint4, f16 scales, group 128, no zeros)
  return p;
}

// The problem as the search space takes it (ProblemDesc is the typed model).
inline const core::Problem &typedProblem(const kernels::ProblemDesc &problem) { return problem; }

inline db::DeviceFingerprint testDevice() {
  db::DeviceFingerprint f;
  f.name = "NVIDIA H200";
  f.ccMajor = 9;
  f.ccMinor = 0;
  f.smCount = 132;
  f.l2Bytes = 50331648;
  f.sharedMemPerBlockOptinBytes = 232448;
  f.memoryClockKhz = 3201000;
  f.memoryBusWidthBits = 6144;
  f.driverVersion = "580.95.05";
  f.cudaVersion = 13000;
  return f;
}

class ScratchDir {
public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "lowbit-tuner-test-XXXXXX").string();
    if (mkdtemp(pattern.data()))
      path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

// Stores the problem and one kernel per schedule; returns the kernel ids.
inline std::vector<std::string> storeKernels(db::Database &database,
                                             const kernels::ProblemDesc &problem,
                                             const std::vector<core::Schedule> &schedules) {
  std::vector<std::string> ids;
  auto problemId = database.putProblem(core::signature(problem));
  if (!problemId)
    return ids;
  for (size_t i = 0; i < schedules.size(); ++i) {
    kernels::KernelEntry e;
    e.problem = problem;
    e.name = "lb_" + problem.name + "_" + std::to_string(i);
    e.arch = "sm_90a";
    e.family = familyName(schedules[i].family);
    e.schedule = schedules[i].text();
    e.weightLayout = "layout-" + e.family;
    e.blockThreads = schedules[i].threads();
    e.gridTile = {schedules[i].tileN, schedules[i].tileM, 1};
    std::string bytes = "cubin:" + e.name + ":" + e.schedule;
    std::vector<char> cubin(bytes.begin(), bytes.end());
    auto id = database.putKernel(kernels::kernelRecord(e, cubin, "", "src", "test"));
    if (id)
      ids.push_back(*id);
  }
  return ids;
}

} // namespace lowbit::tuner::testing
