#include "tests/unit/runtime/api/RuntimeTestSupport.h"

#include <cstring>

#include "runtime/kernels/KernelRecordCodec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace lowbit::api::testing {

const char *const kLayoutA = "lbwl1;bits=4;tile=1x32;basis=4,1,2,8,16";
const char *const kLayoutB = "lbwl1;bits=4;tile=1x32;basis=1,2,4,8,16";

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "lowbit-runtime-test-XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back(0);
  const char *made = mkdtemp(buffer.data());
  path_ = made ? made : "";
  EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
}

TempDir::~TempDir() {
  std::error_code ignored;
  if (!path_.empty())
    std::filesystem::remove_all(path_, ignored);
}

kernels::ProblemDesc w4a16Problem(int64_t n, int64_t k) {
  kernels::ProblemDesc p; // the model's defaults: f16, uint4, f16 scales, group 128, no zeros
  p.name = "test.w4a16";
  p.n = n;
  p.k = k;
  return p;
}

kernels::ProblemDesc w4a8Problem(int64_t n, int64_t k, core::ActivationScale scale) {
  kernels::ProblemDesc p = w4a16Problem(n, k);
  p.name = "test.w4a8";
  p.activation = core::Activation::S8;
  p.activationScale = scale;
  core::setOutput(p, core::Output::F32);
  return p;
}

lowbit_problem w4a16Abi(int64_t n, int64_t k, lowbit_zero_mode zero) {
  lowbit_problem p;
  std::memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(p);
  p.n = n;
  p.k = k;
  p.activation = LOWBIT_DTYPE_F16;
  p.weight = LOWBIT_WEIGHT_UINT4;
  p.scale = LOWBIT_DTYPE_F16;
  p.granularity = LOWBIT_GRANULARITY_GROUP;
  p.group_size = 128;
  p.zero = zero;
  return p;
}

std::vector<char> fakeCubin(const std::string &tag) {
  // The tag ends in a NUL: the fake driver reads it as text (strstr), and
  // without one it read past the image (AddressSanitizer).
  std::vector<char> image(64 + tag.size() + 1, 0);
  image[0] = 0x7f;
  image[1] = 'E';
  image[2] = 'L';
  image[3] = 'F';
  image[4] = 2;                       // ELFCLASS64
  image[5] = 1;                       // little-endian
  image[18] = static_cast<char>(190); // EM_CUDA
  for (size_t i = 0; i < tag.size(); ++i)
    image[64 + i] = tag[i];
  return image;
}

std::string addKernel(db::Database &database, const kernels::ProblemDesc &problem,
                      const FakeKernel &kernel) {
  auto problemId = database.putProblem(core::signature(problem));
  EXPECT_TRUE(problemId.ok()) << problemId.error();
  kernels::KernelEntry entry;
  entry.problem = problem;
  entry.name = "fake_" + kernel.tag;
  entry.arch = kernel.arch;
  entry.family = kernel.family;
  // A whole schedule: the runtime reads it (a persistent kernel launches
  // differently), but checks no rules on it.
  entry.schedule = "#lb.schedule<family = " + kernel.family + ", tile = [" +
                   std::to_string(kernel.rowsPerBlock) +
                   ", 4, 1024], warps = [1, 1], stages = 1, split_k = 1" +
                   (kernel.scheduler.empty() ? "" : ", scheduler = " + kernel.scheduler) + ">";
  entry.weightLayout = kernel.layout;
  entry.blockThreads = 128;
  entry.gridTile = {4, kernel.rowsPerBlock, 1};
  entry.dynamicSharedBytes = kernel.dynamicSharedBytes;
  entry.sharedBytes = kernel.staticSharedBytes;
  // Only when set, so the images (and ids) of kernels without it stay as before.
  const std::string staticShared =
      kernel.staticSharedBytes ? ";static_shared=" + std::to_string(kernel.staticSharedBytes) : "";
  std::vector<char> cubin = fakeCubin(kernel.tag + staticShared);
  if (kernel.corruptCubin)
    cubin[18] = 0; // no longer EM_CUDA
  std::string ptx = kernel.withPtx ? ".version 8.0\n.target sm_80\n// " + kernel.tag + "\n" : "";
  db::KernelRecord record = kernels::kernelRecord(entry, cubin, ptx, "source", "test");
  auto id = database.putKernel(record);
  EXPECT_TRUE(id.ok()) << id.error();
  return id ? *id : std::string();
}

db::Database openOrDie(const std::string &path) {
  auto database = db::Database::open(path);
  if (!database) {
    ADD_FAILURE() << database.error();
    std::abort();
  }
  return std::move(*database);
}

lowbit_status createContext(const std::string &systemDbPath, lowbit_context **out) {
  lowbit_context_options options;
  std::memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.system_db_path = systemDbPath.c_str();
  return lowbit_context_create(&options, out);
}

namespace {
db::DeviceFingerprint device(const char *name, int major, int minor, int sms) {
  db::DeviceFingerprint f;
  f.name = name;
  f.ccMajor = major;
  f.ccMinor = minor;
  f.smCount = sms;
  f.l2Bytes = 50 << 20;
  f.sharedMemPerBlockOptinBytes = 227 * 1024;
  f.memoryClockKhz = 2619000;
  f.memoryBusWidthBits = 5120;
  f.driverVersion = "580.95.05";
  f.cudaVersion = 13000;
  return f;
}
} // namespace

db::DeviceFingerprint h100() {
  return device("NVIDIA H100 80GB HBM3", 9, 0, 132);
}
db::DeviceFingerprint a100() {
  return device("NVIDIA A100-SXM4-80GB", 8, 0, 108);
}
db::DeviceFingerprint future() {
  return device("Future GPU", 12, 0, 160);
}

} // namespace lowbit::api::testing
