#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace lowbit::db::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "lowbit-db-test-XXXXXX").string();
  char *made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

DeviceFingerprint h100() {
  DeviceFingerprint f;
  f.name = "NVIDIA H100 80GB HBM3";
  f.ccMajor = 9;
  f.ccMinor = 0;
  f.smCount = 132;
  f.l2Bytes = 50331648;
  f.sharedMemPerBlockOptinBytes = 232448;
  f.memoryClockKhz = 2619000;
  f.memoryBusWidthBits = 5120;
  f.driverVersion = "580.95.05";
  f.cudaVersion = 13000;
  f.uuid = "0123456789abcdef0123456789abcdef";
  return f;
}

DeviceFingerprint a100() {
  DeviceFingerprint f;
  f.name = "NVIDIA A100-SXM4-80GB";
  f.ccMajor = 8;
  f.ccMinor = 0;
  f.smCount = 108;
  f.l2Bytes = 41943040;
  f.sharedMemPerBlockOptinBytes = 166912;
  f.memoryClockKhz = 1593000;
  f.memoryBusWidthBits = 5120;
  f.driverVersion = "580.95.05";
  f.cudaVersion = 13000;
  f.uuid = "fedcba9876543210fedcba9876543210";
  return f;
}

DeviceFingerprint rtx4090() {
  DeviceFingerprint f;
  f.name = "NVIDIA GeForce RTX 4090";
  f.ccMajor = 8;
  f.ccMinor = 9;
  f.smCount = 128;
  f.l2Bytes = 75497472;
  f.sharedMemPerBlockOptinBytes = 101376;
  f.memoryClockKhz = 10501000;
  f.memoryBusWidthBits = 384;
  f.driverVersion = "580.95.05";
  f.cudaVersion = 13000;
  f.uuid = "00000000000000000000000000004090";
  return f;
}

KernelRecord makeKernel(const std::string &problemId, const std::string &tag,
                        const std::string &arch, const std::string &family, bool withPtx) {
  KernelRecord k;
  std::string fakeCubin = "\x7f" "ELF cubin " + tag + " " + arch + " " + family;
  k.cubin.assign(fakeCubin.begin(), fakeCubin.end());
  if (withPtx)
    k.ptx = ".version 8.0\n.target " + arch + "\n// " + tag;
  k.problemId = problemId;
  k.arch = arch;
  k.family = family;
  k.entry = "lowbit_" + family + "_" + tag;
  k.scheduleJson = R"({"tile_m":16,"tile_n":128,"stages":3})";
  k.weightLayoutId = "layout-" + family;
  k.sourceHash = "src-" + tag;
  k.compilerVersion = "test";
  k.registers = 96;
  k.sharedBytes = 16384;
  k.spillBytes = 0;
  k.stackBytes = 0;
  k.launch.blockX = 128;
  k.launch.gridRule = "ceil(N/128),1,1";
  k.launch.dynamicSharedBytes = 32768;
  return k;
}

KernelRecord makeSm90aKernel(const std::string &problemId, const std::string &tag,
                             const std::string &family, const std::string &schedule,
                             const std::string &gridRule, int threads, int registers,
                             int64_t staticShared, int64_t dynamicShared) {
  KernelRecord k = makeKernel(problemId, tag, "sm_90a", family);
  k.entry = tag;
  k.scheduleJson = R"({"schedule":")" + schedule + R"("})";
  k.launch.gridRule = gridRule;
  k.launch.blockX = threads;
  k.registers = registers;
  k.sharedBytes = staticShared;
  k.launch.dynamicSharedBytes = dynamicShared;
  return k;
}

ResultRecord makeResult(const std::string &kernelId, const std::string &deviceId, int64_t m,
                        double medianUs, bool passed, const std::string &runId) {
  ResultRecord r;
  r.kernelId = kernelId;
  r.deviceId = deviceId;
  r.m = m;
  r.medianUs = medianUs;
  r.p10Us = medianUs * 0.95;
  r.p90Us = medianUs * 1.1;
  r.gbps = 1000.0;
  r.tflops = 10.0;
  r.maxRelError = 1e-3;
  r.passed = passed;
  r.runId = runId;
  return r;
}

Database openOrDie(const std::string &path, OpenMode mode) {
  OpenOptions options;
  options.mode = mode;
  auto db = Database::open(path, options);
  if (!db) {
    ADD_FAILURE() << db.error();
    std::abort();
  }
  return std::move(*db);
}

std::vector<std::string> filesStartingWith(const std::string &dir, const std::string &prefix) {
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0)
      names.push_back(name);
  }
  return names;
}

} // namespace lowbit::db::testing
