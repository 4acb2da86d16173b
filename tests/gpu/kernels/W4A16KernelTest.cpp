// Every compiled W4A16 kernel of the test set (tests/gpu/kernels/
// w4a16-gpu-tests.toml, compiled at build time by `lowbit compile`) against
// an f64 reference, at M values on both sides of every tile boundary.
// Weights are packed with the layout the compiler derived; inputs are fresh
// random values for every M; outputs are poisoned with NaN before each run.
#include "runtime/kernels/KernelSet.h"
#include "runtime/layout/WeightLayout.h"
#include "tests/gpu/kernels/HostNumerics.h"
#include "tests/gpu/support/GpuTest.h"

#include <limits.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>

namespace lowbit::testing {
namespace {

std::string kernelSetDirectory() {
  if (const char *env = std::getenv("LOWBIT_GPU_TEST_KERNELS"))
    return env;
  char path[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::string exe = length > 0 ? std::string(path, static_cast<size_t>(length)) : ".";
  return exe.substr(0, exe.find_last_of('/')) + "/../kernels/gpu-tests";
}

const int64_t kRowCounts[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 64, 127, 128, 255, 256, 1000, 4096};

// One problem's weights, scales and zeros on host and device; kernels that
// share the problem and the layout share these.
struct ProblemData {
  std::vector<uint8_t> codes;  // [N, K], one code per byte
  std::vector<uint16_t> scales, zeros;
  std::vector<double> scaleValues, zeroValues;
  int64_t scaleColumns = 1; // per row of N
  std::unique_ptr<DeviceBuffer> packed, scalesDevice, zerosDevice;
};

double codeValue(const kernels::ProblemDesc &p, uint8_t code) {
  if (p.weight == "int4")
    return code >= 8 ? static_cast<double>(code) - 16.0 : code;
  return code;
}

class W4A16Kernels : public ::testing::Test {
protected:
  void SetUp() override {
    api = gpuOrNull(&whyNot);
    if (!api)
      GTEST_SKIP() << "no GPU: " << whyNot;
    Expected<std::vector<kernels::KernelEntry>> set = kernels::readKernelSet(kernelSetDirectory());
    ASSERT_TRUE(set.ok()) << set.error();
    arch = deviceArchName(*api);
    for (kernels::KernelEntry &entry : *set)
      if (entry.arch == arch)
        entries.push_back(entry);
    if (entries.empty())
      GTEST_SKIP() << "the test kernel set has no kernels for " << arch;
  }

  const cuda::DriverApi *api = nullptr;
  std::string whyNot, arch;
  std::vector<kernels::KernelEntry> entries;
};

void prepareProblem(const cuda::DriverApi &api, const kernels::KernelEntry &entry,
                    const layout::WeightLayout &layout, ProblemData &data, std::mt19937 &rng) {
  const kernels::ProblemDesc &p = entry.problem;
  std::uniform_int_distribution<int> code(0, 15);
  data.codes.resize(static_cast<size_t>(p.n * p.k));
  for (uint8_t &c : data.codes)
    c = static_cast<uint8_t>(code(rng));
  data.scaleColumns = p.granularity == "group" ? p.k / p.groupSize : 1;
  int64_t scaleCount = p.granularity == "tensor" ? 1 : p.n * data.scaleColumns;
  std::uniform_real_distribution<float> scale(0.004f, 0.02f);
  for (int64_t i = 0; i < scaleCount; ++i) {
    uint16_t bits = toBits(p.scale.c_str(), scale(rng));
    data.scales.push_back(bits);
    data.scaleValues.push_back(fromBits(p.scale.c_str(), bits));
    if (p.zero != "none") {
      uint16_t zero = toBits(p.scale.c_str(), static_cast<float>(code(rng)));
      data.zeros.push_back(zero);
      data.zeroValues.push_back(fromBits(p.scale.c_str(), zero));
    }
  }
  int64_t bytes = layout::packedBytes(layout, p.n, p.k);
  std::vector<uint8_t> packed(static_cast<size_t>(bytes));
  Status status = layout::packWeights(layout, p.n, p.k, data.codes.data(), packed.data(),
                                      packed.size());
  ASSERT_TRUE(status.ok()) << status.error();
  data.packed = std::make_unique<DeviceBuffer>(api, packed.size());
  data.scalesDevice = std::make_unique<DeviceBuffer>(api, data.scales.size() * 2);
  ASSERT_TRUE(data.packed->ok() && data.scalesDevice->ok());
  LOWBIT_CU_ASSERT(&api, data.packed->upload(packed.data(), packed.size()));
  LOWBIT_CU_ASSERT(&api, data.scalesDevice->upload(data.scales.data(), data.scales.size() * 2));
  if (!data.zeros.empty()) {
    data.zerosDevice = std::make_unique<DeviceBuffer>(api, data.zeros.size() * 2);
    LOWBIT_CU_ASSERT(&api, data.zerosDevice->upload(data.zeros.data(), data.zeros.size() * 2));
  }
}

double referenceOutput(const kernels::ProblemDesc &p, const ProblemData &data,
                       const std::vector<double> &x, int64_t m, int64_t n) {
  double sum = 0;
  for (int64_t k = 0; k < p.k; ++k) {
    int64_t s = p.granularity == "tensor" ? 0
                : n * data.scaleColumns + (p.granularity == "group" ? k / p.groupSize : 0);
    double q = codeValue(p, data.codes[static_cast<size_t>(n * p.k + k)]);
    double w = p.zero == "none" ? q * data.scaleValues[s]
               : p.zero == "sub_code" ? (q - data.zeroValues[s]) * data.scaleValues[s]
                                      : q * data.scaleValues[s] - data.zeroValues[s];
    sum += x[static_cast<size_t>(m * p.k + k)] * w;
  }
  return sum;
}

TEST_F(W4A16Kernels, MatchTheF64ReferenceAtEveryM) {
  std::mt19937 rng(20261129);
  std::map<std::string, ProblemData> problems;
  int checked = 0;
  for (const kernels::KernelEntry &entry : entries) {
    SCOPED_TRACE(entry.name);
    const kernels::ProblemDesc &p = entry.problem;
    Expected<layout::WeightLayout> layout = layout::parseWeightLayout(entry.weightLayout);
    ASSERT_TRUE(layout.ok()) << layout.error();
    std::string key = p.name + "|" + entry.weightLayout;
    if (!problems.count(key)) {
      prepareProblem(*api, entry, *layout, problems[key], rng);
      if (HasFatalFailure())
        return;
    }
    const ProblemData &data = problems[key];
    Expected<std::vector<char>> cubin = kernels::readCubin(entry);
    ASSERT_TRUE(cubin.ok()) << cubin.error();
    LoadedModule module(*api, cubin->data());
    LOWBIT_CU_ASSERT(api, module.loadResult());
    CUfunction function = module.function(entry.name.c_str());
    ASSERT_NE(function, nullptr);

    for (int64_t m : kRowCounts) {
      SCOPED_TRACE("M = " + std::to_string(m));
      std::normal_distribution<float> normal(0.f, 1.f);
      std::vector<uint16_t> xBits(static_cast<size_t>(m * p.k));
      std::vector<double> x(xBits.size());
      for (size_t i = 0; i < xBits.size(); ++i) {
        xBits[i] = toBits(p.activation.c_str(), normal(rng));
        x[i] = fromBits(p.activation.c_str(), xBits[i]);
      }
      DeviceBuffer xDevice(*api, xBits.size() * 2), yDevice(*api, static_cast<size_t>(m * p.n * 2));
      ASSERT_TRUE(xDevice.ok() && yDevice.ok());
      LOWBIT_CU_ASSERT(api, xDevice.upload(xBits.data(), xBits.size() * 2));
      LOWBIT_CU_ASSERT(api, yDevice.poison(0xFF)); // 0xFFFF is NaN in f16 and bf16

      Expected<kernels::LaunchShape> shape = kernels::launchShape(entry, m);
      ASSERT_TRUE(shape.ok()) << shape.error();
      CUdeviceptr xPtr = xDevice.get(), wPtr = data.packed->get(),
                  sPtr = data.scalesDevice->get(), yPtr = yDevice.get();
      CUdeviceptr zPtr = data.zerosDevice ? data.zerosDevice->get() : 0;
      long long rows = m;
      std::vector<void *> args = {&xPtr, &wPtr, &sPtr};
      if (data.zerosDevice)
        args.push_back(&zPtr);
      args.push_back(&yPtr);
      args.push_back(&rows);
      LOWBIT_CU_ASSERT(api, api->cuLaunchKernel(function, shape->grid[0], shape->grid[1],
                                                shape->grid[2], shape->block, 1, 1, 0, nullptr,
                                                args.data(), nullptr));
      LOWBIT_CU_ASSERT(api, api->cuCtxSynchronize());
      std::vector<uint16_t> y(static_cast<size_t>(m * p.n));
      LOWBIT_CU_ASSERT(api, yDevice.download(y.data(), y.size() * 2));

      // Every element must be written (no NaN left from the poison).
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_FALSE(std::isnan(fromBits(p.activation.c_str(), y[i])))
            << "output " << i / p.n << "," << i % p.n << " not written";
      // The reference for every output when that is cheap; otherwise the
      // first and last rows in full plus 4096 random outputs.
      std::vector<std::pair<int64_t, int64_t>> samples;
      if (m * p.n <= 1 << 16) {
        for (int64_t r = 0; r < m; ++r)
          for (int64_t c = 0; c < p.n; ++c)
            samples.emplace_back(r, c);
      } else {
        for (int64_t c = 0; c < p.n; ++c) {
          samples.emplace_back(0, c);
          samples.emplace_back(m - 1, c);
        }
        std::uniform_int_distribution<int64_t> row(0, m - 1), col(0, p.n - 1);
        for (int i = 0; i < 4096; ++i)
          samples.emplace_back(row(rng), col(rng));
      }
      double errorSquared = 0, referenceSquared = 0;
      for (auto [r, c] : samples) {
        double ref = referenceOutput(p, data, x, r, c);
        double got = fromBits(p.activation.c_str(), y[static_cast<size_t>(r * p.n + c)]);
        errorSquared += (got - ref) * (got - ref);
        referenceSquared += ref * ref;
      }
      double relative = std::sqrt(errorSquared / referenceSquared);
      double tolerance = p.activation == "bf16" ? 1e-2 : 2e-3;
      EXPECT_LT(relative, tolerance) << "relative error over " << samples.size() << " outputs";
      ++checked;
    }
  }
  std::printf("checked %d (kernel, M) pairs on %s\n", checked, arch.c_str());
}

TEST_F(W4A16Kernels, RejectsRowCountsItCannotServe) {
  const kernels::KernelEntry &entry = entries.front();
  for (int64_t m : {int64_t{0}, int64_t{-3}}) {
    Expected<kernels::LaunchShape> shape = kernels::launchShape(entry, m);
    ASSERT_FALSE(shape.ok());
    EXPECT_NE(shape.error().find("at least 1"), std::string::npos) << shape.error();
  }
  Expected<kernels::LaunchShape> tooMany =
      kernels::launchShape(entry, entry.gridTile[1] * 70000);
  ASSERT_FALSE(tooMany.ok());
  EXPECT_NE(tooMany.error().find("65535"), std::string::npos) << tooMany.error();
}

} // namespace
} // namespace lowbit::testing
